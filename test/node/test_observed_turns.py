# SPDX-License-Identifier: Apache-2.0
"""
remember admits only operator turns the memory node heard itself.

Every test runs a memory node in-process (node tier); turns are published
over DDS on its operator/utterance topic, as the operator source publishes them.
Waits are deadlines against hangs; no test asserts a timing.
"""

import itertools
import re
import time

from helpers.memory_services import MemoryServices, rcl_msg, rcl_srv, srv, start_enabled_node
from helpers.rosutil import unique_namespace
from mira_memory.client import names
from mira_memory.core.admission import turns
from mira_memory.memory import responses
from mira_memory.ros.node_runner import StartupError
import pytest

pytestmark = pytest.mark.ros

NOT_HEARD = responses.TURN_NOT_HEARD_ERRORS[turns.NOT_HEARD]
DIFFERENT = responses.TURN_NOT_HEARD_ERRORS[turns.DIFFERENT]
PROFILE = 'Mira'
SUBJECT = 'Ada Lovelace'
RACE_TURNS = 2000
_turns = itertools.count(1)


def said(text=f'{SUBJECT} prefers green tea.', value='green tea', predicate='prefers_drink'):
    """Return a remember request for a new operator turn grounded in text."""
    number = next(_turns)
    evidence = text.rstrip('.')
    return srv.Remember.Request(
        episode_id=f'ep-{number}', turn_id=f'turn-{number}', utterance=text,
        kind='preference', subject=SUBJECT, predicate=predicate, value=value,
        evidence=evidence)


def outcome(response):
    return (response.status, response.outcome, response.reason)


def start(memory_node, ros, directory, **parameters):
    """Start a memory node on a database of its own; return (process, MemoryServices)."""
    process = memory_node({
        'enabled': True, 'database_path': str(directory / 'memory.sqlite3'),
        'robot_profile': PROFILE, **parameters}, ros=ros)
    memory = MemoryServices(ros, process.prefix)
    memory.entity(SUBJECT)
    return process, memory


@pytest.fixture(scope='module')
def node(ros, module_memory_node):
    return start_enabled_node(module_memory_node, ros, 'observed', PROFILE)


@pytest.fixture(scope='module')
def memory(ros, node):
    services = MemoryServices(ros, node.prefix)
    services.entity(SUBJECT)
    return services


# What is refused --------------------------------------------------------------------------


def test_a_turn_never_published_is_rejected_and_writes_nothing(memory):
    before = memory.counts()

    response = memory.remember_unheard(said())

    assert outcome(response) == ('rejected', '', 'evidence_not_in_utterance')
    assert (response.memory_id, response.error) == ('', NOT_HEARD)
    assert memory.counts() == before


def test_an_utterance_one_character_off_the_published_turn_is_rejected(memory):
    request = said()
    memory.say(request.episode_id, request.turn_id, request.utterance)
    request.utterance = request.utterance.replace('green', 'Green')
    before = memory.counts()

    response = memory.remember_unheard(request)

    assert outcome(response) == ('rejected', '', 'evidence_not_in_utterance')
    assert response.error == DIFFERENT
    assert memory.counts() == before


def test_the_same_ids_under_another_episode_are_not_the_heard_turn(memory):
    request = said()
    memory.say(request.episode_id, request.turn_id, request.utterance)
    request.episode_id += '-other'

    response = memory.remember_unheard(request)

    assert (response.reason, response.error) == ('evidence_not_in_utterance', NOT_HEARD)


def test_the_error_sentences_echo_nothing_of_the_request(memory):
    request = said()
    response = memory.remember_unheard(request)
    texts = [request.episode_id, request.turn_id, request.utterance, request.evidence,
             request.value, SUBJECT]
    assert [text for text in texts for error in (NOT_HEARD, DIFFERENT, response.error)
            if text.casefold() in error.casefold()] == []


def test_the_heard_turn_is_admitted(memory):
    request = said(f'{SUBJECT} collects seashells.', 'seashells', 'collects')

    response = memory.remember(request)

    assert outcome(response) == ('applied', 'created', '')


