# SPDX-License-Identifier: Apache-2.0
"""
One proposal per operator turn: the memory node's volatile record of each turn's first request.

The store already limits a turn to one *written* memory. This record also
limits what a turn may *propose*: after any remember request in an
(episode, turn), applied or rejected, a different request in that turn is
rejected (invalid_proposal), so a model cannot try variants until one is
admitted. An identical retry (a reply that was lost) gets the answer the
first request got: a rejection is repeated as it was, an applied request is
admitted again, which answers applied/duplicate with the same memory id.
backend_failure is not recorded: the store, not the proposal, failed, and
the retry must be able to succeed.

Retries without re-reading. An identical retry of an applied request is
answered applied/duplicate with the same memory id at once, without running
admission again, when nothing admission reads can have changed since its
last applied answer: the robot profile is the same and the store recorded no
write but memory inserts (store.changed_since). That answer is exactly the
one admission gives: rules 1-13 are functions of the request alone, which is
identical; rules 14-17 read entities, aliases and the robot profile, which
did not change; rule 18 finds the same memory first (it is still active,
and memories inserted since have higher ids), and answers duplicate before
rules 18 (conflict) and 19 are reached. Any other write (entity, alias,
retire, forget) or a new robot profile sends the retry through admission
again. Rule 0a (the observed turn) is the memory node's and runs first
for every request.

Turn ids are compared exactly as sent (no normalization: "ｅ１" is not "e1").
The record is bounded (the least recently used turns are forgotten first)
and lost on restart; the store's one-memory-per-turn rule stays the durable
limit.
"""

import collections
import dataclasses
import hashlib

from mira_memory.core.admission import rules

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
    # pays this on every call (bench/README.md, issue 25).
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

    def answer(self, context, proposal, admit, store=None, robot_profile=None):
        """
        Return the answer to one remember request of context's turn.

        admit() runs admission; it is called for a turn's first request and
        for an identical retry of an applied one, never for a different one.
        store (the MemoryStore admit writes to) and robot_profile (the one
        admit uses) allow an identical retry of an applied request to be
        answered without admit() while neither changed (module docstring).
        """
        key = (getattr(context, 'episode_id', None), getattr(context, 'turn_id', None))
        digest = request_digest(context, proposal)
        first = self._turns.get(key)
        if first is not None:
            self._turns.move_to_end(key)
            first_digest, first_result, unchanged_since = first
            if first_digest != digest:
                return rules.turn_already_proposed()
            if first_result.status == rules.STATUS_REJECTED:
                return first_result
            if unchanged_since is not None and store is not None and (
                    unchanged_since[0] == robot_profile
                    and not store.changed_since(unchanged_since[1])):
                return rules.duplicate(unchanged_since[2])
            generation = None if store is None else store.generation
            result = admit()
            self._turns[key] = (first_digest, first_result,
                                _retry_memo(result, store, robot_profile, generation))
            return result
        generation = None if store is None else store.generation
        result = admit()
        # A request without both ids names no turn; a store failure says
        # nothing about the proposal: neither is the turn's first answer.
        if all(isinstance(part, str) and part for part in key) and (
                result.reason != rules.REASON_BACKEND_FAILURE):
            # (Without the trigger that decided: its words are operator text,
            # which no record of the process keeps past the request.)
            kept = result if result.decider is None else dataclasses.replace(result, decider=None)
            self._turns[key] = (
                digest, kept, _retry_memo(result, store, robot_profile, generation))
            while len(self._turns) > self._capacity:
                self._turns.popitem(last=False)
        return result


def _retry_memo(result, store, robot_profile, generation):
    """
    Return (robot profile, store generation, memory id) of an applied answer, else None.

    generation is the store's before admission ran, so the answer's own
    insert (a memory insert) does not end the memo.
    """
    if store is None or result.status != rules.STATUS_APPLIED:
        return None
    return robot_profile, generation, result.memory_id
