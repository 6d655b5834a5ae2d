# SPDX-License-Identifier: Apache-2.0
"""Scenario files and the simulation's process description, without ROS."""

import pathlib

from mira_memory import wire
from mira_memory.cognition import scenario
from mira_memory.simulation import nodes as simulation
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = ROOT / 'config' / 'scenarios' / 'demo.toml'

MINIMAL = """
[[episodes]]
name = "e1"
[[episodes.turns]]
id = "t1"
text = "Hello."
"""


def load_text(tmp_path, text):
    path = tmp_path / 'scenario.toml'
    path.write_text(text)
    return scenario.load(path)


def test_demo_scenario_loads():
    demo = scenario.load(DEMO)
    assert [entity.name for entity in demo.seed] == ['Mira', 'Ada Lovelace', 'Charles Babbage']
    turns = [(episode.name, len(episode.turns)) for episode in demo.episodes]
    assert turns == [('e1', 6), ('e2', 4)]
    assert demo.autonomous_episode_ids() == ('greet_ada-o1',)


RUN = '20261201T000327Z-3f9a1c'


def test_calls_for_a_scripted_turn_keep_their_raw_json_arguments():
    calls = scenario.load(DEMO).calls_for_turn(f'{RUN}-e1', 't6')
    assert [(call.tool, call.arguments) for call in calls] == [
        ('recall_memory', '{"query": "Charles"}'), ('recall_memory', '{"query": "Mira"}')]


def test_an_unscripted_turn_has_no_calls(tmp_path):
    assert load_text(tmp_path, MINIMAL).calls_for_turn(f'{RUN}-e1', 'other') == ()


@pytest.mark.parametrize('episode_id', ['e1', f'{RUN}-e2', f'x{RUN}-e1', f'{RUN}e1', ''])
def test_an_episode_id_that_is_not_a_run_of_a_scenario_episode_is_unscripted(
        tmp_path, episode_id):
    assert load_text(tmp_path, MINIMAL).calls_for_turn(episode_id, 't1') == ()


def test_episode_ids_are_run_id_and_episode_name_and_map_back():
    run_id = scenario.new_run_id()
    episode_id = scenario.operator_episode_id(run_id, 'e1.morning-2')
    assert episode_id == f'{run_id}-e1.morning-2'
    assert len(run_id) == scenario.RUN_ID_LENGTH
    assert scenario.episode_name(episode_id) == 'e1.morning-2'
    assert wire.is_valid_id(scenario.operator_episode_id(run_id, 'e' * 40))


def test_two_runs_never_share_an_episode_id():
    # Same second, different random part: unique across runs, not just in time.
    run_ids = {scenario.new_run_id() for _ in range(200)}
    assert len(run_ids) == 200


def test_an_episode_id_in_the_file_is_refused_with_the_reason(tmp_path):
    with pytest.raises(scenario.ScenarioError, match=r'episodes\[0\]\.id is not allowed: '
                                                     'episode ids are generated for every run'):
        load_text(tmp_path, MINIMAL.replace('name = "e1"', 'id = "e1"'))


def test_an_episode_name_too_long_for_an_id_is_refused(tmp_path):
    with pytest.raises(scenario.ScenarioError, match=r'episodes\[0\]\.name must be 1-40'):
        load_text(tmp_path, MINIMAL.replace('name = "e1"', f'name = "{"e" * 41}"'))


def test_unknown_key_is_an_error_with_its_place(tmp_path):
    with pytest.raises(scenario.ScenarioError, match=r'episodes\[0\]\.turns\[0\]: unknown key'):
        load_text(tmp_path, MINIMAL + 'txet = "typo"\n')


def test_missing_key_is_an_error_with_its_place(tmp_path):
    with pytest.raises(scenario.ScenarioError,
                       match=r'episodes\[0\]\.turns\[0\]\.text is required'):
        load_text(tmp_path, MINIMAL.replace('text = "Hello."', ''))


