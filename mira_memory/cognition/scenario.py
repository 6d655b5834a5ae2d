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
that names its place in the file, so a typo cannot silently drop a turn.

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
from typing import Optional

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
    top = _Table(data, '')
    description = top.string('description', default='')
    seed_table = _Table(top.table('seed', default={}), 'seed')
    seed = tuple(_seed_entity(table) for table in seed_table.tables('entities'))
    episodes = tuple(_episode(table) for table in top.tables('episodes'))
    perception = _Table(top.table('perception', default={}), 'perception')
    rate = perception.number('rate_hz', default=2.0)
    if not math.isfinite(rate) or rate <= 0:
        raise ScenarioError('perception.rate_hz must be a positive number')
    observations = tuple(_observation(table) for table in perception.tables('observations'))
    attention = _Table(top.table('attention', default={}), 'attention')
    triggers = tuple(_trigger(table) for table in attention.tables('triggers'))
    for table in (top, seed_table, perception, attention):
        table.finish()

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
    return Scenario(description, seed, episodes, float(rate), observations, triggers)


def _seed_entity(table):
    entity = SeedEntity(
        entity_type=table.token('type'),
        name=table.text('name'),
        aliases=tuple(table.text_list('aliases', default=[])))
    table.finish()
    return entity


def _episode(table):
    if 'id' in table.data:
        raise ScenarioError(
            f'{table.place}.id: episode ids are generated for every run; give the episode '
            'a name instead (name = "e1")')
    name = table.string('name')
    if not _EPISODE_NAME.fullmatch(name):
        raise ScenarioError(
            f'{table.place}.name must be 1-{EPISODE_NAME_MAX_LENGTH} letters, digits, "_", '
            '"." or "-" starting with a letter or digit')
    episode = Episode(
        name=name,
        turns=tuple(_turn(turn) for turn in table.tables('turns')))
    table.finish()
    if not episode.turns:
        raise ScenarioError(f'{table.place}: an episode needs at least one turn')
    return episode


def _turn(table):
    turn = Turn(
        id=table.identifier('id'),
        text=table.text('text'),
        calls=tuple(_call(call) for call in table.tables('calls')))
    table.finish()
    return turn


def _call(table):
    call = ToolCall(tool=table.text('tool'), arguments=table.string('arguments'))
    table.finish()
    return call


def _observation(table):
    after = table.string('after_turn', default='')
    after_turn = None
    if after:
        name, _, turn_id = after.partition('/')
        if not (_EPISODE_NAME.fullmatch(name) and _ID.fullmatch(turn_id)):
            raise ScenarioError(f'{table.place}.after_turn must be "<episode name>/<turn id>"')
        after_turn = (name, turn_id)
    observation = Observation(
        id=table.identifier('id'),
        source=table.text('source'),
        label=table.text('label'),
        entity_name=table.string('entity_name', default=''),
        text=table.text('text'),
        after_turn=after_turn)
    table.finish()
    return observation


def _trigger(table):
    trigger = Trigger(
        id=table.identifier('id'),
        label=table.text('label'),
        entity_name=table.string('entity_name', default=''),
        calls=tuple(_call(call) for call in table.tables('calls')))
    table.finish()
    return trigger


def _unique(values, what):
    seen = set()
    for value in values:
        if value in seen:
            raise ScenarioError(f'duplicate {what}: {value}')
        seen.add(value)


_MISSING = object()


class _Table:
    """A TOML table being validated; remembers which keys were read."""

    def __init__(self, data, place):
        if not isinstance(data, dict):
            raise ScenarioError(f'{place} must be a table')
        self.data = data
        self.place = place
        self._read = set()

    def _name(self, key):
        return f'{self.place}.{key}' if self.place else key

    def _get(self, key, default):
        self._read.add(key)
        value = self.data.get(key, default)
        if value is _MISSING:
            raise ScenarioError(f'{self._name(key)} is required')
        return value

    def string(self, key, default=_MISSING):
        value = self._get(key, default)
        if not isinstance(value, str):
            raise ScenarioError(f'{self._name(key)} must be a string')
        return value

    def text(self, key):
        value = self.string(key)
        if not value.strip():
            raise ScenarioError(f'{self._name(key)} must not be empty')
        return value

    def identifier(self, key):
        value = self.string(key)
        if not _ID.fullmatch(value):
            raise ScenarioError(
                f'{self._name(key)} must be 1-64 letters, digits, "_", "." or "-" '
                'starting with a letter or digit')
        return value

    def token(self, key):
        value = self.string(key)
        if not _TOKEN.fullmatch(value):
            raise ScenarioError(
                f'{self._name(key)} must be a lowercase token (a letter, then letters, '
                'digits or "_")')
        return value

    def number(self, key, default=_MISSING):
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScenarioError(f'{self._name(key)} must be a number')
        return value

    def text_list(self, key, default=_MISSING):
        values = self._get(key, default)
        if not isinstance(values, list) or not all(
                isinstance(value, str) and value.strip() for value in values):
            raise ScenarioError(f'{self._name(key)} must be a list of non-empty strings')
        return values

    def table(self, key, default=_MISSING):
        value = self._get(key, default)
        if not isinstance(value, dict):
            raise ScenarioError(f'{self._name(key)} must be a table')
        return value

    def tables(self, key):
        values = self._get(key, [])
        if not isinstance(values, list) or not all(isinstance(value, dict) for value in values):
            raise ScenarioError(f'{self._name(key)} must be an array of tables ([[{key}]])')
        return [_Table(value, f'{self._name(key)}[{index}]')
                for index, value in enumerate(values)]

    def finish(self):
        """Raise for keys that were never read: a typo must not be ignored."""
        unknown = sorted(set(self.data) - self._read)
        if unknown:
            where = f'{self.place}: ' if self.place else ''
            raise ScenarioError(f'{where}unknown key(s): {", ".join(unknown)}')
