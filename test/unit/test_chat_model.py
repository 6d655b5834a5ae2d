# SPDX-License-Identifier: Apache-2.0
"""
cognition/chat.py through the real openai client over real HTTP, against a scripted server.

No ROS here: the tool calls run through a real OperatorEpisode (the same
planning the node uses); calls it allows get a canned service result, since
the memory node is the ROS tests' business (test_model_cognition.py).
"""

import asyncio
import json
import pathlib
from types import SimpleNamespace

from helpers import chat_server
from helpers.chat_server import ChatServer, Hang, Raw, refusal, Status, text, tool_calls
from mira_memory.cognition import chat
from mira_memory.cognition import tools
from mira_memory.cognition.episodes import Allowed, OperatorEpisode
import pytest

pytest.importorskip('openai', reason='the openai package is not installed (tools/bootstrap '
                    'installs it); the scripted model does not need it')

PROMPT = (pathlib.Path(__file__).resolve().parents[2] / 'config' / 'model' /
          'system_prompt.md')
UTTERANCE = 'Ada Lovelace prefers green tea.'
REMEMBER_ARGS = {
    'kind': 'preference', 'subject': 'Ada Lovelace', 'predicate': 'prefers_drink',
    'value': 'green tea', 'related_entity': None, 'related_role': None,
    'evidence': 'Ada Lovelace prefers green tea'}
RECALL_MISS = 'recall_memory: miss (no_exact_match)\nno entity is named exactly that'


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    for name, value in chat_server.LOOPBACK_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def server():
    running = ChatServer()
    yield running
    running.close()


def _model(base_url, timeout_s=20.0, api_key='test-key'):
    return chat.OpenAIChatModel(base_url=base_url, model='test-model', api_key=api_key,
                                timeout_s=timeout_s, temperature=0.25)


class Turn:
    """One operator turn run through run_turn, with tools planned by a real episode."""

    def __init__(self, model, episode=None, max_tool_rounds=chat.DEFAULT_MAX_TOOL_ROUNDS):
        self.model = model
        self.episode = episode or OperatorEpisode('e1')
        self.max_tool_rounds = max_tool_rounds
        self.calls = []

    async def _complete(self, messages, offered):
        return self.model.complete(messages, offered)

    async def _run_tools(self, calls):
        outcomes = []
        for call in calls:
            self.calls.append(call)
            plan = self.episode.plan_call(call.tool, call.arguments)
            if not isinstance(plan, Allowed):
                outcomes.append(SimpleNamespace(text=plan.text, reason=plan.reason))
            elif plan.tool == tools.RECALL_MEMORY:
                outcomes.append(SimpleNamespace(text=RECALL_MISS, reason='no_exact_match'))
            else:
                self.episode.current_turn.record_remember_result('applied', 'created', 'MEM1')
                outcomes.append(SimpleNamespace(text=tools.remember_result_text(
                    'applied', 'created', '', 'MEM1', [], ''), reason=''))
        return outcomes

    def run(self, utterance=UTTERANCE, working_memory=('operator e0/t1: hello',),
            turn_id='t1'):
        self.episode.begin_turn(turn_id, utterance)
        return asyncio.run(chat.run_turn(
            self._complete, self._run_tools, chat.load_system_prompt(PROMPT),
            working_memory, utterance, chat.chat_tools(tools.OPERATOR), self.max_tool_rounds))


def _tool_messages(body):
    return [message for message in body['messages'] if message['role'] == 'tool']


# The request ---------------------------------------------------------------------


def test_the_tools_are_the_strict_definitions_in_chat_form():
    offered = chat.chat_tools(tools.OPERATOR)
    assert [tool['function']['name'] for tool in offered] == ['recall_memory', 'remember']
    for tool, definition in zip(offered, (tools.RECALL_MEMORY_TOOL, tools.REMEMBER_TOOL)):
        function = tool['function']
        assert tool['type'] == 'function'
        assert function['strict'] is True
        assert function['parameters'] == definition['parameters']
        assert function['description'] == definition['description']
        parameters = function['parameters']
        assert parameters['additionalProperties'] is False
        assert sorted(parameters['required']) == sorted(parameters['properties'])
    properties = offered[1]['function']['parameters']['properties']
    assert properties['related_entity']['type'] == ['string', 'null']
    assert properties['related_role']['type'] == ['string', 'null']
    assert chat.chat_tools(tools.AUTONOMOUS) == offered[:1]


