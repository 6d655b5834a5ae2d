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
(see operator_turn.source_label), so "ｅ１" is never the turn "e1".

The stored summary (and its one text/plain payload) is the evidence span in
the operator's own wording, and the stored value is the value's span in that
evidence: the model's spelling of either never reaches the store.

Errors are fixed sentences: they never contain the utterance, the evidence
or any argument text. Admission never updates, deletes or supersedes a
memory and never creates an entity or an alias. `admit` never raises: store
and SQLite failures become backend_failure.

Supervised review (core/review, docs/review.md). A refusal a person can
judge (results.reviewable: the grounding rules 10-13 and 17, an unknown subject or
related entity, a conflict) may be kept for review. `admit_in` is admission
inside a transaction the caller holds, for the person's decision: it runs
these same rules, except the ones the person overrides (OVERRIDE_GROUNDING:
rules 10-13 and 17; OVERRIDE_CONFLICT: rule 18's conflict, whose memories
the caller retires first), and writes the memory with the caller's source
kind and receipt.

Where each rule is decided: proposal_rules.py (1-13; the grounding rules
10-13 are verdict.py's), store_rules.py (14-18), this module (19, the
write and its receipt); results.py holds the reasons, their fixed error
sentences and AdmissionResult. The operator Turn (operator_turn.py) is read
once where a request enters and handed down to each.
"""

import dataclasses
from dataclasses import dataclass
import sqlite3
from typing import Optional

from mira_memory.core.admission import language, verdict
from mira_memory.core.admission.operator_turn import source_label, Turn, TurnContext
from mira_memory.core.admission.proposal_rules import judge_request
from mira_memory.core.admission.results import AdmissionResult, backend_failure
from mira_memory.core.admission.results import CONFLICTING_IDS_MAX, Decision, duplicate
from mira_memory.core.admission.results import OUTCOME_CREATED, OVERRIDDEN_RULES
from mira_memory.core.admission.results import OVERRIDE_CONFLICT, REASON_CONFLICT
from mira_memory.core.admission.results import REASON_INVALID_PROPOSAL, rejected
from mira_memory.core.admission.results import RULES_RAN_ADMITTED, STATUS_APPLIED
from mira_memory.core.admission.results import TURN_ALREADY_WROTE_ERROR
from mira_memory.core.admission.store_rules import judge_store, slot
from mira_memory.core.errors import StoreError
from mira_memory.core.store.records import NewMemory, Receipt, SOURCE_OPERATOR_STATEMENT
from mira_memory.core.store.records import SOURCE_SUPERVISED_STATEMENT


def admit(store, context, proposal, robot_profile):
    """
    Admit proposal as one durable memory when every admission rule holds.

    store is the MemoryStore owned by the memory node; context is the current
    operator Turn (or a TurnContext, read into one here; or None);
    robot_profile is the robot profile name that you/your/yours/yourself
    denote. Never raises.
    """
    try:
        return _admit(store, context, proposal, robot_profile)
    except (StoreError, sqlite3.Error):
        return backend_failure()


def _admit(store, context, proposal, robot_profile):
    context = _turn(context)
    request, rejection = judge_request(context, proposal, robot_profile)
    if rejection is not None:
        return rejection
    with store.write() as tx:
        return admit_in(tx, context, proposal, robot_profile, request=request)


def admit_in(tx, context, proposal, robot_profile, *, request=None, overrides=frozenset(),
             retire_conflicting=None, review=None):
    """
    Run the admission rules inside tx and write the memory when they hold; return the result.

    tx: an open store.WriteTransaction (or ReviewTransaction); nothing here
    commits. request: rules 1-13's CheckedRequest (proposal_rules) when the
    caller ran them already. For a person's review (core/review), overrides is a set of OVERRIDE_*:
    OVERRIDE_GROUNDING skips rules 10-13 and 17; OVERRIDE_CONFLICT calls
    retire_conflicting(memory ids) for the active memories in the slot
    instead of refusing, before the insert (the result's
    conflicting_memory_ids are those). review: the receipt's review fields
    (records.REVIEW_COLUMNS); with it the memory's source is
    supervised_statement. Store failures raise.
    """
    context = _turn(context)
    if request is None:
        request, rejection = judge_request(context, proposal, robot_profile, overrides)
        if rejection is not None:
            return rejection
    label = source_label(context)
    decision, rejection = judge_store(tx, request, proposal, robot_profile, overrides)
    if rejection is not None:
        return rejection
    stored, conflicting = slot(tx, request, decision)
    if stored is not None:
        return duplicate(stored)
    if conflicting and OVERRIDE_CONFLICT not in overrides:
        return rejected(REASON_CONFLICT, conflicting[:CONFLICTING_IDS_MAX], rule='18')
    if tx.turn_memory(label) is not None:
        return rejected(REASON_INVALID_PROPOSAL, error=TURN_ALREADY_WROTE_ERROR, rule='19')
    if conflicting:
        retire_conflicting(conflicting)
    source = SOURCE_OPERATOR_STATEMENT if review is None else SOURCE_SUPERVISED_STATEMENT
    memory = tx.insert_memory(
        NewMemory(
            kind=request.kind, summary=request.evidence, links=decision.links,
            predicate=request.predicate, value=request.value, source_kind=source,
            source_label=label, confidence=None),
        allow_runtime_source=True)
    decision = dataclasses.replace(decision, rules_ran=_rules_ran(overrides, request))
    # The same transaction: the memory and its receipt commit together.
    written = receipt(memory.id, context, proposal, robot_profile, decision)
    if review is not None:
        written = dataclasses.replace(written, **review)
    tx.insert_receipt(written)
    return AdmissionResult(STATUS_APPLIED, OUTCOME_CREATED, '', memory.id, conflicting, '',
                           decision=decision)


def _rules_ran(overrides, request):
    """
    Return a receipt's rules_ran: every rule, less those a person overrode.

    When the grounding rules read triggers in the evidence's sentence and let
    them pass, it names them too ("1-19; allowed: pseudo "never says no
    to" ...: asserts"): the trigger words that did not decide against it.
    """
    allowed = request.grounded.decided_by if request.grounded is not None else ''
    allowed = '; allowed: %s' % allowed if allowed else ''
    if not overrides:
        return RULES_RAN_ADMITTED + allowed
    skipped = ','.join(OVERRIDDEN_RULES[name] for name in sorted(overrides))
    return '%s except %s (overridden at review)%s' % (RULES_RAN_ADMITTED, skipped, allowed)


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
    decision: Optional[Decision] = None
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
    context = _turn(context)
    request, rejection = judge_request(context, proposal, robot_profile)
    if rejection is not None:
        return Judgment(rejection)
    decision, rejection = judge_store(reads, request, proposal, robot_profile)
    if rejection is not None:
        return Judgment(rejection)
    stored = None
    if writes:
        stored, conflicting = slot(reads, request, decision)
        if stored is None and conflicting:
            return Judgment(rejected(REASON_CONFLICT, conflicting[:CONFLICTING_IDS_MAX],
                                     rule='18'))
        if stored is None and reads.turn_memory(source_label(context)) is not None:
            return Judgment(rejected(REASON_INVALID_PROPOSAL, error=TURN_ALREADY_WROTE_ERROR,
                                     rule='19'))
    return Judgment(None, decision, request.evidence, request.value, request.kind,
                    request.predicate, stored, request.grounded)


def _turn(context):
    """Return the context as a Turn: read once here when the caller has not done so."""
    return Turn.of(context) if isinstance(context, TurnContext) else None
