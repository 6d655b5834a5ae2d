# SPDX-License-Identifier: Apache-2.0
"""
Admission of one operator-grounded memory: the single authority for remember.

`admit` checks a model's proposal against the current operator turn and, only
when every rule holds, writes one fact, preference or relationship. The rules
run in a fixed order and the first broken rule gives the one reason of the
rejection (README.md mirrors this list as its rule table):

0a. evidence_not_in_utterance (the memory node, before admission:
    core/admission/turns.py): the episode and turn ids name an operator turn the node
    heard itself, with exactly the request's utterance.
0b. invalid_proposal (the memory node, before admission: TurnProposalLog): a
    turn that already had a proposal takes no different one; an identical
    retry gets the answer of the first.
1. invalid_tool_arguments: a required field is blank, a field is over its
   bound, or a field has the wrong type. A related field that is given
   (neither None nor '') but blank is treated as a malformed argument, not
   as null.
2. invalid_proposal: control characters, an inadmissible kind, a predicate
   or given related role that is not a token, or a related role of subject
   (the subject role belongs to the runtime's subject link alone).
3. related_entity_invalid_for_kind / 4. related_fields_incomplete.
5. evidence_not_in_utterance: no valid current operator turn, or the
   evidence is not a whole-word span of the utterance.
6-9. subject, related entity and value must occur in that span, and a
   relationship's value must name its related entity.

Then the grounding rules (verdict.py and its stages; what was said is what
is stored):

10. evidence_not_in_utterance: the evidence is a plain statement: every
    sentence of the turn is in a language with data; the evidence lies in
    one sentence, is not a question (a polite request to remember is not
    one), starts and ends where a clause does; no trigger of the language
    data (negation from outside it, denial, hedge, modal, report, condition,
    time scope, future, ended past, question tag, retraction, sarcasm)
    reaches it with its scope; what other clauses say is neutral; no later
    sentence of the turn takes it back.
11. subject_not_supported: the subject opens that clause (after lead-ins,
    articles, titles, "my cousin", "me and") and is not only a possessor of a
    person or of something the predicate does not name; the value is not in
    a clause of its own ("... that Carl plays chess", "..., who ...").
12. value_not_supported: the value is a complete phrase that carries meaning,
    is not the subject's own words, and is not what a contrast sets aside or
    a number cut from its approximation.
13. invalid_proposal: polarity; negated evidence needs a negating predicate
    (or a dislike predicate for an aversion idiom) and a negating predicate
    needs negated evidence.

The remaining rules read the store and run in one write transaction with the
insert, so nothing can change between the checks and the write:

14. subject_not_found / subject_ambiguous, 15. related_entity_not_found /
    related_entity_ambiguous: exact name or alias; you/your/yours/yourself
    denote the robot profile entity, resolved now, for the subject only.
16. invalid_proposal: a relationship's related entity is not its subject.
17. subject_not_supported: no other subject (a person reference, or any
    known entity's name other than the subject and the related entity)
    stands between the subject and the value ("Ada met Bob in Paris"), the
    subject is not the start of another entity's longer name ("Ada" said as
    part of "Ada Lovelace" while "Ada" is another person), and a second-person
    subject is not addressed to another entity ("Ada, you like tea.").
18. duplicate (applied, nothing written), conflict (facts and preferences
    share one slot per subject and predicate), 19. the per-turn limit, then
    the insert of the memory and, in the same transaction, its receipt
    (`receipt`: the utterance, the turn's ids, the proposal as sent, the
    robot profile, the rules' version and digest and their Decision).

A rejection names the rule that refused it (AdmissionResult.rule). `judge`
runs rules 1-17 alone, reading entities through any snapshot and writing
nothing: `memory verify` (core/archive/verify.py) judges a stored memory's receipt
again with it. Rules 18 and 19 stay admission's: a stored memory judged
again would only find itself.

Per-turn limit (a decision of this module): an operator turn creates at most
one memory. A second, different proposal in a turn that already created one
is rejected as invalid_proposal. The duplicate check runs first, so a retry
of the request whose reply was lost returns applied/duplicate with the same
memory id instead of a rejection or a second row. Turn identity is the source
label "episode <episode_id> turn <turn_id>", with the ids exactly as sent:
ids therefore may not contain whitespace (two turns could share one label),
and an id that Unicode normalization would change is written with escapes
(see `source_label`), so "ｅ１" is never the turn "e1".

The stored summary (and its one text/plain payload) is the evidence span in
the operator's own wording, and the stored value is the value's span in that
evidence: the model's spelling of either never reaches the store.

Errors are fixed sentences: they never contain the utterance, the evidence
or any argument text. Admission never updates, deletes or supersedes a
memory and never creates an entity or an alias. `admit` never raises: store
and SQLite failures become backend_failure.

Supervised review (core/review, docs/review.md). A refusal a person can
judge (`reviewable`: the grounding rules 10-13 and 17, an unknown subject or
related entity, a conflict) may be kept for review. `admit_in` is admission
inside a transaction the caller holds, for the person's decision: it runs
these same rules, except the ones the person overrides (OVERRIDE_GROUNDING:
rules 10-13 and 17; OVERRIDE_CONFLICT: rule 18's conflict, whose memories
the caller retires first), and writes the memory with the caller's source
kind and receipt.
"""

