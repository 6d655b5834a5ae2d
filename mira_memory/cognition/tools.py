# SPDX-License-Identifier: Apache-2.0
"""
The two memory tools as cognition sees them: schemas, arguments, result texts.

recall_memory is a read-only acquisition; remember is the operator-grounded
write, decided by the memory node alone. This module only describes the tools
to the model, checks that the model's arguments have the schema's shape, and
words what came back. It applies no admission rule.

No text built here contains the model's argument values: a refusal names
schema properties and reason tokens only, and remember results are built from
the node's response fields, which never echo arguments either.
"""

import copy
from dataclasses import dataclass
import json
from typing import Literal, Optional

from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.pydantic_compat import Field, Model, StrictStr, ValidationError, validator

RECALL_MEMORY = 'recall_memory'
REMEMBER = 'remember'
TOOL_NAMES = (RECALL_MEMORY, REMEMBER)

OPERATOR = 'operator'
AUTONOMOUS = 'autonomous'

APPLIED = 'applied'
REJECTED = 'rejected'
CREATED = 'created'
DUPLICATE = 'duplicate'

# Reasons of calls the runtime answers itself, without reaching a service.
# invalid_tool_arguments and evidence_not_in_utterance are the spec's own
# tokens (product.md maps "no current operator utterance" to the latter); the
# others have no spec token because the node never sees these calls.
UNKNOWN_TOOL = 'unknown_tool'
TOOL_UNAVAILABLE = 'tool_unavailable'
ACQUISITION_BUDGET_EXHAUSTED = 'acquisition_budget_exhausted'
INVALID_TOOL_ARGUMENTS = 'invalid_tool_arguments'
REMEMBER_LIMIT_REACHED = 'remember_limit_reached'
NO_OPERATOR_UTTERANCE = 'evidence_not_in_utterance'
NO_RESULT = 'no_result'
# A model backend's call that came after the turn's last allowed tool round.
TOOL_ROUND_LIMIT = 'tool_round_limit'

# The tool arguments as pydantic models (v1 API, core/pydantic_compat.py):
# the models are the one definition. The strict schema offered to the model
# is derived from them (strict_parameters), and the arguments are validated
# against them, so the two cannot drift.


def _ros_string(value):
    if value is None:  # a nullable field's null
        return value
    if '\x00' in value:
        # A ROS string field ends at NUL: the memory node would receive a cut
        # text and could not reject its control character itself.
        raise ValueError('must be a string')
    try:
        # A lone surrogate (legal as a JSON escape) cannot cross a ROS string field.
        value.encode('utf-8')
    except UnicodeEncodeError:
        raise ValueError('must be a string') from None
    return value


class RecallMemoryParameters(Model):
    """The parameters of recall_memory."""

    query: StrictStr = Field(..., description=(
        'One canonical name or alias of an entity, exact match only, '
        'at most 256 characters.'))

    _ros_strings = validator('*', allow_reuse=True)(_ros_string)


class RememberParameters(Model):
    """The parameters of remember: the node's Proposal, field for field."""

    kind: Literal['fact', 'preference', 'relationship'] = Field(
        ..., description='fact, preference or relationship.')
    subject: StrictStr = Field(..., description=(
        'Canonical name or alias of the existing entity the memory is about, '
        'copied exactly as the operator said it; it must occur in evidence and '
        'be what the clause is about (not a possessor: in "Ada\'s brother '
        'sings", Ada is not the subject). '
        'Use you, your, yours or yourself, as the operator said it, for the '
        'robot itself. I, me, my, mine and myself are not resolved to anyone.'))
    predicate: StrictStr = Field(..., description=(
        'A concise stable identifier for the property or relation, such as '
        'favorite_drink or works_with: a letter, then letters, digits or '
        'underscores. A negated statement needs a negated predicate: '
        '"Ada doesn\'t eat meat" is does_not_eat.'))
    value: StrictStr = Field(..., description=(
        'The value, copied from the current operator utterance; it must occur '
        'in evidence as a whole phrase: numbers whole, with any approximation '
        '("roughly 40"), and never what a contrast sets aside ("tea, not '
        'coffee" gives tea). For a relationship, the same text as '
        'related_entity.'))
    # Required but nullable (Field(...)): strict mode has no optional properties.
    related_entity: Optional[StrictStr] = Field(..., description=(
        "Relationship only: the related existing entity's canonical name or "
        'alias, copied from the current operator utterance. null for a fact or '
        'a preference.'))
    related_role: Optional[StrictStr] = Field(..., description=(
        'Relationship only: a simple role identifier for the related entity, '
        'such as friend or manager (not subject, which the runtime assigns). '
        'null for a fact or a preference.'))
    evidence: StrictStr = Field(..., description=(
        'The shortest complete clause of the current operator utterance that '
        'states this, copied verbatim, negation included. Never propose a '
        'question, plan, guess, report of what others say, joke, or '
        'something true only now (today, this week).'))

    _ros_strings = validator('*', allow_reuse=True)(_ros_string)