# The window's bounds -----------------------------------------------------------------------


def test_a_turn_older_than_the_window_is_rejected(ros, memory_node, tmp_path):
    _, memory = start(memory_node, ros, tmp_path, observed_turn_max_age_sec=1.0)
    old, fresh = said(), said(f'{SUBJECT} prefers rooibos.', 'rooibos')
    memory.say(old.episode_id, old.turn_id, old.utterance)
    # Past the one-second window (a wait, not a timing assertion).
    ros.spin_for(1.2)
    memory.say(fresh.episode_id, fresh.turn_id, fresh.utterance)

    expired = memory.remember_unheard(old)
    admitted = memory.remember_unheard(fresh)

    assert (expired.reason, expired.error) == ('evidence_not_in_utterance', NOT_HEARD)
    assert outcome(admitted) == ('applied', 'created', '')


def test_the_oldest_turn_leaves_a_full_window(ros, memory_node, tmp_path):
    _, memory = start(memory_node, ros, tmp_path, observed_turns_max=2)
    requests = [said(f'{SUBJECT} likes item {n}.', f'item {n}', f'likes_{n}') for n in range(3)]
    for request in requests:
        memory.say(request.episode_id, request.turn_id, request.utterance)
    # The third turn is heard once its remember is admitted; only then is
    # the first one certainly out.
    newest = memory.remember_unheard(requests[2])

    oldest = memory.remember_unheard(requests[0])
    middle = memory.remember_unheard(requests[1])

    assert outcome(newest) == ('applied', 'created', '')
    assert (oldest.reason, oldest.error) == ('evidence_not_in_utterance', NOT_HEARD)
    assert outcome(middle) == ('applied', 'created', '')


def test_a_restarted_node_has_forgotten_every_turn_and_hears_the_next(
        ros, memory_node, tmp_path):
    namespace = unique_namespace('restart')
    database = tmp_path / 'memory.sqlite3'
    parameters = {'enabled': True, 'database_path': str(database), 'robot_profile': PROFILE}
    first = memory_node(parameters, namespace=namespace, ros=ros)
    memory = MemoryServices(ros, first.prefix)
    memory.entity(SUBJECT)
    before_restart = said()
    created = memory.remember(before_restart)
    assert first.stop() == 0
    ros.forget_clients(first.prefix)

    memory_node(parameters, namespace=namespace, ros=ros)
    # The retry of an admitted request names a turn this node never heard.
    retried = memory.remember_unheard(before_restart)
    next_turn = memory.remember(said(f'{SUBJECT} collects maps.', 'maps', 'collects'))

    assert outcome(created) == ('applied', 'created', '')
    assert (retried.reason, retried.error) == ('evidence_not_in_utterance', NOT_HEARD)
    assert outcome(next_turn) == ('applied', 'created', '')


# No race ---------------------------------------------------------------------------------


def test_a_remember_sent_before_its_turn_waits_for_it_and_others_are_served(
        ros, memory_node, tmp_path):
    _, memory = start(memory_node, ros, tmp_path, observed_turn_wait_sec=30.0)
    request = said()
    client = ros.client(srv.Remember, names.service_name(memory.prefix, names.REMEMBER))
    memory.wait_for_listener()

    pending = client.call_async(request)
    # While that remember waits for its turn, recall and admin still answer.
    recalled = memory.recall(SUBJECT)
    status_answered = memory.counts()
    waiting = not pending.done()
    memory.say(request.episode_id, request.turn_id, request.utterance)
    deadline = time.monotonic() + 60.0
    while not pending.done() and time.monotonic() < deadline:
        ros.spin_for(0.05)

    assert waiting
    assert recalled.status == 'found'
    assert status_answered['entity_count'] == 1
    assert outcome(pending.result()) == ('applied', 'created', '')