import dataclasses
from dataclasses import dataclass
import sqlite3
from typing import Optional, Tuple
import unicodedata

from mira_memory.core.admission import anchors, language, verdict
from mira_memory.core.admission.normalize import has_forbidden_characters, has_unsegmented_script
from mira_memory.core.admission.normalize import locate, NormalizationError, normalize_key
from mira_memory.core.admission.normalize import normalize_token
from mira_memory.core.admission.normalize import TOKEN_MAX_LENGTH
from mira_memory.core.errors import InvalidInputError, StoreError
from mira_memory.core.store.records import NewMemory, Receipt, SOURCE_OPERATOR_STATEMENT
from mira_memory.core.store.records import SOURCE_SUPERVISED_STATEMENT

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

KIND_FACT = 'fact'
KIND_PREFERENCE = 'preference'
KIND_RELATIONSHIP = 'relationship'
ADMISSIBLE_KINDS = (KIND_FACT, KIND_PREFERENCE, KIND_RELATIONSHIP)

SUBJECT_MAX_LENGTH = 256
RELATED_ENTITY_MAX_LENGTH = 256
VALUE_MAX_LENGTH = 256
EVIDENCE_MAX_LENGTH = 500
UTTERANCE_MAX_LENGTH = 4000
CONTEXT_ID_MAX_LENGTH = 64
ERROR_MAX_LENGTH = 200
CONFLICTING_IDS_MAX = 8

SUBJECT_ROLE = 'subject'
# Only the subject position, and only these words: this is not pronoun or
# coreference resolution. Operator-side I/me/my/mine/myself stay literal.
SECOND_PERSON_SUBJECTS = frozenset(('you', 'your', 'yours', 'yourself'))

_FIELD_BOUNDS = (
    ('kind', TOKEN_MAX_LENGTH),
    ('subject', SUBJECT_MAX_LENGTH),
    ('predicate', TOKEN_MAX_LENGTH),
    ('value', VALUE_MAX_LENGTH),
    ('related_entity', RELATED_ENTITY_MAX_LENGTH),
    ('related_role', TOKEN_MAX_LENGTH),
    ('evidence', EVIDENCE_MAX_LENGTH),
)
_REQUIRED_FIELDS = ('kind', 'subject', 'predicate', 'value', 'evidence')
_RELATED_FIELDS = ('related_entity', 'related_role')

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
class TurnContext:
    """The current operator turn, supplied by the runtime, never by the model."""

    episode_id: str
    turn_id: str
    utterance: str


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


def reviewable(result):
    """Return True when a person can judge this rejection (REVIEWABLE_REFUSALS)."""
    return (result.status == STATUS_REJECTED
            and result.reason in REVIEWABLE_REFUSALS.get(result.rule, ()))