def strict_parameters(model):
    """
    Return a model's JSON schema in the strict form of OpenAI's function tools.

    pydantic's v1 schema() is close; strict mode also needs every property
    required (a nullable one as a ["string", "null"] type union, which v1
    leaves out), no additional properties, and nothing else: titles and
    defaults are not part of the strict form.
    """
    properties = {}
    for name, generated in model.schema()['properties'].items():
        kind = generated['type']
        if model.__fields__[name].allow_none:
            kind = [kind, 'null']
        # Keys in the order the provider documents them: type, enum, description.
        spec = {'type': kind}
        spec.update((key, generated[key]) for key in ('enum', 'description') if key in generated)
        properties[name] = spec
    return {'type': 'object', 'properties': properties, 'required': list(properties),
            'additionalProperties': False}


RECALL_MEMORY_TOOL = {
    'type': 'function',
    'name': RECALL_MEMORY,
    'description': (
        'Look up persistent memory about one known entity by its exact canonical name '
        'or alias. Read-only: it never stores anything. Every call, whether it finds '
        "something or not, uses one of this episode's two memory acquisition attempts. "
        'Matching is exact after Unicode, case and whitespace normalization only: no '
        'partial, fuzzy, typo-correcting or semantic matching. Results are remembered '
        'knowledge that may be stale; they are not current perception.'),
    'strict': True,
    'parameters': strict_parameters(RecallMemoryParameters),
}

REMEMBER_TOOL = {
    'type': 'function',
    'name': REMEMBER,
    'description': (
        'Propose storing one durable fact, preference or simple relationship that the '
        'operator states in the current utterance. Writes at most one memory, about an '
        'entity that already exists; it cannot create entities or aliases and cannot '
        'change or delete memories. The runtime checks the proposal against the current '
        'operator utterance and may reject it. Only the runtime result confirms a write: '
        'applied/created means a new memory was stored, applied/duplicate means it was '
        'already stored, rejected means nothing was written.'),
    'strict': True,
    'parameters': strict_parameters(RememberParameters),
}

_TOOLS_BY_EPISODE = {
    # remember is never offered outside an operator episode: autonomous
    # attention, initiatives, goals, temporal follow-ups and background
    # monitors have no operator utterance to ground a write in.
    OPERATOR: (RECALL_MEMORY_TOOL, REMEMBER_TOOL),
    AUTONOMOUS: (RECALL_MEMORY_TOOL,),
}


def tools_for_episode(kind):
    """
    Return the tool definitions offered to an episode of this kind.

    Copies, so that nothing a caller does to them changes the definitions
    offered to the next episode. Raises ValueError for an unknown kind.
    """
    if kind not in _TOOLS_BY_EPISODE:
        raise ValueError('episode kind must be operator or autonomous')
    return copy.deepcopy(_TOOLS_BY_EPISODE[kind])


class ToolArgumentError(ValueError):
    """The model's tool arguments do not have the tool schema's shape."""


@dataclass(frozen=True)
class RecallArguments:
    """Arguments of a recall_memory call."""

    query: str


def parse_recall_arguments(raw):
    """Parse recall_memory arguments (JSON text or dict); raise ToolArgumentError."""
    return RecallArguments(**_parse(raw, RecallMemoryParameters, RECALL_MEMORY_TOOL))


def parse_remember_arguments(raw):
    """Parse remember arguments (JSON text or dict); raise ToolArgumentError."""
    # The model's arguments are exactly the node's Proposal: one type on both sides.
    return Proposal(**_parse(raw, RememberParameters, REMEMBER_TOOL))


def _parse(raw, model, tool):
    """Return the validated arguments as a dict, in the schema's property order."""
    if isinstance(raw, (str, bytes, bytearray)):
        try:
            raw = json.loads(raw, object_pairs_hook=_reject_duplicate_keys)
        except (ValueError, RecursionError):
            raise ToolArgumentError('arguments are not valid JSON') from None
    if not isinstance(raw, dict):
        raise ToolArgumentError('arguments must be a JSON object')
    try:
        return model(**raw).dict()
    except ValidationError as error:
        raise ToolArgumentError(_argument_error(error, tool['parameters'])) from None
    except TypeError:  # a key that is not a str cannot come from JSON text
        raise ToolArgumentError('arguments must be a JSON object') from None


