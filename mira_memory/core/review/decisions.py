# SPDX-License-Identifier: Apache-2.0
"""
What a person does with a pending item, and what the rules say of it now.

accept, supersede and dismiss each run in one transaction of the store
(store.review()): the item is read there, the decision checked and written
there, and the item leaves the queue there, so two consoles deciding the
same item meet the database's one writer: exactly one wins, the other is
told what became of it (ClosedError), and nothing half done is ever seen.

- accept writes the memory through admission's own rules (rules.admit_in),
  except the one the person overrides: for a grounding refusal (rules
  10-13, 17) the grounding; for an unknown subject or related entity
  nothing (the entity must exist by now, or be made by the same accept with
  new_entity_type, named as the operator said it); a conflict is refused
  (that is supersede's). Rules 1-9, 14-16, 18 and 19 always run.
- supersede overrides the conflict too: it retires the memories in the
  slot, then writes the new one and records which it replaced.
- dismiss only removes the item.

The memory's source is supervised_statement; its receipt keeps the
operator's utterance and the proposal as every receipt does, and names the
person (the console's reviewer), the action, and when and why the rules had
refused it. Anything the rules that still run refuse now is a RefusedError,
and an item that expired or left the queue a ClosedError: nothing is
written. assess() judges an item now without writing (memory pending show,
memory verify).
"""

from dataclasses import dataclass
from typing import Optional

from mira_memory.core.admission import operator_turn, proposal_rules, results, rules, store_rules
from mira_memory.core.admission.normalize import display_form, has_forbidden_characters
from mira_memory.core.admission.normalize import locate, normalize_key
from mira_memory.core.errors import ClosedError, InvalidInputError, NotFoundError, RefusedError
from mira_memory.core.store import reads
from mira_memory.core.store.records import format_memory_id, format_pending_id
from mira_memory.core.store.records import stored_source_label

ACCEPT = 'accept'
ACCEPT_NEW_ENTITY = 'accept_new_entity'
SUPERSEDE = 'supersede'
DISMISS = 'dismiss'
# What became of an item a person decided (the closed record's outcome).
_CLOSED_OUTCOMES = {ACCEPT: 'accepted', ACCEPT_NEW_ENTITY: 'accepted',
                    SUPERSEDE: 'superseded', DISMISS: 'dismissed'}
# The refusals whose entity an accept may create, and which name it is.
_NEW_ENTITY_NAMES = {results.REASON_SUBJECT_NOT_FOUND: 'subject',
                     results.REASON_RELATED_ENTITY_NOT_FOUND: 'related_entity'}
REVIEWER_MAX_LENGTH = 200

# assess() statuses.
ADMISSIBLE = 'now_admissible'
STILL_REFUSED = 'still_refused'
ALREADY_STORED = 'already_stored'


@dataclass(frozen=True)
class Reviewed:
    """The outcome of a person's decision on one pending item."""

    pending_id: int
    action: str
    # accepted, superseded, dismissed; or already_stored: the same memory was
    # there already (no new memory; the item left the queue as accepted).
    outcome: str
    memory_id: Optional[int] = None
    # accept --new-entity: the entity made (store.Entity).
    entity: Optional[object] = None
    # supersede: the memories retired.
    retired_ids: tuple = ()


@dataclass(frozen=True)
class Assessment:
    """What the running rules say of a pending item now (assess)."""

    status: str  # ADMISSIBLE, STILL_REFUSED or ALREADY_STORED
    reason: str = ''
    rule: str = ''
    memory_ids: tuple = ()  # conflicting memories, or the one already stored


def reviewer_name(text):
    """Return the reviewer as stored (display form); InvalidInputError when there is none."""
    if not isinstance(text, str) or has_forbidden_characters(text) or not text.split():
        raise InvalidInputError('the reviewer must be named (text without control characters)')
    name = display_form(text)
    if len(name) > REVIEWER_MAX_LENGTH:
        raise InvalidInputError(f'the reviewer is longer than {REVIEWER_MAX_LENGTH} characters')
    return name


def accept(store, pending_id, reviewer, settings, *, new_entity_type=None, aliases=()):
    """Write the pending item's memory as the person accepted it; return Reviewed."""
    action = ACCEPT_NEW_ENTITY if new_entity_type else ACCEPT
    if aliases and not new_entity_type:
        raise InvalidInputError('--alias names the new entity: give it with --new-entity TYPE')
    return _decide(store, pending_id, reviewer, settings, action, new_entity_type, aliases)


