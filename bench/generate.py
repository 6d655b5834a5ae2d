# SPDX-License-Identifier: Apache-2.0
"""
Deterministic synthetic memory stores for the benchmark, cached by size and seed.

The schema is the product's own: MemoryStore.open() creates the file, then a
raw connection bulk-loads rows with executemany in large transactions (with
every index in place). Keys and display forms come from the product's
normalize module, so every row is what the store itself would have written.
Durability settings are relaxed only while the file is being generated, and
the result is reopened with MemoryStore.open() before it enters the cache.
"""

import datetime
import hashlib
import json
import os
import pathlib
import random
import sqlite3
import time

from mira_memory.core.admission.normalize import display_form, normalize_key
from mira_memory.core.store import MemoryStore, records, schema

# Bump when the generated content changes, so stale caches are not reused.
GENERATOR_VERSION = 1
ROBOT_PROFILE = 'Mira'
BATCH_ROWS = 100_000
# How many distinct queries of each kind the workload rotates through.
QUERY_POOL = 64
# Entities that get a share of every memory's subjects (a few are talked
# about much more than the rest); the share keeps per-entity counts the same
# at every store size.
POPULAR_FRACTION = 0.01
POPULAR_SUBJECT_SHARE = 0.25
AMBIGUOUS_ENTITY_FRACTION = 0.06
MENTION_PROBABILITY = 0.3
CONFIDENCE_PROBABILITY = 0.2
OPERATOR_SOURCE_PROBABILITY = 0.85
TURNS_PER_EPISODE = 7
FIRST_TIMESTAMP = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
TIMESTAMP_SPAN_S = 365 * 24 * 3600

_SYLLABLES = (
    'ka', 'lo', 'mi', 'ren', 'tas', 'vor', 'el', 'an', 'bri', 'dul', 'fen', 'gar', 'hol',
    'jin', 'kor', 'lum', 'mar', 'nel', 'or', 'pra', 'quin', 'ros', 'sel', 'tor', 'ul',
    'ven', 'wen', 'xan', 'yor', 'zel', 'bel', 'cas', 'dor', 'fal', 'gil', 'hen', 'ist',
    'jor', 'kel', 'lin')
_GIVEN_NAMES = (
    'Ada', 'Alan', 'Amara', 'Ana', 'Arjun', 'Ben', 'Bianca', 'Carlos', 'Chen', 'Chiara',
    'Dana', 'David', 'Elena', 'Emeka', 'Emma', 'Farah', 'Felix', 'Grace', 'Hana', 'Hugo',
    'Ines', 'Ivan', 'Jack', 'Jamal', 'Jana', 'Jonas', 'Julia', 'Kai', 'Kenji', 'Lara',
    'Leila', 'Leo', 'Lina', 'Luca', 'Maya', 'Mateo', 'Mei', 'Mila', 'Nadia', 'Noah',
    'Nora', 'Omar', 'Oscar', 'Paula', 'Pedro', 'Priya', 'Rafael', 'Rosa', 'Ruth', 'Sami',
    'Sara', 'Sofia', 'Tariq', 'Theo', 'Uma', 'Victor', 'Wei', 'Yara', 'Yusuf', 'Zoe',
    'Ángel', 'Søren', 'Zoë', 'Chloé', 'José', 'Renée', 'Björn', 'Łukasz', 'Ōta', 'Dàvid')
_PLACE_SUFFIXES = (
    'Street', 'Park', 'Cafe', 'Library', 'Station', 'Market', 'Square', 'Clinic', 'School',
    'Garden')
_ORGANIZATION_SUFFIXES = (
    'Robotics', 'Labs', 'Bakery', 'Systems', 'Studio', 'Foods', 'Analytics', 'Works')
_COLORS = ('red', 'blue', 'green', 'black', 'white', 'yellow', 'grey', 'orange', 'purple',
           'silver')
_OBJECTS = ('mug', 'bike', 'umbrella', 'laptop', 'backpack', 'thermos', 'guitar', 'scarf',
            'notebook', 'keyring', 'lamp', 'kettle', 'camera', 'drone', 'chess set',
            'skateboard', 'toolbox', 'watch', 'headphones', 'plant')