def _argument_error(error, schema):
    """
    Word a ValidationError without the model's input: names from the schema only.

    An unexpected property's name is the model's input, so it is counted,
    never repeated.
    """
    errors = error.errors()
    missing = [e['loc'][0] for e in errors if e['type'] == 'value_error.missing']
    if missing:
        return 'missing required properties: %s' % ', '.join(missing)
    extra = [e for e in errors if e['type'] == 'value_error.extra']
    if extra:
        return '%d unexpected properties; the tool defines only: %s' % (
            len(extra), ', '.join(schema['properties']))
    name = errors[0]['loc'][0]
    return 'property %s must be %s' % (name, _expected(schema['properties'][name]))


def _reject_duplicate_keys(pairs):
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        # Which of two values would count is a guess; a guess is not a proposal.
        raise ValueError('duplicate property')
    return dict(pairs)


def _expected(spec):
    if 'enum' in spec:
        return 'one of: %s' % ', '.join(spec['enum'])
    if isinstance(spec['type'], list):
        return 'a string or null'
    return 'a string'


def recall_result_text(status, reason, text):
    """
    Return what the model gets back from a recall_memory call.

    A one-line header with the service's status and reason, then the
    service's rendered text, which already frames the content as remembered,
    possibly stale knowledge.
    """
    header = '%s: %s' % (RECALL_MEMORY, status)
    if reason:
        header += ' (%s)' % reason
    return '%s\n%s' % (header, text) if text else header


def remember_result_text(status, outcome, reason, memory_id, conflicting_memory_ids, error,
                         pending_review=False):
    """
    Return what the model gets back from a remember call, per the acknowledgement rule.

    Only applied/created is worded as a new write; applied/duplicate says no
    new record was written; rejected says no write happened. Anything else is
    a broken reply and is worded as such, never as a write. A rejection the
    memory node kept for a person's review (pending_review) says so, and
    nothing else of it: the robot may say it noted it for review, never that
    it remembers it.
    """
    if status == APPLIED and outcome == CREATED and memory_id:
        return '%s: applied (created): stored as new durable memory %s.' % (REMEMBER, memory_id)
    if status == APPLIED and outcome == DUPLICATE and memory_id:
        return ('%s: applied (duplicate): already stored as %s; no new record was written.'
                % (REMEMBER, memory_id))
    if status == REJECTED:
        text = '%s: rejected (%s): not stored: %s; no write happened.' % (
            REMEMBER, reason or 'no reason given', error.rstrip('. ') or 'no detail given')
        if conflicting_memory_ids:
            text += ' Conflicting memories: %s.' % ', '.join(conflicting_memory_ids)
        if pending_review:
            text += (' The proposal was kept for a person to review; it is not stored and may'
                     ' never be.')
        return text
    return ('%s: unrecognized result; do not assume the memory was stored.' % REMEMBER)


_REFUSALS = {
    UNKNOWN_TOOL: 'there is no such tool; nothing was done.',
    TOOL_UNAVAILABLE: 'this tool is not available in this episode; nothing was done.',
    ACQUISITION_BUDGET_EXHAUSTED: (
        "this episode's memory acquisition attempts are used up; memory was not "
        'searched.'),
    INVALID_TOOL_ARGUMENTS: (
        'the arguments do not match the tool schema; the call was not executed and '
        'nothing was stored.'),
    REMEMBER_LIMIT_REACHED: (
        'remember was already called in this operator turn, and at most one memory can '
        'be proposed per turn; no write happened.'),
    NO_OPERATOR_UTTERANCE: (
        'there is no current operator utterance to ground a memory in; no write '
        'happened.'),
    TOOL_ROUND_LIMIT: (
        "this turn's tool rounds are used up; the call was not executed and nothing "
        'was stored.'),
}

_NO_RESULTS = {
    RECALL_MEMORY: 'no result was received; nothing was recalled.',
    REMEMBER: 'no result was received; do not assume the memory was stored.',
}


def refused_text(tool, reason, detail=''):
    """
    Return what the model gets back for a call the runtime answered itself.

    reason is one of this module's refusal tokens; NO_RESULT is for a call
    that reached the service but got no reply in time. detail is an optional
    ToolArgumentError message (which never echoes arguments). A tool name the
    runtime does not know is not repeated.
    """
    name = tool if tool in TOOL_NAMES else 'tool call'
    if reason == NO_RESULT:
        return '%s: no result: %s' % (name, _NO_RESULTS[name])
    text = '%s: refused (%s): %s' % (name, reason, _REFUSALS[reason])
    return '%s Detail: %s.' % (text, detail) if detail else text
