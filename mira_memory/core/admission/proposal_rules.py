# SPDX-License-Identifier: Apache-2.0
"""
Rules 1-13: what the proposal and the operator turn decide alone, before the store is read.

The arguments are well-formed (1, 2), a relationship has both related
fields and a fact or preference neither (3, 4), the evidence is a span of
the turn's utterance (5) that says the subject, the related entity and the
value (6-9), and the grounding rules (10-13: verdict.py) find it a plain
statement of the proposal. rules.py lists every rule; the order here is
theirs, and the first broken rule gives the rejection.
"""

import dataclasses
from dataclasses import dataclass
from typing import Optional

from mira_memory.core.admission import verdict
from mira_memory.core.admission.name_spans import said_as_genitive
from mira_memory.core.admission.normalize import find, fold, has_forbidden_characters
from mira_memory.core.admission.normalize import has_unsegmented_script, is_blank
from mira_memory.core.admission.normalize import NormalizationError
from mira_memory.core.admission.normalize import normalize_key, normalize_token
from mira_memory.core.admission.normalize import TOKEN_MAX_LENGTH
from mira_memory.core.admission.operator_turn import is_turn_id
from mira_memory.core.admission.results import OVERRIDE_GROUNDING
from mira_memory.core.admission.results import REASON_EVIDENCE_NOT_IN_UTTERANCE
from mira_memory.core.admission.results import REASON_INVALID_PROPOSAL
from mira_memory.core.admission.results import REASON_INVALID_TOOL_ARGUMENTS
from mira_memory.core.admission.results import REASON_RELATED_ENTITY_INVALID_FOR_KIND
from mira_memory.core.admission.results import REASON_RELATED_ENTITY_NOT_SUPPORTED
from mira_memory.core.admission.results import REASON_RELATED_FIELDS_INCOMPLETE
from mira_memory.core.admission.results import REASON_RELATIONSHIP_VALUE_MISMATCH
from mira_memory.core.admission.results import REASON_SUBJECT_NOT_SUPPORTED
from mira_memory.core.admission.results import REASON_VALUE_NOT_SUPPORTED, rejected

KIND_FACT = 'fact'
KIND_PREFERENCE = 'preference'
KIND_RELATIONSHIP = 'relationship'
ADMISSIBLE_KINDS = (KIND_FACT, KIND_PREFERENCE, KIND_RELATIONSHIP)

SUBJECT_MAX_LENGTH = 256
RELATED_ENTITY_MAX_LENGTH = 256
VALUE_MAX_LENGTH = 256
EVIDENCE_MAX_LENGTH = 500

SUBJECT_ROLE = 'subject'

_FIELD_BOUNDS = (
    ('kind', TOKEN_MAX_LENGTH),
    ('subject', SUBJECT_MAX_LENGTH),
    ('predicate', TOKEN_MAX_LENGTH),
    ('value', VALUE_MAX_LENGTH),
    ('related_entity', RELATED_ENTITY_MAX_LENGTH),
    ('related_role', TOKEN_MAX_LENGTH),
    ('evidence', EVIDENCE_MAX_LENGTH),
)
_RELATED_FIELDS = ('related_entity', 'related_role')
_GROUNDING_RULES = {
    verdict.CLAUSE: '10',
    verdict.SUBJECT: '11',
    verdict.VALUE: '12',
    verdict.POLARITY: '13',
}
_GROUNDING_REASONS = {
    verdict.CLAUSE: REASON_EVIDENCE_NOT_IN_UTTERANCE,
    verdict.SUBJECT: REASON_SUBJECT_NOT_SUPPORTED,
    verdict.VALUE: REASON_VALUE_NOT_SUPPORTED,
    verdict.POLARITY: REASON_INVALID_PROPOSAL,
}


@dataclass(frozen=True)
class Proposal:
    """The model's remember arguments; related fields are None (or '') when absent."""

    kind: str
    subject: str
    predicate: str
    value: str
    related_entity: Optional[str]
    related_role: Optional[str]
    evidence: str


@dataclass(frozen=True)
class CheckedRequest:
    """What rules 1-13 establish from the request alone."""

    kind: str
    predicate: str
    role: Optional[str]
    related_entity: Optional[str]
    evidence: str
    value: str
    value_key: str
    grounded: verdict.Grounding


