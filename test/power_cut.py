# SPDX-License-Identifier: Apache-2.0
"""
The power-cut sweep: a workload through the real memory node under faultfs, then every cut checked.

Workload drives a real memory_node process (the installed executable, its
file operations recorded by test/faultfs.py) through its real services:
entity_add, remember, retire, forget, backup and export, a clean restart in
the middle and a SIGKILL at the end. It notes when each call was sent and
when its reply came (time.monotonic_ns(), the recorder's clock).

Sweep replays the recording and cuts the power at chosen points (before and
after every sync, before every truncate and name operation), with three
disks per cut: nothing pending reached the disk, all of it did, or a random
part of it with a torn last sector (faultfs.Disk). Each disk is reopened
the way a restarted node opens it (MemoryService: claim, create, schema
check, reader), then checked:
- PRAGMA integrity_check and foreign_key_check pass, and memory_verify
  (offline_tools.verify_file, the executable's code) exits 0;
- its rows are exactly those of one committed transaction (every state the
  node committed is known: the recording replayed with nothing lost, after
  each sync of the WAL), and that transaction is no older than the newest
  one whose reply had arrived before the cut: every acknowledged write is
  there, intact, and nothing else is half there;
- ids never go backwards: the next entity and memory the reopened store
  writes get ids above every id acknowledged before the cut;
- no byte of a memory whose forget was acknowledged is in the database file
  or its WAL;
- a backup or export acknowledged before the cut is at its path, complete
  and readable (integrity_check and its row counts; an export's every line,
  its header's counts, and memory_import's checks into a fresh database);
  any file at a copy's path is complete.
"""

import bisect
import collections
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import random
import shutil
import signal
import sqlite3
import tempfile
import time

import faultfs
from memory_services import create_clients, MemoryServices, remember_request
from mira_memory import srv
from mira_memory.core import config
from mira_memory.core.admission.rules import Proposal, TurnContext
from mira_memory.core.archive import copies
from mira_memory.core.store import NewMemory, parse_entity_id, parse_memory_id
from rosutil import NodeProcess, unique_namespace

DATABASE = 'memory/memory.sqlite3'  # under the recording's root; the node creates memory/
COPIES = 'copies'                   # the backups' and exports' directory, under the root
SUBJECTS = ('Ada Lovelace', 'Bob Stone')
ROBOT_PROFILE = 'Mira'
# Made-up words, so a forgotten value is found in the raw bytes only if it is still there.
WORDS = ('quorvish', 'plumwort', 'zendrik', 'velkor', 'brastle', 'ommerin')
WRITE_KINDS = ('entity', 'remember', 'retire', 'forget')
COPY_KINDS = ('backup', 'export')
# The disks of one cut (faultfs.Disk.state).
POLICIES = ('lose', 'keep', 'random')
# Deadlines against a hang, not timings.
CALL_TIMEOUT = 60.0
START_TIMEOUT = 90.0


@dataclasses.dataclass(frozen=True)
class Exited:
    """How a node that was meant to fail at start ended."""

    code: int
    errors: list  # its [ERROR] log lines
    traceback: bool


@dataclasses.dataclass
class Event:
    """One call of the workload: what, when sent, when its reply came, and what it said."""

    kind: str
    sent_ns: int
    acked_ns: int = None  # None: no reply, or a reply that said it failed
    detail: dict = dataclasses.field(default_factory=dict)


def tag(number):
    """Return three letters unique to number (below 26**3)."""
    letters = []
    for _ in range(3):
        number, digit = divmod(number, 26)
        letters.append(chr(ord('a') + digit))
    return ''.join(letters)


def remember_call(number):
    """Return the Remember request of the workload's number-th memory (a new slot each)."""
    subject = SUBJECTS[number % len(SUBJECTS)]
    value = f'{WORDS[number % len(WORDS)]} {tag(number)}'
    evidence = f'{subject} really likes {value}'
    return remember_request(
        TurnContext('power-cut', f'turn-{number}', f'By the way, {evidence}, these days.'),
        Proposal('preference', subject, f'likes_{number}', value, None, None, evidence))


def report(name, lines):
    """Print a sweep's figures, and keep them under $MIRA_SWEEP_REPORT when it is set."""
    text = '\n'.join(lines)
    print(f'\n{name}:\n{text}')
    directory = os.environ.get('MIRA_SWEEP_REPORT')
    if directory:
        pathlib.Path(directory, f'{name}.txt').write_text(text + '\n')