def source_label(context):
    """
    Return the provenance label that identifies an operator turn, ids exactly as sent.

    The store keeps labels in NFKC display form, which would fold "ｅ１" into
    "e1". An id that NFKC would change is therefore written as ASCII with
    u{hex} escapes after a backslash, and a backslash always as two, so no two
    ids share a label.
    """
    return 'episode %s turn %s' % (_label_id(context.episode_id), _label_id(context.turn_id))


def _label_id(text):
    escaped = text.replace('\\', '\\\\')
    if unicodedata.normalize('NFKC', text) == text and text.isprintable():
        return escaped
    return ''.join(
        char if ' ' < char <= '~' else '\\u{%x}' % ord(char) for char in escaped)


def admit(store, context, proposal, robot_profile):
    """
    Admit proposal as one durable memory when every admission rule holds.

    store is the MemoryStore owned by the memory node; context is the current
    operator TurnContext (or None); robot_profile is the robot profile name
    that you/your/yours/yourself denote. Never raises.
    """
    try:
        return _admit(store, context, proposal, robot_profile)
    except (StoreError, sqlite3.Error):
        return backend_failure()


def backend_failure():
    """Return the backend_failure rejection, also for callers with no store at all."""
    return _rejected(REASON_BACKEND_FAILURE)


def _admit(store, context, proposal, robot_profile):
    request, rejection = _judge_request(context, proposal, robot_profile)
    if rejection is not None:
        return rejection
    with store.write() as tx:
        return admit_in(tx, context, proposal, robot_profile, request=request)


def admit_in(tx, context, proposal, robot_profile, *, request=None, overrides=frozenset(),
             retire_conflicting=None, review=None):
    """
    Run the admission rules inside tx and write the memory when they hold; return the result.

    tx: an open store.WriteTransaction (or ReviewTransaction); nothing here
    commits. request: rules 1-13's _Request when the caller ran them already.
    For a person's review (core/review), overrides is a set of OVERRIDE_*:
    OVERRIDE_GROUNDING skips rules 10-13 and 17; OVERRIDE_CONFLICT calls
    retire_conflicting(memory ids) for the active memories in the slot
    instead of refusing, before the insert (the result's
    conflicting_memory_ids are those). review: the receipt's review fields
    (records.REVIEW_COLUMNS); with it the memory's source is
    supervised_statement. Store failures raise.
    """
    if request is None:
        request, rejection = _judge_request(context, proposal, robot_profile, overrides)
        if rejection is not None:
            return rejection
    label = source_label(context)
    decision, rejection = _judge_store(tx, request, proposal, robot_profile, overrides)
    if rejection is not None:
        return rejection
    stored, conflicting = _slot(tx, request, decision)
    if stored is not None:
        return duplicate(stored)
    if conflicting and OVERRIDE_CONFLICT not in overrides:
        return _rejected(REASON_CONFLICT, conflicting[:CONFLICTING_IDS_MAX], rule='18')
    if tx.turn_memory(label) is not None:
        return _rejected(REASON_INVALID_PROPOSAL, error=TURN_ALREADY_WROTE_ERROR, rule='19')
    if conflicting:
        retire_conflicting(conflicting)
    source = SOURCE_OPERATOR_STATEMENT if review is None else SOURCE_SUPERVISED_STATEMENT
    memory = tx.insert_memory(
        NewMemory(
            kind=request.kind, summary=request.evidence, links=decision.links,
            predicate=request.predicate, value=request.value, source_kind=source,
            source_label=label, confidence=None),
        allow_runtime_source=True)
    decision = dataclasses.replace(decision, rules_ran=_rules_ran(overrides))
    # The same transaction: the memory and its receipt commit together.
    written = receipt(memory.id, context, proposal, robot_profile, decision)
    if review is not None:
        written = dataclasses.replace(written, **review)
    tx.insert_receipt(written)
    return AdmissionResult(STATUS_APPLIED, OUTCOME_CREATED, '', memory.id, conflicting, '',
                           decision=decision)


