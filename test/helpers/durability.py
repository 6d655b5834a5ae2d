# SPDX-License-Identifier: Apache-2.0
"""
A workload through the real memory node, and the checks of what its file holds afterwards.

Workload drives memory_node (or memory_lifecycle_node, configured and
activated) processes through their real services: entity_add, remember,
retire, forget, backup and export, one call after another, each noted as
an Event with the time it was sent and the time its reply said it was done
(time.monotonic_ns(), the clock test/helpers/faultfs.py records with). Started
with a faultfs Recording, the nodes' file operations are recorded.

reopen() opens a database the way a restarting node does and reads what it
holds; check_writes() compares that with the Events: every acknowledged
write there and whole, nothing there that no call made or that is only
half there. The power-cut sweep (power_cut.py), the fault sweep
(system/test_storage_faults.py) and the SIGKILL test
(system/test_crash_restart.py) share them.
"""

import collections
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import signal
import sqlite3
import time

from helpers.action_goals import ACTION_TYPES, finish
from helpers.lifecycle_cli import prepare, set_state
from helpers.memory_services import create_clients, MemoryServices, OBSERVED_TURN_WAIT
from helpers.memory_services import remember_request
from helpers.rosutil import NodeProcess, unique_namespace
from mira_memory import srv
from mira_memory.client import names
from mira_memory.core import config
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.archive import importing
from mira_memory.core.store import NewMemory, parse_entity_id, parse_memory_id

DATABASE = 'memory/memory.sqlite3'  # under the recording's root; the node creates memory/
COPIES = 'copies'                   # the backups' and exports' directory, under the root
SUBJECTS = ('Ada Lovelace', 'Bob Stone')
KEPT_SUBJECT = 'Carol Quimby'  # never an entity: her remembers are kept for review
ROBOT_PROFILE = 'Mira'
# Made-up words, so a forgotten value is found in the raw bytes only if it is still there.
WORDS = ('quorvish', 'plumwort', 'zendrik', 'velkor', 'brastle', 'ommerin')
WRITE_KINDS = ('entity', 'remember', 'retire', 'forget')
COPY_KINDS = ('backup', 'export')
CREATED = ('applied', 'created')  # a remember's (status, outcome) that acknowledges it
# Deadlines against a hang, not timings.
CALL_TIMEOUT = 60.0
START_TIMEOUT = 90.0
# After a SIGKILL, how long to wait for a reply the node may have sent just
# before. A later one counts as lost: the write is then checked as not
# acknowledged (there or not, but whole), never wrongly as acknowledged.
KILLED_REPLY_WAIT = 0.5


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
    """
    Return a word unique to number (below 26**3) that no language file knows.

    Three letters alone can spell a word the grounding rules read ("fib", a
    denial, refused the 889th remember); a leading "zq" spells none.
    """
    letters = []
    for _ in range(3):
        number, digit = divmod(number, 26)
        letters.append(chr(ord('a') + digit))
    return 'zq' + ''.join(letters)


def remember_call(number):
    """Return the Remember request of the workload's number-th memory (a new slot each)."""
    subject = SUBJECTS[number % len(SUBJECTS)]
    value = f'{WORDS[number % len(WORDS)]} {tag(number)}'
    evidence = f'{subject} really likes {value}'
    return remember_request(
        TurnContext('power-cut', f'turn-{number}', f'By the way, {evidence}, these days.'),
        Proposal('preference', subject, f'likes_{number}', value, None, None, evidence))


def kept_refusal_call(number):
    """Return the number-th kept refusal's Remember: its subject is no entity."""
    value = f'{WORDS[number % len(WORDS)]} kept {tag(number)}'
    evidence = f'{KEPT_SUBJECT} really likes {value}'
    return remember_request(
        TurnContext('power-cut', f'kept-{number}', f'By the way, {evidence}, these days.'),
        Proposal('preference', KEPT_SUBJECT, f'likes_kept_{number}', value, None, None,
                 evidence))


