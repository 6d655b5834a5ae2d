# SPDX-License-Identifier: Apache-2.0
"""
Cognition with model=openai_compatible, end to end, as real processes.

A real memory node, a real cognition node process whose model is the
scripted chat-completions server of chat_server.py on 127.0.0.1 (reached by
the real openai client over HTTP), real OperatorUtterance messages, and
operator_chat driven through its stdin. Waits are deadlines, never timings.
"""

import itertools
import json
import os
import pathlib
import subprocess
import sys

from helpers import chat_server
from helpers.chat_server import ChatServer, Status, text, tool_calls
from helpers.memory_services import MemoryServices, unique
from helpers.rosutil import executable, NodeProcess
from mira_memory.cognition import chat
from mira_memory.cognition import tools
from mira_memory.msg import OperatorUtterance, ToolResult
from mira_memory.ros.operator_topics import RepeatedTurn
from mira_memory.wire import HISTORY_SUBSCRIBER_QOS
import pytest

pytestmark = pytest.mark.ros

WAIT = 120.0
KEY_ENV = 'MIRA_TEST_MODEL_KEY'
KEY = 'sk-test-never-logged-4711'
MAX_TOOL_ROUNDS = 2
_episodes = itertools.count(1)


class Rig:
    """Memory node + model-backed cognition in one namespace, and a result watcher."""

    def __init__(self, ros, memory, server, directory):
        self.ros = ros
        self.memory = memory
        self.server = server
        self.namespace = memory.namespace
        self.services = MemoryServices(ros, memory.prefix)
        self.results = []
        self._subscription = ros.node.create_subscription(
            ToolResult, f'{self.namespace}/cognition/tool_results', self.results.append,
            HISTORY_SUBSCRIBER_QOS)
        self._publisher = ros.node.create_publisher(
            OperatorUtterance, f'{self.namespace}/operator/utterance', 10)
        self.cognition = NodeProcess('cognition_node', namespace=self.namespace, parameters={
            'model': 'openai_compatible', 'model_endpoint': server.base_url,
            'model_name': 'test-model', 'api_key_env': KEY_ENV, 'request_timeout_s': 20.0,
            'max_tool_rounds': MAX_TOOL_ROUNDS, 'temperature': 0.0}, directory=directory)
        self.spin_until(self._subscribed, 'cognition to subscribe to operator/utterance')

    def _subscribed(self):
        infos = self.ros.node.get_subscriptions_info_by_topic(self._publisher.topic_name)
        present = any(info.node_name == 'cognition' for info in infos)
        return present and self._publisher.get_subscription_count() >= len(infos)

    def spin_until(self, condition, what, every_step=None):
        self.ros.spin_until(condition, what, timeout=WAIT, failure=self._failure, logs=self.logs,
                            every_step=every_step)

    def _failure(self):
        if self.cognition.process.poll() is not None:
            return f'cognition exited:\n{self.logs()}'
        return None

    def say(self, episode_id, turn_id, utterance):
        """Publish one operator turn; return (tool results, end-of-turn marker)."""
        turn = RepeatedTurn(self._publisher, OperatorUtterance(
            episode_id=episode_id, turn_id=turn_id, text=utterance))
        self.spin_until(lambda: self.marker(episode_id, turn_id), f'turn {turn_id}',
                        every_step=turn.send_again_if_due)
        results = [message for message in self.results
                   if (message.episode_id, message.turn_id) == (episode_id, turn_id)]
        return results[:-1], self.marker(episode_id, turn_id)

    def marker(self, episode_id, turn_id):
        for message in self.results:
            if (message.outcome, message.episode_id, message.turn_id) == (
                    ToolResult.OUTCOME_TURN_COMPLETE, episode_id, turn_id):
                return message
        return None

    def logs(self):
        return f'--- cognition\n{self.cognition.output()}\n--- memory\n{self.memory.output()}'

    def close(self):
        self.cognition.stop()
        self.ros.node.destroy_subscription(self._subscription)
        self.ros.node.destroy_publisher(self._publisher)