def record(root, directory):
    """Prepare root (its copies directory, synced) and return a faultfs Recording of it."""
    root = pathlib.Path(root)
    (root / COPIES).mkdir()
    return faultfs.Recording(root, directory)


class Workload:
    """Calls to one memory node after another, each noted as an Event."""

    def __init__(self, ros, recording, directory):
        """Drive nodes on recording.root/DATABASE; their logs go to directory."""
        self.ros = ros
        self.recording = recording
        self.directory = pathlib.Path(directory)
        self.database = recording.root / DATABASE
        self.copies = recording.root / COPIES
        self.events = []
        self.node = None
        self.services = None
        self.remembered = {}  # number -> MEM id
        self.remembers = 0

    # The node -----------------------------------------------------------------

    def start(self, wait=True):
        """Start memory_node under faultfs and (wait) until it answers."""
        namespace = unique_namespace('cut')
        self.node = NodeProcess(
            'memory_node', namespace=namespace, directory=self.directory,
            env=self.recording.environment(),
            parameters={'enabled': True, 'database_path': str(self.database),
                        'robot_profile': ROBOT_PROFILE,
                        # Waits for the turn as an event; the deadline is against a hang.
                        'observed_turn_wait_sec': 30.0})
        self.prefix = prefix = f'{namespace}/memory'
        create_clients(self.ros, prefix)
        for service_type, name in ((srv.AdminBackup, 'admin/backup'),
                                   (srv.AdminExport, 'admin/export')):
            self.ros.client(service_type, f'{prefix}/{name}')
        if not wait:
            return
        if not self.ros.wait_for_service(srv.AdminStatus, f'{prefix}/admin/status',
                                         timeout=START_TIMEOUT):
            raise AssertionError(self.node.describe('never offered admin/status'))
        self.ros.settle(srv.AdminStatus, f'{prefix}/admin/status')
        self.services = MemoryServices(self.ros, prefix)
        self.services.wait_for_listener()

    def start_failing(self):
        """
        Start memory_node expecting it to exit by itself; return how (an Exited).

        None when it started serving instead (then it runs on, as start() leaves it).
        """
        self.start(wait=False)
        deadline = time.monotonic() + START_TIMEOUT
        while self.node.poll() is None:
            if self.ros.wait_for_service(srv.AdminStatus, f'{self.prefix}/admin/status',
                                         timeout=0.5):
                self.ros.settle(srv.AdminStatus, f'{self.prefix}/admin/status')
                self.services = MemoryServices(self.ros, self.prefix)
                self.services.wait_for_listener()
                return None
            assert time.monotonic() < deadline, self.node.describe('neither served nor exited')
        code = self.node.poll()
        output = self.node.output()
        self.ros.forget_clients(self.prefix)
        self.node = self.services = None
        return Exited(code, [line for line in output.splitlines() if '[ERROR]' in line],
                      'Traceback' in output)

    def stop(self, sig=signal.SIGINT):
        """Stop the node (SIGINT: a clean close; SIGKILL: a crash) and forget its clients."""
        code = self.node.stop(sig)
        if sig == signal.SIGINT:
            assert code == 0, self.node.describe('did not stop cleanly')
        self.ros.forget_clients(self.prefix)
        self.node = self.services = None

    # The calls ------------------------------------------------------------------
    # Each returns its Event; event.acked_ns is set when the reply said it was done.

    def _call(self, kind, call, acknowledged, detail=None):
        event = Event(kind, time.monotonic_ns(), detail=dict(detail or {}))
        response = call()
        if acknowledged(response):
            event.acked_ns = time.monotonic_ns()
        event.detail['response'] = response
        self.events.append(event)
        return event

    def entity(self, name):
        """Create a person through admin entity_add."""
        event = self._call(
            'entity', lambda: self.services.admin('entity_add', entity_type='person',
                                                  canonical_name=name),
            lambda response: response.success, {'name': name})
        if event.acked_ns:
            event.detail['entity_id'] = parse_entity_id(event.detail['response'].entity.id)
        return event

    def remember(self):
        """Remember the next memory of the workload (a grounded operator turn)."""
        number = self.remembers
        self.remembers += 1
        request = remember_call(number)
        event = self._call(
            'remember', lambda: self.services.remember(request, timeout=CALL_TIMEOUT),
            lambda response: (response.status, response.outcome) == ('applied', 'created'),
            {'number': number, 'texts': (request.value, request.evidence)})
        if event.acked_ns:
            memory_id = event.detail['response'].memory_id
            self.remembered[number] = memory_id
            event.detail['memory_id'] = parse_memory_id(memory_id)
        return event

    def retire(self, number):
        """Retire the number-th remembered memory."""
        return self._call(
            'retire', lambda: self.services.admin(
                'retire', memory_id=self.remembered[number], reason='the operator took it back'),
            lambda response: response.success,
            {'memory_id': parse_memory_id(self.remembered[number])})

    def forget(self, number):
        """Forget the number-th remembered memory (applied)."""
        request = remember_call(number)
        memory_id = self.remembered.pop(number)
        return self._call(
            'forget', lambda: self.services.admin('forget', target=memory_id, confirm=True),
            lambda response: response.success and response.applied,
            {'memory_id': parse_memory_id(memory_id), 'texts': (request.value, request.evidence)})

    def copy(self, kind, name, force=False):
        """Back up or export to COPIES/name through the node."""
        service_type = srv.AdminBackup if kind == 'backup' else srv.AdminExport
        path = self.copies / name
        return self._call(
            kind, lambda: self.ros.call(
                service_type, f'{self.services.prefix}/admin/{kind}',
                service_type.Request(path=str(path), force=force), timeout=CALL_TIMEOUT),
            lambda response: response.success, {'path': str(path)})

    def run(self, remembers):
        """
        Run the workload: two node runs of `remembers` memories each.

        Between them a clean stop (SQLite checkpoints and removes the WAL),
        at the end a SIGKILL; along the way retires, forgets (each truncates
        the WAL), two backups (the second replacing the first) and two exports.
        """
        self.start()
        for name in SUBJECTS:
            done(self.entity(name))
        for run, last in ((1, remembers), (2, 2 * remembers)):
            first = self.remembers
            middle = (first + last) // 2
            while self.remembers < last:
                number = self.remembers
                done(self.remember())
                if (number - first) % 5 == 4 and number - 2 in self.remembered:
                    done(self.retire(number - 2))
                if number == middle:
                    done(self.forget(number - 1))
                    done(self.copy('backup', 'backup.sqlite3', force=run == 2))
                    done(self.copy('export', f'export-{run}.jsonl'))
            if run == 1:
                self.stop()
                self.start()
        self.stop(signal.SIGKILL)
        return self.events


