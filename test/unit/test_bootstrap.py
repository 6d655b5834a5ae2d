# SPDX-License-Identifier: Apache-2.0
"""tools/bootstrap refuses, with a clear message, to run without its prerequisites."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# What the script needs besides its three prerequisites, up to the checks.
SHELL_TOOLS = ('bash', 'dirname')


def _python311():
    candidates = [shutil.which('python3.11'), sys.executable]
    for candidate in candidates:
        if candidate and subprocess.run(
                [candidate, '-c', 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'],
                capture_output=True).returncode == 0:
            return os.path.realpath(candidate)
    pytest.skip('no CPython 3.11 on this machine to hand to the bootstrap script')


def _run_with_only(tmp_path, **tools):
    """Run tools/bootstrap with a PATH holding only the given tools."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for name in SHELL_TOOLS:
        (bin_dir / name).symlink_to(shutil.which(name))
    for name, target in tools.items():
        (bin_dir / name).symlink_to(target)
    return subprocess.run(
        [shutil.which('bash'), str(ROOT / 'tools' / 'bootstrap'), 'jazzy'],
        env={'PATH': str(bin_dir), 'HOME': str(tmp_path)},
        capture_output=True, text=True, timeout=60)


def test_missing_python311_is_named(tmp_path):
    result = _run_with_only(tmp_path, cmake=shutil.which('cmake'), cc=shutil.which('cc'))
    assert result.returncode == 1
    assert 'python3.11 is required' in result.stderr


def test_missing_cmake_is_named(tmp_path):
    result = _run_with_only(tmp_path, **{'python3.11': _python311(), 'cc': shutil.which('cc')})
    assert result.returncode == 1
    assert 'cmake is required' in result.stderr


def test_missing_c_compiler_is_named(tmp_path):
    result = _run_with_only(tmp_path, **{'python3.11': _python311(),
                                         'cmake': shutil.which('cmake')})
    assert result.returncode == 1
    assert 'a C compiler is required' in result.stderr


def test_unknown_distro_is_refused(tmp_path):
    result = subprocess.run(
        [shutil.which('bash'), str(ROOT / 'tools' / 'bootstrap'), 'humble'],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "unknown distro 'humble'" in result.stderr