@pytest.fixture(scope='module')
def server():
    chat_server.no_proxies()
    running = ChatServer()
    yield running
    running.close()


@pytest.fixture(scope='module')
def rig(ros, module_memory_node, shared_memory_node, server):
    os.environ[KEY_ENV] = KEY
    started = Rig(ros, shared_memory_node, server, module_memory_node.directory)
    yield started
    started.close()


def _episode():
    return f'model-{os.getpid()}-{next(_episodes)}'


def _remember_args(name, value, evidence):
    return {'kind': 'preference', 'subject': name, 'predicate': 'prefers_drink',
            'value': value, 'related_entity': None, 'related_role': None,
            'evidence': evidence}


def _new_requests(server, before, count):
    return server.wait_for_requests(before + count)[before:]


def test_operator_turn_runs_recall_and_remember_through_the_model(rig):
    name = unique('Ada Lovelace')
    rig.services.entity(name)
    utterance = f'{name} prefers green tea.'
    before = len(rig.server.requests)
    rig.server.script(
        tool_calls(('recall_memory', {'query': name})),
        tool_calls(('remember', _remember_args(name, 'green tea', f'{name} prefers green tea'))),
        text('I will remember that.'))
    episode = _episode()
    results, marker = rig.say(episode, 't1', utterance)

    recall, remember = results
    assert (recall.tool, recall.outcome, recall.reason) == (
        'recall_memory', 'found', 'exact_match')
    assert (remember.tool, remember.outcome) == ('remember', 'applied/created')
    memory_id = remember.memory_id
    assert marker.reply == 'I will remember that.'
    assert marker.reason == ''
    assert (marker.text, marker.memory_id) == (f'assistant: stored {memory_id}', memory_id)
    stored = rig.services.show(memory_id).memory
    assert (stored.summary, stored.value, stored.source_kind) == (
        f'{name} prefers green tea', 'green tea', 'operator_statement')

    first, second, third = _new_requests(rig.server, before, 3)
    assert first['model'] == 'test-model'
    assert first['tools'] == chat.chat_tools(tools.OPERATOR)
    system, user = first['messages']
    prompt = chat.load_system_prompt(
        pathlib.Path(executable('cognition_node')).parents[2] / 'share' / 'mira_memory' /
        'config' / 'model' / 'system_prompt.md')
    assert system['content'].startswith(prompt)
    assert user == {'role': 'user', 'content': utterance}
    assert second['messages'][-1]['role'] == 'tool'
    assert second['messages'][-1]['content'] == recall.text
    assert third['messages'][-1]['content'] == remember.text
    assert all(request['headers']['authorization'] == f'Bearer {KEY}'
               for request in rig.server.requests[before:])
    assert KEY not in rig.cognition.output()

    # The next turn carries this one in working memory, the reply included.
    rig.server.script(text(f'You told me {name} prefers green tea.'))
    _, marker = rig.say(episode, 't2', f'What does {name} like?')
    (request,) = _new_requests(rig.server, before + 3, 1)
    working_memory = request['messages'][0]['content'].split(chat.WORKING_MEMORY_HEADING)[1]
    for entry in (f'- operator {episode}/t1: {utterance}', f'- {recall.text}',
                  '- assistant: I will remember that.', f'- assistant: stored {memory_id}'):
        assert entry in working_memory
    assert f'{episode}/t2' not in working_memory
    assert marker.reply == f'You told me {name} prefers green tea.'
    assert marker.text == ''


def test_the_runtime_not_the_model_acknowledges(rig):
    # The model claims a write that the memory node rejected.
    name = unique('Grace Hopper')
    rig.services.entity(name)
    rig.server.script(
        tool_calls(('remember', _remember_args(name, 'coffee', f'{name} likes tea'))),
        text('Stored!'))
    results, marker = rig.say(_episode(), 't1', f'{name} likes tea.')
    (remember,) = results
    assert (remember.outcome, remember.reason) == ('rejected', 'value_not_supported')
    assert marker.reply == 'Stored!'
    assert marker.text == 'assistant: I did not store that (value_not_supported)'
    assert marker.memory_id == ''