def _slot(tx, request, decision):
    """
    Rule 18 against the subject's slot: return (duplicate memory id or None, conflicting ids).

    Facts and preferences share one slot per subject and predicate: the same
    value with the same links is a duplicate, another value a conflict.
    Relationships are duplicates by predicate and links; they never conflict.
    """
    kind, predicate, value_key = request.kind, request.predicate, request.value_key
    subject_id = decision.subject_entity_id
    if kind == KIND_RELATIONSHIP:
        same_slot = tx.relationship_memories(subject_id, predicate)
    else:
        same_slot = tx.slot_memories(subject_id, predicate)
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


def _rules_ran(overrides):
    """Return a receipt's rules_ran: every rule, less those a person overrode."""
    if not overrides:
        return RULES_RAN_ADMITTED
    skipped = ','.join(OVERRIDDEN_RULES[name] for name in sorted(overrides))
    return '%s except %s (overridden at review)' % (RULES_RAN_ADMITTED, skipped)


def receipt(memory_id, context, proposal, robot_profile, decision):
    """
    Return the Receipt of a memory admitted on context and proposal (created_at: the store's).

    It keeps what the rules read, no more: the utterance and the turn's ids,
    the proposal's fields as sent, the robot profile, the running rules and
    the decision.
    """
    return Receipt(
        memory_id=memory_id, utterance=context.utterance, episode_id=context.episode_id,
        turn_id=context.turn_id, kind=proposal.kind, subject=proposal.subject,
        predicate=proposal.predicate, value=proposal.value,
        related_entity=proposal.related_entity or None,
        related_role=proposal.related_role or None, evidence=proposal.evidence,
        robot_profile=robot_profile or '', rules_version=language.RULES_VERSION,
        rules_digest=language.rules_digest(), rules_ran=decision.rules_ran,
        subject_entity_id=decision.subject_entity_id,
        related_entity_id=decision.related_entity_id, created_at='')


@dataclass(frozen=True)
class Judgment:
    """
    What rules 1-17 say of a proposal now, without writing (see judge).

    rejection is the AdmissionResult remember would answer (its rule says
    which rule refused), or None when every rule holds; then decision holds
    the entity ids the rules resolved, summary and value the spans that
    admission would store.
    """

    rejection: Optional[AdmissionResult]
    decision: Optional['Decision'] = None
    summary: str = ''
    value: str = ''
    kind: str = ''
    predicate: str = ''
    # judge(writes=True): the memory already stored as this proposal (rule 18's duplicate).
    duplicate_of: Optional[int] = None
    # The grounding verdict that let it through (rules 10-13).
    grounding: Optional[verdict.Grounding] = None


def judge(reads, context, proposal, robot_profile, *, writes=False):
    """
    Run rules 1-17 on a proposal against reads, writing nothing; return a Judgment.

    reads answers find_entities(name, limit=...) on one consistent snapshot
    (memory verify: a read-only connection). The rules of one turn's writes
    (duplicate, conflict, the per-turn limit: 18 and 19) do not apply: a
    stored memory judged again would only find itself. A proposal that was
    never written (a pending item, core/review) is judged with them too when
    writes is True: reads then also answers slot_memories,
    relationship_memories and turn_memory as WriteTransaction does. Store
    failures raise.
    """
    request, rejection = _judge_request(context, proposal, robot_profile)
    if rejection is not None:
        return Judgment(rejection)
    decision, rejection = _judge_store(reads, request, proposal, robot_profile)
    if rejection is not None:
        return Judgment(rejection)
    stored = None
    if writes:
        stored, conflicting = _slot(reads, request, decision)
        if stored is None and conflicting:
            return Judgment(_rejected(REASON_CONFLICT, conflicting[:CONFLICTING_IDS_MAX],
                                      rule='18'))
        if stored is None and reads.turn_memory(source_label(context)) is not None:
            return Judgment(_rejected(REASON_INVALID_PROPOSAL, error=TURN_ALREADY_WROTE_ERROR,
                                      rule='19'))
    return Judgment(None, decision, request.evidence, request.value, request.kind,
                    request.predicate, stored, request.grounded)


@dataclass(frozen=True)
class Decision:
    """The rules that ran (as text, e.g. '1-19') and the entity ids they resolved."""

    rules_ran: str
    subject_entity_id: int
    related_entity_id: Optional[int]
    # (entity id, role) pairs of the memory: the subject link, then the related one.
    links: Tuple[Tuple[int, str], ...]


