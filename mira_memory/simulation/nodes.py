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
attention only recall_memory, perception none; the seed step (a one-shot
process the operator source starts after) uses the admin services for the
supervised seed; the operator source is the only publisher of
operator/utterance and calls no admin service. Each node runs in an SROS2
enclave of its namespace (NodeSpec.enclave), which the policy that
mira_memory.ros.security_policy generates for that namespace grants exactly
this wiring.
"""

import dataclasses
from dataclasses import dataclass, field
import itertools
import json
import os
import pathlib
import signal

from mira_memory.ros import security_policy
from mira_memory.simulation import processes

PACKAGE = 'mira_memory'
DEFAULT_NAMESPACE = '/mira'
DEFAULT_ROBOT_PROFILE = 'Mira'
DEFAULT_SCENARIO = 'demo.toml'
MEMORY_NODE = 'memory'
COGNITION_NODE = 'cognition'
SEED_NODE = 'seed'
# How long a node waits for the one-shot process it starts after (the seed's
# own calls have deadlines of their own; this only guards against a hang).
PREREQUISITE_TIMEOUT_SEC = 120.0


class PrerequisiteFailed(RuntimeError):
    """A one-shot process that another node starts after did not exit 0."""


@dataclass(frozen=True)
class NodeSpec:
    """One node of the simulation: what runs, under which name, with which parameters."""

    executable: str
    name: str
    namespace: str
    parameters: dict = field(default_factory=dict)
    remappings: tuple = ()
    # SROS2 enclave name (in the namespace); empty: the node's own name.
    enclave_name: str = ''
    # A one-shot process exits 0 when its work is done (the seed step).
    one_shot: bool = False
    # The one-shot node that must have exited 0 before this one starts.
    after: str = ''

    @property
    def fully_qualified_name(self):
        return f'{self.namespace.rstrip("/")}/{self.name}'

    @property
    def enclave(self):
        """Return the SROS2 enclave this node runs in (used only when security is on)."""
        return security_policy.enclave_path(self.namespace, self.enclave_name or self.name)


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
        # Entity administration is supervised: the admin enclave seeds, the
        # operator only speaks.
        NodeSpec('simulation_seed', SEED_NODE, namespace, {
            'scenario_file': scenario_file,
            'memory_node': MEMORY_NODE,
            'call_timeout_sec': float(call_timeout_sec),
        }, enclave_name='admin', one_shot=True),
        NodeSpec('operator_source', 'operator_source', namespace, {
            'scenario_file': scenario_file,
            'memory_node': MEMORY_NODE,
            'cognition_node': COGNITION_NODE,
            'exit_when_done': bool(exit_when_done),
        }, after=SEED_NODE),
    )
    if use_sim_time is None:
        return specs
    return tuple(dataclasses.replace(
        spec, parameters={**spec.parameters, 'use_sim_time': bool(use_sim_time)})
        for spec in specs)


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
    return parameters_yaml(spec.parameters)


def parameters_yaml(parameters):
    """Return a ROS parameters file that applies parameters (a dict) to any node name."""
    lines = ['/**:', '  ros__parameters:']
    # A JSON scalar is a valid YAML flow scalar, and quoted strings keep
    # values such as 'true' or '1.0' from changing type.
    lines += [f'    {name}: {json.dumps(value)}' for name, value in parameters.items()]
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


def await_prerequisite(spec, processes, timeout=PREREQUISITE_TIMEOUT_SEC):
    """
    Wait until the one-shot process spec starts after (spec.after) has exited 0.

    processes: the Processes started so far. Raise PrerequisiteFailed, with
    the prerequisite's output, when it exits non-zero or not within timeout.
    """
    if not spec.after:
        return
    found = [process for process in processes if process.name == spec.after]
    if not found:
        raise PrerequisiteFailed(f'{spec.name} starts after {spec.after}, which was not started')
    code = found[-1].wait(timeout)
    if code != 0:
        happened = (f'did not exit within {timeout:g} s' if code is None
                    else f'exited with code {code}')
        raise PrerequisiteFailed(
            f'{spec.after} {happened}, so {spec.name} was not started:\n{found[-1].output()}')


def start(specs, directory, started=()):
    """
    Start every spec as a process, in order; return the Processes.

    A spec with `after` starts once that one-shot process (in specs or in
    started) has exited 0, as the launch file does. When it fails, the
    processes started here are stopped and PrerequisiteFailed is raised.
    """
    processes = []
    for spec in specs:
        try:
            await_prerequisite(spec, [*started, *processes])
        except PrerequisiteFailed:
            # Memory node last: nothing may be left calling it when it stops.
            for process in reversed(processes):
                process.stop()
            raise
        processes.append(Process(spec, directory))
    return processes