def test_bad_tool_calls_are_refused_to_the_model_and_cognition_keeps_serving(rig):
    name = unique('Alan Turing')
    rig.services.entity(name)
    counts = rig.services.counts()
    arguments = _remember_args(name, 'tea', f'{name} likes tea')
    before = len(rig.server.requests)
    rig.server.script(
        tool_calls(('drop_table', {'query': name}), ('recall_memory', '{"query": '),
                   ('remember', dict(arguments, mood='happy'))),
        tool_calls(('remember', arguments), ('remember', dict(arguments, value='likes tea'))),
        text('Done.'))
    results, marker = rig.say(_episode(), 't1', f'{name} likes tea.')
    assert [(message.tool, message.outcome, message.reason) for message in results] == [
        ('', 'refused', 'unknown_tool'),
        ('recall_memory', 'refused', 'invalid_tool_arguments'),
        ('remember', 'refused', 'invalid_tool_arguments'),
        ('remember', 'applied/created', ''),
        ('remember', 'refused', 'remember_limit_reached')]
    assert marker.reply == 'Done.'
    second = _new_requests(rig.server, before, 3)[1]
    assert [message['content'] for message in second['messages'][-3:]] == [
        message.text for message in results[:3]]
    assert rig.services.counts()['memory_count'] == counts['memory_count'] + 1
    assert rig.cognition.process.poll() is None


def test_tool_calls_after_the_round_limit_are_refused_and_published(rig):
    rig.server.script(*[tool_calls(('recall_memory', {'query': f'nobody {n}'}))
                        for n in range(MAX_TOOL_ROUNDS + 1)])
    results, marker = rig.say(_episode(), 't1', 'Who is there?')
    assert [(message.outcome, message.reason) for message in results] == [
        ('miss', 'no_exact_match'), ('miss', 'no_exact_match'),
        ('refused', tools.TOOL_ROUND_LIMIT)]
    assert (marker.reason, marker.reply) == (
        tools.TOOL_ROUND_LIMIT, chat.REPLY_TEXTS[tools.TOOL_ROUND_LIMIT])


@pytest.mark.parametrize('answer', [Status(500), Status(429), Status(401),
                                    chat_server.Raw('not a completion')])
def test_an_unavailable_model_gets_a_clear_reply_and_memory_is_untouched(rig, answer):
    counts = rig.services.counts()
    rig.server.script(answer)
    name = unique('Ada Lovelace')
    results, marker = rig.say(_episode(), 't1', f'{name} prefers green tea.')
    assert results == []
    assert (marker.reason, marker.reply, marker.text) == (
        chat.MODEL_UNAVAILABLE, chat.REPLY_TEXTS[chat.MODEL_UNAVAILABLE], '')
    assert rig.services.counts() == counts
    assert 'the model is unavailable' in rig.cognition.output()


def test_empty_replies_and_refusals_are_published_as_such(rig):
    rig.server.script(text(''), chat_server.refusal('No.'))
    episode = _episode()
    _, empty = rig.say(episode, 't1', 'Hello?')
    _, refused = rig.say(episode, 't2', 'Hello again?')
    assert (empty.reason, empty.reply) == (chat.EMPTY_REPLY, chat.REPLY_TEXTS[chat.EMPTY_REPLY])
    assert (refused.reason, refused.reply) == (
        chat.MODEL_REFUSAL, chat.REPLY_TEXTS[chat.MODEL_REFUSAL])