@dataclass(frozen=True)
class _Request:
    """What rules 1-13 establish from the request alone."""

    kind: str
    predicate: str
    role: Optional[str]
    related_entity: Optional[str]
    evidence: str
    value: str
    value_key: str
    grounded: verdict.Grounding


def _judge_request(context, proposal, robot_profile, overrides=frozenset()):
    """Rules 1-13 (10-13 unless overridden): return (_Request, None), or (None, the rejection)."""
    reason = _check_arguments(proposal)
    if reason:
        return None, _rejected(reason, rule='1')
    related_entity = proposal.related_entity or None
    related_role = proposal.related_role or None
    tokens = _proposal_tokens(proposal, related_role)
    if tokens is None:
        return None, _rejected(REASON_INVALID_PROPOSAL, rule='2')
    kind, predicate, role = tokens
    if kind == KIND_RELATIONSHIP:
        if related_entity is None or role is None:
            return None, _rejected(REASON_RELATED_FIELDS_INCOMPLETE, rule='4')
    elif related_entity is not None or role is not None:
        return None, _rejected(REASON_RELATED_ENTITY_INVALID_FOR_KIND, rule='3')
    evidence = _locate_evidence(context, proposal.evidence)
    if evidence is None:
        return None, _rejected(REASON_EVIDENCE_NOT_IN_UTTERANCE, rule='5')
    if not anchors.names(proposal.subject, evidence):
        return None, _rejected(REASON_SUBJECT_NOT_SUPPORTED, rule='6')
    value_key = normalize_key(proposal.value)
    if related_entity is not None:
        if locate(related_entity, evidence) is None:
            return None, _rejected(REASON_RELATED_ENTITY_NOT_SUPPORTED, rule='7')
        if normalize_key(related_entity) != value_key:
            return None, _rejected(REASON_RELATIONSHIP_VALUE_MISMATCH, rule='8')
    value = locate(proposal.value, evidence)
    if value is None:
        return None, _rejected(REASON_VALUE_NOT_SUPPORTED, rule='9')
    if OVERRIDE_GROUNDING in overrides:
        return _Request(kind, predicate, role, related_entity, evidence, value, value_key,
                        None), None
    grounded = verdict.ground(
        context.utterance, evidence, proposal.subject, proposal.value, predicate,
        relationship=kind == KIND_RELATIONSHIP,
        vocatives=(robot_profile,) if robot_profile else ())
    if grounded.failure:
        return None, dataclasses.replace(
            _rejected(_GROUNDING_REASONS[grounded.rule], error=grounded.error,
                      rule=_GROUNDING_RULES[grounded.rule]), grounding=grounded)
    return _Request(kind, predicate, role, related_entity, evidence, value, value_key,
                    grounded), None


