# SPDX-License-Identifier: Apache-2.0
"""
A parameter override of the wrong type stops a node with one clear line, exit 1.

So does a params file that cannot be read: a logged line, not a traceback.

Real processes of the installed executables, started the way a user would
(`--ros-args -p name:=value`). rclpy reads `1` as an integer, so giving a
float parameter `1` is the easy mistake these guard against.
"""

import subprocess

from helpers.rosutil import executable, unique_namespace
import pytest

pytestmark = pytest.mark.ros

# A deadline for a hung start on a loaded machine, not a timing.
STARTUP_TIMEOUT = 90.0

FLOAT = 'must be a floating-point number (such as 5.0, not 5)'

# One wrongly typed override per executable; every declared sentence, in-process:
# test/node/test_node_parameters.py.
CASES = [
    ('cognition_node', 'call_timeout_sec:=1', f'parameter call_timeout_sec {FLOAT}'),
    ('attention_node', 'call_timeout_sec:=1', f'parameter call_timeout_sec {FLOAT}'),
    ('perception_node', 'scenario_file:=1', 'parameter scenario_file must be a string'),
    ('simulation_seed', 'call_timeout_sec:=10', f'parameter call_timeout_sec {FLOAT}'),
    ('operator_source', 'exit_when_done:=1', 'parameter exit_when_done must be true or false'),
    ('operator_chat', 'start_timeout_sec:=1', f'parameter start_timeout_sec {FLOAT}'),
    ('memory_node', 'observed_turn_wait_sec:=1', f'parameter observed_turn_wait_sec {FLOAT}'),
    ('memory_lifecycle_node', 'enabled:=1', 'parameter enabled must be true or false'),
]


@pytest.mark.parametrize('name, override, sentence', CASES,
                         ids=[f'{name}-{override.split(":=")[0]}' for name, override, _ in CASES])
def test_a_wrongly_typed_parameter_is_one_line_and_exit_1(tmp_path, name, override, sentence):
    result = subprocess.run(
        [executable(name), '--ros-args', '-r', f'__ns:={unique_namespace("param")}',
         '-p', override],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path,
        timeout=STARTUP_TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert 'Traceback' not in output
    lines = [line for line in output.splitlines() if sentence in line]
    assert len(lines) == 1, output
    others = [line for line in output.splitlines()
              if ('ERROR' in line or 'error' in line) and line not in lines]
    assert others == [], output


def test_a_working_memory_too_small_for_its_cut_marker_is_one_line_and_exit_1(tmp_path):
    from ament_index_python.packages import get_package_share_directory
    scenario = f'{get_package_share_directory("mira_memory")}/config/scenarios/demo.toml'
    result = subprocess.run(
        [executable('cognition_node'), '--ros-args', '-r',
         f'__ns:={unique_namespace("param")}', '-p', f'scenario_file:={scenario}',
         '-p', 'working_memory_max_characters:=100'],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path,
        timeout=STARTUP_TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert 'Traceback' not in output
    assert [line for line in output.splitlines() if 'ERROR' in line] == [
        line for line in output.splitlines()
        if 'max_characters must be an integer of at least 200' in line], output
    assert 'max_characters must be an integer of at least 200' in output


@pytest.mark.parametrize('name', ['memory_node', 'cognition_node', 'operator_source'])
@pytest.mark.parametrize('content', [None, '/**:\n  ros__parameters:\n    x: [1, "a"]\n'],
                         ids=['missing', 'not_valid'])
def test_an_unusable_params_file_fails_startup_without_a_traceback(tmp_path, name, content):
    params_file = tmp_path / 'params.yaml'
    if content is not None:
        params_file.write_text(content)
    result = subprocess.run(
        [executable(name), '--ros-args', '-r', f'__ns:={unique_namespace("param")}',
         '--params-file', str(params_file)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path,
        timeout=STARTUP_TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert 'Traceback' not in output
    assert "cannot start: failed to initialize rcl: Couldn't parse params file" in output