def supersede(store, pending_id, reviewer, settings):
    """Retire the memories the item conflicts with and write it, in one transaction."""
    return _decide(store, pending_id, reviewer, settings, SUPERSEDE)


def dismiss(store, pending_id, reviewer, settings):
    """
    Remove the item from the queue; nothing else is written.

    Then the WAL is truncated, as after a forget: secure_delete clears the
    item's page in the database, and the truncation its frames in the WAL,
    so no byte of its text stays in any file once dismiss answers.
    """
    reviewed = _decide(store, pending_id, reviewer, settings, DISMISS)
    store.truncate_wal()
    return reviewed


def _decide(store, pending_id, reviewer, settings, action, new_entity_type=None, aliases=()):
    reviewer = reviewer_name(reviewer)
    name = format_pending_id(pending_id)
    with store.review() as tx:
        item = _waiting(tx, pending_id, settings)
        closed = _CLOSED_OUTCOMES[action]
        if action == DISMISS:
            tx.close_pending(pending_id, closed, None, reviewer)
            return Reviewed(pending_id, action, closed)
        context, proposal = request_of(item)
        entity = None
        if new_entity_type:
            entity = _new_entity(tx, item, name, new_entity_type, aliases)
        overrides = set()
        if item.rule in results.GROUNDING_RULE_NUMBERS:
            overrides.add(results.OVERRIDE_GROUNDING)
        if action == SUPERSEDE:
            overrides.add(results.OVERRIDE_CONFLICT)

        def retire(memory_ids):
            for old in memory_ids:
                tx.retire_memory(old, f'superseded at review of {name} by {reviewer}')
        result = rules.admit_in(
            tx, context, proposal, item.robot_profile, overrides=frozenset(overrides),
            retire_conflicting=retire, review=_review_columns(item, action, reviewer))
        if result.status != results.STATUS_APPLIED:
            raise _refusal(name, action, result)
        if result.outcome == results.OUTCOME_DUPLICATE:
            tx.close_pending(pending_id, 'accepted', result.memory_id, reviewer)
            return Reviewed(pending_id, action, ALREADY_STORED, result.memory_id, entity)
        if action == SUPERSEDE and not result.conflicting_memory_ids:
            # Raised after the insert: the transaction rolls all of it back.
            raise RefusedError(
                f'{name} conflicts with no active memory now (what it conflicted with was '
                f'retired or forgotten meanwhile): memory accept {name} writes it; nothing '
                'was written')
        for old in result.conflicting_memory_ids:
            tx.supersede(old, result.memory_id)
        tx.close_pending(pending_id, closed, result.memory_id, reviewer)
        return Reviewed(pending_id, action, closed, result.memory_id, entity,
                        result.conflicting_memory_ids)


def _waiting(tx, pending_id, settings):
    """Return the waiting item; ClosedError when it left the queue or expired."""
    name = format_pending_id(pending_id)
    item = tx.pending_item(pending_id)
    if item is None:
        closed = tx.closed_pending(pending_id)
        if closed is None:
            raise NotFoundError(f'{name} not found (no such pending item)')
        raise ClosedError(closed_text(closed) + '; nothing was written')
    if item.created_at < tx.timestamp_before(settings.max_age):
        raise ClosedError(f'{name} expired (kept {_days(settings.max_age)} from '
                          f'{item.created_at}); nothing was written')
    return item


def _days(delta):
    return f'{delta.total_seconds() / 86400:g} days'


def closed_text(closed):
    """Return what became of an item that left the queue, as one clause."""
    name = format_pending_id(closed.pending_id)
    memory = format_memory_id(closed.memory_id) if closed.memory_id else ''
    return {
        'accepted': f'{name} was already accepted as {memory} at {closed.closed_at} by '
                    f'{closed.closed_by}',
        'superseded': f'{name} was already accepted as {memory}, superseding, at '
                      f'{closed.closed_at} by {closed.closed_by}',
        'dismissed': f'{name} was dismissed at {closed.closed_at} by {closed.closed_by}',
        'expired': f'{name} expired and left the queue at {closed.closed_at}',
        'dropped': f'{name} was dropped at {closed.closed_at}: the review queue was full',
        'forgotten': f'{name} was removed at {closed.closed_at} by memory forget',
    }[closed.outcome]


def request_of(item):
    """Return (TurnContext, Proposal) of a pending item, as remember got them."""
    context = operator_turn.TurnContext(item.episode_id, item.turn_id, item.utterance)
    proposal = proposal_rules.Proposal(
        kind=item.kind, subject=item.subject, predicate=item.predicate, value=item.value,
        related_entity=item.related_entity, related_role=item.related_role,
        evidence=item.evidence)
    return context, proposal


