# SPDX-License-Identifier: Apache-2.0
"""
Simulation scenarios: the scripted world and the scripted model, from one TOML file.

A scenario says which entities the operator seeds before the conversation
(a supervised console operation), what the operator says turn by turn, which
tool calls the scripted model makes for each turn, what perception observes,
and which tool calls the scripted attention model makes when an observation
matches one of its triggers. The format is documented in docs/simulation.md.

Tool call arguments are raw JSON text, exactly what a model would emit, so a
scenario can also script malformed calls. Nothing here judges a call: the
cognition library and the memory node do.

Loading is strict: an unknown key, a missing key or a wrong type is an error
that names its place in the file, so a typo cannot silently drop a turn. The
file's shape is a set of pydantic models (core/pydantic_compat.py); the
runtime objects are the frozen dataclasses below, built from them.

Episode ids are not in the file. An episode has a name ("e1"), local to the
file; the operator source publishes it as episode id "<run id>-<name>" with a
run id of its own (operator_episode_id), so a database kept across runs never
sees one episode id twice: turn provenance ("episode <id> turn <id>") stays
unique and a repeated statement is a duplicate, never "this operator turn
already wrote a memory". The scripted model and the transcript map an
episode id back to its name with episode_name.
"""

from dataclasses import dataclass
import datetime
import math
import re
import secrets
import tomllib
from typing import List, Optional

from mira_memory.core.pydantic_compat import Field, Model, one_line, StrictStr
from mira_memory.core.pydantic_compat import ValidationError, validator
from mira_memory.wire import ID_PATTERN

# The id rule of the topics (wire.py): ids end up in provenance labels.
_ID = ID_PATTERN
_TOKEN = re.compile(r'[a-z][a-z0-9_]{0,63}')
# A run id: UTC start time to the second plus 24 random bits, e.g.
# 20261201T000327Z-3f9a1c. The time makes provenance labels readable; the
# random part keeps two runs started in the same second apart.
_RUN_ID = r'[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}'
RUN_ID_LENGTH = 23
# Episode names leave room for "<run id>-" within the 64-character id bound.
EPISODE_NAME_MAX_LENGTH = 64 - RUN_ID_LENGTH - 1
_EPISODE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,%d}' % (EPISODE_NAME_MAX_LENGTH - 1))
_OPERATOR_EPISODE_ID = re.compile(r'(%s)-(%s)' % (_RUN_ID, _EPISODE_NAME.pattern))


class ScenarioError(ValueError):
    """The scenario file cannot be read or does not have the documented shape."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the scripted model: a tool name and raw JSON arguments."""

    tool: str
    arguments: str


@dataclass(frozen=True)
class SeedEntity:
    """An entity (with aliases) that must exist before the conversation starts."""

    entity_type: str
    name: str
    aliases: tuple


@dataclass(frozen=True)
class Turn:
    """One operator utterance and the tool calls the model makes for it."""

    id: str  # noqa: A003
    text: str
    calls: tuple


@dataclass(frozen=True)
class Episode:
    """
    One operator episode: turns in order; the acquisition budget is per episode.

    name is local to the scenario file; the published episode id is
    operator_episode_id(run id, name).
    """

    name: str
    turns: tuple


@dataclass(frozen=True)
class Observation:
    """
    One scripted observation of the perception node.

    after_turn, when set, is an (episode name, turn id) pair: the observation
    is published only after cognition has finished that operator turn, which
    keeps the story's order deterministic.
    """

    id: str  # noqa: A003
    source: str
    label: str
    entity_name: str
    text: str
    after_turn: Optional[tuple]


@dataclass(frozen=True)
class Trigger:
    """An attention trigger: observations it matches start one autonomous episode each."""

    id: str  # noqa: A003
    label: str
    entity_name: str
    calls: tuple

    def matches(self, label, entity_name):
        """Return True when an observation with this label and entity starts an episode."""
        return label == self.label and (not self.entity_name or entity_name == self.entity_name)