def done(event):
    """Fail unless the event's reply said it was done."""
    assert event.acked_ns is not None, (event.kind, event.detail)
    return event


# What a reopened disk holds -------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StoredMemory:
    """What the checks compare of one stored memory."""

    summary: str
    value: str
    status: str
    links: frozenset      # (entity id, role)
    payloads: tuple       # the payloads' texts
    utterance: str        # its receipt's, or None


def expected_memory(number, subject_id, status):
    """Return the StoredMemory the workload's number-th remember writes."""
    request = remember_call(number)
    return StoredMemory(request.evidence, request.value, status,
                        frozenset({(subject_id, 'subject')}), (request.evidence,),
                        request.utterance)


def stored_view(conn):
    """Return ({entity id: canonical name}, {memory id: StoredMemory}) of an open database."""
    entities = dict(conn.execute('SELECT id, canonical_name FROM entities'))
    links = collections.defaultdict(set)
    for memory_id, entity_id, role in conn.execute(
            'SELECT memory_id, entity_id, role FROM memory_links'):
        links[memory_id].add((entity_id, role))
    payloads = collections.defaultdict(list)
    for memory_id, text in conn.execute('SELECT memory_id, text_body FROM payloads ORDER BY id'):
        payloads[memory_id].append(text)
    utterances = dict(conn.execute('SELECT memory_id, utterance FROM receipts'))
    memories = {
        memory_id: StoredMemory(summary, value, status, frozenset(links[memory_id]),
                                tuple(payloads[memory_id]), utterances.get(memory_id))
        for memory_id, summary, value, status in conn.execute(
            'SELECT id, summary, value, status FROM memories')}
    return entities, memories