def report(name, lines):
    """Print a sweep's figures, and keep them under $MIRA_SWEEP_REPORT when it is set."""
    text = '\n'.join(lines)
    print(f'\n{name}:\n{text}')
    directory = os.environ.get('MIRA_SWEEP_REPORT')
    if directory:
        # Made here, so the documented command (docs/reliability.md) works as typed.
        pathlib.Path(directory).mkdir(parents=True, exist_ok=True)
        pathlib.Path(directory, f'{name}.txt').write_text(text + '\n')


class Workload:
    """Calls to one memory node after another, each noted as an Event."""

    def __init__(self, ros, root, directory, *, recording=None, executable='memory_node'):
        """
        Drive nodes on root/DATABASE; their logs go to directory.

        recording: a faultfs Recording the nodes run under, or None.
        executable: memory_node, or memory_lifecycle_node (configured and
        activated once it answers).
        """
        self.ros = ros
        self.recording = recording
        self.executable = executable
        self.directory = pathlib.Path(directory)
        self.database = pathlib.Path(root) / DATABASE
        self.copies = pathlib.Path(root) / COPIES
        self.events = []
        self.node = None
        self.prefix = None
        self.services = None
        self.remembered = {}  # number -> MEM id
        self.remembers = 0
        self.kept = 0  # refusals kept for review

    # The node -----------------------------------------------------------------

    def start(self, wait=True):
        """Start the node and (wait) until it serves."""
        namespace = unique_namespace('w')
        self.node = NodeProcess(
            self.executable, namespace=namespace, directory=self.directory,
            env=self.recording.environment() if self.recording else None,
            parameters={'enabled': True, 'database_path': str(self.database),
                        'admin_output_dirs': str(self.copies),
                        'robot_profile': ROBOT_PROFILE, **OBSERVED_TURN_WAIT})
        self.prefix = prefix = names.memory_node_name(namespace)
        create_clients(self.ros, prefix)
        if not wait:
            return
        if self.executable == 'memory_lifecycle_node':
            prepare(self.ros, prefix, timeout=START_TIMEOUT)
            assert set_state(self.ros, prefix, 'configure'), self.node.describe('configure')
            assert set_state(self.ros, prefix, 'activate'), self.node.describe('activate')
        elif not self.ros.wait_for_service(
                srv.AdminStatus, names.service_name(prefix, names.ADMIN_STATUS),
                timeout=START_TIMEOUT):
            raise AssertionError(self.node.describe('never offered admin/status'))
        self._serving()

    def _serving(self):
        self.ros.settle(srv.AdminStatus, names.service_name(self.prefix, names.ADMIN_STATUS))
        self.services = MemoryServices(self.ros, self.prefix)
        self.services.wait_for_listener()

    def start_failing(self):
        """
        Start memory_node expecting it to exit by itself; return how (an Exited).

        None when it started serving instead (then it runs on, as start() leaves it).
        """
        self.start(wait=False)
        deadline = time.monotonic() + START_TIMEOUT
        while self.node.poll() is None:
            if self.ros.wait_for_service(
                    srv.AdminStatus, names.service_name(self.prefix, names.ADMIN_STATUS),
                    timeout=0.5):
                self._serving()
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
            assert 'Traceback' not in self.node.output(), self.node.describe('a traceback')
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
            lambda response: (response.status, response.outcome) == CREATED,
            {'number': number, 'texts': (request.value, request.evidence)})
        if event.acked_ns:
            memory_id = event.detail['response'].memory_id
            self.remembered[number] = memory_id
            event.detail['memory_id'] = parse_memory_id(memory_id)
        return event

    def remember_and_kill(self, delay):
        """
        Send the next remember, SIGKILL the node delay seconds later; return its Event.

        The kill lands while the node waits for the turn, admits, commits or
        answers (or just after): acked_ns is set only if a created reply
        arrived before the process was dead.
        """
        number = self.remembers
        self.remembers += 1
        request = remember_call(number)
        self.services.say(request.episode_id, request.turn_id, request.utterance)
        client = self.ros.client(srv.Remember, names.service_name(self.prefix, names.REMEMBER))
        event = Event('remember', time.monotonic_ns(),
                      detail={'number': number, 'texts': (request.value, request.evidence)})
        with self.ros.spinning() as executor:
            future = client.call_async(request)
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and not future.done():
                executor.spin_once(timeout_sec=max(0.0, deadline - time.monotonic()))
            event.detail['killed_ns'] = time.monotonic_ns()
            self.node.process.kill()
            self.node.process.wait()
            # A reply already on its way may still arrive; none can come later.
            settle = time.monotonic() + KILLED_REPLY_WAIT
            while not future.done() and time.monotonic() < settle:
                executor.spin_once(timeout_sec=0.05)
        reply_ns = time.monotonic_ns()
        response = future.result() if future.done() else None
        event.detail['response'] = response
        if response is not None and (response.status, response.outcome) == CREATED:
            event.acked_ns = reply_ns
            self.remembered[number] = response.memory_id
            event.detail['memory_id'] = parse_memory_id(response.memory_id)
        self.events.append(event)
        self.ros.forget_clients(self.prefix)
        self.node = self.services = None
        return event

    def refuse_kept(self):
        """
        Remember for a subject that is no entity: refused, and kept for review after the reply.

        The kept note is committed without a sync of its own (synchronous
        NORMAL, core/store/transaction.py): a power cut before the next
        durable commit may lose it, whole, and nothing else.
        """
        number = self.kept
        self.kept += 1
        request = kept_refusal_call(number)
        event = self._call('kept', lambda: self.services.remember(request, timeout=CALL_TIMEOUT),
                           lambda response: False, {'number': number})
        event.detail['replied_ns'] = time.monotonic_ns()
        response = event.detail['response']
        assert response.pending_review, response  # the refusal was kept
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
        """Back up or export to COPIES/name through the node's action (its result kept)."""
        goal = ACTION_TYPES[kind].Goal(path=str(self.copies / name), force=force)
        return self._call(
            kind, lambda: finish(self.ros, self.services.prefix, kind, goal,
                                 timeout=CALL_TIMEOUT)[1],
            lambda result: result.success, {'path': goal.path})

    def run(self, remembers):
        """
        Run the workload: two node runs of `remembers` memories each.

        Between them a clean stop (SQLite checkpoints and removes the WAL),
        at the end a SIGKILL; along the way retires, refusals kept for review
        (each committed without a sync of its own), forgets (each truncates
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
                if (number - first) % 5 == 2:
                    self.refuse_kept()
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


def check_shown(workload):
    """
    Show every remembered memory through the running node; return (checked, problems).

    Every memory whose remember was acknowledged is shown whole, unless a
    forget of it was sent: acknowledged, it is gone; answered failure or
    not at all, either.
    """
    forgets = {event.detail['memory_id']: event for event in workload.events
               if event.kind == 'forget'}
    checked, problems = 0, []
    for event in workload.events:
        if event.kind != 'remember' or event.acked_ns is None:
            continue
        checked += 1
        memory_id = event.detail['memory_id']
        shown = workload.services.admin('show', memory_id=f'MEM{memory_id}')
        forget = forgets.get(memory_id)
        if forget is not None and shown.error_code == 'not_found':
            continue
        if forget is not None and forget.acked_ns is not None:
            problems.append(f'MEM{memory_id} was forgotten, and the node shows it')
        elif not shown.success:
            problems.append(f'MEM{memory_id} was acknowledged, and the node answers '
                            f'{shown.error_code}: {shown.message}')
        elif shown.memory.summary != remember_call(event.detail['number']).evidence:
            problems.append(f'MEM{memory_id} is shown as {shown.memory.summary!r}')
    return checked, problems


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
    pending: list = None  # the review queue's items: (episode, turn, utterance, ...)
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
        result.pending = conn.execute(
            'SELECT episode_id, turn_id, utterance, subject, predicate, value, evidence'
            ' FROM pending ORDER BY id').fetchall()
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
        importing.import_export(target, lines)
    except Exception as error:  # any refusal is the finding
        return f'memory_import refuses it: {error}'
    finally:
        for suffix in ('', '-wal', '-shm'):
            pathlib.Path(f'{target}{suffix}').unlink(missing_ok=True)
    return None
