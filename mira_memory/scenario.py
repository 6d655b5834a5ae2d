# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

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
"""

from dataclasses import dataclass
import math
import re
import tomllib
from typing import Optional

# Ids end up in memory provenance labels ("episode <id> turn <id>"), where
# whitespace would let two turns share one label.
_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,63}')
_TOKEN = re.compile(r'[a-z][a-z0-9_]{0,63}')


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
    """One operator episode: turns in order; the acquisition budget is per episode."""

    id: str  # noqa: A003
    turns: tuple


@dataclass(frozen=True)
class Observation:
    """
    One scripted observation of the perception node.

    after_turn, when set, is an (episode id, turn id) pair: the observation is
    published only after cognition has finished that operator turn, which
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
        """Return the model's tool calls for an operator turn; none for an unscripted turn."""
        for episode in self.episodes:
            if episode.id == episode_id:
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


def is_valid_id(text):
    """Return True when text may be an episode, turn, observation or trigger id."""
    return isinstance(text, str) and _ID.fullmatch(text) is not None


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

    _unique((episode.id for episode in episodes), 'episode id')
    for episode in episodes:
        _unique((turn.id for turn in episode.turns), f'turn id in episode {episode.id}')
    _unique((entity.name for entity in seed), 'seed entity name')
    _unique((observation.id for observation in observations), 'observation id')
    _unique((trigger.id for trigger in triggers), 'trigger id')
    turns = {(episode.id, turn.id) for episode in episodes for turn in episode.turns}
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
    episode = Episode(
        id=table.identifier('id'),
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
        episode_id, _, turn_id = after.partition('/')
        if not (_ID.fullmatch(episode_id) and _ID.fullmatch(turn_id)):
            raise ScenarioError(f'{table.place}.after_turn must be "<episode id>/<turn id>"')
        after_turn = (episode_id, turn_id)
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