_SPECIES = ('dog', 'cat', 'parrot', 'rabbit', 'hamster', 'tortoise', 'goldfish', 'ferret')
_TITLES = ('Coach', 'Uncle', 'Auntie', 'Doc', 'Captain', 'Boss', 'Chef', 'Professor')
_ENTITY_TYPES = (
    ('person', 0.55), ('place', 0.15), ('organization', 0.10), ('object', 0.12),
    ('pet', 0.05), ('project', 0.03))
_KINDS = (
    ('fact', 0.45), ('preference', 0.25), ('relationship', 0.15), ('observation', 0.10),
    ('event', 0.05))
_DRINKS = ('green tea', 'black coffee', 'oat milk latte', 'hot chocolate', 'sparkling water',
           'chai', 'espresso', 'mint tea')
_FOODS = ('ramen', 'dumplings', 'falafel', 'paella', 'sushi', 'lasagne', 'tacos', 'pho',
          'pierogi', 'curry')
_MUSIC = ('jazz', 'bossa nova', 'techno', 'opera', 'k-pop', 'folk', 'blues', 'baroque')
_JOBS = ('nurse', 'welder', 'teacher', 'software engineer', 'chef', 'pilot', 'architect',
         'librarian', 'electrician', 'physiotherapist')
_CLOTHES = ('a yellow raincoat', 'a grey hoodie', 'running shoes', 'a red scarf',
            'a blue cap', 'a lab coat')
_MONTHS = ('January', 'February', 'March', 'April', 'May', 'June', 'July', 'August',
           'September', 'October', 'November', 'December')
# predicate -> (kind, value source, summary verb, related role); a value source
# that is an entity type makes the value that entity's name and links it.
_PREDICATES = {
    'fact': (
        ('works_at', 'organization', 'works at', 'employer'),
        ('lives_in', 'place', 'lives near', 'place'),
        ('occupation', _JOBS, 'works as a', None),
        ('birthday_month', _MONTHS, 'has a birthday in', None),
        ('home_town', 'place', 'grew up near', 'place'),
    ),
    'preference': (
        ('likes_drink', _DRINKS, 'likes', None),
        ('favorite_food', _FOODS, 'loves eating', None),
        ('favorite_color', _COLORS, 'prefers the color', None),
        ('prefers_music', _MUSIC, 'listens to', None),
    ),
    'relationship': (
        ('friend_of', 'person', 'is a friend of', 'friend'),
        ('sibling_of', 'person', 'is a sibling of', 'sibling'),
        ('works_with', 'person', 'works with', 'colleague'),
        ('owns', 'pet', 'owns', 'pet'),
        ('owns_object', 'object', 'owns', 'possession'),
        ('member_of', 'project', 'is a member of', 'project'),
    ),
    'observation': (
        ('seen_at', 'place', 'was seen at', 'location'),
        ('wearing', _CLOTHES, 'was wearing', None),
    ),
    'event': (
        ('visited', 'place', 'visited', 'location'),
        ('attended', 'project', 'attended a meeting of', 'project'),
    ),
}


def schema_fingerprint():
    """Return a short hash of the product schema, so a schema change invalidates caches."""
    text = '\n'.join(' '.join(statement.split()) for statement in schema.SCHEMA_STATEMENTS)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def cache_name(memories, entities, seed):
    """Return the cache file stem for one store size and seed."""
    return 'store_m%d_e%d_seed%d_schema%d-%s_gen%d' % (
        memories, entities, seed, schema.SCHEMA_VERSION, schema_fingerprint(),
        GENERATOR_VERSION)


def cached_store(cache_dir, memories, entities, seed, log=print):
    """
    Return (database path, metadata) of the cached store, generating it when missing.

    The cached file is never served to a node directly: callers copy it to a
    working file, so writes made during a run do not reach the cache.
    """
    cache_dir = pathlib.Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    stem = cache_name(memories, entities, seed)
    path = cache_dir / (stem + '.sqlite3')
    meta_path = cache_dir / (stem + '.json')
    if path.exists() and meta_path.exists():
        metadata = json.loads(meta_path.read_text())
        metadata['cached'] = True
        return path, metadata
    log('generating %s (%d memories, %d entities) ...' % (path.name, memories, entities))
    # Build under a private name and rename at the end: an interrupted or
    # concurrent generation never leaves a half-written file under the cache name.
    partial = cache_dir / ('%s.%d.partial' % (stem, os.getpid()))
    partial.unlink(missing_ok=True)
    try:
        metadata = _generate(partial, memories, entities, seed)
        metadata['cache_key'] = stem
        partial_meta = meta_path.with_suffix('.json.%d.partial' % os.getpid())
        partial_meta.write_text(json.dumps(metadata, indent=1, ensure_ascii=False))
        os.replace(partial, path)
        os.replace(partial_meta, meta_path)
    finally:
        partial.unlink(missing_ok=True)
    log('generated %s in %.1f s (%.1f MB)' % (
        path.name, metadata['generation_s'], path.stat().st_size / 1e6))
    metadata['cached'] = False
    return path, metadata


