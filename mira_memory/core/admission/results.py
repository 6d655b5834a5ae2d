# SPDX-License-Identifier: Apache-2.0
"""
What admission answers: statuses, reasons, their fixed error sentences, and the results.

A rejection's reason is one of REASONS and its error a fixed sentence that
never contains the utterance, the evidence or any argument text; its rule
names the rule that refused it (rules.py lists them). Which refusals a
person may judge at review (`reviewable`), and what a person may override
there, are decided here too: they are properties of the answer, not of a
rule.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

from mira_memory.core.admission import verdict

STATUS_APPLIED = 'applied'
STATUS_REJECTED = 'rejected'
OUTCOME_CREATED = 'created'
OUTCOME_DUPLICATE = 'duplicate'

REASON_INVALID_TOOL_ARGUMENTS = 'invalid_tool_arguments'
REASON_INVALID_PROPOSAL = 'invalid_proposal'
REASON_EVIDENCE_NOT_IN_UTTERANCE = 'evidence_not_in_utterance'
REASON_VALUE_NOT_SUPPORTED = 'value_not_supported'
REASON_SUBJECT_NOT_SUPPORTED = 'subject_not_supported'
REASON_SUBJECT_NOT_FOUND = 'subject_not_found'
REASON_SUBJECT_AMBIGUOUS = 'subject_ambiguous'
REASON_RELATED_FIELDS_INCOMPLETE = 'related_fields_incomplete'
REASON_RELATED_ENTITY_INVALID_FOR_KIND = 'related_entity_invalid_for_kind'
REASON_RELATED_ENTITY_NOT_SUPPORTED = 'related_entity_not_supported'
REASON_RELATIONSHIP_VALUE_MISMATCH = 'relationship_value_mismatch'
REASON_RELATED_ENTITY_NOT_FOUND = 'related_entity_not_found'
REASON_RELATED_ENTITY_AMBIGUOUS = 'related_entity_ambiguous'
REASON_CONFLICT = 'conflict'
REASON_BACKEND_FAILURE = 'backend_failure'
REASONS = (
    REASON_INVALID_TOOL_ARGUMENTS, REASON_INVALID_PROPOSAL,
    REASON_EVIDENCE_NOT_IN_UTTERANCE, REASON_VALUE_NOT_SUPPORTED,
    REASON_SUBJECT_NOT_SUPPORTED, REASON_SUBJECT_NOT_FOUND, REASON_SUBJECT_AMBIGUOUS,
    REASON_RELATED_FIELDS_INCOMPLETE, REASON_RELATED_ENTITY_INVALID_FOR_KIND,
    REASON_RELATED_ENTITY_NOT_SUPPORTED, REASON_RELATIONSHIP_VALUE_MISMATCH,
    REASON_RELATED_ENTITY_NOT_FOUND, REASON_RELATED_ENTITY_AMBIGUOUS,
    REASON_CONFLICT, REASON_BACKEND_FAILURE)

ERROR_MAX_LENGTH = 200
CONFLICTING_IDS_MAX = 8

TURN_ALREADY_WROTE_ERROR = (
    'This operator turn already wrote one memory and a turn admits at most one; '
    'nothing was written.')
TURN_ALREADY_PROPOSED_ERROR = (
    'This operator turn already had a different remember proposal and a turn takes one; '
    'nothing was written.')
RELATED_IS_SUBJECT_ERROR = (
    "A relationship's related entity must be another entity than its subject; nothing was "
    'written.')
# The rules a created memory passed, and the rules verify runs again (judge).
RULES_RAN_ADMITTED = '1-19'
RULES_RAN_JUDGED = '1-17'
# What a person may override at review (admit_in), and the rules each one is.
OVERRIDE_GROUNDING = 'grounding'
OVERRIDE_CONFLICT = 'conflict'
OVERRIDDEN_RULES = {OVERRIDE_GROUNDING: '10-13,17', OVERRIDE_CONFLICT: '18'}
# The refusals a person can judge (rule number -> its reviewable reasons): the
# grounding rules, an unknown subject or related entity, a conflict. Never a
# malformed or unsupported proposal (rules 0-9, 16, 19), an ambiguous name
# or a store failure: there a person would have to write what was not said.
REVIEWABLE_REFUSALS = {
    '10': (REASON_EVIDENCE_NOT_IN_UTTERANCE,),
    '11': (REASON_SUBJECT_NOT_SUPPORTED,),
    '12': (REASON_VALUE_NOT_SUPPORTED,),
    '13': (REASON_INVALID_PROPOSAL,),
    '14': (REASON_SUBJECT_NOT_FOUND,),
    '15': (REASON_RELATED_ENTITY_NOT_FOUND,),
    '17': (REASON_SUBJECT_NOT_SUPPORTED, REASON_EVIDENCE_NOT_IN_UTTERANCE),
    '18': (REASON_CONFLICT,),
}
GROUNDING_RULE_NUMBERS = ('10', '11', '12', '13', '17')
OTHER_SUBJECT_ERROR = (
    'The value belongs to a clause with another subject; nothing was written.')
ADDRESSEE_ERROR = (
    'The second person is addressed to someone named in the utterance, not to the robot; '
    'nothing was written.')
LONGER_NAME_ERROR = (
    "The subject is only the start of another entity's name in the evidence; nothing was "
    'written.')
_ERRORS = {
    REASON_INVALID_TOOL_ARGUMENTS: (
        'A required remember argument is empty, or an argument is too long or not text; '
        'nothing was written.'),
    REASON_INVALID_PROPOSAL: (
        'The proposal is malformed: control characters, an unsupported kind, a '
        'predicate or role that is not a token, or a role reserved for the runtime; '
        'nothing was written.'),
    REASON_EVIDENCE_NOT_IN_UTTERANCE: (
        'The evidence is not a span of the current operator utterance, or there is no '
        'current operator turn; nothing was written.'),
    REASON_VALUE_NOT_SUPPORTED: 'The value does not occur in the evidence; nothing was written.',
    REASON_SUBJECT_NOT_SUPPORTED: (
        'The subject does not occur in the evidence; nothing was written.'),
    REASON_SUBJECT_NOT_FOUND: (
        'The subject matches no known entity name or alias, and remember never creates '
        'entities; nothing was written.'),
    REASON_SUBJECT_AMBIGUOUS: (
        'The subject exactly matches more than one known entity; nothing was written.'),
    REASON_RELATED_FIELDS_INCOMPLETE: (
        'A relationship needs both a related entity and a related role; nothing was '
        'written.'),
    REASON_RELATED_ENTITY_INVALID_FOR_KIND: (
        'Facts and preferences take no related entity or related role; nothing was '
        'written.'),
    REASON_RELATED_ENTITY_NOT_SUPPORTED: (
        'The related entity does not occur in the evidence; nothing was written.'),
    REASON_RELATIONSHIP_VALUE_MISMATCH: (
        'A relationship value must name its related entity; nothing was written.'),
    REASON_RELATED_ENTITY_NOT_FOUND: (
        'The related entity matches no known entity name or alias, and remember never '
        'creates entities; nothing was written.'),
    REASON_RELATED_ENTITY_AMBIGUOUS: (
        'The related entity exactly matches more than one known entity; nothing was '
        'written.'),
    REASON_CONFLICT: (
        'A different value is already stored for this subject and predicate (see '
        'conflicting_memory_ids); admission never replaces memories, nothing was written.'),
    REASON_BACKEND_FAILURE: (
        'The memory store failed; nothing was written.'),
}


@dataclass(frozen=True)
class AdmissionResult:
    """The authoritative answer to one remember request."""

    status: str
    outcome: str
    reason: str
    memory_id: Optional[int]
    conflicting_memory_ids: Tuple[int, ...]
    error: str
    # The number of the rule that refused it ('1'..'19', README's table);
    # '' when applied or when no rule did (backend_failure, rule 0b).
    rule: str = ''
    # For a created memory: what the rules decided (its receipt keeps it).
    decision: Optional['Decision'] = None
    # A rejection kept for a person's review (core/review): the Remember
    # response says so; the reason stays the rules' own.
    pending_review: bool = False
    # A grounding refusal (rules 10-13): the verdict that refused it, for
    # the person at the console (memory check); never sent to the model.
    grounding: Optional[verdict.Grounding] = None
    # The trigger that refused it (a verdict.Decider, worked out into words
    # only when the pending item keeps them); never part of the Remember
    # response, which echoes nothing.
    decider: Optional[verdict.Decider] = None

    @property
    def decided_by(self):
        """Return the words of the trigger that refused it ('' when none did)."""
        return str(self.decider) if self.decider is not None else ''


def explanation(result):
    """Return a refusal's explanation for a person: its error and the trigger that decided."""
    if not result.decided_by:
        return result.error
    return '%s Decided by: %s.' % (result.error, result.decided_by)


