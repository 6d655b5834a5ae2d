# SPDX-License-Identifier: Apache-2.0
"""
The one description of the simulation's processes, and its two conversions.

simulation_nodes() says which executables run, under which node names and
namespace, with which parameters and remappings. It is turned into
- launch_ros Node actions by launch/simulation.launch.py (launch_node), and
- real processes by the demo and the tests (Process: the same executable
  with `--ros-args -r __ns:=... -r __node:=... --params-file <yaml>`),
so CI starts exactly the nodes, names and parameters the launch file starts.

Who gets which memory access is decided here, by wiring, and again inside
each node by construction: cognition has recall_memory and remember clients,
attention only recall_memory, perception none; the operator source uses the
admin services for the supervised seed and is the only publisher of
operator/utterance. Each node runs in its own SROS2 enclave (NodeSpec.enclave),
which config/security/mira.policy.xml grants exactly this wiring.
"""

from dataclasses import dataclass, field
import itertools
import json
import os
import pathlib
import signal

from mira_memory.simulation import processes

PACKAGE = 'mira_memory'
# SROS2 enclaves (config/security/mira.policy.xml): one per process, fixed
# paths whatever the namespace, because a keystore holds fixed enclaves.
ENCLAVE_ROOT = '/mira'
DEFAULT_NAMESPACE = '/mira'
DEFAULT_ROBOT_PROFILE = 'Mira'
DEFAULT_SCENARIO = 'demo.toml'
MEMORY_NODE = 'memory'
COGNITION_NODE = 'cognition'


@dataclass(frozen=True)
class NodeSpec:
    """One node of the simulation: what runs, under which name, with which parameters."""

    executable: str
    name: str
    namespace: str
    parameters: dict = field(default_factory=dict)
    remappings: tuple = ()

    @property
    def fully_qualified_name(self):
        return f'{self.namespace.rstrip("/")}/{self.name}'

    @property
    def enclave(self):
        """Return the SROS2 enclave this node runs in (used only when security is on)."""
        return f'{ENCLAVE_ROOT}/{self.name}'


def default_scenario_file():
    """Return the installed demo scenario (share/mira_memory/config/scenarios/demo.toml)."""
    from ament_index_python.packages import get_package_share_directory
    return os.path.join(
        get_package_share_directory(PACKAGE), 'config', 'scenarios', DEFAULT_SCENARIO)


def normalize_namespace(namespace):
    """Return namespace as an absolute ROS namespace ('mira' -> '/mira', '' -> '/')."""
    stripped = namespace.strip().strip('/')
    return f'/{stripped}'


def simulation_nodes(*, database_path, scenario_file, robot_profile=DEFAULT_ROBOT_PROFILE,
                     namespace=DEFAULT_NAMESPACE, call_timeout_sec=5.0,
                     working_memory_capacity=50, exit_when_done=True, use_sim_time=None):
    """
    Return the simulation's nodes, memory node first.

    database_path must be absolute: the memory node resolves nothing against
    its working directory. Every node reads the same scenario file.
    use_sim_time: True or False sets every node's use_sim_time; None leaves it.
    """
    if not os.path.isabs(database_path):
        raise ValueError('database_path must be an absolute path')
    namespace = normalize_namespace(namespace)
    scenario_file = os.path.abspath(scenario_file)
    specs = (
        NodeSpec('memory_node', MEMORY_NODE, namespace, {
            'enabled': True,
            'database_path': database_path,
            'robot_profile': robot_profile,
        }),
        NodeSpec('cognition_node', COGNITION_NODE, namespace, {
            'scenario_file': scenario_file,
            'memory_node': MEMORY_NODE,
            'call_timeout_sec': float(call_timeout_sec),
            'working_memory_capacity': int(working_memory_capacity),
        }),
        NodeSpec('attention_node', 'attention', namespace, {
            'scenario_file': scenario_file,
            'memory_node': MEMORY_NODE,
            'call_timeout_sec': float(call_timeout_sec),
        }),
        NodeSpec('perception_node', 'perception', namespace, {
            'scenario_file': scenario_file,
        }),
        NodeSpec('operator_source', 'operator_source', namespace, {
            'scenario_file': scenario_file,
            'memory_node': MEMORY_NODE,
            'cognition_node': COGNITION_NODE,
            'exit_when_done': bool(exit_when_done),
        }),
    )
    if use_sim_time is None:
        return specs
    return tuple(NodeSpec(spec.executable, spec.name, spec.namespace,
                          {**spec.parameters, 'use_sim_time': bool(use_sim_time)},
                          spec.remappings) for spec in specs)


def launch_node(spec, **kwargs):
    """Convert a NodeSpec into a launch_ros Node action (needs launch_ros)."""
    from launch_ros.actions import Node
    return Node(
        package=PACKAGE, executable=spec.executable, name=spec.name,
        namespace=spec.namespace, parameters=[dict(spec.parameters)],
        remappings=list(spec.remappings), ros_arguments=['--enclave', spec.enclave],
        **kwargs)


def params_yaml(spec):
    """Return the ROS parameters file for spec (the '/**' key, as launch_ros writes it)."""
    lines = ['/**:', '  ros__parameters:']
    # A JSON scalar is a valid YAML flow scalar, and quoted strings keep
    # values such as 'true' or '1.0' from changing type.
    lines += [f'    {name}: {json.dumps(value)}' for name, value in spec.parameters.items()]
    return '\n'.join(lines) + '\n'


def executable_path(executable):
    """Return the installed path of one of the package's executables."""
    from ament_index_python.packages import get_package_prefix
    path = pathlib.Path(get_package_prefix(PACKAGE)) / 'lib' / PACKAGE / executable
    if not path.exists():
        raise FileNotFoundError(f'{path} is not installed; run tools/bootstrap')
    return str(path)


def process_command(spec, params_file):
    """Return the command line that runs spec as a process, as ros2 launch would."""
    command = [executable_path(spec.executable), '--ros-args',
               '-r', f'__ns:={spec.namespace}', '-r', f'__node:={spec.name}',
               '--enclave', spec.enclave]
    for source, target in spec.remappings:
        command += ['-r', f'{source}:={target}']
    return command + ['--params-file', str(params_file)]


_run_counter = itertools.count(1)


class Process(processes.Process):
    """One simulation node running as a real process (the harness), logged in directory."""

    def __init__(self, spec, directory):
        directory = pathlib.Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        stem = f'{spec.name}-{next(_run_counter)}'
        params_file = directory / f'{stem}.params.yaml'
        params_file.write_text(params_yaml(spec))
        self.spec = spec
        super().__init__(process_command(spec, params_file), directory / f'{stem}.log',
                         name=spec.name)

    def stop(self, timeout=processes.STOP_TIMEOUT_S):
        """
        Stop the node with SIGINT, as ros2 launch does; return its exit code.

        None when SIGINT did not stop it within timeout (the harness then
        ended it with SIGTERM or SIGKILL): a node must stop on SIGINT.
        """
        code = super().stop(timeout=timeout)
        return code if self.stopped_by in (None, signal.SIGINT) else None


def start(specs, directory):
    """Start every spec as a process, in order; return the Processes."""
    return [Process(spec, directory) for spec in specs]