def logical_rows(conn):
    """Return every row of every table (sqlite_sequence included), as one comparable tuple."""
    tables = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    dump = []
    for table in tables:
        rows = sorted(conn.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr)
        if rows:  # a new database's empty tables read as a missing file's none
            dump.append((table, tuple(rows)))
    return tuple(dump)


def digest_of(value):
    """Return a short digest of a value's repr."""
    return hashlib.sha256(repr(value).encode()).hexdigest()[:20]


@dataclasses.dataclass
class Reopened:
    """What reopening one disk found, whatever the cut (equal disks, equal findings)."""

    problems: list = dataclasses.field(default_factory=list)
    rows: str = None       # digest of logical_rows()
    entities: dict = None  # stored_view()
    memories: dict = None
    next_ids: tuple = (0, 0)  # (entity id, memory id) the reopened store wrote next
    copies: dict = dataclasses.field(default_factory=dict)  # path -> problem or None


class _QuietLogger:
    """The rclpy logger calls MemoryService makes, kept in a list."""

    def __init__(self):
        self.lines = []

    def is_enabled_for(self, severity):
        return False

    def _log(self, message, **_):
        self.lines.append(message)

    info = warning = error = debug = _log


def reopen(database):
    """
    Open the database at path as a restarting node does and check what needs no cut.

    MemoryService opens it (the node's own open: claim, create, schema check,
    reader); then integrity_check, foreign_key_check, the rows, one entity
    and one memory written (their ids), and memory_verify after it closed.
    """
    from mira_memory.console import offline_tools
    from mira_memory.memory.service import MemoryService
    from mira_memory.ros.node_runner import StartupError
    result = Reopened()
    try:
        service = MemoryService(config.settings_from_parameters(True, str(database)),
                                robot_profile=lambda: ROBOT_PROFILE, logger=_QuietLogger())
    except StartupError as error:
        result.problems.append(f'the restart failed: {error}')
        return result
    try:
        conn = service.store._connection.raw
        problems = [row[0] for row in conn.execute('PRAGMA integrity_check')]
        if problems != ['ok']:
            result.problems.append(f'integrity_check: {problems[:3]}')
        if conn.execute('PRAGMA foreign_key_check').fetchone() is not None:
            result.problems.append('foreign_key_check found missing references')
        result.rows = digest_of(logical_rows(conn))
        result.entities, result.memories = stored_view(conn)
        entity = service.store.add_entity('person', 'Probe Person')
        memory = service.store.add_memory(NewMemory(
            kind='fact', summary='written after the restart', links=((entity.id, 'subject'),)))
        result.next_ids = (entity.id, memory.id)
    finally:
        service.close()
    out = io.StringIO()
    code = offline_tools.verify_file(pathlib.Path(database), [], False, out)
    if code != 0:
        result.problems.append(f'memory_verify exited {code}: {out.getvalue()[-300:]}')
    return result


@dataclasses.dataclass
class WriteCheck:
    """What check_writes found: writes checked, and the problems (lost, partial)."""

    checked: int = 0
    lost: list = dataclasses.field(default_factory=list)
    partial: list = dataclasses.field(default_factory=list)


