# SPDX-License-Identifier: Apache-2.0
"""
A chat-completions model behind one operator turn: messages, the tool loop, failures.

ROS-free. The cognition node wires it: `complete` sends one request to the
model (OpenAIChatModel, or anything with the same method), `run_tools` runs a
list of tool calls through the episode and the memory services and returns
one outcome (with a .text for the model) per call. Both are awaited, so the
loop runs on whatever drives the coroutine: rclpy's executor in the node,
asyncio in tests.

One turn, as run_turn does it:

1. The request: the system prompt (config/model/system_prompt.md) with the
   bounded working memory appended, then the operator utterance as the user
   message, and the episode's tools in chat-completions form, each generated
   from the one strict definition in cognition/tools.py.
2. A reply with tool calls: the calls run in order (unknown tools, malformed
   or extra arguments and a second remember are answered by the episode's
   refusals, which go back to the model like any result); every result goes
   back as a tool message; ask again. At most max_tool_rounds replies get
   their calls run; calls in a reply after that are not run (TOOL_ROUND_LIMIT).
3. A reply with text ends the turn: that text is the assistant's reply.
   An empty reply, a refusal, or a model that cannot be reached ends the
   turn with a fixed sentence and a reason token instead.

Nothing here reads or writes memory itself, and no text built here contains
the operator's words or the model's arguments except the messages sent to
the model.
"""

from dataclasses import dataclass
import itertools
import json
import pathlib
from typing import Optional, Tuple

from mira_memory.cognition.tools import TOOL_ROUND_LIMIT, tools_for_episode

# Turn outcomes (the end-of-turn marker's reason; empty for a normal reply).
REPLIED = ''
MODEL_UNAVAILABLE = 'model_unavailable'
MODEL_REFUSAL = 'model_refusal'
EMPTY_REPLY = 'empty_reply'
# TOOL_ROUND_LIMIT (from cognition/tools.py): a reply with tool calls after the last tool round.

# Why the model is unavailable (logged; the operator gets one sentence).
TIMEOUT = 'timeout'
UNREACHABLE = 'unreachable'
RATE_LIMITED = 'rate_limited'
HTTP_ERROR = 'http_error'
BAD_RESPONSE = 'bad_response'

REPLY_TEXTS = {
    # Says nothing about storing: a remember of an earlier tool round of the same
    # turn may have been applied, and the acknowledgement line reports that.
    MODEL_UNAVAILABLE: (
        'The model is unavailable, so I cannot answer right now. Please try again later.'),
    MODEL_REFUSAL: 'The model declined to answer this turn.',
    EMPTY_REPLY: 'The model gave no reply this turn.',
    TOOL_ROUND_LIMIT: (
        'I stopped this turn: the model kept calling tools past the limit of tool rounds.'),
}

DEFAULT_MAX_TOOL_ROUNDS = 4
WORKING_MEMORY_HEADING = '# Working memory (volatile recent context, oldest first)'
EMPTY_WORKING_MEMORY = '(empty)'


class ModelUnavailable(Exception):
    """The model could not be asked: timeout, no connection, HTTP error, bad response."""

    def __init__(self, reason, detail):
        super().__init__(f'{reason}: {detail}')
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ModelToolCall:
    """One tool call of a model reply; arguments are the raw JSON text."""

    call_id: str
    tool: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    """What the model answered: text, a refusal, and/or tool calls."""

    content: Optional[str]
    refusal: Optional[str]
    tool_calls: Tuple[ModelToolCall, ...]
    finish_reason: Optional[str] = None


@dataclass(frozen=True)
class TurnResult:
    """
    How a turn ended: reason (REPLIED or an outcome token), the reply text, rounds.

    detail, for the log only: why the model was unavailable ("http_error: HTTP 503").
    """

    reason: str
    text: str
    tool_rounds: int
    unexecuted_calls: Tuple[ModelToolCall, ...] = ()
    detail: str = ''


def chat_completion_tool(tool):
    """
    Return a cognition/tools.py definition in chat-completions form.

    The definition is the flat form ({type, name, description, strict,
    parameters}); chat completions nest the same fields under "function".
    The parameters object is passed through as it is: the strict schema sent
    to the model is the one the arguments are parsed against.
    """
    return {
        'type': 'function',
        'function': {
            'name': tool['name'],
            'description': tool['description'],
            'parameters': tool['parameters'],
            'strict': tool['strict'],
        },
    }


def chat_tools(episode_kind):
    """Return the tools offered to an episode of this kind, in chat-completions form."""
    return [chat_completion_tool(tool) for tool in tools_for_episode(episode_kind)]


def load_system_prompt(path):
    """Read the system prompt file; raise ValueError when it is missing or empty."""
    try:
        text = pathlib.Path(path).read_text(encoding='utf-8').strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f'cannot read the system prompt file {path}: {error}') from None
    if not text:
        raise ValueError(f'the system prompt file {path} is empty')
    return text


