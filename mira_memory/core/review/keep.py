# SPDX-License-Identifier: Apache-2.0
"""
Keeping a refused proposal for review: which refusals, and the settings of the queue.

The memory node asks kept() after admission refused a remember for an
operator turn it heard itself (require_observed_turns): with the queue on
and a refusal a person can judge (results.reviewable), the result is marked
pending_review, and write() puts the proposal, the utterance and turn ids,
the robot profile, the refusal and the running rules into the store's
pending table. The reason is the rules' own either way, and nothing of the
item ever goes back to the caller or into recall.

The queue is bounded three ways: at most max_items waiting, at most
max_per_episode waiting from one episode, and at most max_per_minute new
items a minute. The Intake decides at remember time, before the reply:
a proposal that does not fit is not kept (pending_review stays false, the
refusal is the rules' own), counted and logged once per run of such
refusals; nothing that waits is ever removed to make room, so a flood of
refusals cannot push out what a person has not seen. The queue also
expires (max_age), and keeps the same utterance and proposal once
(turn_proposals.request_digest: the exact texts).

The memory node writes the item right after its reply (MemoryService.remember's
defer): a kept refusal then costs remember nothing, and the executor the
write's time once, before it waits for new work (bench/README.md, "Review queue").
The write is one transaction that commits without an fsync of its own
(transaction.without_commit_sync): the item survives a crash of the node as
soon as it is written, and a power cut once the next durable write or
checkpoint has synced the log. So pending_review says that the node took
the proposal for review: a crash within the moment between the reply and
the write, a power cut before the next sync, or a store that fails the
write (logged) loses the note. What is lost is a note for a person, never a
memory, and the refusal stands as answered either way.
"""

import collections
from dataclasses import dataclass, replace
import datetime
import time

from mira_memory.core.admission import language, results
from mira_memory.core.admission.turn_proposals import request_digest
from mira_memory.core.store.pending import memory_ids_text
from mira_memory.core.store.writes import timestamp

DEFAULT_MAX_ITEMS = 200
DEFAULT_MAX_AGE_DAYS = 7.0
# An operator episode is one conversation: a person rarely has more than a
# few refusals of it to judge; a flood in one episode stops here first.
DEFAULT_MAX_PER_EPISODE = 20
# Operator turns come at the pace of speech (a few a minute); a flood of
# calls does not, and fills the queue no faster than this.
DEFAULT_MAX_PER_MINUTE = 30
# Bounds of the parameters: the queue is read whole by forget and list.
MAX_ITEMS_LIMIT = 10000
MAX_AGE_DAYS_LIMIT = 3650.0
RATE_WINDOW_SEC = 60.0

# Why a refusal a person could judge was not kept (Intake.not_kept's keys).
QUEUE_FULL = 'queue full'
EPISODE_FULL = 'episode limit'
RATE_LIMITED = 'rate limit'
NOT_KEPT_CAUSES = (QUEUE_FULL, EPISODE_FULL, RATE_LIMITED)


def _count_parameter(name, value, limit):
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ValueError(f'{name} must be an integer from 1 to {limit}')
    return value


@dataclass(frozen=True)
class ReviewSettings:
    """The pending store's parameters: on or off, its bounds, how long an item waits."""

    enabled: bool = True
    max_items: int = DEFAULT_MAX_ITEMS
    max_age: datetime.timedelta = datetime.timedelta(days=DEFAULT_MAX_AGE_DAYS)
    max_per_episode: int = DEFAULT_MAX_PER_EPISODE
    max_per_minute: int = DEFAULT_MAX_PER_MINUTE

    @classmethod
    def from_parameters(cls, enabled, max_items, max_age_days,
                        max_per_episode=DEFAULT_MAX_PER_EPISODE,
                        max_per_minute=DEFAULT_MAX_PER_MINUTE):
        """Return the settings of the node's parameters; ValueError names a bad one."""
        _count_parameter('pending_max', max_items, MAX_ITEMS_LIMIT)
        _count_parameter('pending_max_per_episode', max_per_episode, MAX_ITEMS_LIMIT)
        _count_parameter('pending_max_per_minute', max_per_minute, MAX_ITEMS_LIMIT)
        if not 0 < max_age_days <= MAX_AGE_DAYS_LIMIT:
            raise ValueError('pending_max_age_days must be more than 0 and at most '
                             f'{MAX_AGE_DAYS_LIMIT:g}')
        return cls(bool(enabled), max_items, datetime.timedelta(days=max_age_days),
                   max_per_episode, max_per_minute)


