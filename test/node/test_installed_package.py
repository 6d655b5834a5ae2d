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