def test_the_request_carries_prompt_working_memory_utterance_and_strict_tools(server):
    server.script(text('Noted.'))
    result = Turn(_model(server.base_url)).run(
        working_memory=('operator e0/t1: hello', 'assistant: Hello!'))
    assert result == chat.TurnResult(chat.REPLIED, 'Noted.', 0)
    (request,) = server.requests
    assert request['path'] == '/v1/chat/completions'
    assert request['headers']['authorization'] == 'Bearer test-key'
    body = request['body']
    assert body['model'] == 'test-model'
    assert body['temperature'] == 0.25
    assert body['tool_choice'] == 'auto'
    assert body['parallel_tool_calls'] is False
    # The strict schemas exactly as defined, nothing dropped or added on the way.
    assert body['tools'] == chat.chat_tools(tools.OPERATOR)
    system, user = body['messages']
    assert system['role'] == 'system'
    assert system['content'] == (
        f'{PROMPT.read_text().strip()}\n\n{chat.WORKING_MEMORY_HEADING}\n'
        '- operator e0/t1: hello\n- assistant: Hello!')
    assert user == {'role': 'user', 'content': UTTERANCE}


def test_the_system_prompt_explains_memory_and_acknowledgement():
    prompt = ' '.join(chat.load_system_prompt(PROMPT).split())
    for phrase in ('Working memory is volatile', 'may be stale', 'never evidence',
                   "Only the runtime's result confirms a write", 'applied (created)',
                   'At most one remember call'):
        assert phrase in prompt


def test_empty_working_memory_is_said_so(server):
    server.script(text('Hi.'))
    Turn(_model(server.base_url)).run(working_memory=())
    assert server.bodies()[0]['messages'][0]['content'].endswith(
        f'{chat.WORKING_MEMORY_HEADING}\n{chat.EMPTY_WORKING_MEMORY}')


def test_tool_results_go_back_to_the_model_as_tool_messages(server):
    server.script(
        tool_calls(('recall_memory', {'query': 'Ada Lovelace'})),
        tool_calls(('remember', REMEMBER_ARGS)),
        text('I have stored that Ada Lovelace prefers green tea.'))
    turn = Turn(_model(server.base_url))
    result = turn.run()
    assert result.reason == chat.REPLIED
    assert result.tool_rounds == 2
    assert result.text == 'I have stored that Ada Lovelace prefers green tea.'
    first, second, third = server.bodies()
    # The whole conversation of the turn is sent again each round.
    assert second['messages'][:2] == first['messages']
    assistant = second['messages'][2]
    assert assistant['role'] == 'assistant'
    (call,) = assistant['tool_calls']
    assert call['function'] == {'name': 'recall_memory',
                                'arguments': json.dumps({'query': 'Ada Lovelace'})}
    assert second['messages'][3] == {
        'role': 'tool', 'tool_call_id': call['id'], 'content': RECALL_MISS}
    assert _tool_messages(third)[1]['content'] == (
        'remember: applied (created): stored as new durable memory MEM1.')
    assert [call.tool for call in turn.calls] == ['recall_memory', 'remember']


# Bad model output: every case gets a defined result ------------------------------


def _refusal_after(server, *calls):
    """Script one reply with these calls, then text; return the tool message contents."""
    server.script(tool_calls(*calls), text('ok'))
    turn = Turn(_model(server.base_url))
    result = turn.run()
    assert result.reason == chat.REPLIED
    return [message['content'] for message in _tool_messages(server.bodies()[1])], turn


def test_unknown_tool_is_refused_to_the_model_without_repeating_its_name(server):
    (content,), _ = _refusal_after(server, ('delete_everything', {'query': 'x'}))
    assert content.startswith('tool call: refused (unknown_tool)')
    assert 'delete_everything' not in content


@pytest.mark.parametrize('arguments', [
    '{"query": "Ada Lovelace"',            # not JSON
    '["Ada Lovelace"]',                     # not an object
    '{}',                                   # missing property
    '{"query": null}',                      # wrong type
    '{"query": "Ada", "limit": 5}',         # extra property
])
def test_malformed_or_extra_recall_arguments_are_invalid_tool_arguments(server, arguments):
    (content,), _ = _refusal_after(server, ('recall_memory', arguments))
    assert content.startswith('recall_memory: refused (invalid_tool_arguments)')
    assert 'Ada' not in content


def test_extra_remember_argument_is_invalid_and_does_not_use_the_turns_remember(server):
    extra = dict(REMEMBER_ARGS, confidence='high')
    contents, turn = _refusal_after(
        server, ('remember', json.dumps(extra)), ('remember', REMEMBER_ARGS))
    assert contents[0].startswith('remember: refused (invalid_tool_arguments)')
    assert 'green tea' not in contents[0]
    assert contents[1].startswith('remember: applied (created)')


def test_a_second_remember_in_one_turn_is_refused(server):
    second = dict(REMEMBER_ARGS, value='tea', evidence='Ada Lovelace prefers green tea')
    contents, _ = _refusal_after(
        server, ('remember', REMEMBER_ARGS), ('remember', second))
    assert contents[0].startswith('remember: applied (created)')
    assert contents[1].startswith('remember: refused (remember_limit_reached)')


