# SPDX-License-Identifier: Apache-2.0
"""
faultfs (test/helpers/faultfs.c and .py): what it records, what it fails, what a cut leaves.

Each test runs a small Python child under faultfs: the same libc and
libsqlite3 calls any process makes. The rebuilt disks are checked against
the real files, and against the rules a power cut follows; a child that
renames without syncing the directory shows that the model finds the
classic bug.
"""

import errno
import os
import pathlib
import sys

from helpers import faultfs
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'),
                                reason='faultfs preloads a library into Linux processes')


def run_child(recording, code, *args):
    """Run Python code under faultfs with the root as argv[1]; return its stdout."""
    return recording.python(code, *args)


def end_state(recording, policy='lose'):
    """Return the disk a power cut right after the child leaves (faultfs.Disk.state)."""
    return recording.disk().state(policy)


@pytest.fixture
def recording(tmp_path):
    root = tmp_path / 'root'
    root.mkdir()
    return faultfs.Recording(root, tmp_path)


SQLITE_WRITER = """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1] + '/db.sqlite3', isolation_level=None)
    conn.execute('PRAGMA journal_mode = WAL')
    conn.execute('PRAGMA synchronous = FULL')
    conn.execute('CREATE TABLE t (v TEXT)')
    for number in range(20):
        conn.execute('INSERT INTO t VALUES (?)', ('row %d' % number * 50,))
    conn.execute('PRAGMA wal_checkpoint(PASSIVE)')
    conn.execute('INSERT INTO t VALUES (?)', ('last',))
    import os
    os._exit(0)  # no close: the WAL stays as it is
"""


def test_the_recorded_operations_rebuild_the_files_byte_for_byte(recording):
    run_child(recording, SQLITE_WRITER)
    operations = recording.operations()
    names = {operation.name for operation in operations}
    assert {'open', 'write', 'sync', 'unlink'} <= names, names
    for policy in ('keep', 'lose'):
        state = end_state(recording, policy)
        files = {path: data for path, data in state.items() if data != faultfs.DIRECTORY}
        real = {str(path): path.read_bytes() for path in recording.root.iterdir()
                if not path.name.endswith('-shm')}
        # Everything SQLite wrote was synced before it went on: both disks are the files.
        assert files == real, policy


def test_a_cut_keeps_what_was_synced_and_may_lose_the_rest(recording):
    run_child(recording, """
        import os, sys
        def write(name, text, sync):
            fd = os.open(os.path.join(sys.argv[1], name), os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, text)
            if sync:
                os.fsync(fd)
            os.close(fd)
        write('synced', b'kept', True)
        write('unsynced', b'maybe', False)
        dirfd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dirfd)
        write('unnamed', b'data', True)  # created after the directory sync
    """)
    root = str(recording.root)
    lost = end_state(recording, 'lose')
    assert lost[f'{root}/synced'] == b'kept'
    assert lost[f'{root}/unsynced'] == b''
    assert f'{root}/unnamed' not in lost
    kept = end_state(recording, 'keep')
    assert kept[f'{root}/unsynced'] == b'maybe' and kept[f'{root}/unnamed'] == b'data'


def test_a_rename_without_a_directory_sync_is_found_lost(recording):
    # The classic bug: the data is synced, the new name is not.
    run_child(recording, """
        import os, sys
        partial, target = sys.argv[1] + '/.partial', sys.argv[1] + '/target'
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b'complete')
        os.fsync(fd)
        os.close(fd)
        os.rename(partial, target)
    """)
    assert f'{recording.root}/target' not in end_state(recording, 'lose')
    assert end_state(recording, 'keep')[f'{recording.root}/target'] == b'complete'


