# SPDX-License-Identifier: Apache-2.0
"""
The power-cut sweep: a workload through the real memory node under faultfs, then every cut checked.

The workload (durability.Workload.run) drives a real memory_node process,
its file operations recorded by test/helpers/faultfs.py: entity_add, remember,
retire, forget, backup and export, a clean restart in the middle and a
SIGKILL at the end.

Sweep replays the recording and cuts the power at chosen points (before and
after every sync, before every truncate and name operation), with three
disks per cut: nothing pending reached the disk, all of it did, or a random
part of it with a torn last sector (faultfs.Disk). Each disk is reopened
the way a restarted node opens it (durability.reopen: MemoryService's
claim, create, schema check, reader), then checked:
- PRAGMA integrity_check and foreign_key_check pass, and memory_verify
  (offline_tools.verify_file, the executable's code) exits 0;
- every write acknowledged before the cut is there and whole, and nothing
  is there that no call made or that is half there (durability.check_writes);
- its rows are exactly those of one committed transaction (every state the
  node committed is known: the recording replayed with nothing lost, after
  each sync of the WAL), no older than the newest one whose reply had
  arrived before the cut;
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
import pathlib
import random
import shutil
import sqlite3
import tempfile

from helpers import faultfs
from helpers.durability import backup_problem, check_writes, COPIES, COPY_KINDS, DATABASE
from helpers.durability import digest_of, export_problem, forgotten_texts_found, logical_rows
from helpers.durability import next_ids_problem, reopen, WRITE_KINDS

# The disks of one cut (faultfs.Disk.state).
POLICIES = ('lose', 'keep', 'random')


def record(root, directory):
    """Prepare root (its copies directory, synced) and return a faultfs Recording of it."""
    root = pathlib.Path(root)
    (root / COPIES).mkdir()
    return faultfs.Recording(root, directory)


# The sweep ------------------------------------------------------------------


@dataclasses.dataclass
class Figures:
    """What a sweep tried and found."""

    cut_points: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    disks: int = 0
    distinct_disks: int = 0
    committed_states: int = 0
    checkpoints: collections.Counter = dataclasses.field(default_factory=collections.Counter)
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
            'database syncs: ' + ', '.join(
                f'{kind} {count}' for kind, count in sorted(self.checkpoints.items())),
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
        figures.checkpoints = self._database_syncs()
        figures.distinct_disks = len(self._reopened)
        return figures

    def _database_syncs(self):
        """
        Count the database file's syncs by what made them: {kind: count}.

        'creation' (the new file, before any WAL), and then checkpoints: a
        forget's (its WAL truncated next), a clean stop's (its WAL removed
        next) or SQLite's automatic one (the WAL goes on).
        """
        wal = f'{self.database}-wal'
        kinds = collections.Counter()
        for operation in self.operations:
            if operation.op != faultfs.OP_SYNC or operation.path != str(self.database):
                continue
            following = next((later for later in self.operations[operation.index + 1:]
                              if later.path == wal and later.op != faultfs.OP_OPEN), None)
            if not any(earlier.path == wal for earlier in self.operations[:operation.index]):
                kinds['creation'] += 1
            elif following is not None and following.op == faultfs.OP_TRUNCATE:
                kinds["forget's checkpoint"] += 1
            elif following is not None and following.op == faultfs.OP_UNLINK:
                kinds["a clean stop's checkpoint"] += 1
            else:
                kinds['automatic checkpoint'] += 1
        return kinds

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
