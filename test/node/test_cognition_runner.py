# SPDX-License-Identifier: Apache-2.0
"""
EpisodeRunner and the acknowledgement rule, driven in-process with a stand-in memory node.

The stand-in answers immediately (or not at all, like a call whose deadline
expired), so each coroutine runs to its end without an executor. The real
services, deadlines and processes are covered by test_simulation.py.
"""

import json

from mira_memory.cognition.episodes import AutonomousEpisode, OperatorEpisode, WorkingMemory
from mira_memory.cognition.runner import acknowledgement, CALL_ATTEMPTS, call_with_retries
from mira_memory.cognition.runner import EpisodeRunner
from mira_memory.cognition.scenario import ToolCall
from mira_memory.srv import RecallMemory, Remember
import pytest

pytestmark = pytest.mark.ros

FACT = {
    'kind': 'fact', 'subject': 'Ada', 'predicate': 'favourite_drink', 'value': 'green tea',
    'related_entity': None, 'related_role': None, 'evidence': 'Ada drinks green tea',
}


class Logger:

    def warning(self, text):
        pass


class Node:

    def get_logger(self):
        return Logger()


class Publisher:

    def __init__(self):
        self.messages = []

    def publish(self, message):
        self.messages.append(message)


class StandInMemory:
    """Answers from scripted replies; None stands for a call that got no reply in time."""

    def __init__(self, recall_replies=(), remember_replies=(), with_remember=True):
        self.recall_replies = list(recall_replies)
        self.remember_replies = list(remember_replies)
        self.has_remember = with_remember
        self.recalls = []
        self.remembers = []

    async def recall(self, query):
        self.recalls.append(query)
        return self.recall_replies.pop(0)

    async def remember(self, request):
        self.remembers.append(request)
        return self.remember_replies.pop(0)


def run(coroutine):
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError('the coroutine waited for something the stand-in never gives')


def recall_reply(status='found', reason='exact_match', text='ENT1 Ada'):
    return RecallMemory.Response(status=status, reason=reason, text=text)


def remember_reply(status='applied', outcome='created', reason='', memory_id='MEM7'):
    return Remember.Response(status=status, outcome=outcome, reason=reason, memory_id=memory_id)


def call(tool, arguments):
    return ToolCall(tool, json.dumps(arguments) if isinstance(arguments, dict) else arguments)


def operator_turn(utterance='Ada drinks green tea every day'):
    episode = OperatorEpisode('e1')
    return episode, episode.begin_turn('t1', utterance)


def runner(memory, working_memory=None):
    publisher = Publisher()
    return EpisodeRunner(Node(), memory, publisher, working_memory), publisher


def test_allowed_recall_reaches_the_service_and_is_published_and_remembered():
    memory = StandInMemory(recall_replies=[recall_reply()])
    working_memory = WorkingMemory()
    episode, _ = operator_turn()
    episode_runner, publisher = runner(memory, working_memory)
    [outcome] = run(episode_runner.run(episode, [call('recall_memory', {'query': 'Ada'})]))
    assert memory.recalls == ['Ada']
    assert (outcome.outcome, outcome.reason) == ('found', 'exact_match')
    assert outcome.text == 'recall_memory: found (exact_match)\nENT1 Ada'
    [message] = publisher.messages
    assert (message.episode_kind, message.episode_id, message.turn_id, message.tool) == (
        'operator', 'e1', 't1', 'recall_memory')
    assert working_memory.entries() == (outcome.text,)


def test_refused_call_never_reaches_the_service():
    memory = StandInMemory(recall_replies=[recall_reply(), recall_reply()])
    episode, _ = operator_turn()
    episode_runner, _ = runner(memory)
    calls = [call('recall_memory', {'query': name}) for name in ('Ada', 'Bob', 'Cy')]
    outcomes = run(episode_runner.run(episode, calls))
    assert memory.recalls == ['Ada', 'Bob']
    assert [(outcome.outcome, outcome.reason) for outcome in outcomes][-1] == (
        'refused', 'acquisition_budget_exhausted')