def test_names_and_ids_with_whitespace_are_rejected(tmp_path):
    with pytest.raises(scenario.ScenarioError, match=r'episodes\[0\]\.name must be'):
        load_text(tmp_path, MINIMAL.replace('name = "e1"', 'name = "e 1"'))
    with pytest.raises(scenario.ScenarioError, match=r'turns\[0\]\.id must be'):
        load_text(tmp_path, MINIMAL.replace('id = "t1"', 'id = "t 1"'))


def test_duplicate_turn_ids_are_rejected(tmp_path):
    text = MINIMAL + '[[episodes.turns]]\nid = "t1"\ntext = "Again."\n'
    with pytest.raises(scenario.ScenarioError, match='duplicate turn id in episode e1: t1'):
        load_text(tmp_path, text)


def test_after_turn_must_name_a_turn_of_the_scenario(tmp_path):
    text = MINIMAL + """
[[perception.observations]]
id = "o1"
after_turn = "e1/t9"
source = "camera"
label = "person"
text = "someone"
"""
    with pytest.raises(scenario.ScenarioError, match='after_turn names no turn'):
        load_text(tmp_path, text)


def test_arguments_must_be_a_json_string_not_a_table(tmp_path):
    text = MINIMAL + (
        '[[episodes.turns.calls]]\ntool = "recall_memory"\narguments = {query = "Ada"}\n')
    with pytest.raises(scenario.ScenarioError, match=r'calls\[0\]\.arguments must be a string'):
        load_text(tmp_path, text)


def test_invalid_toml_names_the_file(tmp_path):
    with pytest.raises(scenario.ScenarioError, match='not valid TOML'):
        load_text(tmp_path, '[[episodes]\n')


def test_trigger_without_entity_name_matches_every_entity_of_its_label(tmp_path):
    loaded = load_text(tmp_path, '[[attention.triggers]]\nid = "any"\nlabel = "person"\n')
    assert [trigger.id for trigger in loaded.triggers_for('person', 'Ada')] == ['any']
    assert loaded.triggers_for('object', 'Ada') == ()


# The process description --------------------------------------------------------

def nodes():
    return {spec.name: spec for spec in simulation.simulation_nodes(
        database_path='/tmp/mira/memory.sqlite3', scenario_file=str(DEMO), namespace='mira')}


def test_simulation_runs_six_nodes_in_one_absolute_namespace():
    specs = nodes()
    assert sorted(specs) == [
        'attention', 'cognition', 'memory', 'operator_source', 'perception', 'seed']
    assert {spec.namespace for spec in specs.values()} == {'/mira'}


def test_the_seed_step_runs_as_admin_and_the_operator_source_after_it():
    specs = nodes()
    assert {name: spec.enclave for name, spec in specs.items()} == {
        'memory': '/mira/memory', 'cognition': '/mira/cognition',
        'attention': '/mira/attention', 'perception': '/mira/perception',
        'seed': '/mira/admin', 'operator_source': '/mira/operator_source'}
    assert [(name, spec.after) for name, spec in specs.items() if spec.after] == [
        ('operator_source', 'seed')]
    assert [name for name, spec in specs.items() if spec.one_shot] == ['seed']


def test_memory_node_gets_the_database_and_robot_profile():
    assert nodes()['memory'].parameters == {
        'enabled': True, 'database_path': '/tmp/mira/memory.sqlite3', 'robot_profile': 'Mira'}


def test_only_cognition_attention_and_the_seed_step_are_pointed_at_the_memory_node():
    pointed = sorted(
        name for name, spec in nodes().items() if 'call_timeout_sec' in spec.parameters)
    # The seed step calls the admin services only (its policy profile).
    assert pointed == ['attention', 'cognition', 'seed']
    assert 'memory_node' not in nodes()['perception'].parameters


def test_relative_database_path_is_refused():
    with pytest.raises(ValueError, match='absolute'):
        simulation.simulation_nodes(database_path='memory.sqlite3', scenario_file=str(DEMO))


def test_params_file_keeps_parameter_types():
    yaml_text = simulation.params_yaml(nodes()['cognition'])
    assert yaml_text.splitlines()[:2] == ['/**:', '  ros__parameters:']
    assert '    call_timeout_sec: 5.0' in yaml_text
    assert '    working_memory_capacity: 50' in yaml_text
    assert '    memory_node: "memory"' in yaml_text