def _judge_store(reads, request, proposal, robot_profile, overrides=frozenset()):
    """Rules 14-17 against the entities of reads: return (Decision, None) or (None, rejection)."""
    grounded = request.grounded
    subject_name = proposal.subject
    if normalize_key(subject_name) in SECOND_PERSON_SUBJECTS:
        subject_name = robot_profile
    subject_id, reason = _resolve_one(
        reads, subject_name, REASON_SUBJECT_NOT_FOUND, REASON_SUBJECT_AMBIGUOUS)
    if reason:
        return None, _rejected(reason, rule='14')
    links = ((subject_id, SUBJECT_ROLE),)
    related_id = None
    if request.kind == KIND_RELATIONSHIP:
        related_id, reason = _resolve_one(
            reads, request.related_entity, REASON_RELATED_ENTITY_NOT_FOUND,
            REASON_RELATED_ENTITY_AMBIGUOUS)
        if reason:
            return None, _rejected(reason, rule='15')
        if related_id == subject_id:
            return None, _rejected(REASON_INVALID_PROPOSAL, error=RELATED_IS_SUBJECT_ERROR,
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
        return None, _rejected(REASON_SUBJECT_NOT_SUPPORTED, error=OTHER_SUBJECT_ERROR, rule='17')
    second_person = normalize_key(proposal.subject) in SECOND_PERSON_SUBJECTS
    for name in grounded.addressee_candidates if second_person else ():
        # "you" addressed to another entity ("Ada, you like tea.") is not the robot.
        if _names_entity(reads, name, besides=subject_id):
            return None, _rejected(REASON_SUBJECT_NOT_SUPPORTED, error=ADDRESSEE_ERROR,
                                   rule='17')
    for name, only_possessor in grounded.longer_subject_candidates:
        if _names_entity(reads, name, besides=subject_id):
            return None, _rejected(REASON_SUBJECT_NOT_SUPPORTED, error=LONGER_NAME_ERROR,
                                   rule='17')
        if only_possessor and _names_entity(reads, name):
            return None, _rejected(REASON_SUBJECT_NOT_SUPPORTED,
                                   error=verdict.ERRORS['subject_possessor'][1], rule='17')
    return Decision(RULES_RAN_JUDGED, subject_id, related_id, links), None


def duplicate(memory_id):
    """Return applied/duplicate: the proposal is already stored as memory_id."""
    return AdmissionResult(STATUS_APPLIED, OUTCOME_DUPLICATE, '', memory_id, (), '')


def turn_already_proposed():
    """Return the rejection of a different proposal in a turn that already had one."""
    return _rejected(REASON_INVALID_PROPOSAL, error=TURN_ALREADY_PROPOSED_ERROR)


def _rejected(reason, conflicting_memory_ids=(), error=None, rule=''):
    return AdmissionResult(
        STATUS_REJECTED, '', reason, None, conflicting_memory_ids,
        _ERRORS[reason] if error is None else error, rule=rule)


def _is_blank(text):
    # NFKC maps no visible character to whitespace (checked for every code
    # point), so the raw text answers without normalizing it.
    return not text.split()


def _check_arguments(proposal):
    if not isinstance(proposal, Proposal):
        return REASON_INVALID_TOOL_ARGUMENTS
    for name, bound in _FIELD_BOUNDS:
        text = getattr(proposal, name)
        if name in _RELATED_FIELDS and text in (None, ''):
            continue
        # The raw length first: an oversized field costs nothing more.
        if not isinstance(text, str) or len(text) > bound or _is_blank(text):
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


def _locate_evidence(context, evidence):
    """Return the evidence span in the operator's wording, or None."""
    if not isinstance(context, TurnContext):
        return None
    if not (_is_turn_key(context.episode_id) and _is_turn_key(context.turn_id)):
        return None
    utterance = context.utterance
    if (not isinstance(utterance, str) or len(utterance) > UTTERANCE_MAX_LENGTH
            or has_forbidden_characters(utterance) or _is_blank(utterance)):
        return None
    span = locate(evidence, utterance)
    if span is None or has_unsegmented_script(span):
        # Without spaces between words no name can be shown to be a whole
        # word of the evidence; no segmenter dependency qualifies (README).
        return None
    return span


def _is_turn_key(text):
    return (isinstance(text, str) and 0 < len(text) <= CONTEXT_ID_MAX_LENGTH
            and not has_forbidden_characters(text)
            and not any(char.isspace() for char in text))


def _resolve_one(tx, name, not_found_reason, ambiguous_reason):
    """Return (entity id, '') for exactly one exact match, else (None, reason)."""
    if not isinstance(name, str) or has_forbidden_characters(name) or _is_blank(name):
        return None, not_found_reason
    try:
        matches = tx.find_entities(name, limit=2)
    except InvalidInputError:
        # A name the store refuses to look up cannot name a stored entity.
        return None, not_found_reason
    if not matches:
        return None, not_found_reason
    if len(matches) > 1:
        return None, ambiguous_reason
    return matches[0].id, ''


def _names_entity(tx, name, besides=None):
    """Return True when name exactly names an entity (other than besides: an id or ids)."""
    try:
        matches = tx.find_entities(name, limit=3)
    except InvalidInputError:
        return False
    excluded = besides if isinstance(besides, (set, frozenset)) else {besides}
    return any(entity.id not in excluded for entity in matches)


def _link_set(memory):
    return frozenset((link.entity_id, link.role) for link in memory.links)
