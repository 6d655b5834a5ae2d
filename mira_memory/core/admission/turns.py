# SPDX-License-Identifier: Apache-2.0
"""
The operator turns the memory node heard itself: a bounded, volatile window.

remember is admitted only for an operator turn that the memory node observed
on the operator utterance topic, with exactly the request's utterance. The
caller's copy of the utterance is not trusted: any process on the graph, or
a cognition bug that passes working memory, an assistant reply or a sensor
string as "the utterance", would otherwise get a durable write.

The window keeps at most max_turns turns, none older than max_age_sec
(monotonic seconds since it was heard), oldest first out. It lives in memory
only: a restarted memory node has heard nothing yet. A turn heard again under
the same episode and turn id replaces the earlier text and counts as new (the
operator source never reuses ids; cognition ignores a reused id, so a
remember for the earlier text is then refused, the safe direction).

Turns that could never be admitted are not kept: ids longer than
ID_MAX_LENGTH characters or empty, and texts longer than TEXT_MAX_LENGTH
(admission's own bounds), so a hostile publisher cannot grow the window's
memory beyond max_turns small entries.

Waiting is the node's job (it owns the executor); this class only says, for
(episode id, turn id, utterance), whether the turn was HEARD, NOT_HEARD or
heard with a DIFFERENT text, and which keys a new turn may complete.
"""

import collections
from dataclasses import dataclass
import time

from mira_memory.core.admission.operator_turn import CONTEXT_ID_MAX_LENGTH
from mira_memory.core.admission.operator_turn import UTTERANCE_MAX_LENGTH

ID_MAX_LENGTH = CONTEXT_ID_MAX_LENGTH
TEXT_MAX_LENGTH = UTTERANCE_MAX_LENGTH

DEFAULT_MAX_TURNS = 256
DEFAULT_MAX_AGE_SEC = 900.0

# Check results.
HEARD = 'heard'
NOT_HEARD = 'not_heard'
DIFFERENT = 'different'


@dataclass(frozen=True)
class ObservedTurn:
    """One operator turn as the memory node heard it."""

    episode_id: str
    turn_id: str
    text: str
    received: float  # the window's clock (monotonic seconds)


class TurnWindow:
    """The newest operator turns heard, bounded by count and age."""

    def __init__(self, max_turns=DEFAULT_MAX_TURNS, max_age_sec=DEFAULT_MAX_AGE_SEC,
                 clock=time.monotonic):
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError('max_turns must be a positive integer')
        if not max_age_sec > 0:
            raise ValueError('max_age_sec must be positive')
        self.max_turns = max_turns
        self.max_age_sec = float(max_age_sec)
        self._clock = clock
        # (episode_id, turn_id) -> ObservedTurn, oldest first.
        self._turns = collections.OrderedDict()

    def __len__(self):
        self._expire()
        return len(self._turns)

    def observe(self, episode_id, turn_id, text):
        """Record a heard turn; return False (nothing kept) when it could never be admitted."""
        if not (_is_id(episode_id) and _is_id(turn_id) and isinstance(text, str)
                and len(text) <= TEXT_MAX_LENGTH):
            return False
        key = (episode_id, turn_id)
        self._turns.pop(key, None)
        self._turns[key] = ObservedTurn(episode_id, turn_id, text, self._clock())
        while len(self._turns) > self.max_turns:
            self._turns.popitem(last=False)
        self._expire()
        return True

    def check(self, episode_id, turn_id, utterance):
        """Return HEARD, NOT_HEARD or DIFFERENT for a remember request's turn."""
        self._expire()
        turn = self._turns.get((episode_id, turn_id))
        if turn is None:
            return NOT_HEARD
        return HEARD if turn.text == utterance else DIFFERENT

    def _expire(self):
        oldest_kept = self._clock() - self.max_age_sec
        while self._turns:
            turn = next(iter(self._turns.values()))
            if turn.received >= oldest_kept:
                break
            self._turns.popitem(last=False)


def _is_id(text):
    return isinstance(text, str) and 0 < len(text) <= ID_MAX_LENGTH
