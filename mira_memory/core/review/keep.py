# SPDX-License-Identifier: Apache-2.0
"""
Keeping a refused proposal for review: which refusals, and the settings of the queue.

The memory node asks kept() after admission refused a remember for an
operator turn it heard itself (require_observed_turns): with the queue on
and a refusal a person can judge (rules.reviewable), the result is marked
pending_review, and write() puts the proposal, the utterance and turn ids,
the robot profile, the refusal and the running rules into the store's
pending table. The reason is the rules' own either way, and nothing of the
item ever goes back to the caller or into recall.

The queue is bounded (max_items; when full the oldest item is dropped and
counted), expiring (max_age), and keeps the same utterance and proposal once
(turn_proposals.request_digest: the exact texts).

The memory node writes the item right after its reply (MemoryService.remember's
defer): a kept refusal then costs remember nothing, and the executor the
write's time once, before it waits for new work (bench/README.md, issue 35).
The write is one transaction that commits without an fsync of its own
(transaction.without_commit_sync): the item survives a crash of the node as
soon as it is written, and a power cut once the next durable write or
checkpoint has synced the log. So pending_review says that the node took
the proposal for review: a crash within the moment between the reply and
the write, a power cut before the next sync, or a store that fails the
write (logged) loses the note. What is lost is a note for a person, never a
memory, and the refusal stands as answered either way.
"""

from dataclasses import dataclass, replace
import datetime

from mira_memory.core.admission import language, rules
from mira_memory.core.admission.turn_proposals import request_digest
from mira_memory.core.store.pending import memory_ids_text
from mira_memory.core.store.writes import timestamp

DEFAULT_MAX_ITEMS = 200
DEFAULT_MAX_AGE_DAYS = 7.0
# Bounds of the parameters: the queue is read whole by forget and list.
MAX_ITEMS_LIMIT = 10000
MAX_AGE_DAYS_LIMIT = 3650.0


@dataclass(frozen=True)
class ReviewSettings:
    """The pending store's parameters: on or off, how many items, how long."""

    enabled: bool = True
    max_items: int = DEFAULT_MAX_ITEMS
    max_age: datetime.timedelta = datetime.timedelta(days=DEFAULT_MAX_AGE_DAYS)

    @classmethod
    def from_parameters(cls, enabled, max_items, max_age_days):
        """Return the settings of the node's parameters; ValueError names a bad one."""
        if isinstance(max_items, bool) or not isinstance(max_items, int) or not (
                1 <= max_items <= MAX_ITEMS_LIMIT):
            raise ValueError(f'pending_max must be an integer from 1 to {MAX_ITEMS_LIMIT}')
        if not 0 < max_age_days <= MAX_AGE_DAYS_LIMIT:
            raise ValueError('pending_max_age_days must be more than 0 and at most '
                             f'{MAX_AGE_DAYS_LIMIT:g}')
        return cls(bool(enabled), max_items, datetime.timedelta(days=max_age_days))


def expires_at(item, settings):
    """Return when a pending item expires under settings, as the store writes times."""
    created = datetime.datetime.strptime(item.created_at, '%Y-%m-%dT%H:%M:%SZ')
    return timestamp(lambda: created.replace(tzinfo=datetime.timezone.utc) + settings.max_age)


def pending_values(context, proposal, robot_profile, result):
    """Return the pending columns after id and created_at (records.PENDING_COLUMNS)."""
    return (
        request_digest(context, proposal).hex(), context.episode_id, context.turn_id,
        context.utterance, proposal.kind, proposal.subject, proposal.predicate,
        proposal.value, proposal.related_entity or None, proposal.related_role or None,
        proposal.evidence, robot_profile or '', result.reason, result.rule,
        rules.explanation(result),
        memory_ids_text(result.conflicting_memory_ids), language.RULES_VERSION,
        language.rules_digest())


def kept(result, settings):
    """
    Return result marked pending_review when the queue keeps it, else result itself.

    Only for an operator turn the node heard (the caller's to know); then
    write() the marked result.
    """
    if not settings.enabled or not rules.reviewable(result):
        return result
    return replace(result, pending_review=True)


def write(store, context, proposal, robot_profile, result, settings):
    """
    Put a kept refusal (marked by kept()) into the store's queue; return its pending id.

    The same utterance and proposal already waiting is not kept twice (its
    id is returned). Store failures raise.
    """
    pending_id, _ = store.keep_pending(
        pending_values(context, proposal, robot_profile, result),
        max_age=settings.max_age, max_items=settings.max_items)
    return pending_id


def keep(store, context, proposal, robot_profile, result, settings):
    """Return kept(result, settings), written into the store's queue when marked (at once)."""
    result = kept(result, settings)
    if result.pending_review:
        write(store, context, proposal, robot_profile, result, settings)
    return result