def test_a_second_remember_in_a_later_round_of_the_turn_is_refused(server):
    server.script(tool_calls(('remember', REMEMBER_ARGS)),
                  tool_calls(('remember', dict(REMEMBER_ARGS, value='tea'))),
                  text('ok'))
    Turn(_model(server.base_url)).run()
    (message,) = _tool_messages(server.bodies()[2])[1:]
    assert message['content'].startswith('remember: refused (remember_limit_reached)')


def test_tool_calls_after_the_round_limit_are_not_run(server):
    server.script(*[tool_calls(('recall_memory', {'query': f'name {n}'})) for n in range(3)])
    turn = Turn(_model(server.base_url), max_tool_rounds=2)
    result = turn.run()
    assert result.reason == tools.TOOL_ROUND_LIMIT
    assert result.text == chat.REPLY_TEXTS[tools.TOOL_ROUND_LIMIT]
    assert result.tool_rounds == 2
    assert [call.arguments for call in result.unexecuted_calls] == ['{"query": "name 2"}']
    assert len(turn.calls) == 2
    assert len(server.requests) == 3


@pytest.mark.parametrize('content', ['', '   \n'])
def test_an_empty_reply_ends_the_turn_with_a_defined_sentence(server, content):
    server.script(text(content))
    result = Turn(_model(server.base_url)).run()
    assert result == chat.TurnResult(chat.EMPTY_REPLY, chat.REPLY_TEXTS[chat.EMPTY_REPLY], 0)


def test_a_refusal_ends_the_turn_with_a_defined_sentence(server):
    server.script(refusal('I cannot help with that.'))
    result = Turn(_model(server.base_url)).run()
    assert result == chat.TurnResult(
        chat.MODEL_REFUSAL, chat.REPLY_TEXTS[chat.MODEL_REFUSAL], 0)


# The model unavailable: one clear sentence, no retries ------------------------------


def _unavailable(model, turn=None):
    turn = turn or Turn(model)
    result = turn.run()
    assert result.reason == chat.MODEL_UNAVAILABLE
    assert result.text == chat.REPLY_TEXTS[chat.MODEL_UNAVAILABLE]
    assert turn.calls == []
    return result.detail.split(':')[0]


@pytest.mark.parametrize('code, detail', [
    (400, chat.HTTP_ERROR), (401, chat.HTTP_ERROR), (404, chat.HTTP_ERROR),
    (429, chat.RATE_LIMITED), (500, chat.HTTP_ERROR), (503, chat.HTTP_ERROR)])
def test_http_errors_are_the_model_unavailable_without_retry(server, code, detail):
    server.script(Status(code, headers={'Retry-After': '0'}))
    assert _unavailable(_model(server.base_url)) == detail
    assert len(server.requests) == 1


def test_a_timeout_is_the_model_unavailable(server):
    server.script(Hang(30.0))
    assert _unavailable(_model(server.base_url, timeout_s=0.5)) == chat.TIMEOUT


def test_connection_refused_is_the_model_unavailable():
    assert _unavailable(_model(chat_server.closed_port_url())) == chat.UNREACHABLE


@pytest.mark.parametrize('body', ['this is not JSON', '{"object": "chat.completion"}',
                                  '{"choices": []}'])
def test_a_response_that_is_no_completion_is_the_model_unavailable(server, body):
    server.script(Raw(body))
    assert _unavailable(_model(server.base_url)) == chat.BAD_RESPONSE


def test_the_model_failing_mid_turn_keeps_the_results_so_far(server):
    server.script(tool_calls(('recall_memory', {'query': 'Ada Lovelace'})), Status(502))
    turn = Turn(_model(server.base_url))
    result = turn.run()
    assert (result.reason, result.tool_rounds) == (chat.MODEL_UNAVAILABLE, 1)
    assert [call.tool for call in turn.calls] == ['recall_memory']


def test_backend_parameters_are_checked():
    for kwargs, message in (
            ({'base_url': ''}, 'model_endpoint'), ({'model': ''}, 'model_name'),
            ({'timeout_s': 0}, 'request_timeout_s')):
        arguments = {'base_url': 'http://127.0.0.1:9/v1', 'model': 'm', 'api_key': '',
                     'timeout_s': 1.0, 'temperature': 0.0}
        arguments.update(kwargs)
        with pytest.raises(ValueError, match=message):
            chat.OpenAIChatModel(**arguments)


def test_a_missing_or_empty_prompt_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match='cannot read'):
        chat.load_system_prompt(tmp_path / 'missing.md')
    (tmp_path / 'empty.md').write_text('  \n')
    with pytest.raises(ValueError, match='is empty'):
        chat.load_system_prompt(tmp_path / 'empty.md')