def _generate(path, memory_count, entity_count, seed):
    started = time.monotonic()
    if entity_count < 20 or memory_count < entity_count:
        raise ValueError('a benchmark store needs >= 20 entities and >= 1 memory per entity')
    MemoryStore.open(path).close()
    rng = random.Random(seed)
    world = _World(rng, entity_count)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        # Generation only: nothing here needs to survive a crash, the file is
        # renamed into the cache only after it is complete and verified.
        for pragma in ('journal_mode = OFF', 'synchronous = OFF', 'locking_mode = EXCLUSIVE',
                       'cache_size = -262144', 'temp_store = MEMORY'):
            conn.execute('PRAGMA ' + pragma).fetchall()
        counts = {'entities': entity_count}
        _insert(conn, 'INSERT INTO entities (id, entity_type, canonical_name, name_key,'
                ' created_at) VALUES (?, ?, ?, ?, ?)', world.entity_rows())
        alias_rows = world.alias_rows()
        counts['aliases'] = len(alias_rows)
        _insert(conn, 'INSERT INTO aliases (entity_id, alias, alias_key, created_at)'
                ' VALUES (?, ?, ?, ?)', alias_rows)
        counts['links'] = 0
        for first in range(1, memory_count + 1, BATCH_ROWS):
            last = min(first + BATCH_ROWS, memory_count + 1)
            memories, links, payloads = world.memory_rows(first, last, memory_count)
            conn.execute('BEGIN')
            conn.executemany(
                'INSERT INTO memories (id, kind, summary, predicate, value, value_key,'
                ' source_kind, source_label, confidence, status, created_at)'
                ' VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', memories)
            conn.executemany(
                'INSERT INTO memory_links (memory_id, entity_id, role) VALUES (?, ?, ?)', links)
            conn.executemany(
                'INSERT INTO payloads (memory_id, storage, media_type, text_body, created_at)'
                ' VALUES (?, ?, ?, ?, ?)', payloads)
            conn.execute('COMMIT')
            counts['links'] += len(links)
        counts['memories'] = counts['payloads'] = memory_count
        violations = conn.execute('PRAGMA foreign_key_check').fetchall()
        if violations:
            raise RuntimeError('generated store breaks foreign keys: %r' % violations[:5])
        conn.execute('PRAGMA locking_mode = NORMAL').fetchall()
        conn.execute('PRAGMA journal_mode = WAL').fetchall()
        conn.execute('ANALYZE')
    finally:
        conn.close()
    _verify(path, counts)
    metadata = {
        'memories': memory_count,
        'entities': entity_count,
        'seed': seed,
        'schema_version': schema.SCHEMA_VERSION,
        'schema_fingerprint': schema_fingerprint(),
        'generator_version': GENERATOR_VERSION,
        'counts': counts,
        'robot_profile': ROBOT_PROFILE,
        'sqlite_version': sqlite3.sqlite_version,
        'generation_s': round(time.monotonic() - started, 2),
    }
    metadata.update(world.query_pools(rng))
    return metadata


def _insert(conn, sql, rows):
    for first in range(0, len(rows), BATCH_ROWS):
        conn.execute('BEGIN')
        conn.executemany(sql, rows[first:first + BATCH_ROWS])
        conn.execute('COMMIT')


def _verify(path, counts):
    """Reopen through the product (schema v1 check, WAL, FULL) and compare row counts."""
    with MemoryStore.open(path) as opened:
        if opened.schema_version != schema.SCHEMA_VERSION:
            raise RuntimeError('generated store has schema version %d' % opened.schema_version)
        actual = opened.counts()
    expected = dict(counts, active_memories=counts['memories'])
    if actual != expected:
        raise RuntimeError('generated store counts %r, expected %r' % (actual, expected))


