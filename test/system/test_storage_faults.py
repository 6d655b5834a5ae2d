# SPDX-License-Identifier: Apache-2.0
"""
A failing disk through the real memory node: nothing that failed is acknowledged.

For each file operation (write, sync, truncate, directory sync) and each
error (EIO, then ENOSPC), faultfs makes the operation fail while the
memory node runs a call that needs it. Then:
- the call is answered backend_failure (or the node exits 1 with one
  error line, when it fails as it starts) and nothing is acknowledged
  during it;
- the node goes on serving reads (recall and show);
- after a failed sync, truncate or I/O error of the store nothing more is
  acknowledged until the node restarts, even once the disk works again
  (the fsync lesson of 2018: a failed sync's data may be gone, and a later
  sync that succeeds says nothing about it); a full disk at a write and
  a failure of a copy's file only fail their call;
- the disk the failure leaves (faultfs.Disk: a failed sync's writes lost
  for good, then everything unsynced lost, or a random part of it) holds
  every write acknowledged, whole, and opens with integrity_check and
  memory_verify passing;
- after the fault clears, a restarted node finds every acknowledged write.
All cases run on one database, one after another, and the test reports
the figures (tools/fault_sweep prints them for docs/reliability.md).
"""

import collections
import dataclasses
import errno
import os
import random

from helpers import durability, faultfs, power_cut
import pytest

pytestmark = pytest.mark.ros

STORE = 'memory/memory.sqlite3'  # matches the database, its WAL and its journal
STORE_DIRECTORY = 'disk/memory'  # the database's directory (a directory sync's path)
COPY = 'disk/copies'  # the copies' directory and every file in it


@dataclasses.dataclass(frozen=True)
class Case:
    """One fault: which operations fail, with which error, under which call."""

    kind: int
    error: int
    match: str
    call: str  # remember, forget, backup, export or start
    # True: a failure of the store itself, after which the node writes nothing
    # until it restarts; False: only the call fails.
    stops_writes: bool
    # Matching operations that run before the first failure (faultfs after=).
    after: int = 0
    what: str = ''  # which of the call's operations that makes fail
    # With after: the failed operation's file ends so, and it was an
    # fdatasync (SQLite's) or not (the store's own fsync).
    suffix: str = ''
    data_only: bool = True

    def __str__(self):
        return (f'{faultfs.KIND_NAMES[self.kind]} {errno.errorcode[self.error]} during '
                f'{self.call}{" (" + self.what + ")" if self.what else ""}')


CASES = (
    Case(faultfs.WRITE, errno.EIO, STORE, 'remember', True),
    # ENOSPC at a write is SQLITE_FULL: the transaction rolled back before
    # any sync, so nothing written is in doubt and the next write may go on.
    Case(faultfs.WRITE, errno.ENOSPC, STORE, 'remember', False),
    Case(faultfs.SYNC, errno.EIO, STORE, 'remember', True),
    Case(faultfs.SYNC, errno.ENOSPC, STORE, 'remember', True),
    Case(faultfs.TRUNCATE, errno.EIO, STORE, 'forget', True),
    Case(faultfs.TRUNCATE, errno.ENOSPC, STORE, 'forget', True),
    # A forget's syncs: its commit's (the remember cases), then the
    # checkpoint's of the WAL and of the database, then the truncated WAL's.
    Case(faultfs.SYNC, errno.EIO, STORE, 'forget', True, 1, 'the checkpoint syncs the WAL',
         '-wal'),
    Case(faultfs.SYNC, errno.EIO, STORE, 'forget', True, 2,
         'the checkpoint syncs the database', '.sqlite3'),
    Case(faultfs.SYNC, errno.ENOSPC, STORE, 'forget', True, 3, 'the truncated WAL', '-wal',
         data_only=False),
    Case(faultfs.DIRECTORY_SYNC, errno.EIO, STORE_DIRECTORY, 'start', True),
    Case(faultfs.DIRECTORY_SYNC, errno.ENOSPC, STORE_DIRECTORY, 'start', True),
    Case(faultfs.DIRECTORY_SYNC, errno.EIO, COPY, 'backup', False),
    Case(faultfs.DIRECTORY_SYNC, errno.ENOSPC, COPY, 'export', False),
    Case(faultfs.SYNC, errno.EIO, COPY, 'backup', False),
    Case(faultfs.WRITE, errno.ENOSPC, COPY, 'export', False),
)


@dataclasses.dataclass
class Figures:
    """What the fault sweep injected and found."""

    injected: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    cases: list = dataclasses.field(default_factory=list)
    acknowledged_after_failure: int = 0
    acknowledged_writes_checked: int = 0
    problems: list = dataclasses.field(default_factory=list)

    def lines(self):
        """Return the figures as text lines."""
        injected = ', '.join(f'{kind} {count}' for kind, count in sorted(self.injected.items()))
        return [
            f'faults injected: {sum(self.injected.values())} ({injected})',
            *self.cases,
            f'calls acknowledged after a failure: {self.acknowledged_after_failure}',
            f'acknowledged writes checked on the disks left and after restarts: '
            f'{self.acknowledged_writes_checked}',
            f'problems: {len(self.problems)}',
        ]


