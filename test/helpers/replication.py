# SPDX-License-Identifier: Apache-2.0
"""
Replication test parts: memory nodes with a replica, scans of the replica's raw bytes, restore.

Shared by system/test_replication.py, test_replication_s3.py and test_replication_cuts.py.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import time

from helpers import diagnostics_util, durability
from helpers.memory_services import create_clients, OBSERVED_TURN_WAIT, remember_request
from helpers.rosutil import executable, NodeProcess, unique_namespace
from mira_memory import srv
from mira_memory.client import names
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal

# docs/storage.md#replication-and-restore states both bounds.
STATED_LAG_SEC = 5.0
STATED_FORGET_DELAY_SEC = 60.0
CANARY = ('Quorvex Zimbalist', 'glorpberry', 'wuzzleton')


def in_sync(level, values):
    """Whether a /diagnostics status (ReplicatedWorkload.status) shows a transaction replicated."""
    return values['replication'] == 'in sync' and int(values['replica txid']) > 0


def ok_and_in_sync(level, values):
    """in_sync, and the node's health OK."""
    return level == 'OK' and in_sync(level, values)


class ReplicatedWorkload(durability.Workload):
    """durability.Workload with replication parameters on every node it starts."""

    def __init__(self, *args, replication, **kwargs):
        super().__init__(*args, **kwargs)
        self.replication = replication

    def start(self, wait=True):
        namespace = unique_namespace('r')
        self.node = NodeProcess(
            self.executable, namespace=namespace, directory=self.directory,
            parameters={'enabled': True, 'database_path': str(self.database),
                        'robot_profile': durability.ROBOT_PROFILE, **OBSERVED_TURN_WAIT,
                        'diagnostics_period_sec': 0.5, **self.replication})
        self.prefix = names.memory_node_name(namespace)
        create_clients(self.ros, self.prefix)
        if wait:
            if not self.ros.wait_for_service(srv.AdminStatus, f'{self.prefix}/admin/status',
                                             timeout=durability.START_TIMEOUT):
                raise AssertionError(self.node.describe('never offered admin/status'))
            self._serving()

    def status(self, until, timeout=30.0):
        """Return the node's first /diagnostics values for which until(level, values) holds."""
        levels = {0: 'OK', 1: 'WARN', 2: 'ERROR', 3: 'STALE'}

        def accepted(status):
            return until(levels[status.level[0] if isinstance(status.level, bytes)
                                else status.level], diagnostics_util.values(status))
        status = diagnostics_util.diagnostics(self.ros, str(self.database), accepted, timeout)
        return diagnostics_util.values(status)

    def start_with_subjects(self, remembers=0):
        """Start the node, add durability.SUBJECTS and remember `remembers` memories."""
        self.start()
        for name in durability.SUBJECTS:
            durability.done(self.entity(name))
        for _ in range(remembers):
            durability.done(self.remember())

    def write_canary(self):
        """Write an entity, a memory and a pending item with the CANARY texts; return the ENT."""
        services = self.services
        name, value, pending_value = CANARY
        entity_id = services.entity(name)
        services.memory(f'{name} collects {value} stamps', [(entity_id, 'subject')])
        # A hedge: refused by the grounding, kept for review.
        request = remember_request(
            TurnContext('canary', 'turn-1', f'Maybe {name} drinks {pending_value} brew.'),
            Proposal('fact', name, 'drinks', f'{pending_value} brew', None, None,
                     f'{name} drinks {pending_value} brew'))
        response = services.remember(request)
        assert response.pending_review, response
        assert services.admin('status').pending_count == 1, response
        return entity_id

    def replicate_canary(self, replica_directory, until=in_sync):
        """
        Write the canary and wait until it is replicated; return (its ENT, the status values).

        Replicated: a status for which until(level, values) holds, and the
        canary's texts found in the files under replica_directory (LTX pages
        are LZ4-compressed, but a first occurrence stays literal).
        """
        entity_id = self.write_canary()
        values = self.status(until)
        wait_for_hits(lambda: replica_files(replica_directory), CANARY)
        return entity_id, values