def test_a_call_without_reply_is_sent_again_identical_and_bounded():
    sent, retried = [], []
    replies = [None, None, remember_reply()]

    async def call_once():
        sent.append('the same request')
        return replies.pop(0)
    assert run(call_with_retries(call_once, on_retry=retried.append)) == remember_reply()
    assert (len(sent), retried) == (3, [1, 2])
    # Bounded: CALL_ATTEMPTS in all, then no result.
    sent.clear()
    replies = [None] * (CALL_ATTEMPTS + 1)
    assert run(call_with_retries(call_once)) is None
    assert len(sent) == CALL_ATTEMPTS


def test_remember_without_any_reply_is_no_result_and_no_claim():
    # MemoryTools already sent it CALL_ATTEMPTS times; the runner sends nothing more.
    memory = StandInMemory(remember_replies=[None])
    episode, turn = operator_turn()
    episode_runner, _ = runner(memory)
    outcomes = run(episode_runner.run(episode, [call('remember', FACT)]))
    assert len(memory.remembers) == 1
    assert [(outcome.outcome, outcome.reason) for outcome in outcomes] == [
        ('no_result', 'no_result')]
    line, memory_id = acknowledgement(turn, outcomes)
    assert 'stored' in line and 'could not confirm' in line and memory_id == ''


def test_created_reply_is_acknowledged_with_its_id():
    memory = StandInMemory(remember_replies=[remember_reply()])
    episode, turn = operator_turn()
    episode_runner, _ = runner(memory)
    outcomes = run(episode_runner.run(episode, [call('remember', FACT)]))
    assert acknowledgement(turn, outcomes) == ('assistant: stored MEM7', 'MEM7')


def test_rejected_reply_is_acknowledged_with_its_reason():
    memory = StandInMemory(remember_replies=[remember_reply(
        status='rejected', outcome='', reason='value_not_supported', memory_id='')])
    episode, turn = operator_turn()
    episode_runner, _ = runner(memory)
    outcomes = run(episode_runner.run(episode, [call('remember', FACT)]))
    assert acknowledgement(turn, outcomes) == (
        'assistant: I did not store that (value_not_supported)', '')


def test_malformed_remember_is_refused_without_a_call_and_not_acknowledged_as_stored():
    memory = StandInMemory()
    episode, turn = operator_turn()
    episode_runner, _ = runner(memory)
    outcomes = run(episode_runner.run(episode, [call('remember', '{"kind": "fact"')]))
    assert memory.remembers == []
    assert acknowledgement(turn, outcomes) == (
        'assistant: I did not store that (invalid_tool_arguments)', '')


def test_a_turn_without_remember_has_no_acknowledgement():
    memory = StandInMemory(recall_replies=[recall_reply()])
    episode, turn = operator_turn()
    episode_runner, _ = runner(memory)
    outcomes = run(episode_runner.run(episode, [call('recall_memory', {'query': 'Ada'})]))
    assert acknowledgement(turn, outcomes) == ('', '')


def test_autonomous_remember_is_refused_without_a_remember_client():
    memory = StandInMemory(with_remember=False)
    episode_runner, publisher = runner(memory)
    episode = AutonomousEpisode('a1', trigger='person seen')
    [outcome] = run(episode_runner.run(episode, [call('remember', FACT)]))
    assert (outcome.outcome, outcome.reason) == ('refused', 'tool_unavailable')
    assert memory.remembers == []
    assert (publisher.messages[0].episode_kind, publisher.messages[0].turn_id) == (
        'autonomous', '')


def test_operator_episode_needs_a_runner_with_a_remember_client():
    episode, _ = operator_turn()
    episode_runner, _ = runner(StandInMemory(with_remember=False))
    with pytest.raises(ValueError, match='remember client'):
        run(episode_runner.run(episode, []))