def test_back_to_back_turns_each_followed_at_once_by_its_remember(
        ros, memory_node, tmp_path, capfd):
    from rclpy.logging import LoggingSeverity
    node = memory_node({'enabled': True, 'database_path': str(tmp_path / 'memory.sqlite3'),
                        'robot_profile': PROFILE}, namespace=unique_namespace('race'), ros=ros)
    # Debug for this node's logger only: it logs every remember that had to wait.
    node.node.get_logger().set_level(LoggingSeverity.DEBUG)
    capfd.readouterr()
    memory = MemoryServices(ros, node.prefix)
    memory.entity(SUBJECT)
    client = ros.client(srv.Remember, names.service_name(node.prefix, names.REMEMBER))
    outcomes = {}
    for number in range(RACE_TURNS):
        # The same statement in every turn: created once, then duplicates.
        request = said()
        if number % 2 == 0:
            # Cognition's order: the turn, then at once its remember.
            response = memory.remember(request)
        else:
            # The race made certain: the remember leaves before its turn.
            pending = client.call_async(request)
            memory.say(request.episode_id, request.turn_id, request.utterance)
            deadline = time.monotonic() + 20.0
            while not pending.done() and time.monotonic() < deadline:
                ros.spin_for(0.001)
            assert pending.done(), 'remember did not answer'
            response = pending.result()
        key = response.outcome or response.reason
        outcomes[key] = outcomes.get(key, 0) + 1
    assert node.stop() == 0
    waits = re.findall(r'remember waited ([0-9.]+) ms for its operator turn \((\w+ ?\w*)\)',
                       capfd.readouterr().err)
    with capfd.disabled():
        print(f'\n{RACE_TURNS} back-to-back turns (every second remember sent before its '
              f'turn): outcomes {outcomes}; '
              f'{len(waits)} remember call(s) arrived before their turn and waited '
              f'(longest {max((float(ms) for ms, _ in waits), default=0.0):.1f} ms)')
    assert outcomes == {'created': 1, 'duplicate': RACE_TURNS - 1}
    assert all(result == 'heard' for _, result in waits)


# Parameters --------------------------------------------------------------------------------


def test_the_opt_out_trusts_the_callers_utterance(ros, memory_node, tmp_path):
    _, memory = start(memory_node, ros, tmp_path, require_observed_turns=False)

    response = memory.remember_unheard(said())

    assert outcome(response) == ('applied', 'created', '')


@pytest.mark.parametrize('name,value', [
    ('require_observed_turns', rcl_msg.ParameterValue(
        type=rcl_msg.ParameterType.PARAMETER_BOOL, bool_value=False)),
    ('observed_turn_wait_sec', rcl_msg.ParameterValue(
        type=rcl_msg.ParameterType.PARAMETER_DOUBLE, double_value=0.0)),
])
def test_the_turn_parameters_are_read_only(ros, memory, name, value):
    response = ros.call(rcl_srv.SetParameters, f'{memory.prefix}/set_parameters',
                        rcl_srv.SetParameters.Request(
                            parameters=[rcl_msg.Parameter(name=name, value=value)]))
    described = ros.call(rcl_srv.DescribeParameters, f'{memory.prefix}/describe_parameters',
                         rcl_srv.DescribeParameters.Request(names=[name]))

    assert [result.successful for result in response.results] == [False]
    [descriptor] = described.descriptors
    assert descriptor.read_only and descriptor.description


@pytest.mark.parametrize('parameters,message', [
    ({'observed_turns_max': 0}, 'max_turns must be a positive integer'),
    ({'observed_turn_max_age_sec': 0.0}, 'max_age_sec must be positive'),
    ({'observed_turn_wait_sec': -1.0}, 'observed_turn_wait_sec must be between 0 and 60'),
])
def test_an_unusable_window_stops_startup_with_a_clear_error(memory_node, tmp_path, parameters,
                                                             message):
    with pytest.raises(StartupError, match=message):
        memory_node({'enabled': True, 'robot_profile': PROFILE,
                     'database_path': str(tmp_path / 'memory.sqlite3'), **parameters})