def check_writes(reopened, events, before_ns=float('inf')):
    """
    Check a reopened disk against every call sent before before_ns.

    Every write acknowledged before then is there and intact: an entity
    with its name, a memory with its summary, value, link, payload and
    receipt, a retire's status, a forget's absence. A call sent but not
    (yet) acknowledged may or may not have happened, and a later call may
    have changed an earlier one's memory (a retire, a forget): either
    outcome is right. Anything else in the store (a memory or entity no
    call made, a memory not whole) is partial.
    """
    result = WriteCheck()
    sent = [event for event in events if event.sent_ns < before_ns]

    def acked(event):
        return event.acked_ns is not None and event.acked_ns < before_ns

    entity_ids = {event.detail['entity_id']: event for event in sent
                  if event.kind == 'entity' and 'entity_id' in event.detail}
    names = {entity_name(event): event for event in sent if event.kind == 'entity'}
    changes = collections.defaultdict(list)  # memory id -> its retires and forgets sent
    for event in sent:
        if event.kind in ('retire', 'forget'):
            changes[event.detail['memory_id']].append(event)
    for event in sent:
        if not acked(event) or event.kind not in WRITE_KINDS:
            continue
        result.checked += 1
        if event.kind == 'entity':
            if reopened.entities.get(event.detail['entity_id']) != entity_name(event):
                result.lost.append(f'entity {event.detail["entity_id"]} is not there')
            continue
        memory_id = event.detail['memory_id']
        stored = reopened.memories.get(memory_id)
        forgotten = [change for change in changes[memory_id] if change.kind == 'forget']
        if event.kind == 'forget':
            if stored is not None:
                result.lost.append(f'MEM{memory_id} was forgotten, and is there')
        elif stored is None:
            if not forgotten:
                result.lost.append(f'MEM{memory_id} ({event.kind}) is not there')
        elif event.kind == 'retire' and stored.status != 'retired':
            result.lost.append(f'MEM{memory_id} was retired, and is {stored.status}')
    remembers = {remember_call(event.detail['number']).evidence: event
                 for event in sent if event.kind == 'remember'}
    for memory_id, stored in reopened.memories.items():
        event = remembers.get(stored.summary)
        if event is None:
            result.partial.append(f'MEM{memory_id} {stored.summary!r}: no call wrote it')
            continue
        retired = [change for change in changes[memory_id] if change.kind == 'retire']
        subject = names.get(SUBJECTS[event.detail['number'] % len(SUBJECTS)])
        subject_id = subject.detail.get('entity_id') if subject else None
        wanted = expected_memory(event.detail['number'], subject_id, stored.status)
        if stored != wanted or (stored.status == 'retired' and not retired) or (
                acked(event) and event.detail['memory_id'] != memory_id):
            result.partial.append(f'MEM{memory_id} is not whole: {stored} (wanted {wanted})')
    for entity_id in reopened.entities:
        if entity_id not in entity_ids and not any(
                event.acked_ns is None for event in sent if event.kind == 'entity'):
            result.partial.append(f'ENT{entity_id}: no call made it')
    return result


def entity_name(event):
    """Return the canonical name an entity event asked for."""
    return event.detail['name']


def next_ids_problem(reopened, events, before_ns=float('inf')):
    """Return why the reopened store's next ids went backwards, or None."""
    acked = [event for event in events
             if event.acked_ns is not None and event.acked_ns < before_ns]
    entity = max((event.detail['entity_id'] for event in acked if event.kind == 'entity'),
                 default=0)
    memory = max((event.detail['memory_id'] for event in acked if event.kind == 'remember'),
                 default=0)
    next_entity, next_memory = reopened.next_ids
    if next_entity > entity and next_memory > memory:
        return None
    return (f'ids went backwards: the next are ENT{next_entity} and MEM{next_memory}, after '
            f'ENT{entity} and MEM{memory} were acknowledged')


def forgotten_texts_found(contents, database, events, before_ns=float('inf')):
    """Return (file name, text) for each forgotten text still in the database or its WAL."""
    files = {path: data for path, data in contents.items()
             if path in (str(database), f'{database}-wal')}
    found = []
    for event in events:
        if event.kind == 'forget' and event.acked_ns is not None and event.acked_ns < before_ns:
            for text in event.detail['texts']:
                found += [(pathlib.Path(path).name, text) for path, data in files.items()
                          if text.encode() in data]
    return found


def backup_problem(path):
    """Return None when the backup at path opens whole as one file, else why not."""
    try:
        conn = sqlite3.connect(path.as_uri() + '?mode=ro', uri=True)
    except sqlite3.Error as error:
        return f'does not open: {error}'
    try:
        problems = [row[0] for row in conn.execute('PRAGMA integrity_check')]
        if problems != ['ok']:
            return f'integrity_check: {problems[:3]}'
        if conn.execute('PRAGMA journal_mode').fetchone()[0] != 'delete':
            return 'not a single-file database'
        counts = {table: conn.execute(f'SELECT count(*) FROM {table}').fetchone()[0]
                  for table in ('entities', 'aliases', 'memories', 'memory_links', 'payloads')}
    except sqlite3.Error as error:
        return f'unreadable: {error}'
    finally:
        conn.close()
    if not counts['memories']:
        return 'holds no memory'
    return None


