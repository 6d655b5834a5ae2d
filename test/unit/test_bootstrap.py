# SPDX-License-Identifier: Apache-2.0
"""tools/bootstrap: missing prerequisites named; what a first, a warm and a failed build print."""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

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


# What the build step prints: tools/bootstrap copied into a scratch clone, with
# a venv whose colcon prints what a real build prints (make's "[ n%]" lines).
FAKE_BUILD = """#!/bin/sh
echo 'Starting >>> mira_memory'
echo '[  2%] Generating C code for ROS interfaces'
echo '[ 37%] Building C object CMakeFiles/x.dir/a.c.o'
echo '[ 38%] Building C object CMakeFiles/x.dir/b.c.o'
echo '[ 99%] Linking CXX shared library libx.so'
echo '[100%] Built target x'
"""
NOTHING_TO_BUILD = """#!/bin/sh
echo 'Starting >>> mira_memory'
echo '[100%] Built target x'
"""
FAILING_BUILD = """#!/bin/sh
echo 'a.c:1: error: expected something'
exit 2
"""


# The distro of the venv this run uses (tools/test's env.sh): the scratch
# clone's stamp is that venv's, so bootstrap must be asked for that distro.
DISTRO = os.environ.get('MIRA_ROS_DISTRO', 'jazzy')


def _scratch_clone(tmp_path, colcon):
    """Return (bootstrap path, environment) of a clone whose venv is ready and colcon is fake."""
    clone = tmp_path / 'clone'
    (clone / 'tools').mkdir(parents=True)
    shutil.copy(ROOT / 'tools' / 'bootstrap', clone / 'tools' / 'bootstrap')
    real_venv = pathlib.Path(sys.prefix)
    stamp = real_venv / 'mira-requirements.stamp'
    if not stamp.exists():
        pytest.skip(f'not run from the bootstrapped venv ({sys.prefix} has no stamp)')
    venv = tmp_path / 'venvs' / f'venv-{DISTRO}'
    (venv / 'bin').mkdir(parents=True)
    (venv / 'bin' / 'python').symlink_to(real_venv / 'bin' / 'python')
    (venv / 'bin' / 'activate').write_text(f'PATH={venv}/bin:$PATH\n')
    (venv / 'mira-requirements.stamp').write_text(stamp.read_text())
    _set_colcon(venv, colcon)
    env = {'PATH': os.environ['PATH'], 'HOME': str(tmp_path),
           'MIRA_VENV_HOME': str(venv.parent)}
    return clone / 'tools' / 'bootstrap', env, venv


def _set_colcon(venv, script):
    colcon = venv / 'bin' / 'colcon'
    colcon.write_text(script)
    colcon.chmod(0o755)


def _bootstrap(script, env):
    return subprocess.run([shutil.which('bash'), str(script), DISTRO], env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_first_build_says_what_it_does_how_long_it_takes_and_how_far_it_is(tmp_path):
    script, env, venv = _scratch_clone(tmp_path, FAKE_BUILD)
    result = _bootstrap(script, env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    work = script.parents[1] / '.work' / DISTRO
    assert lines[0] == (
        'bootstrap: build: colcon build (first build: about 1.5 min on an idle 2-core '
        f'machine, 6 to 10 min on a busy one); log: {work}/colcon-build.log')
    assert lines[1:3] == ['bootstrap: build: 30%', 'bootstrap: build: 90%']
    assert re.fullmatch(r'bootstrap: build: done in 0 min \d+ s', lines[3]), lines
    assert lines[4] == f'bootstrap: ROS 2 {DISTRO} ready; activate with: . {work}/env.sh'
    assert len(lines) == 5
    # The build's own output is kept in the log, not shown.
    assert '[ 37%] Building C object' in (work / 'colcon-build.log').read_text()


def test_a_warm_run_is_one_line(tmp_path):
    script, env, venv = _scratch_clone(tmp_path, NOTHING_TO_BUILD)
    (script.parents[1] / '.work' / DISTRO / 'install' / 'mira_memory').mkdir(parents=True)
    result = _bootstrap(script, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('\n') == 1 and 'ready' in result.stdout, result.stdout
    # A rebuild of what changed shows its progress, without the first build's estimate.
    _set_colcon(venv, FAKE_BUILD)
    _touch_later(script.parents[1] / 'package.xml')
    rebuilt = _bootstrap(script, env).stdout.splitlines()
    assert rebuilt[0].startswith('bootstrap: build: colcon build (rebuilding what changed; '
                                 'a changed msg, srv or action file rebuilds every interface')


def _touch_later(path):
    """Create or touch path, clearly after the last bootstrap (file times are coarse)."""
    time.sleep(0.05)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()


COUNTING_BUILD = """#!/bin/sh
echo run >> "$HOME/colcon-runs"
echo '[100%] Built target x'
"""


def test_colcon_runs_again_only_once_a_file_it_builds_changed(tmp_path):
    script, env, venv = _scratch_clone(tmp_path, COUNTING_BUILD)
    clone = script.parents[1]
    (clone / 'package.xml').write_text('<package/>\n')
    (clone / '.work' / DISTRO / 'install' / 'mira_memory').mkdir(parents=True)
    (clone / 'mira_memory').mkdir()

    def runs_after_a_bootstrap():
        assert _bootstrap(script, env).returncode == 0
        return (tmp_path / 'colcon-runs').read_text().count('run')

    assert runs_after_a_bootstrap() == 1
    # Nothing changed: tools/console and tools/node call it before every command.
    assert runs_after_a_bootstrap() == 1
    # What the build does not read.
    for unbuilt in ('docs/page.md', 'test/test_x.py', 'tools/tool', 'bench/x.py',
                    'mira_memory/__pycache__/x.pyc', '.hypothesis/examples/x', '.git/index'):
        _touch_later(clone / unbuilt)
    assert runs_after_a_bootstrap() == 1
    # A new module (a symlink install links file by file), then a changed file.
    _touch_later(clone / 'mira_memory' / 'new_module.py')
    assert runs_after_a_bootstrap() == 2
    assert runs_after_a_bootstrap() == 2
    _touch_later(clone / 'package.xml')
    assert runs_after_a_bootstrap() == 3
    # New requirements (the venv's stamp) build again too.
    _touch_later(venv / 'mira-requirements.stamp')
    assert runs_after_a_bootstrap() == 4


def test_a_failed_build_shows_its_log_and_fails(tmp_path):
    script, env, venv = _scratch_clone(tmp_path, FAILING_BUILD)
    result = _bootstrap(script, env)
    assert result.returncode == 1
    assert 'a.c:1: error: expected something' in result.stderr
    assert result.stderr.rstrip().endswith('bootstrap: colcon build failed')