class Intake:
    """
    Decides, at remember time, whether a refusal a person could judge is kept.

    mark() reads what waits (the store's pending_load: one small query, only
    for a reviewable refusal) and answers pending_review only when the item
    fits every bound; otherwise the cause is counted (not_kept) and said once
    through log(warning=True) when a run of such refusals starts, and once
    more when an item is kept again (how many were not kept meanwhile). The
    per-minute bound counts the items this intake let in over the last
    RATE_WINDOW_SEC of its monotonic clock (volatile: a restart starts afresh).
    """

    def __init__(self, settings, log=None, clock=time.monotonic):
        self.settings = settings
        self._log = log or (lambda text, warning: None)
        self._clock = clock
        self._recent = collections.deque()
        self.not_kept = dict.fromkeys(NOT_KEPT_CAUSES, 0)
        self._streak = 0  # refusals not kept since the last item kept

    def mark(self, store, context, proposal, result):
        """Return result marked pending_review when it is kept, else result (not marked)."""
        result = kept(result, self.settings)
        if not result.pending_review:
            return result
        waiting, of_episode, known = store.pending_load(
            context.episode_id, request_digest(context, proposal).hex())
        if known:
            return result  # already waiting: nothing new is kept, nothing counts
        cause = self._cause(waiting, of_episode)
        if cause is not None:
            self.not_kept[cause] += 1
            self._streak += 1
            if self._streak == 1:
                self._log(f'the review queue keeps no new refusal ({cause}: '
                          f'{self._bounds_text()}); the refusals are answered as the rules '
                          'give them, not kept, and counted on /diagnostics', True)
            return replace(result, pending_review=False)
        self._recent.append(self._clock())
        if self._streak:
            self._log(f'the review queue keeps refusals again; {self._streak} were not kept '
                      'meanwhile', False)
            self._streak = 0
        return result

    def _cause(self, waiting, of_episode):
        settings = self.settings
        if waiting >= settings.max_items:
            return QUEUE_FULL
        if of_episode >= settings.max_per_episode:
            return EPISODE_FULL
        cutoff = self._clock() - RATE_WINDOW_SEC
        while self._recent and self._recent[0] <= cutoff:
            self._recent.popleft()
        if len(self._recent) >= settings.max_per_minute:
            return RATE_LIMITED
        return None

    def _bounds_text(self):
        settings = self.settings
        return (f'at most {settings.max_items} waiting, {settings.max_per_episode} per '
                f'episode, {settings.max_per_minute} new a minute')

    def diagnostic_values(self):
        """Return the (key, value) pairs for /diagnostics: refusals not kept, by cause."""
        return tuple((f'review refusals not kept ({cause})', str(count))
                     for cause, count in self.not_kept.items())


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
        results.explanation(result),
        memory_ids_text(result.conflicting_memory_ids), language.RULES_VERSION,
        language.rules_digest())


def kept(result, settings):
    """
    Return result marked pending_review when the queue keeps it, else result itself.

    Only for an operator turn the node heard (the caller's to know); then
    write() the marked result.
    """
    if not settings.enabled or not results.reviewable(result):
        return result
    return replace(result, pending_review=True)


def write(store, context, proposal, robot_profile, result, settings):
    """
    Put a kept refusal (marked by kept()) into the store's queue; return its pending id.

    The same utterance and proposal already waiting is not kept twice (its
    id is returned). Store failures raise.
    """
    pending_id, _ = store.keep_pending(
        pending_values(context, proposal, robot_profile, result), max_age=settings.max_age)
    return pending_id


def keep(store, context, proposal, robot_profile, result, settings, intake=None):
    """
    Return result marked as the intake decides, written into the store's queue when marked.

    intake: an Intake of settings (a new one by default: only the per-minute
    bound then starts afresh). The write is at once.
    """
    result = (intake or Intake(settings)).mark(store, context, proposal, result)
    if result.pending_review:
        write(store, context, proposal, robot_profile, result, settings)
    return result