def export_problem(path, data):
    """Return None when an export (its bytes) is whole and memory_import takes it, else why."""
    lines = data.decode('utf-8', 'replace').splitlines(keepends=True)
    try:
        header = json.loads(lines[0])
        records = [json.loads(line) for line in lines[1:]]
    except (IndexError, ValueError) as error:
        return f'not JSON Lines: {error}'
    if sum(header.get('counts', {}).values()) != len(records):
        return f'{len(records)} records, the header counts {header.get("counts")}'
    target = path.with_name(path.name + '.imported.sqlite3')
    try:
        copies.import_export(target, lines)
    except Exception as error:  # any refusal is the finding
        return f'memory_import refuses it: {error}'
    finally:
        for suffix in ('', '-wal', '-shm'):
            pathlib.Path(f'{target}{suffix}').unlink(missing_ok=True)
    return None


# The sweep ------------------------------------------------------------------


@dataclasses.dataclass
class Figures:
    """What a sweep tried and found."""

    cut_points: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    disks: int = 0
    distinct_disks: int = 0
    committed_states: int = 0
    acknowledged_writes_checked: int = 0
    acknowledged_copies_checked: int = 0
    lost: int = 0
    partial: int = 0
    leftover_partial_files: int = 0
    failures: list = dataclasses.field(default_factory=list)

    def lines(self):
        """Return the figures as text lines."""
        kinds = ', '.join(f'{kind} {count}' for kind, count in sorted(self.cut_points.items()))
        return [
            f'cut points: {sum(self.cut_points.values())} ({kinds})',
            f'disks checked: {self.disks} ({self.distinct_disks} distinct); '
            f'committed states known: {self.committed_states}',
            f'acknowledged writes checked: {self.acknowledged_writes_checked}; '
            f'lost: {self.lost}; partial: {self.partial}',
            f'acknowledged backups and exports checked: {self.acknowledged_copies_checked}',
            f'disks with a hidden partial copy file beside the copies: '
            f'{self.leftover_partial_files}',
            f'failures: {len(self.failures)}',
        ]