@pytest.mark.parametrize('error', [errno.EIO, errno.ENOSPC], ids=['EIO', 'ENOSPC'])
def test_faults_reach_the_process_and_a_failed_sync_loses_its_writes(recording, error):
    recording.fail(faultfs.SYNC, error, match='data', times=1)
    out = run_child(recording, """
        import os, sys
        fd = os.open(sys.argv[1] + '/data', os.O_WRONLY | os.O_CREAT, 0o600)
        dirfd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dirfd)
        os.pwrite(fd, b'first', 0)
        try:
            os.fsync(fd)
        except OSError as failed:
            print(failed.errno)
        os.pwrite(fd, b'second', 100)
        os.fsync(fd)  # succeeds: the first write is gone for good all the same
    """)
    assert out.split() == [str(error)]
    assert recording.injected() == 1
    data = end_state(recording, 'lose')[f'{recording.root}/data']
    assert data == bytes(100) + b'second'


@pytest.mark.parametrize('kind, call', [
    (faultfs.WRITE, "os.write(fd, b'x')"),
    (faultfs.SYNC, 'os.fdatasync(fd)'),
    (faultfs.TRUNCATE, 'os.ftruncate(fd, 0)'),
    (faultfs.DIRECTORY_SYNC, 'os.fsync(dirfd)'),
], ids=['write', 'sync', 'truncate', 'directory_sync'])
def test_each_kind_fails_until_cleared(recording, kind, call):
    recording.fail(kind, errno.EIO)
    code = f"""
        import os, sys
        fd = os.open(sys.argv[1] + '/data', os.O_RDWR | os.O_CREAT, 0o600)
        dirfd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
        for attempt in range(2):
            try:
                {call}
                print('ok')
            except OSError as failed:
                print(failed.errno)
    """
    assert run_child(recording, code).split() == [str(errno.EIO)] * 2
    recording.clear()
    assert run_child(recording, code).split() == ['ok', 'ok']
    failed = [operation for operation in recording.operations() if operation.injected]
    assert len(failed) == 2 and {operation.error for operation in failed} == {errno.EIO}


def test_new_database_directories_survive_a_power_cut(recording):
    # The node creates its database directory (database_path's parents) at start.
    run_child(recording, """
        import sys
        from mira_memory.core.store import private_files
        private_files.make_directories(sys.argv[1] + '/robot/memory')
    """)
    state = end_state(recording, 'lose')
    assert state.get(f'{recording.root}/robot/memory') == faultfs.DIRECTORY


def test_an_acknowledged_forget_leaves_no_text_after_a_power_cut(recording):
    secret = 'Ada drinks quorvish nettle brew'
    run_child(recording, """
        import os, sys
        from mira_memory.core.store import MemoryStore, NewMemory
        store = MemoryStore.open(sys.argv[1] + '/memory.sqlite3')
        entity = store.add_entity('person', 'Ada Lovelace')
        memory = store.add_memory(NewMemory(kind='fact', summary=sys.argv[2],
                                            links=((entity.id, 'subject'),)))
        store.forget_memory(memory.id, apply=True)
        os._exit(0)  # the forget returned: the power goes now
    """, secret)
    state = end_state(recording, 'lose')
    database = f'{recording.root}/memory.sqlite3'
    assert state[database]  # the check below looks at real files
    for path in (database, f'{database}-wal'):
        assert secret.encode() not in state.get(path, b''), os.path.basename(path)
    # Without the cut the text is gone too (the test's control).
    kept = end_state(recording, 'keep')
    assert all(secret.encode() not in data for data in kept.values()
               if data != faultfs.DIRECTORY)


def test_the_library_builds_once(tmp_path):
    assert faultfs.library() == faultfs.library()
    assert pathlib.Path(faultfs.library()).stat().st_size > 0


# Three writes never synced: 3 whole sectors, then 3 sectors from a middle
# offset, then a piece shorter than a sector; each fills its bytes with its
# own number, so a cut disk shows which sectors of which write it holds.
UNSYNCED_WRITES = ((0, 1536), (1536 + 100, 1400), (4096, 300))