@dataclass(frozen=True)
class Scenario:
    """A whole scenario file."""

    description: str
    seed: tuple
    episodes: tuple
    observation_rate_hz: float
    observations: tuple
    triggers: tuple

    def calls_for_turn(self, episode_id, turn_id):
        """
        Return the model's tool calls for an operator turn; none for an unscripted turn.

        episode_id is the published id ("<run id>-<name>") of one of this
        scenario's episodes; any other id is an unscripted episode.
        """
        name = episode_name(episode_id)
        for episode in self.episodes:
            if episode.name == name:
                for turn in episode.turns:
                    if turn.id == turn_id:
                        return turn.calls
        return ()

    def triggers_for(self, label, entity_name):
        """Return the triggers an observation matches, in file order."""
        return tuple(
            trigger for trigger in self.triggers if trigger.matches(label, entity_name))

    def autonomous_episode_ids(self):
        """Return the ids of the autonomous episodes the observations will start."""
        return tuple(
            autonomous_episode_id(trigger.id, observation.id)
            for observation in self.observations
            for trigger in self.triggers_for(observation.label, observation.entity_name))


def new_run_id(now=None):
    """Return a new run id: the UTC time (now, or the current time) and 24 random bits."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return f'{now.astimezone(datetime.timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}'


def operator_episode_id(run_id, name):
    """Return the episode id the operator source publishes for a scenario episode."""
    episode_id = f'{run_id}-{name}'
    if _OPERATOR_EPISODE_ID.fullmatch(episode_id) is None:
        raise ValueError('not a run id and an episode name')
    return episode_id


def episode_name(episode_id):
    """Return the scenario episode name in an operator episode id, or None."""
    match = _OPERATOR_EPISODE_ID.fullmatch(episode_id) if isinstance(episode_id, str) else None
    return match.group(2) if match else None


def autonomous_episode_id(trigger_id, observation_id):
    """Return the id of the autonomous episode a trigger starts for an observation."""
    return f'{trigger_id}-{observation_id}'


def load(path):
    """Read and validate a scenario file; raise ScenarioError with the place of a fault."""
    try:
        with open(path, 'rb') as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ScenarioError(f'cannot read scenario file {path}: {error.strerror}') from None
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f'{path}: not valid TOML: {error}') from None
    try:
        return parse(data)
    except ScenarioError as error:
        raise ScenarioError(f'{path}: {error}') from None


def parse(data):
    """Validate the parsed TOML document (a dict) and return the Scenario."""
    try:
        document = _File.parse_obj(data)
    except ValidationError as error:
        raise ScenarioError(one_line(error)) from None
    seed = tuple(SeedEntity(entity.type, entity.name, tuple(entity.aliases))
                 for entity in document.seed.entities)
    episodes = tuple(
        Episode(episode.name, tuple(Turn(turn.id, turn.text, _calls(turn.calls))
                                    for turn in episode.turns))
        for episode in document.episodes)
    observations = tuple(
        Observation(observation.id, observation.source, observation.label,
                    observation.entity_name, observation.text,
                    tuple(observation.after_turn.split('/')) if observation.after_turn else None)
        for observation in document.perception.observations)
    triggers = tuple(Trigger(trigger.id, trigger.label, trigger.entity_name,
                             _calls(trigger.calls))
                     for trigger in document.attention.triggers)

    _unique((episode.name for episode in episodes), 'episode name')
    for episode in episodes:
        _unique((turn.id for turn in episode.turns), f'turn id in episode {episode.name}')
    _unique((entity.name for entity in seed), 'seed entity name')
    _unique((observation.id for observation in observations), 'observation id')
    _unique((trigger.id for trigger in triggers), 'trigger id')
    turns = {(episode.name, turn.id) for episode in episodes for turn in episode.turns}
    for observation in observations:
        if observation.after_turn is not None and observation.after_turn not in turns:
            raise ScenarioError(
                f'observation {observation.id}: after_turn names no turn of this scenario')
    return Scenario(document.description, seed, episodes,
                    float(document.perception.rate_hz), observations, triggers)


def _calls(calls):
    return tuple(ToolCall(call.tool, call.arguments) for call in calls)


def _unique(values, what):
    seen = set()
    for value in values:
        if value in seen:
            raise ScenarioError(f'duplicate {what}: {value}')
        seen.add(value)


# The file's shape, as pydantic models (v1 API, core/pydantic_compat.py).
# Strict: an unknown key, a missing key or a wrong type is an error that
# names its place (episodes[0].turns[1].text), so a typo cannot silently
# drop a turn. The runtime objects above are built from them.

_ID_RULE = 'must be 1-64 letters, digits, "_", "." or "-" starting with a letter or digit'


def _check(pattern, phrase):
    """Return a validator: the string must match pattern in full, else phrase."""
    def check(cls, value):
        if pattern.fullmatch(value) is None:
            raise ValueError(phrase)
        return value
    return check


def _not_blank(cls, value):
    if not value.strip():
        raise ValueError('must not be empty')
    return value


def _table(cls, value):
    # pydantic 1.x would take an array of pairs for a table: only a table is one.
    if not isinstance(value, dict):
        raise ValueError('must be a table')
    return value


def _tables(cls, value, field):
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f'must be an array of tables ([[{field.name}]])')
    return value


class _ToolCall(Model):
    tool: StrictStr
    arguments: StrictStr  # raw JSON text, judged by cognition, not here

    _tool = validator('tool', allow_reuse=True)(_not_blank)


class _SeedEntity(Model):
    type: StrictStr  # noqa: A003
    name: StrictStr
    aliases: List[StrictStr] = []

    _type = validator('type', allow_reuse=True)(_check(
        _TOKEN, 'must be a lowercase token (a letter, then letters, digits or "_")'))
    _name = validator('name', allow_reuse=True)(_not_blank)

    @validator('aliases', pre=True)
    def _aliases(cls, value):
        if not isinstance(value, list) or not all(
                isinstance(alias, str) and alias.strip() for alias in value):
            raise ValueError('must be a list of non-empty strings')
        return value


class _Seed(Model):
    entities: List[_SeedEntity] = []

    _entities = validator('entities', pre=True, allow_reuse=True)(_tables)


class _Turn(Model):
    id: StrictStr  # noqa: A003
    text: StrictStr
    calls: List[_ToolCall] = []

    _id = validator('id', allow_reuse=True)(_check(_ID, _ID_RULE))
    _text = validator('text', allow_reuse=True)(_not_blank)
    _calls = validator('calls', pre=True, allow_reuse=True)(_tables)


class _Episode(Model):
    # Declared to be refused with the reason (first, so that it is the error
    # reported), where an unknown key would only say "unknown".
    id: Optional[object] = None  # noqa: A003
    name: StrictStr
    turns: List[_Turn] = []

    @validator('id', pre=True)
    def _no_id(cls, value):
        raise ValueError('is not allowed: episode ids are generated for every run; give '
                         'the episode a name instead (name = "e1")')

    _name = validator('name', allow_reuse=True)(_check(
        _EPISODE_NAME, f'must be 1-{EPISODE_NAME_MAX_LENGTH} letters, digits, "_", "." or "-" '
        'starting with a letter or digit'))
    _turns = validator('turns', pre=True, allow_reuse=True)(_tables)

    @validator('turns', always=True)
    def _some_turns(cls, value):
        if not value:
            raise ValueError('must hold at least one turn')
        return value


class _Observation(Model):
    id: StrictStr  # noqa: A003
    source: StrictStr
    label: StrictStr
    entity_name: StrictStr = ''
    text: StrictStr
    after_turn: StrictStr = ''

    _id = validator('id', allow_reuse=True)(_check(_ID, _ID_RULE))
    _texts = validator('source', 'label', 'text', allow_reuse=True)(_not_blank)

    @validator('after_turn')
    def _after_turn(cls, value):
        name, _, turn_id = value.partition('/')
        if value and not (_EPISODE_NAME.fullmatch(name) and _ID.fullmatch(turn_id)):
            raise ValueError('must be "<episode name>/<turn id>"')
        return value


class _Perception(Model):
    rate_hz: float = 2.0
    observations: List[_Observation] = []

    @validator('rate_hz', pre=True)
    def _number(cls, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError('must be a number')
        if not math.isfinite(value) or value <= 0:
            raise ValueError('must be a positive number')
        return value

    _observations = validator('observations', pre=True, allow_reuse=True)(_tables)


class _Trigger(Model):
    id: StrictStr  # noqa: A003
    label: StrictStr
    entity_name: StrictStr = ''
    calls: List[_ToolCall] = []

    _id = validator('id', allow_reuse=True)(_check(_ID, _ID_RULE))
    _label = validator('label', allow_reuse=True)(_not_blank)
    _calls = validator('calls', pre=True, allow_reuse=True)(_tables)


class _Attention(Model):
    triggers: List[_Trigger] = []

    _triggers = validator('triggers', pre=True, allow_reuse=True)(_tables)


class _File(Model):
    description: StrictStr = ''
    seed: _Seed = Field(default_factory=_Seed)
    episodes: List[_Episode] = []
    perception: _Perception = Field(default_factory=_Perception)
    attention: _Attention = Field(default_factory=_Attention)

    _episodes = validator('episodes', pre=True, allow_reuse=True)(_tables)
    _tables = validator('seed', 'perception', 'attention', pre=True, allow_reuse=True)(_table)
