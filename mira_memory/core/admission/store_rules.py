# SPDX-License-Identifier: Apache-2.0
"""
Rules 14-18: what the store's entities and memories decide.

The subject and the related entity each name exactly one known entity, by
name or alias (14, 15; you/your/yours/yourself denote the robot profile,
for the subject only), and two different ones (16). No other known entity
stands between the subject and the value, is addressed by a second-person
subject, or has a longer name the subject only starts (17: the word groups
the grounding rules hand over). A fact or preference shares one slot per
subject and predicate with the same value (a duplicate) or another one (a
conflict; 18: `slot`). `reads` answers find_entities, and for `slot`
slot_memories and relationship_memories, as the store's transactions do.
"""

from mira_memory.core.admission import verdict
from mira_memory.core.admission.normalize import has_forbidden_characters, is_blank
from mira_memory.core.admission.normalize import normalize_key
from mira_memory.core.admission.proposal_rules import KIND_RELATIONSHIP, SUBJECT_ROLE
from mira_memory.core.admission.results import ADDRESSEE_ERROR, Decision, LONGER_NAME_ERROR
from mira_memory.core.admission.results import OTHER_SUBJECT_ERROR, OVERRIDE_GROUNDING
from mira_memory.core.admission.results import REASON_INVALID_PROPOSAL
from mira_memory.core.admission.results import REASON_RELATED_ENTITY_AMBIGUOUS
from mira_memory.core.admission.results import REASON_RELATED_ENTITY_NOT_FOUND
from mira_memory.core.admission.results import REASON_SUBJECT_AMBIGUOUS
from mira_memory.core.admission.results import REASON_SUBJECT_NOT_FOUND
from mira_memory.core.admission.results import REASON_SUBJECT_NOT_SUPPORTED, rejected
from mira_memory.core.admission.results import RELATED_IS_SUBJECT_ERROR, RULES_RAN_JUDGED
from mira_memory.core.errors import InvalidInputError

# Only the subject position, and only these words: this is not pronoun or
# coreference resolution. Operator-side I/me/my/mine/myself stay literal.
SECOND_PERSON_SUBJECTS = frozenset(('you', 'your', 'yours', 'yourself'))


def judge_store(reads, request, proposal, robot_profile, overrides=frozenset()):
    """
    Rules 14-17 against the entities of reads: return (Decision, None) or (None, rejection).

    request: proposal_rules' CheckedRequest; overrides as rules.admit_in
    takes them (OVERRIDE_GROUNDING skips rule 17).
    """
    grounded = request.grounded
    subject_name = proposal.subject
    if normalize_key(subject_name) in SECOND_PERSON_SUBJECTS:
        subject_name = robot_profile
    subject_id, reason = _resolve_one(
        reads, subject_name, REASON_SUBJECT_NOT_FOUND, REASON_SUBJECT_AMBIGUOUS)
    if reason:
        return None, rejected(reason, rule='14')
    links = ((subject_id, SUBJECT_ROLE),)
    related_id = None
    if request.kind == KIND_RELATIONSHIP:
        related_id, reason = _resolve_one(
            reads, request.related_entity, REASON_RELATED_ENTITY_NOT_FOUND,
            REASON_RELATED_ENTITY_AMBIGUOUS)
        if reason:
            return None, rejected(reason, rule='15')
        if related_id == subject_id:
            return None, rejected(REASON_INVALID_PROPOSAL, error=RELATED_IS_SUBJECT_ERROR,
                                  rule='16')
        links += ((related_id, request.role),)
    if OVERRIDE_GROUNDING in overrides:
        return Decision(RULES_RAN_JUDGED, subject_id, related_id, links), None
    # Another entity between the subject and the value makes the value
    # its own ("Ada met Bob in Paris"); the subject and the related
    # entity named again ("cousin of quill and of Quillon Brask") do not.
    own = {entity_id for entity_id, _ in links}
    if grounded.other_subject_found or any(
            _names_entity(reads, name, besides=own)
            for name in grounded.other_subject_candidates):
        return None, rejected(REASON_SUBJECT_NOT_SUPPORTED, error=OTHER_SUBJECT_ERROR, rule='17')
    second_person = normalize_key(proposal.subject) in SECOND_PERSON_SUBJECTS
    for name in grounded.addressee_candidates if second_person else ():
        # "you" addressed to another entity ("Ada, you like tea.") is not the robot.
        if _names_entity(reads, name, besides=subject_id):
            return None, rejected(REASON_SUBJECT_NOT_SUPPORTED, error=ADDRESSEE_ERROR,
                                  rule='17')
    for name, only_possessor in grounded.longer_subject_candidates:
        if _names_entity(reads, name, besides=subject_id):
            return None, rejected(REASON_SUBJECT_NOT_SUPPORTED, error=LONGER_NAME_ERROR,
                                  rule='17')
        if only_possessor and _names_entity(reads, name):
            return None, rejected(REASON_SUBJECT_NOT_SUPPORTED,
                                  error=verdict.ERRORS['subject_possessor'][1], rule='17')
    return Decision(RULES_RAN_JUDGED, subject_id, related_id, links), None


def slot(reads, request, decision):
    """
    Rule 18 against the subject's slot: return (duplicate memory id or None, conflicting ids).

    Facts and preferences share one slot per subject and predicate: the same
    value with the same links is a duplicate, another value a conflict.
    Relationships are duplicates by predicate and links; they never conflict.
    """
    kind, predicate, value_key = request.kind, request.predicate, request.value_key
    subject_id = decision.subject_entity_id
    if kind == KIND_RELATIONSHIP:
        same_slot = reads.relationship_memories(subject_id, predicate)
    else:
        same_slot = reads.slot_memories(subject_id, predicate)
    same_slot = sorted(same_slot, key=lambda memory: memory.id)
    wanted_links = frozenset(decision.links)
    for memory in same_slot:
        # A relationship's value only names its related entity, whose identity
        # is already in the link set: naming it by an alias is the same
        # relationship. Facts and preferences compare their values.
        same_value = kind == KIND_RELATIONSHIP or memory.value_key == value_key
        if same_value and _link_set(memory) == wanted_links:
            return memory.id, ()
    if kind == KIND_RELATIONSHIP:
        return None, ()
    return None, tuple(memory.id for memory in same_slot if memory.value_key != value_key)


def _resolve_one(reads, name, not_found_reason, ambiguous_reason):
    """Return (entity id, '') for exactly one exact match, else (None, reason)."""
    if not isinstance(name, str) or has_forbidden_characters(name) or is_blank(name):
        return None, not_found_reason
    try:
        matches = reads.find_entities(name, limit=2)
    except InvalidInputError:
        # A name the store refuses to look up cannot name a stored entity.
        return None, not_found_reason
    if not matches:
        return None, not_found_reason
    if len(matches) > 1:
        return None, ambiguous_reason
    return matches[0].id, ''


def _names_entity(reads, name, besides=None):
    """Return True when name exactly names an entity (other than besides: an id or ids)."""
    try:
        matches = reads.find_entities(name, limit=3)
    except InvalidInputError:
        return False
    excluded = besides if isinstance(besides, (set, frozenset)) else {besides}
    return any(entity.id not in excluded for entity in matches)


def _link_set(memory):
    return frozenset((link.entity_id, link.role) for link in memory.links)