def _timestamp(fraction):
    moment = time.gmtime(FIRST_TIMESTAMP + fraction * TIMESTAMP_SPAN_S)
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', moment)


class _World:
    """Entities with names and aliases, and the memories written about them."""

    def __init__(self, rng, entity_count):
        self._rng = rng
        self._created = _timestamp(0.0)
        self.types = [None, 'robot']
        self.names = [None, ROBOT_PROFILE]
        keys = {normalize_key(ROBOT_PROFILE)}
        type_names = [name for name, _ in _ENTITY_TYPES]
        type_weights = [weight for _, weight in _ENTITY_TYPES]
        for entity_type in rng.choices(type_names, type_weights, k=entity_count - 1):
            while True:
                name = display_form(self._name(entity_type))
                key = normalize_key(name)
                if key not in keys:
                    break
            keys.add(key)
            self.types.append(entity_type)
            self.names.append(name)
        self.keys = keys
        self.by_type = {}
        for entity_id in range(1, entity_count + 1):
            self.by_type.setdefault(self.types[entity_id], []).append(entity_id)
        self.entity_count = entity_count
        popular = max(1, int(entity_count * POPULAR_FRACTION))
        self.popular = sorted(rng.sample(range(1, entity_count + 1), popular))
        self.link_counts = [0] * (entity_count + 1)
        self.ambiguous_aliases = []

    def _syllables(self, low, high):
        word = ''.join(self._rng.choice(_SYLLABLES) for _ in range(self._rng.randint(low, high)))
        return word.capitalize()

    def _name(self, entity_type):
        rng = self._rng
        if entity_type == 'person':
            return '%s %s' % (rng.choice(_GIVEN_NAMES), self._syllables(2, 3))
        if entity_type == 'place':
            return '%s %s' % (self._syllables(2, 3), rng.choice(_PLACE_SUFFIXES))
        if entity_type == 'organization':
            return '%s %s' % (self._syllables(2, 3), rng.choice(_ORGANIZATION_SUFFIXES))
        if entity_type == 'object':
            return "%s's %s %s" % (
                self._syllables(2, 3), rng.choice(_COLORS), rng.choice(_OBJECTS))
        if entity_type == 'pet':
            return '%s the %s' % (self._syllables(2, 3), rng.choice(_SPECIES))
        return 'Project %s' % self._syllables(2, 3)

    def _alias_candidates(self, entity_id):
        name = self.names[entity_id]
        words = name.split()
        entity_type = self.types[entity_id]
        if entity_type == 'person':
            given, family = words[0], words[-1]
            return ['%s. %s' % (given[0], family), '%s %s.' % (given, family[0]),
                    'Dr. %s' % family, '%s%s' % (given[:3], family[:3])]
        if entity_type == 'robot':
            return ['the robot', '%s Unit' % name]
        if entity_type in ('place', 'organization'):
            return ['the %s' % name, '%s %s' % (words[0], words[1][:3] + '.')]
        if entity_type == 'pet':
            return ['%s' % words[0], 'little %s' % words[0]]
        if entity_type == 'object':
            return ["%s's %s" % (words[0][:-2], ' '.join(words[2:])), 'the %s' % name]
        return ['%s project' % words[-1], 'Proj. %s' % words[-1]]

    def entity_rows(self):
        """Return entity rows in id order."""
        return [(entity_id, self.types[entity_id], self.names[entity_id],
                 normalize_key(self.names[entity_id]), self._created)
                for entity_id in range(1, self.entity_count + 1)]

    def alias_rows(self):
        """
        Return alias rows: about two unique aliases per entity plus shared ones.

        A shared (ambiguous) alias names a group of 2-6 entities, the way two
        people can both be called "Coach Zel"; every other alias key is unique
        and never equals a canonical name key.
        """
        rng = self._rng
        rows = []
        alias_keys = set()
        for entity_id in range(1, self.entity_count + 1):
            candidates = self._alias_candidates(entity_id)
            for alias in rng.sample(candidates, rng.randint(1, min(3, len(candidates)))):
                alias = display_form(alias)
                key = normalize_key(alias)
                if key in self.keys or key in alias_keys:
                    continue
                alias_keys.add(key)
                rows.append((entity_id, alias, key, self._created))
        grouped = rng.sample(range(2, self.entity_count + 1),
                             int(self.entity_count * AMBIGUOUS_ENTITY_FRACTION))
        while len(grouped) >= 2:
            size = min(len(grouped), rng.randint(2, 6))
            group, grouped = grouped[:size], grouped[size:]
            while True:
                alias = display_form('%s %s' % (rng.choice(_TITLES), self._syllables(1, 2)))
                key = normalize_key(alias)
                if key not in self.keys and key not in alias_keys:
                    break
            alias_keys.add(key)
            self.ambiguous_aliases.append(alias)
            rows.extend((entity_id, alias, key, self._created) for entity_id in sorted(group))
        rows.sort(key=lambda row: row[0])
        self.keys |= alias_keys
        return rows

    def memory_rows(self, first, last, memory_count):
        """Return (memory rows, link rows, payload rows) for memory ids first..last-1."""
        rng = self._rng
        memories, links, payloads = [], [], []
        for memory_id in range(first, last):
            if rng.random() < POPULAR_SUBJECT_SHARE:
                subject = rng.choice(self.popular)
            else:
                subject = rng.randint(1, self.entity_count)
            kind = rng.choices(_KINDS_NAMES, _KINDS_WEIGHTS)[0]
            predicate, source, verb, role = rng.choice(_PREDICATES[kind])
            linked = {subject: 'subject'}
            if isinstance(source, str):
                related = rng.choice(self.by_type[source])
                if related == subject:
                    related = rng.choice(self.by_type[source])
                value = self.names[related]
                if related not in linked:
                    linked[related] = role
            else:
                value = rng.choice(source)
            if rng.random() < MENTION_PROBABILITY:
                mentioned = rng.randint(1, self.entity_count)
                linked.setdefault(mentioned, 'mentioned')
            summary = '%s %s %s' % (self.names[subject], verb, value)
            if kind in ('fact', 'preference', 'relationship') and (
                    rng.random() < OPERATOR_SOURCE_PROBABILITY):
                source_kind = records.SOURCE_OPERATOR_STATEMENT
                # One memory per operator turn, as admission allows.
                source_label = 'episode e%d turn t%d' % divmod(memory_id, TURNS_PER_EPISODE)
            else:
                source_kind, source_label = records.SOURCE_CONSOLE, ''
            confidence = None
            if rng.random() < CONFIDENCE_PROBABILITY:
                confidence = rng.randint(50, 100) / 100.0
            created = _timestamp(memory_id / memory_count)
            memories.append((
                memory_id, kind, summary, predicate, value, normalize_key(value), source_kind,
                source_label, confidence, records.STATUS_ACTIVE, created))
            for entity_id, link_role in linked.items():
                links.append((memory_id, entity_id, link_role))
                self.link_counts[entity_id] += 1
            payloads.append((memory_id, records.STORAGE_INLINE,
                             records.MEDIA_TYPE_TEXT, summary, created))
        return memories, links, payloads

    def query_pools(self, rng):
        """
        Return the names the workload queries, drawn after every row exists.

        found: entities with more active memories than recall shows (so every
        response is full); ambiguous: shared aliases; miss: names nobody has;
        remember_subjects: people that created proposals are about.
        """
        full = [entity_id for entity_id in range(1, self.entity_count + 1)
                if self.link_counts[entity_id] > 8]
        found = rng.sample(full, min(QUERY_POOL, len(full)))
        misses = []
        while len(misses) < QUERY_POOL:
            name = 'Nobody %s %s' % (self._syllables(2, 3), self._syllables(2, 3))
            if normalize_key(name) not in self.keys:
                misses.append(name)
        people = self.by_type['person']
        subjects = rng.sample(people, min(QUERY_POOL, len(people)))
        return {
            'found_queries': [self.names[entity_id] for entity_id in found],
            'found_link_counts': [self.link_counts[entity_id] for entity_id in found],
            'ambiguous_queries': rng.sample(
                self.ambiguous_aliases, min(QUERY_POOL, len(self.ambiguous_aliases))),
            'miss_queries': misses,
            'remember_subjects': [self.names[entity_id] for entity_id in subjects],
            'popular_entities': len(self.popular),
            'max_links_per_entity': max(self.link_counts),
        }


_KINDS_NAMES = [name for name, _ in _KINDS]
_KINDS_WEIGHTS = [weight for _, weight in _KINDS]
