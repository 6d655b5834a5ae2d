# SPDX-License-Identifier: Apache-2.0
"""
The suite tests the installed package, never the source tree's mira_memory/.

`colcon test` runs `python -m pytest`, which puts its working directory on
sys.path; from the repository root the source mira_memory/ (without the
generated msg/srv modules) would shadow the installed one. CMakeLists.txt
runs it from test/ instead; this keeps it that way under tools/test,
colcon test and CI alike.
"""

import importlib.util
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
    # The boundary models live in core/config_file.py and core/archive/export_format.py,
    # loaded only where a config file or an export is read: a node configured
    # by its parameters saves pydantic's memory and import time.
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


GENERATOR_MODULES = ('em', 'lark', 'rosidl_parser.parser')
# numpy's __init__ imports numpy.version: in sys.modules only once numpy's code ran.
NUMPY_RAN = 'numpy.version'
PROBE_NODE = """
import sys
import rclpy
from mira_memory.srv import Remember


def main():
    rclpy.init()
    node = rclpy.create_node('type_support_probe')
    node.create_service(Remember, 'probe_remember', lambda request, response: response)
    # rclpy's logger looks at every module in sys.modules (inspect.getmodule).
    node.get_logger().info('probe ready')
    print(sorted(name for name in %r if name in sys.modules))
    node.destroy_node()
    rclpy.shutdown()
    return 0
""" % (GENERATOR_MODULES + (NUMPY_RAN,),)


@pytest.mark.parametrize('entry', ['node_runner', 'plain'])
def test_executables_load_interfaces_without_the_generator_or_numpy(tmp_path, entry):
    # rosidl_generator_py's __init__ imports its code generator (lark, empy,
    # the IDL parser: about 8 MB per process) on the first use of any
    # interface, and service_msgs' ServiceEventInfo imports numpy (0.1 s,
    # 11 MB) for introspection events the node never builds; node_runner.start()
    # loads neither (mira_memory/ros/type_support.py). The plain
    # entry shows what it saves, where the generator is installed at all.
    expected = sorted(GENERATOR_MODULES + (NUMPY_RAN,))
    if entry == 'plain' and any(
            importlib.util.find_spec(name) is None for name in expected):
        pytest.skip('the interface generator is not installed here: nothing to leave out')
    (tmp_path / 'probe_node.py').write_text(PROBE_NODE, encoding='utf-8')
    start = ('from mira_memory.ros import node_runner\n'
             'raise SystemExit(node_runner.start("probe_node"))\n' if entry == 'node_runner'
             else 'import probe_node\nraise SystemExit(probe_node.main())\n')
    result = subprocess.run([sys.executable, '-c', start], cwd=tmp_path,
                            env={**os.environ, 'PYTHONPATH': os.pathsep.join(
                                filter(None, (str(tmp_path), os.environ.get('PYTHONPATH'))))},
                            capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (
        0, '[]' if entry == 'node_runner' else str(expected)), result.stderr


def test_a_deferred_numpy_runs_when_an_introspection_event_is_built(tmp_path):
    # The one user of numpy in a node's process: service_msgs' ServiceEventInfo.
    probe = ('from mira_memory.ros import type_support\n'
             'type_support.load_runtime_only()\n'
             'import sys\n'
             'from service_msgs.msg import ServiceEventInfo\n'
             'print(type_support.is_deferred(sys.modules["numpy"]))\n'
             'print(ServiceEventInfo(client_gid=[7] * 16).client_gid.tolist())\n'
             'print(type_support.is_deferred(sys.modules["numpy"]))\n')
    result = subprocess.run([sys.executable, '-c', probe], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (
        0, 'True\n%s\nFalse\n' % ([7] * 16)), result.stderr
