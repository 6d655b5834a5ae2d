# SPDX-License-Identifier: Apache-2.0
"""
One proposal per operator turn: the memory node's volatile record of each turn's first request.

The store already limits a turn to one *written* memory. This record also
limits what a turn may *propose*: after any remember request in an
(episode, turn), applied or rejected, a different request in that turn is
rejected (invalid_proposal, turn_already_proposed), so a model cannot try
variants until one is admitted.

A lost reply is never a lost answer. An identical repeat of the turn's
first request (the same request_digest: the utterance and the proposal,
exact texts; the one the review queue keys its items by) is a client that
did not get its reply, and gets the first answer again, field for field:
applied/created with the same memory id, a rejection with the same reason,
explanation and pending_review. Nothing runs again, so a repeat can neither
write nor keep anything twice, nor bring back what a person retired or
forgot meanwhile. backend_failure is not recorded: the store, not the
proposal, failed, and the repeat must be able to succeed.

Turn ids are compared exactly as sent (no normalization: "ｅ１" is not "e1").
The record is bounded (the least recently used turns are forgotten first)
and lost on restart; the store's one-memory-per-turn rule stays the durable
limit (a repeat after that answers as admission does then:
applied/duplicate for a memory still stored).
"""

import collections
import dataclasses
import hashlib

from mira_memory.core.admission import results

DEFAULT_CAPACITY = 4096


def request_digest(context, proposal):
    """Return a digest of everything a remember request says (exact text, no normalization)."""
    fields = [getattr(context, 'utterance', None)]
    fields += [getattr(proposal, name, None) for name in (
        'kind', 'subject', 'predicate', 'value', 'related_entity', 'related_role', 'evidence')]
    # Empty related fields mean null on the wire: one spelling for both.
    fields = [None if text == '' else text for text in fields]
    # The repr of a tuple quotes and escapes every text (surrogates too), so
    # it is unambiguous, and it costs a third of a JSON encoding: a retry
    # pays this on every call (measured: docs/dev/bench-analysis.md).
    return hashlib.sha256(repr(tuple(fields)).encode()).digest()


class TurnProposalLog:
    """The first request (as a digest) and its answer, for the most recent turns."""

    def __init__(self, capacity=DEFAULT_CAPACITY):
        if capacity < 1:
            raise ValueError('capacity must be at least 1')
        self._capacity = capacity
        self._turns = collections.OrderedDict()

    def __len__(self):
        return len(self._turns)

    def answer(self, context, proposal, admit):
        """
        Return the answer to one remember request of context's turn.

        admit() runs admission; it is called for a turn's first request only:
        an identical repeat gets the first answer, a different request
        turn_already_proposed.
        """
        key = (getattr(context, 'episode_id', None), getattr(context, 'turn_id', None))
        digest = request_digest(context, proposal)
        first = self._turns.get(key)
        if first is not None:
            self._turns.move_to_end(key)
            first_digest, first_result = first
            return first_result if first_digest == digest else results.turn_already_proposed()
        result = admit()
        # A request without both ids names no turn; a store failure says
        # nothing about the proposal: neither is the turn's first answer.
        if all(isinstance(part, str) and part for part in key) and (
                result.reason != results.REASON_BACKEND_FAILURE):
            # (Without the verdict and the trigger that decided: their words are
            # operator text, which no record of the process keeps past the request.)
            kept = dataclasses.replace(result, decider=None, grounding=None)
            self._turns[key] = (digest, kept)
            while len(self._turns) > self._capacity:
                self._turns.popitem(last=False)
        return result
