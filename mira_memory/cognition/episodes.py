# SPDX-License-Identifier: Apache-2.0
"""
Cognition episodes: what a proposed memory tool call may do before any service call.

An episode decides locally, with plan_call, whether a call goes to the memory
node (Allowed, with parsed arguments) or is answered by the runtime itself
(Refused, with the text for the model). The rules:

- recall_memory is an acquisition: every call that gets past the tool checks
  uses one of the episode's two attempts, whatever comes back (found, miss,
  ambiguous, invalid, store failure, no reply). Malformed arguments use one
  too: the spec counts a validation failure as an attempt, and not counting
  it would let a model retry forever. A call over the budget is refused
  without reaching the service.
- remember is offered only in operator episodes and is not an acquisition, so
  it never uses the budget. At most one remember per operator turn reaches
  the node. Malformed arguments do not use the turn's remember: nothing was
  proposed, and the model may correct its call. The one exception to the
  limit is a call that got no reply in time: the model may make the
  identical call once more, since the node answers a repeat with its first
  answer. (The runtime's own resends of a call without reply are below this
  rule: runner.call_with_retries sends the one request again.)
- The remember request's context (episode, turn, utterance) comes from the
  current turn, never from the model: the tool schema has no such property.
- Nothing here calls a tool on its own: operator text is never pre-searched
  and no memory is injected.

WorkingMemory is the session's volatile context. It is never admission
evidence (remember requests carry only the current turn's utterance) and is
never written anywhere.
"""

import collections
from dataclasses import asdict, dataclass
from typing import Union

from mira_memory.cognition.tools import (
    ACQUISITION_BUDGET_EXHAUSTED, APPLIED, AUTONOMOUS, CREATED, DUPLICATE, INVALID_TOOL_ARGUMENTS,
    NO_OPERATOR_UTTERANCE, OPERATOR, parse_recall_arguments, parse_remember_arguments,
    RECALL_MEMORY, RecallArguments, refused_text, REMEMBER, REMEMBER_LIMIT_REACHED, TOOL_NAMES,
    TOOL_UNAVAILABLE, ToolArgumentError, tools_for_episode, UNKNOWN_TOOL)
from mira_memory.core.admission.proposal_rules import Proposal

ACQUISITION_ATTEMPTS = 2


class AcquisitionBudget:
    """The bounded number of deliberate acquisitions one episode may make."""

    def __init__(self, limit=ACQUISITION_ATTEMPTS):
        if not isinstance(limit, int) or limit < 0:
            raise ValueError('limit must be a non-negative integer')
        self.limit = limit
        self.used = 0

    @property
    def remaining(self):
        return self.limit - self.used

    def try_acquire(self):
        """Use one attempt and return True, or return False when none is left."""
        if self.used >= self.limit:
            return False
        self.used += 1
        return True


@dataclass(frozen=True)
class RememberRequest:
    """A Remember.srv request: the current turn's context plus the model's proposal."""

    episode_id: str
    turn_id: str
    utterance: str
    proposal: Proposal

    def service_fields(self):
        """Return the Remember.srv request fields; null related fields become ''."""
        fields = asdict(self.proposal)
        for name in ('related_entity', 'related_role'):
            if fields[name] is None:
                fields[name] = ''
        return dict(
            episode_id=self.episode_id, turn_id=self.turn_id, utterance=self.utterance,
            **fields)


@dataclass(frozen=True)
class Allowed:
    """The call may go to the service with these parsed arguments."""

    tool: str
    arguments: Union[RecallArguments, RememberRequest]


@dataclass(frozen=True)
class Refused:
    """The runtime answers the call itself; text goes back to the model."""

    tool: str
    reason: str
    text: str


def _refuse(tool, reason, detail=''):
    return Refused(tool if tool in TOOL_NAMES else '', reason, refused_text(tool, reason, detail))


