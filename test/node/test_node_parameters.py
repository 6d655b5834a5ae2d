# SPDX-License-Identifier: Apache-2.0
"""
A parameter override of the wrong type stops a node with one clear sentence.

Each node class is built in-process (node tier) with the override, as
`--ros-args -p name:=value` gives it (the value read as YAML, so `1` is an
integer), and must raise node_runner.StartupError with the sentence. What
the executables make of it (one line, exit 1, no traceback):
test/system/test_node_parameters.py, one real process per executable.
"""

import importlib

from helpers.rosutil import unique_namespace
from mira_memory.ros.node_runner import StartupError
import pytest
import yaml

pytestmark = pytest.mark.ros

FLOAT = 'must be a floating-point number (such as 5.0, not 5)'

NODE_CLASSES = {
    'memory_node': ('mira_memory.memory.node', 'MemoryNode'),
    'memory_lifecycle_node': ('mira_memory.memory.lifecycle_node', 'LifecycleMemoryNode'),
    'cognition_node': ('mira_memory.cognition.node', 'CognitionNode'),
    'simulation_seed': ('mira_memory.simulation.seed', 'Seed'),
    'operator_source': ('mira_memory.simulation.operator_source', 'OperatorSource'),
    'perception_node': ('mira_memory.simulation.perception_node', 'PerceptionNode'),
    'attention_node': ('mira_memory.simulation.attention_node', 'AttentionNode'),
    'operator_chat': ('mira_memory.console.operator_chat', 'OperatorChat'),
}

CASES = [
    ('cognition_node', 'call_timeout_sec:=1', f'parameter call_timeout_sec {FLOAT}'),
    ('cognition_node', 'request_timeout_s:=60', f'parameter request_timeout_s {FLOAT}'),
    ('cognition_node', 'max_tool_rounds:=2.0', 'parameter max_tool_rounds must be an integer'),
    ('cognition_node', 'model:=1', 'parameter model must be a string'),
    ('attention_node', 'call_timeout_sec:=1', f'parameter call_timeout_sec {FLOAT}'),
    ('perception_node', 'scenario_file:=1', 'parameter scenario_file must be a string'),
    ('simulation_seed', 'call_timeout_sec:=10', f'parameter call_timeout_sec {FLOAT}'),
    ('operator_source', 'turn_timeout_sec:=30', f'parameter turn_timeout_sec {FLOAT}'),
    ('operator_source', 'exit_when_done:=1', 'parameter exit_when_done must be true or false'),
    ('operator_chat', 'start_timeout_sec:=1', f'parameter start_timeout_sec {FLOAT}'),
    ('operator_chat', 'console_enclave:=1', 'parameter console_enclave must be a string'),
    ('memory_node', 'observed_turn_wait_sec:=1', f'parameter observed_turn_wait_sec {FLOAT}'),
    ('memory_node', 'observed_turns_max:=5.0', 'parameter observed_turns_max must be an integer'),
    ('memory_node', 'enabled:=1', 'parameter enabled must be true or false'),
    ('memory_node', 'robot_profile:=1', 'parameter robot_profile must be a string'),
    ('memory_lifecycle_node', 'observed_turns_max:=5.0',
     'parameter observed_turns_max must be an integer'),
]


@pytest.mark.parametrize('name, override, sentence', CASES,
                         ids=[f'{name}-{override.split(":=")[0]}' for name, override, _ in CASES])
def test_a_wrongly_typed_parameter_is_a_startup_error(node_context, name, override, sentence):
    from rclpy.parameter import Parameter
    module_name, class_name = NODE_CLASSES[name]
    node_class = getattr(importlib.import_module(module_name), class_name)
    parameter, _, value = override.partition(':=')
    with pytest.raises(StartupError) as error:
        node_class(context=node_context, namespace=unique_namespace('param'),
                   parameter_overrides=[Parameter(parameter, value=yaml.safe_load(value))])
    assert str(error.value) == sentence