def build_messages(system_prompt, working_memory, utterance):
    """
    Return the opening messages of one operator turn.

    One system message, the prompt followed by the working memory (several
    system messages, or one after a user message, are refused by some local
    servers' chat templates), then the operator's utterance, verbatim, as the
    only user message.
    """
    entries = '\n'.join(f'- {entry}' for entry in working_memory) or EMPTY_WORKING_MEMORY
    return [
        {'role': 'system',
         'content': f'{system_prompt}\n\n{WORKING_MEMORY_HEADING}\n{entries}'},
        {'role': 'user', 'content': utterance},
    ]


def _assistant_message(reply):
    return {
        'role': 'assistant',
        'content': reply.content,
        'tool_calls': [
            {'id': call.call_id, 'type': 'function',
             'function': {'name': call.tool, 'arguments': call.arguments}}
            for call in reply.tool_calls],
    }


async def run_turn(complete, run_tools, system_prompt, working_memory, utterance, tools,
                   max_tool_rounds=DEFAULT_MAX_TOOL_ROUNDS):
    """
    Run one operator turn against the model; return a TurnResult.

    complete(messages, tools) -> awaitable ModelReply, raising
    ModelUnavailable; run_tools(calls) -> awaitable list of outcomes, one per
    ModelToolCall, each with the .text the model gets back. The model never
    sees an exception: everything it does wrong gets a result.
    """
    messages = build_messages(system_prompt, working_memory, utterance)
    rounds = 0
    while True:
        try:
            reply = await complete(messages, tools)
        except ModelUnavailable as error:
            return TurnResult(MODEL_UNAVAILABLE, REPLY_TEXTS[MODEL_UNAVAILABLE], rounds,
                              detail=str(error))
        if reply.tool_calls:
            if rounds >= max_tool_rounds:
                return TurnResult(TOOL_ROUND_LIMIT, REPLY_TEXTS[TOOL_ROUND_LIMIT], rounds,
                                  unexecuted_calls=reply.tool_calls)
            rounds += 1
            messages.append(_assistant_message(reply))
            outcomes = await run_tools(reply.tool_calls)
            for call, outcome in zip(reply.tool_calls, outcomes):
                messages.append(
                    {'role': 'tool', 'tool_call_id': call.call_id, 'content': outcome.text})
            continue
        if reply.refusal or reply.finish_reason == 'content_filter':
            return TurnResult(MODEL_REFUSAL, REPLY_TEXTS[MODEL_REFUSAL], rounds)
        text = (reply.content or '').strip()
        if not text:
            return TurnResult(EMPTY_REPLY, REPLY_TEXTS[EMPTY_REPLY], rounds)
        return TurnResult(REPLIED, text, rounds)


class OpenAIChatModel:
    """
    A chat-completions endpoint through the openai client library.

    The library is imported here, when this backend is constructed, so the
    scripted model and the memory node never need it. No retries: a robot's
    operator gets "the model is unavailable" within one request timeout
    rather than after the library's backoff.
    """

    def __init__(self, *, base_url, model, api_key, timeout_s, temperature):
        import openai  # only this backend needs it
        self._openai = openai
        if not base_url:
            raise ValueError('model_endpoint is required for the openai_compatible model')
        if not model:
            raise ValueError('model_name is required for the openai_compatible model')
        if not timeout_s > 0:
            raise ValueError('request_timeout_s must be positive')
        self.model = model
        self.temperature = temperature
        # Local servers need no key, but the library refuses an empty one.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or 'no-key', timeout=timeout_s,
            max_retries=0)
        self._ids = itertools.count(1)

    def complete(self, messages, tools):
        """Send one chat-completions request; return a ModelReply or raise ModelUnavailable."""
        openai = self._openai
        try:
            completion = self._client.chat.completions.create(
                model=self.model, messages=messages, tools=tools, tool_choice='auto',
                parallel_tool_calls=False, temperature=self.temperature)
        except openai.APITimeoutError:
            raise ModelUnavailable(TIMEOUT, 'no answer within the request timeout') from None
        except openai.APIConnectionError:
            raise ModelUnavailable(UNREACHABLE, 'cannot connect to the endpoint') from None
        except openai.RateLimitError:
            raise ModelUnavailable(RATE_LIMITED, 'HTTP 429') from None
        except openai.APIStatusError as error:
            # The body is not logged: a server may echo the request in it.
            raise ModelUnavailable(HTTP_ERROR, f'HTTP {error.status_code}') from None
        except (openai.APIResponseValidationError, ValueError):
            raise ModelUnavailable(BAD_RESPONSE, 'the response is not a chat completion') \
                from None
        return self._reply(completion)

    def _reply(self, completion):
        choices = getattr(completion, 'choices', None)
        if not choices:
            raise ModelUnavailable(BAD_RESPONSE, 'the response has no choices')
        choice = choices[0]
        message = choice.message
        calls = []
        for call in message.tool_calls or ():
            function = getattr(call, 'function', None)
            # A call that is not a function call names no tool the runtime knows.
            name = getattr(function, 'name', None) or ''
            arguments = getattr(function, 'arguments', None)
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            calls.append(ModelToolCall(call.id or f'call_{next(self._ids)}', name, arguments))
        return ModelReply(
            content=message.content, refusal=getattr(message, 'refusal', None),
            tool_calls=tuple(calls), finish_reason=choice.finish_reason)