def _sectors(write):
    at, length = write
    start, end, pieces = at, at + length, []
    while start < end:
        stop = min((start // faultfs.SECTOR + 1) * faultfs.SECTOR, end)
        pieces.append((start, stop))
        start = stop
    return pieces


def test_a_random_cut_may_keep_or_tear_any_sector_of_any_unsynced_write(recording):
    run_child(recording, """
        import os, sys
        fd = os.open(sys.argv[1] + '/file', os.O_WRONLY | os.O_CREAT, 0o600)
        dirfd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dirfd)  # the name is durable; the writes below are not
        for number, (at, length) in enumerate(%r):
            os.pwrite(fd, bytes([number + 1]) * length, at)
    """ % (UNSYNCED_WRITES,))
    disk = recording.disk()
    path = f'{recording.root}/file'
    import random
    rng = random.Random(41)
    seen = set()  # (write, sector, on the disk or not)
    torn = set()  # (write, sector) missing while another sector of its write is there
    for _ in range(400):
        data = disk.state('random', rng)[path]
        for number, write in enumerate(UNSYNCED_WRITES):
            there = [data[start:stop] == bytes([number + 1]) * (stop - start)
                     for start, stop in _sectors(write)]
            for sector, held in enumerate(there):
                seen.add((number, sector, held))
                if not held and any(there):
                    torn.add((number, sector))
    every = {(number, sector) for number, write in enumerate(UNSYNCED_WRITES)
             for sector in range(len(_sectors(write)))}
    assert {(n, s) for n, s, held in seen if held} == every, 'a sector never reached the disk'
    assert {(n, s) for n, s, held in seen if not held} == every, 'a sector always did'
    # Torn: every sector of a write of more than one sector was missing from
    # a disk that held another sector of that same write.
    assert torn == {(number, sector) for number, sector in every
                    if len(_sectors(UNSYNCED_WRITES[number])) > 1}


@pytest.mark.parametrize('error', [errno.EIO, errno.ENOSPC], ids=['EIO', 'ENOSPC'])
def test_a_failing_directory_sync_while_the_store_creates_its_directory_is_refused(
        recording, error):
    recording.fail(faultfs.DIRECTORY_SYNC, error)
    answer = run_child(recording, """
        import sys
        from mira_memory.core.store import BackendError, MemoryStore
        try:
            MemoryStore.open(sys.argv[1] + '/robot/memory/memory.sqlite3', create_parent=True)
        except BackendError as error:
            print(error)
    """)
    assert answer == f'cannot create database directory: [Errno {error}] {os.strerror(error)}\n'
    assert recording.injected() == 1
    assert not (recording.root / 'robot' / 'memory' / 'memory.sqlite3').exists()


def _record(op, path, data=b'', pid=7):
    """Return one log record as faultfs.c's emit() writes it."""
    encoded = path.encode()
    header = faultfs._RECORD.pack(faultfs._RECORD.size + len(encoded) + len(data), op, 0, pid,
                                  0, 1, 2, 0, len(encoded), 0, len(data), faultfs.RECORD_MAGIC)
    return header + encoded + data


def test_a_record_torn_by_a_kill_is_dropped_and_the_records_after_it_are_read():
    # A SIGKILL can cut faultfs's append of a record short, and the restarted
    # process appends after it; the last record may still be on its way.
    whole = [_record(faultfs.OP_WRITE, f'/disk/{n}', bytes([n]) * 600) for n in range(6)]
    log = (whole[0] + whole[1][:30]            # torn inside its header
           + whole[2] + whole[3][:-100]        # torn inside its data
           + whole[4] + b'\0' * 64             # a hole of zeros
           + whole[5] + whole[0][:-1])         # the last one, still on its way
    parsed = faultfs.parse_log(log)
    assert [(operation.path, operation.data) for operation in parsed] == [
        (f'/disk/{n}', bytes([n]) * 600) for n in (0, 2, 4, 5)]
    assert [operation.index for operation in parsed] == [0, 1, 2, 3]
    # Complete, the record on its way is read too.
    assert len(faultfs.parse_log(log + whole[0][-1:])) == 5