class OperatorTurn:
    """
    One operator utterance and the remember call (at most one) made for it.

    Results are recorded on the turn the call was planned in, so a late reply
    can never be taken as an acknowledgement in a later turn.
    """

    def __init__(self, episode_id, turn_id, utterance):
        self.episode_id = episode_id
        self.turn_id = turn_id
        self.utterance = utterance
        self._request = None
        self._sends = 0
        self._awaiting_reply = False
        self._reply = None

    def _plan_remember(self, raw_arguments):
        try:
            proposal = parse_remember_arguments(raw_arguments)
        except ToolArgumentError as error:
            return _refuse(REMEMBER, INVALID_TOOL_ARGUMENTS, str(error))
        request = RememberRequest(self.episode_id, self.turn_id, self.utterance, proposal)
        if self._sends == 0:
            self._request = request
        elif not self._is_retry(request):
            return _refuse(REMEMBER, REMEMBER_LIMIT_REACHED)
        self._sends += 1
        self._awaiting_reply = True
        return Allowed(REMEMBER, request)

    def _is_retry(self, request):
        unanswered = not self._awaiting_reply and self._reply is None
        return unanswered and self._sends == 1 and request == self._request

    def record_remember_result(self, status, outcome, memory_id):
        """Record the node's reply to this turn's remember call."""
        self._end_wait()
        self._reply = (status, outcome, memory_id)

    def record_remember_no_result(self):
        """Record that this turn's remember call got no reply (deadline expired)."""
        self._end_wait()

    def _end_wait(self):
        if not self._awaiting_reply:
            raise RuntimeError('no remember call of this turn is waiting for a result')
        self._awaiting_reply = False

    def write_acknowledged(self):
        """Return the MEM id of a new memory this turn's reply confirms, else None."""
        return self._applied(CREATED)

    def already_stored(self):
        """Return the MEM id when this turn's reply was applied/duplicate, else None."""
        return self._applied(DUPLICATE)

    def _applied(self, outcome):
        if self._reply is None:
            return None
        status, replied_outcome, memory_id = self._reply
        if status == APPLIED and replied_outcome == outcome and memory_id:
            return memory_id
        return None


class _Episode:
    kind = None

    def __init__(self, episode_id, acquisition_limit):
        self.episode_id = episode_id
        self.budget = AcquisitionBudget(acquisition_limit)
        self.tools = tools_for_episode(self.kind)
        self._tool_names = tuple(tool['name'] for tool in self.tools)

    def plan_call(self, tool_name, raw_arguments):
        """
        Decide, before any service call, what a proposed tool call may do.

        Returns Allowed (call the service with its arguments) or Refused
        (hand its text back to the model; nothing reaches the service).
        """
        if tool_name not in TOOL_NAMES:
            return _refuse(tool_name, UNKNOWN_TOOL)
        if tool_name not in self._tool_names:
            return _refuse(tool_name, TOOL_UNAVAILABLE)
        if tool_name == RECALL_MEMORY:
            return self._plan_recall(raw_arguments)
        # Only operator episodes offer remember, so only they get this far.
        return self._plan_remember(raw_arguments)

    def _plan_recall(self, raw_arguments):
        if not self.budget.try_acquire():
            return _refuse(RECALL_MEMORY, ACQUISITION_BUDGET_EXHAUSTED)
        try:
            return Allowed(RECALL_MEMORY, parse_recall_arguments(raw_arguments))
        except ToolArgumentError as error:
            return _refuse(RECALL_MEMORY, INVALID_TOOL_ARGUMENTS, str(error))


