# SPDX-License-Identifier: Apache-2.0
"""
The suite tests the installed package, never the source tree's mira_memory/.

`colcon test` runs `python -m pytest`, which puts its working directory on
sys.path; from the repository root the source mira_memory/ (without the
generated msg/srv modules) would shadow the installed one. CMakeLists.txt
runs it from test/ instead; this keeps it that way under tools/test,
colcon test and CI alike.
"""

import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ros

SOURCE_PACKAGE = pathlib.Path(__file__).resolve().parents[2] / 'mira_memory'


def test_mira_memory_is_the_installed_package_with_its_interfaces():
    import mira_memory
    from mira_memory import msg, srv
    imported = pathlib.Path(mira_memory.__file__).parent
    # --symlink-install links the installed files to the sources: compare directories.
    assert not os.path.samefile(imported, SOURCE_PACKAGE), imported
    assert pathlib.Path(srv.__file__).parent.parent == imported
    assert msg.MemoryLink and srv.Remember


def test_the_memory_node_loads_pydantic_only_to_read_a_config_file(tmp_path):
    # The boundary models live in core/config_file.py and core/export_format.py,
    # loaded only where a config file or an export is read: a node configured
    # by its parameters saves pydantic's memory and import time (issue 25).
    config = tmp_path / 'memory.toml'
    config.write_text('[memory]\nenabled = false\n', encoding='utf-8')
    probe = ('import sys\n'
             'import mira_memory.memory.node\n'
             'from mira_memory.core import config\n'
             'loaded = lambda: "pydantic" in sys.modules\n'
             'print(loaded())\n'
             'config.settings_from_config_file(sys.argv[1])\n'
             'print(loaded())\n')
    result = subprocess.run([sys.executable, '-c', probe, str(config)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (0, 'False\nTrue\n'), result.stderr