def _new_entity(tx, item, name, entity_type, aliases):
    """Create the entity the item names and its aliases, in the review's transaction."""
    field = _NEW_ENTITY_NAMES.get(item.reason)
    if field is None:
        raise InvalidInputError(
            f'--new-entity is for an item refused as subject_not_found or '
            f'related_entity_not_found; {name} was refused as {item.reason}')
    said = getattr(item, field)
    if field == 'subject' and normalize_key(said) in store_rules.SECOND_PERSON_SUBJECTS:
        raise InvalidInputError(
            f'the subject of {name} is the robot itself ("{said}", robot profile '
            f'"{item.robot_profile}"): add that entity with memory entity add, then accept')
    matches = tx.find_entities(said, limit=1)
    if matches:
        raise RefusedError(
            f'"{said}" names ENT{matches[0].id} by now: memory accept {name} without '
            '--new-entity; nothing was written')
    # The name as the operator said it (the model's spelling never names anything).
    evidence = locate(item.evidence, item.utterance)
    canonical = (locate(said, evidence) if evidence else None) or said
    entity = tx.add_entity(entity_type, canonical)
    for alias in aliases:
        entity = tx.add_alias(entity.id, alias)
    return entity


def _review_columns(item, action, reviewer):
    """Return the receipt's review fields (records.REVIEW_COLUMNS)."""
    return {'review_action': action, 'reviewed_by': reviewer, 'pending_id': item.id,
            'refused_at': item.created_at, 'refused_reason': item.reason,
            'refused_rule': item.rule, 'refused_explanation': item.explanation}


def _refusal(name, action, result):
    """Return the RefusedError of an accept or supersede the remaining rules refuse."""
    conflicting = ', '.join(format_memory_id(i) for i in result.conflicting_memory_ids)
    if result.reason == results.REASON_CONFLICT:
        text = (f'{name} conflicts with {conflicting}: memory supersede {name} retires it and '
                f'writes this one, memory dismiss {name} drops it; nothing was written')
    elif result.reason == results.REASON_SUBJECT_NOT_FOUND:
        text = (f'{name}: the subject still names no entity (subject_not_found, rule 14): '
                'give --new-entity TYPE, or add the entity or an alias first; nothing was '
                'written')
    elif result.reason == results.REASON_RELATED_ENTITY_NOT_FOUND:
        text = (f'{name}: the related entity still names no entity (related_entity_not_found, '
                'rule 15): give --new-entity TYPE, or add the entity or an alias first; '
                'nothing was written')
    else:
        text = (f'{name} is refused now: {result.reason} (rule {result.rule or "-"}): '
                f'{result.error}')
    return RefusedError(text, result.reason, result.rule, result.conflicting_memory_ids)


class SnapshotReads:
    """What rules.judge(writes=True) reads, on one read snapshot's connection."""

    def __init__(self, conn):
        self._conn = conn

    def find_entities(self, name, *, limit=None):
        return reads.query_find_entities(self._conn, name, limit, with_aliases=False)

    def slot_memories(self, subject_id, predicate):
        return reads.query_subject_predicate(
            self._conn, reads.SLOT_MEMORY_IDS_SQL, subject_id, predicate)

    def relationship_memories(self, subject_id, predicate):
        return reads.query_subject_predicate(
            self._conn, reads.RELATIONSHIP_MEMORY_IDS_SQL, subject_id, predicate)

    def turn_memory(self, label):
        found = reads.query_memories(self._conn, reads.TURN_MEMORY_IDS_SQL, {
            'source_label': stored_source_label(label)})
        return found[0] if found else None


def assess(conn, item):
    """
    Judge a pending item now with every rule (1-19), writing nothing; return an Assessment.

    conn: a connection inside one read snapshot. ADMISSIBLE: remember would
    admit it now, with nothing overridden; ALREADY_STORED: the same memory is
    there (memory_ids); else STILL_REFUSED with the first rule that refuses it.
    """
    context, proposal = request_of(item)
    judgment = rules.judge(SnapshotReads(conn), context, proposal, item.robot_profile,
                           writes=True)
    if judgment.rejection is not None:
        rejection = judgment.rejection
        return Assessment(STILL_REFUSED, rejection.reason, rejection.rule,
                          rejection.conflicting_memory_ids)
    if judgment.duplicate_of is not None:
        return Assessment(ALREADY_STORED, memory_ids=(judgment.duplicate_of,))
    return Assessment(ADMISSIBLE)
