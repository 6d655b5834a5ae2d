# SPDX-License-Identifier: Apache-2.0
"""
A dry run of remember's admission rules: what remember would answer, writing nothing.

`memory check` (the admin service admin/check) asks it for a statement typed
at the console, so a person can see why a proposal is refused before anyone
says it to the robot. It runs rules 1-19 through rules.judge(writes=True), the
same rule code remember's admission runs, on one read snapshot: no memory, no
pending item, no receipt is written, and no operator turn is used up (the
statement gets a turn of its own that no remember ever used). Rules 0a and 0b
belong to the node's heard turns and are not run: the statement stands for
an operator turn the node heard.

The answer is for a person, not for the model: besides the reason and the
rule's fixed sentence it names the grounding check that refused it and
whatever else the grounding verdict records of what decided.
"""

import dataclasses
from dataclasses import dataclass
from typing import Optional, Tuple
import uuid

from mira_memory.core.admission import operator_turn, proposal_rules, results, rules
from mira_memory.core.review import decisions

# The turn a checked statement stands for: an id no remember sends (remember's
# episode ids come from cognition); the turn id is new for every check, so
# rule 19 (one memory per turn) never sees an earlier write.
CHECK_EPISODE_ID = 'memory-check'
# Fields of the grounding verdict that feed admission's store checks (rule
# 17), not an explanation: every other field that is set is shown.
_STORE_CHECK_FIELDS = frozenset((
    'failure', 'other_subject_found', 'other_subject_candidates',
    'longer_subject_candidates', 'addressee_candidates'))


@dataclass(frozen=True)
class CheckResult:
    """What remember would answer for a statement, and why; nothing was written."""

    # The answer remember would give (for created: memory_id None, nothing is stored).
    result: results.AdmissionResult
    # applied/created: the spans that would be stored and the entities they name.
    summary: str = ''
    value: str = ''
    subject_entity_id: Optional[int] = None
    related_entity_id: Optional[int] = None
    # A refusal remember would keep for a person's review (memory pending),
    # for an operator turn the node heard and while the queue keeps any.
    would_keep_for_review: bool = False
    # The grounding check that refused it ('hedged', 'value_partial', ...).
    grounding_check: str = ''
    # (name, text) of what else the grounding verdict says decided.
    decided_by: Tuple[Tuple[str, str], ...] = ()


def check(conn, utterance, proposal, robot_profile, keeps_refusals=True):
    """
    Judge proposal on utterance with rules 1-19 inside conn's read snapshot; return a CheckResult.

    proposal: a proposal_rules.Proposal; an empty evidence means the whole utterance,
    an empty kind a fact, or a relationship when a related entity is given
    (a person typing a statement should not have to spell out the obvious).
    keeps_refusals: the node keeps reviewable refusals (pending_enabled).
    Store failures raise.
    """
    if not proposal.evidence:
        proposal = dataclasses.replace(proposal, evidence=utterance)
    if not proposal.kind:
        proposal = dataclasses.replace(proposal, kind=proposal_rules.KIND_RELATIONSHIP if (
            proposal.related_entity) else proposal_rules.KIND_FACT)
    context = operator_turn.TurnContext(
        episode_id=CHECK_EPISODE_ID, turn_id=f'check-{uuid.uuid4().hex}', utterance=utterance)
    judgment = rules.judge(decisions.SnapshotReads(conn), context, proposal, robot_profile,
                           writes=True)
    if judgment.rejection is not None:
        rejection = judgment.rejection
        return CheckResult(
            rejection,
            would_keep_for_review=keeps_refusals and results.reviewable(rejection),
            grounding_check=rejection.grounding.failure if rejection.grounding else '',
            decided_by=explanation(rejection.grounding))
    decision = judgment.decision
    if judgment.duplicate_of is not None:
        result = results.duplicate(judgment.duplicate_of)
    else:
        result = results.AdmissionResult(
            results.STATUS_APPLIED, results.OUTCOME_CREATED, '', None, (), '', decision=decision)
    return CheckResult(
        result, summary=judgment.summary, value=judgment.value,
        subject_entity_id=decision.subject_entity_id,
        related_entity_id=decision.related_entity_id,
        decided_by=explanation(judgment.grounding))


def explanation(grounding):
    """
    Return (name, text) for every field the grounding verdict sets beyond its store checks.

    The verdict decides what it records (the trigger, its words, their
    scope); whatever it records is shown, so this follows the verdict.
    """
    if grounding is None or not dataclasses.is_dataclass(grounding):
        return ()
    shown = []
    for field in dataclasses.fields(grounding):
        value = getattr(grounding, field.name)
        if field.name in _STORE_CHECK_FIELDS or value in (None, '', (), [], False):
            continue
        name = 'trigger' if field.name == 'decider' else field.name.replace('_', ' ')
        shown.append((name, _text(value)))
    return tuple(shown)


def _text(value):
    if hasattr(value, '_fields'):
        # A named record that says itself in words (verdict.Decider: class,
        # words, position and scope of a trigger).
        return str(value)
    if isinstance(value, (tuple, list)):
        return ', '.join(_text(item) for item in value)
    if dataclasses.is_dataclass(value):
        return ', '.join(f'{field.name.replace("_", " ")} {_text(getattr(value, field.name))}'
                         for field in dataclasses.fields(value)
                         if getattr(value, field.name) not in (None, '', (), []))
    return str(value)