def reviewable(result):
    """Return True when a person can judge this rejection (REVIEWABLE_REFUSALS)."""
    return (result.status == STATUS_REJECTED
            and result.reason in REVIEWABLE_REFUSALS.get(result.rule, ()))


@dataclass(frozen=True)
class Decision:
    """The rules that ran (as text, e.g. '1-19') and the entity ids they resolved."""

    rules_ran: str
    subject_entity_id: int
    related_entity_id: Optional[int]
    # (entity id, role) pairs of the memory: the subject link, then the related one.
    links: Tuple[Tuple[int, str], ...]


def backend_failure():
    """Return the backend_failure rejection, also for callers with no store at all."""
    return rejected(REASON_BACKEND_FAILURE)


def duplicate(memory_id):
    """Return applied/duplicate: the proposal is already stored as memory_id."""
    return AdmissionResult(STATUS_APPLIED, OUTCOME_DUPLICATE, '', memory_id, (), '')


def turn_already_proposed():
    """Return the rejection of a different proposal in a turn that already had one."""
    return rejected(REASON_INVALID_PROPOSAL, error=TURN_ALREADY_PROPOSED_ERROR)


def rejected(reason, conflicting_memory_ids=(), error=None, rule=''):
    """Return a rejection for reason: its fixed error sentence unless error is given."""
    return AdmissionResult(
        STATUS_REJECTED, '', reason, None, conflicting_memory_ids,
        _ERRORS[reason] if error is None else error, rule=rule)