class FaultSweep:
    """The cases, one after another, on one workload's database."""

    def __init__(self, ros, tmp_path):
        root = tmp_path / 'disk'
        root.mkdir()
        self.recording = power_cut.record(root, tmp_path)
        self.workload = durability.Workload(ros, root, tmp_path, recording=self.recording)
        self.work = tmp_path / 'disks'
        self.work.mkdir()
        self.figures = Figures()

    def run(self):
        workload = self.workload
        workload.start()
        for name in durability.SUBJECTS:
            durability.done(workload.entity(name))
        for case in CASES:
            self.problems = []
            for _ in range(3):
                durability.done(workload.remember())
            before = self.recording.injected()
            answer = self._fail(case)
            injected = self.recording.injected() - before
            self.figures.injected[faultfs.KIND_NAMES[case.kind]] += injected
            if not injected:
                self.problems.append('the fault was never hit')
            self.figures.cases.append(f'{case}: {injected} injected, answered {answer}')
            self.figures.problems += [f'{case}: {problem}' for problem in self.problems]
        self.recording.clear()
        if workload.node is None:
            workload.start()
        self._check_restart()
        workload.stop()
        return self.figures

    def _fail(self, case):
        """Run case's call with the fault on; check the answer, reads and writes after."""
        workload = self.workload
        if case.call == 'start':
            workload.stop()
            self.recording.fail(case.kind, case.error, match=case.match)
            exited = workload.start_failing()
            if exited is None:
                self.problems.append('the node started although a directory sync failed')
                self._count_acknowledged_after_failure(workload.remember())
                self.recording.clear()
                workload.stop()
                answer = 'started'
            else:
                self._expect(exited.code == 1 and len(exited.errors) == 1
                             and not exited.traceback
                             and os.strerror(case.error) in exited.errors[0],
                             f'the node did not exit 1 with one error line: {exited}')
                self.recording.clear()
                # The error line without its '[ERROR] [time] [memory]: ' prefix.
                answer = f'exit {exited.code}: ' + ''.join(
                    line.split(']: ', 1)[-1] for line in exited.errors[-1:])
            self._check_disks_left()
            workload.start()
            self._check_restart()
            return answer
        number = max(workload.remembered)
        self.recording.fail(case.kind, case.error, match=case.match, after=case.after)
        if case.call == 'remember':
            event = workload.remember()
            response = event.detail['response']
            answer = f'{response.status} {response.reason}'
            self._expect(response.reason == 'backend_failure', f'answered {answer}')
        elif case.call == 'forget':
            event = workload.forget(number)
            number = max(workload.remembered)
        else:
            event = workload.copy(case.call, f'{case.call}-{len(self.figures.cases)}',
                                  force=False)
        if case.call != 'remember':
            response = event.detail['response']
            answer = f'{response.error_code}: {response.message}'
            self._expect(not response.success and response.error_code == 'backend_failure',
                         f'answered {answer}')
        self._count_acknowledged_after_failure(event)
        if case.suffix:
            failed = [operation for operation in self.recording.operations()
                      if operation.injected][-1]
            self._expect(failed.path.endswith(case.suffix) and case.data_only == bool(
                failed.flags & faultfs.FLAG_DATA_ONLY), f'{failed.describe()} failed instead')
        self._check_reads(number)
        self.recording.clear()
        after = workload.remember()
        if case.stops_writes:
            self._expect(after.acked_ns is None,
                         'a write was acknowledged after the store failed, before a restart')
            self._count_acknowledged_after_failure(after)
        else:
            self._expect(after.acked_ns is not None, 'the next write failed although only '
                         f'the call failed: {after.detail["response"]}')
        workload.stop()
        self._check_disks_left()
        workload.start()
        self._check_restart()
        return answer

    def _expect(self, condition, problem):
        if not condition:
            self.problems.append(problem)

    def _count_acknowledged_after_failure(self, event):
        if event.acked_ns is not None:
            self.figures.acknowledged_after_failure += 1
            self.problems.append(f'{event.kind} acknowledged after a failure')

    def _check_reads(self, number):
        """Recall and show keep answering from what was acknowledged."""
        services = self.workload.services
        memory_id = self.workload.remembered[number]
        subject = durability.SUBJECTS[number % len(durability.SUBJECTS)]
        recalled = services.recall(subject)
        self._expect(recalled.status == 'found', f'recall answered {recalled.status}')
        shown = services.admin('show', memory_id=memory_id)
        self._expect(shown.success, f'show {memory_id} answered {shown.message}')

    def _check_disks_left(self):
        """Check the disks the failure leaves, the failed syncs' writes lost for good."""
        sweep = power_cut.Sweep(self.recording, self.workload.events, self.work)
        disk = faultfs.Disk(self.recording.initial)
        for operation in sweep.operations:
            disk.apply(operation)
        rng = random.Random(len(self.figures.cases))
        for policy in ('lose', 'random', 'random'):
            contents = disk.state(policy, rng)
            reopened = sweep.reopened(contents)
            self.problems += [f'disk left ({policy}): {problem}'
                              for problem in reopened.problems]
            if reopened.memories is None:
                continue
            writes = durability.check_writes(reopened, self.workload.events)
            self.figures.acknowledged_writes_checked += writes.checked
            self.problems += [f'disk left ({policy}): {problem}'
                              for problem in writes.lost + writes.partial]
            found = durability.forgotten_texts_found(
                contents, sweep.database, self.workload.events)
            self.problems += [f'disk left ({policy}): forgotten {text!r} in {name}'
                              for name, text in found]

    def _check_restart(self):
        """Check that the restarted node shows every acknowledged memory."""
        checked, problems = durability.check_shown(self.workload)
        self.figures.acknowledged_writes_checked += checked
        self.problems += [f'after the restart: {problem}' for problem in problems]


def test_a_failing_disk_is_never_acknowledged(ros, tmp_path):
    figures = FaultSweep(ros, tmp_path).run()
    durability.report('storage_faults', figures.lines())
    assert not figures.problems, '\n'.join(figures.problems)
    assert figures.acknowledged_after_failure == 0
    assert set(figures.injected) == set(faultfs.KIND_NAMES.values())