def judge_request(context, proposal, robot_profile, overrides=frozenset()):
    """Rules 1-13 (10-13 unless overridden): return (CheckedRequest, None) or (None, rejection)."""
    reason = _check_arguments(proposal)
    if reason:
        return None, rejected(reason, rule='1')
    related_entity = proposal.related_entity or None
    related_role = proposal.related_role or None
    tokens = _proposal_tokens(proposal, related_role)
    if tokens is None:
        return None, rejected(REASON_INVALID_PROPOSAL, rule='2')
    kind, predicate, role = tokens
    if kind == KIND_RELATIONSHIP:
        if related_entity is None or role is None:
            return None, rejected(REASON_RELATED_FIELDS_INCOMPLETE, rule='4')
    elif related_entity is not None or role is not None:
        return None, rejected(REASON_RELATED_ENTITY_INVALID_FOR_KIND, rule='3')
    span = _locate_evidence(context, proposal.evidence)
    if span is None:
        return None, rejected(REASON_EVIDENCE_NOT_IN_UTTERANCE, rule='5')
    utterance = context.folded
    evidence = utterance.display[span[0]:span[1]]
    # (Rules 1 and 2 checked these fields: they fold, unscanned again.)
    subject = fold(proposal.subject, checked=True)
    value_form = fold(proposal.value, checked=True)
    if find(subject, utterance, *span) is None and not said_as_genitive(
            context.language, proposal.subject, evidence):
        return None, rejected(REASON_SUBJECT_NOT_SUPPORTED, rule='6')
    value_key = normalize_key(proposal.value)
    if related_entity is not None:
        if find(fold(related_entity, checked=True), utterance, *span) is None:
            return None, rejected(REASON_RELATED_ENTITY_NOT_SUPPORTED, rule='7')
        if normalize_key(related_entity) != value_key:
            return None, rejected(REASON_RELATIONSHIP_VALUE_MISMATCH, rule='8')
    value_span = find(value_form, utterance, *span)
    if value_span is None:
        return None, rejected(REASON_VALUE_NOT_SUPPORTED, rule='9')
    value = utterance.display[value_span[0]:value_span[1]]
    if OVERRIDE_GROUNDING in overrides:
        return CheckedRequest(kind, predicate, role, related_entity, evidence, value,
                              value_key, None), None
    grounded = verdict.ground_turn(
        context, span, proposal.subject, proposal.value, predicate,
        relationship=kind == KIND_RELATIONSHIP,
        vocatives=(robot_profile,) if robot_profile else (), forms=(subject, value_form))
    if grounded.failure:
        return None, dataclasses.replace(
            rejected(_GROUNDING_REASONS[grounded.rule], error=grounded.error,
                     rule=_GROUNDING_RULES[grounded.rule]),
            decider=grounded.decider, grounding=grounded)
    return CheckedRequest(kind, predicate, role, related_entity, evidence, value, value_key,
                          grounded), None


def _check_arguments(proposal):
    if not isinstance(proposal, Proposal):
        return REASON_INVALID_TOOL_ARGUMENTS
    for name, bound in _FIELD_BOUNDS:
        text = getattr(proposal, name)
        if name in _RELATED_FIELDS and text in (None, ''):
            continue
        # The raw length first: an oversized field costs nothing more.
        if not isinstance(text, str) or len(text) > bound or is_blank(text):
            return REASON_INVALID_TOOL_ARGUMENTS
    return ''


def _proposal_tokens(proposal, related_role):
    """Return the (kind, predicate, role) tokens, or None for a malformed proposal."""
    for name, _ in _FIELD_BOUNDS:
        text = getattr(proposal, name)
        if text and has_forbidden_characters(text):
            return None
    try:
        kind = normalize_token(proposal.kind)
        predicate = normalize_token(proposal.predicate)
        role = None if related_role is None else normalize_token(related_role)
    except NormalizationError:
        return None
    if kind not in ADMISSIBLE_KINDS or role == SUBJECT_ROLE:
        return None
    return kind, predicate, role


def _locate_evidence(turn, evidence):
    """Return the evidence's (start, end) span in the turn's display form, or None."""
    if turn is None:
        return None
    if not (is_turn_id(turn.episode_id) and is_turn_id(turn.turn_id)):
        return None
    if turn.folded is None:  # not text, too long, forbidden characters or blank
        return None
    span = find(fold(evidence, checked=True), turn.folded)  # (checked by rules 1 and 2)
    if span is None or has_unsegmented_script(turn.folded.display[span[0]:span[1]]):
        # Without spaces between words no name can be shown to be a whole
        # word of the evidence; no segmenter dependency qualifies (README).
        return None
    return span