def check_restored(database, events, lost_at_ns):
    """Reopen a restored database; return problems (acknowledged-before-the-lag writes only)."""
    reopened = durability.reopen(database)
    problems = list(reopened.problems)
    writes = durability.check_writes(reopened, events)
    problems += writes.partial
    bound = lost_at_ns - int(STATED_LAG_SEC * 1e9)
    old_enough = {f'MEM{event.detail["memory_id"]}' for event in events
                  if event.acked_ns is not None and event.acked_ns < bound
                  and 'memory_id' in event.detail}
    problems += [line for line in writes.lost if line.split()[0] in old_enough
                 or not line.startswith('MEM')]
    return problems, writes


def replica_files(*directories):
    """
    Return the files under directories as they are now.

    A forget wipes the replica while this walks it: os.walk skips a directory
    that is gone by the time it is listed (pathlib's rglob raises).
    """
    return [pathlib.Path(root, name) for directory in directories
            for root, _, names in os.walk(directory) for name in names]


def raw_hits(files, secrets):
    """Return (file, secret) for every secret found in any of files, in any case."""
    hits = []
    for path in files:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue  # removed since it was listed (a wipe, a compaction): it holds nothing now
        for secret in secrets:
            if any(form.encode() in data for form in {secret, secret.lower(), secret.upper()}):
                hits.append((str(path), secret))
    return hits


def wait_for_hits(files, secrets):
    """Wait (up to the stated lag, twice) until every secret is found in files()."""
    deadline = time.monotonic() + 2 * STATED_LAG_SEC
    while {secret for _, secret in raw_hits(files(), secrets)} != set(secrets):
        assert time.monotonic() < deadline, ('never reached the replica', secrets,
                                             raw_hits(files(), secrets))
        time.sleep(0.2)


def wait_until_forgotten(files, secrets, started):
    """
    Scan files() until no secret is in them, or the stated forget delay since started is over.

    Return (the hits of the last scan, seconds from started to it).
    """
    while True:
        hits = raw_hits(files(), secrets)
        waited = time.monotonic() - started
        if not hits or waited > STATED_FORGET_DELAY_SEC:
            return hits, waited
        time.sleep(0.2)


def litestream_pid(node_pid):
    """Return the pid of the node's litestream child, or None."""
    for entry in pathlib.Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / 'stat').read_text().rsplit(')', 1)[1].split()
            comm = (entry / 'comm').read_text().strip()
        except OSError:
            continue
        if int(fields[1]) == node_pid and comm == 'litestream':
            return int(entry.name)
    return None


def restore(replica_url, to_path, *extra):
    return subprocess.run([executable('memory_restore'), '--from', replica_url,
                           '--to', str(to_path), *extra],
                          capture_output=True, text=True, timeout=120, check=False)


def forget_everywhere(workload, entity_id, files, replica_kind):
    """
    Forget entity_id with its canary through the node; wait until files() hold none of it.

    Return (seconds the forget took to answer, seconds until its text was gone).
    """
    started = time.monotonic()
    forget = workload.services.admin('forget', target=entity_id, confirm=True)
    answered = time.monotonic() - started
    assert forget.success and forget.applied, forget
    assert answered < 5.0, f'forget took {answered:.1f} s with {replica_kind}'
    hits, waited = wait_until_forgotten(files, CANARY, started)
    assert hits == [], f'after {waited:.0f} s the forgotten text is still in {hits}'
    return answered, waited


def lose_and_restore(workload, replica_url, new_path):
    """
    Write under load, lose the robot (Litestream, then the node, killed; its disk gone), restore.

    Litestream gets no last sync, as in a power cut. The restored file must
    hold every write acknowledged more than the stated lag before the loss,
    and no forgotten text. Return durability.check_writes' result.
    """
    deadline = time.monotonic() + 4.0
    while time.monotonic() < deadline:
        durability.done(workload.remember())
    child = litestream_pid(workload.node.process.pid)
    assert child is not None, 'no litestream child'
    os.kill(child, signal.SIGKILL)
    lost_at = time.monotonic_ns()
    workload.stop(signal.SIGKILL)
    shutil.rmtree(workload.database.parent)

    done = restore(replica_url, new_path)
    assert done.returncode == 0, done.stderr
    assert 'integrity_check: ok' in done.stdout and 'ready:' in done.stdout, done.stdout
    problems, writes = check_restored(new_path, workload.events, lost_at)
    assert problems == [], problems
    assert raw_hits([new_path], CANARY) == []
    return writes