class Sweep:
    """Cut the power at every chosen point of a recording and check what a restart finds."""

    def __init__(self, recording, events, work_directory):
        self.recording = recording
        self.root = str(recording.root)
        self.events = events
        self.work = pathlib.Path(work_directory)
        self.database = recording.root / DATABASE
        self.copies = str(recording.root / COPIES)
        self.operations = recording.operations()
        self._began = [operation.began_ns for operation in self.operations]
        self._reopened = {}
        self._copy_problems = {}

    def _began_at(self, cut):
        """Return when operation cut began (the end: never)."""
        return self._began[cut] if cut < len(self.operations) else float('inf')

    def run(self, sample=None, seed=0):
        """Sweep the cut points (all, or `sample` of them over every kind); return Figures."""
        figures = Figures()
        points = faultfs.cut_points(self.operations, sample=sample, seed=seed)
        states = self._committed_states()
        disk = faultfs.Disk(self.recording.initial)
        for index in range(len(self.operations) + 1):
            if index in points:
                figures.cut_points[points[index]] += 1
                rng = random.Random(seed * 1000003 + index)
                for policy in POLICIES:
                    self._check(index, policy, disk.state(policy, rng), states, figures)
            if index < len(self.operations):
                disk.apply(self.operations[index])
        figures.committed_states = len(states)
        figures.distinct_disks = len(self._reopened)
        return figures

    def _committed_states(self):
        """
        Return every state the node committed, oldest first: [(cut index, rows digest)].

        A committed state is whole in what the node wrote (the disk that
        kept everything) right after the sync of the WAL that ends its commit.
        """
        wal = f'{self.database}-wal'
        commit_points = {0, len(self.operations)} | {
            operation.index + 1 for operation in self.operations
            if operation.op == faultfs.OP_SYNC and operation.path == wal}
        states = []
        disk = faultfs.Disk(self.recording.initial)
        for index in range(len(self.operations) + 1):
            if index in commit_points:
                rows = self._rows_of(disk.state('keep'))
                if not states or states[-1][1] != rows:
                    states.append((index, rows))
            if index < len(self.operations):
                disk.apply(self.operations[index])
        return states

    def _rows_of(self, contents):
        """Return the digest of a disk's rows, opened with plain SQLite (recovery included)."""
        with self._materialized(contents) as database:
            if not database.exists() or database.stat().st_size == 0:
                return digest_of(())
            conn = sqlite3.connect(str(database), isolation_level=None)
            try:
                return digest_of(logical_rows(conn))
            finally:
                conn.close()

    @contextlib.contextmanager
    def _materialized(self, contents):
        directory = pathlib.Path(tempfile.mkdtemp(prefix='disk_', dir=self.work))
        try:
            faultfs.materialize(contents, self.root, directory)
            yield directory / DATABASE
        finally:
            shutil.rmtree(directory)

    def reopened(self, contents):
        """Return what a restart finds on this disk (cached by its contents)."""
        key = faultfs.state_digest(contents)
        if key not in self._reopened:
            with self._materialized(contents) as database:
                result = reopen(database)
                for path, data in contents.items():
                    # A copy's hidden partial file (and its journal) is not the copy.
                    if self._is_copy(path) and not pathlib.Path(path).name.startswith('.'):
                        copy = database.parent.parent / COPIES / pathlib.Path(path).name
                        result.copies[path] = self._copy_problem(copy, data)
            self._reopened[key] = result
        return self._reopened[key]

    def _is_copy(self, path):
        return path.startswith(self.copies + '/')

    def _copy_problem(self, path, data):
        key = hashlib.sha256(data).hexdigest()
        if key not in self._copy_problems:
            self._copy_problems[key] = (backup_problem(path) if path.suffix == '.sqlite3'
                                        else export_problem(path, data))
        return self._copy_problems[key]

    def _check(self, cut, policy, contents, states, figures):
        figures.disks += 1
        reopened = self.reopened(contents)
        before = self._began_at(cut)
        where = f'cut before {self._describe(cut)} ({policy})'
        problems = list(reopened.problems)
        if reopened.memories is not None:
            writes = check_writes(reopened, self.events, before)
            figures.acknowledged_writes_checked += writes.checked
            figures.lost += len(writes.lost)
            figures.partial += len(writes.partial)
            problems += writes.lost + writes.partial
            problems += self._state_problems(cut, reopened, states, figures)
            problem = next_ids_problem(reopened, self.events, before)
            problems += [problem] if problem else []
        problems += [f'forgotten text {text!r} is still in {name}' for name, text in
                     forgotten_texts_found(contents, self.database, self.events, before)]
        problems += self._copies_problems(contents, reopened, before, figures)
        figures.failures += [f'{where}: {problem}' for problem in problems]

    def _describe(self, cut):
        if cut >= len(self.operations):
            return 'the end'
        return self.operations[cut].describe(self.root)

    def _state_problems(self, cut, reopened, states, figures):
        """Return why the rows are not one committed state at least as new as acknowledged."""
        cuts = [index for index, _ in states]
        digests = [rows for _, rows in states]

        def state_at(index):
            return bisect.bisect_right(cuts, index) - 1
        before = self._began_at(cut)
        # The newest state an acknowledged write needs: the one current when
        # its reply came (its commit's WAL sync came before the reply).
        needed = max((state_at(bisect.bisect_right(self._began, event.acked_ns))
                      for event in self.events if event.kind in WRITE_KINDS
                      and event.acked_ns is not None and event.acked_ns < before), default=0)
        # The newest state the cut may hold: one whose commit was written,
        # maybe not yet synced, before the cut.
        newest = min(bisect.bisect_left(cuts, cut + 1), len(states) - 1)
        if reopened.rows in digests[needed:newest + 1]:
            return []
        if reopened.rows in digests[:needed]:
            figures.lost += 1
            return ['the rows are an older state than the acknowledged writes need']
        figures.partial += 1
        return ['the rows are no committed state (a write is half there)']

    def _copies_problems(self, contents, reopened, before, figures):
        problems = []
        figures.leftover_partial_files += any(
            self._is_copy(path) and pathlib.Path(path).name.startswith('.') for path in contents)
        for path, problem in reopened.copies.items():
            if problem is not None:
                figures.partial += 1
                problems.append(f'{pathlib.Path(path).name} is there but incomplete: {problem}')
        acknowledged = {event.detail['path'] for event in self.events
                        if event.kind in COPY_KINDS and event.acked_ns is not None
                        and event.acked_ns < before}
        for path in sorted(acknowledged):
            figures.acknowledged_copies_checked += 1
            if path not in reopened.copies:
                figures.lost += 1
                problems.append(f'the acknowledged copy {pathlib.Path(path).name} is missing')
        return problems