class OperatorEpisode(_Episode):
    """An operator dialogue episode: both tools, one remember per turn."""

    kind = OPERATOR

    def __init__(self, episode_id, acquisition_limit=ACQUISITION_ATTEMPTS):
        super().__init__(episode_id, acquisition_limit)
        self.current_turn = None
        # turn id -> its utterance, for every turn begun.
        self._utterances = {}

    def heard_before(self, turn_id, utterance):
        """Return True for a turn begun before with exactly this utterance: the same turn again."""
        return self._utterances.get(turn_id) == utterance

    def begin_turn(self, turn_id, utterance):
        """
        Start the next operator turn and return it.

        A turn id is used once per episode: reusing one would reopen that
        turn's single remember. Raises ValueError for a repeated id.
        """
        if turn_id in self._utterances:
            raise ValueError('turn id already used in this episode')
        self._utterances[turn_id] = utterance
        self.current_turn = OperatorTurn(self.episode_id, turn_id, utterance)
        return self.current_turn

    def _plan_remember(self, raw_arguments):
        if self.current_turn is None:
            return _refuse(REMEMBER, NO_OPERATOR_UTTERANCE)
        return self.current_turn._plan_remember(raw_arguments)


class AutonomousEpisode(_Episode):
    """An episode no operator started (attention, goals, monitors): recall only."""

    kind = AUTONOMOUS

    def __init__(self, episode_id, trigger, acquisition_limit=ACQUISITION_ATTEMPTS):
        super().__init__(episode_id, acquisition_limit)
        self.trigger = trigger


DEFAULT_WORKING_MEMORY_CAPACITY = 50
# About 12,000 tokens of prompt: room for four full recall answers
# (recall.TEXT_MAX_CHARACTERS, 12,000 characters each) or for 50 entries of
# ordinary dialogue, well inside the context of current chat models.
DEFAULT_WORKING_MEMORY_MAX_CHARACTERS = 48000


class WorkingMemory:
    """
    Bounded, volatile recent context of the current session, oldest first.

    Bounded twice: at most `capacity` entries and at most `max_characters`
    characters in all, because the entries become the model's prompt and
    one entry may be a whole recall answer (up to 12,000 characters) or a
    long utterance. When either bound is passed the oldest entries are
    dropped; one entry longer than max_characters alone is kept cut, with a
    marker that says how much is missing. It is lost on restart, never
    persisted and never admission evidence.
    """

    # The smallest character bound: room for the cut marker and some text.
    MIN_MAX_CHARACTERS = 200

    def __init__(self, capacity=DEFAULT_WORKING_MEMORY_CAPACITY,
                 max_characters=DEFAULT_WORKING_MEMORY_MAX_CHARACTERS):
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError('capacity must be a positive integer')
        if not isinstance(max_characters, int) or max_characters < self.MIN_MAX_CHARACTERS:
            raise ValueError(
                f'max_characters must be an integer of at least {self.MIN_MAX_CHARACTERS}')
        self._entries = collections.deque()
        self._capacity = capacity
        self._max_characters = max_characters
        self._characters = 0

    @property
    def capacity(self):
        return self._capacity

    @property
    def max_characters(self):
        return self._max_characters

    @property
    def characters(self):
        """Characters held now, at most max_characters."""
        return self._characters

    def add(self, entry):
        """Append an entry (cut if it alone is too long), dropping the oldest to fit."""
        if len(entry) > self._max_characters:
            entry = _cut(entry, self._max_characters)
        self._entries.append(entry)
        self._characters += len(entry)
        while len(self._entries) > self._capacity or self._characters > self._max_characters:
            self._characters -= len(self._entries.popleft())

    def entries(self):
        """Return the entries, oldest first."""
        return tuple(self._entries)

    def clear(self):
        """Drop every entry and return how many there were."""
        dropped = len(self._entries)
        self._entries.clear()
        self._characters = 0
        return dropped


def _cut(entry, limit):
    """Return entry's beginning and a marker of what was left out, limit characters at most."""
    # The marker's length depends on the count it names; the count can only
    # shrink once text is kept, so sizing it for the whole entry is enough.
    kept = limit - len(_cut_marker(len(entry)))
    return entry[:kept] + _cut_marker(len(entry) - kept)


def _cut_marker(count):
    return f' [... {count} more characters not kept in working memory]'