def test_operator_chat_end_to_end(rig):
    name = unique('Katherine Johnson')
    before = len(rig.server.requests)
    evidence = f'{name} prefers green tea'
    rig.server.script(
        tool_calls(('remember', _remember_args(name, 'green tea', evidence))),
        text('Noted: she prefers green tea.'))
    lines = [f'memory entity add person "{name}"', 'memory find "unclosed', f'{evidence}.',
             'memory find "' + name + '"', '/quit']
    result = subprocess.run(
        [executable('operator_chat'), '--ros-args', '-r', f'__ns:={rig.namespace}'],
        input='\n'.join(lines) + '\n', capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 0, result.stderr + rig.logs()
    out = result.stdout
    assert 'created ENT' in out
    # A line the console cannot split gets the console's own answer; the chat goes on.
    assert 'usage error: missing closing quote' in result.stderr
    assert '  tool remember -> applied/created' in out, out + rig.logs()
    assert 'mira: Noted: she prefers green tea.' in out
    assert '  runtime: assistant: stored MEM' in out
    assert out.index('runtime: assistant: stored MEM') < out.rindex(name)
    (request, _) = _new_requests(rig.server, before, 2)
    user = request['messages'][1]
    assert user == {'role': 'user', 'content': f'{evidence}.'}
    episode = out.split('episode ', 1)[1].split(';', 1)[0]
    assert episode.startswith('chat-')
    # The turn went out as a real OperatorUtterance of that episode.
    rig.spin_until(lambda: any((message.episode_id, message.turn_id) == (episode, 't1')
                               for message in rig.results), "the chat turn's results")


@pytest.mark.parametrize('parameters, message', [
    ({'model': 'gpt'}, 'parameter model must be one of: scripted, openai_compatible'),
    ({'model': 'openai_compatible', 'model_endpoint': 'http://127.0.0.1:9/v1',
      'model_name': 'm', 'api_key_env': 'MIRA_TEST_UNSET_KEY'},
     'api_key_env names MIRA_TEST_UNSET_KEY, which is not set or empty'),
    ({'model': 'openai_compatible', 'model_name': 'm'}, 'model_endpoint is required'),
    ({'model': 'openai_compatible', 'model_endpoint': 'http://127.0.0.1:9/v1',
      'model_name': 'm', 'max_tool_rounds': 0}, 'max_tool_rounds must be at least 1'),
])
def test_a_bad_model_configuration_fails_startup_clearly(tmp_path, parameters, message):
    os.environ.pop('MIRA_TEST_UNSET_KEY', None)
    process = NodeProcess('cognition_node', namespace='/bad_model', parameters=parameters,
                          directory=tmp_path)
    assert process.wait(timeout=WAIT) == 1
    assert message in process.output()


def test_scripted_is_the_default_model(tmp_path):
    process = NodeProcess('cognition_node', namespace='/no_scenario', directory=tmp_path)
    assert process.wait(timeout=WAIT) == 1
    assert 'parameter scenario_file is required' in process.output()
    # The scripted path never loads the openai package.
    code = ('import sys; import mira_memory.cognition.node; '
            'print("openai" in sys.modules)')
    loaded = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout.strip().lower()) is False


def test_stopping_cognition_while_the_model_thinks_is_a_clean_exit(ros, server, tmp_path):
    # The request runs in a worker thread; SIGINT must not wait for it or fail.
    namespace = f'/model_stop_{os.getpid()}'
    process = NodeProcess('cognition_node', namespace=namespace, parameters={
        'model': 'openai_compatible', 'model_endpoint': server.base_url,
        'model_name': 'test-model', 'request_timeout_s': 600.0}, directory=tmp_path)
    publisher = ros.node.create_publisher(
        OperatorUtterance, f'{namespace}/operator/utterance', 10)
    try:
        before = len(server.requests)
        server.script(chat_server.Hang(600.0))
        ros.spin_until(lambda: publisher.get_subscription_count() > 0,
                       'cognition to subscribe to operator/utterance', timeout=WAIT,
                       logs=process.output)
        turn = RepeatedTurn(publisher, OperatorUtterance(episode_id='e1', turn_id='t1',
                                                         text='Hello?'))
        ros.spin_until(lambda: len(server.requests) > before, 'the model request',
                       timeout=WAIT, logs=process.output, every_step=turn.send_again_if_due)
        assert process.stop() == 0, process.output()
    finally:
        ros.node.destroy_publisher(publisher)
