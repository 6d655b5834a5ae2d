# SPDX-License-Identifier: Apache-2.0
"""
The store on a failing disk: it never acknowledges what may not be there.

Each test runs the store in a child process under faultfs (test/faultfs.py),
which makes the next writes, syncs, truncates or directory syncs fail with
EIO or ENOSPC, as a dying SD card or a full one does. The child prints what
each step answered; the test compares. The memory node's answers to the
same faults, end to end, are test/system/test_storage_faults.py.
"""

import errno
import pathlib
import sys
import textwrap

from helpers import faultfs
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'),
                                reason='faultfs preloads a library into Linux processes')

# A child's steps: each prints 'ok' or the error's class and first words.
STEPS = """
    import sys
    from mira_memory.core.store import MemoryStore, NewMemory, StoreError

    def step(name, call):
        try:
            call()
            print(name, 'ok')
        except StoreError as error:
            print(name, type(error).__name__, str(error)[:120])

    def remember(text):
        return lambda: store.add_memory(NewMemory(kind='fact', summary=text,
                                                  links=((1, 'subject'),)))

    def control(kinds, error, match='memory.sqlite3', after=0):
        # The parent's Recording.fail, from inside: the child arms its own faults.
        # (argv[3] is test/, the directory of the helpers package.)
        sys.path.insert(0, sys.argv[3])
        from helpers import faultfs
        data = faultfs.control_bytes(kinds, error, match, after=after)
        with open(sys.argv[2], 'r+b') as switch:
            switch.seek(4)
            switch.write(data[4:12])
            switch.seek(16)
            switch.write(data[16:])
            switch.seek(0)
            switch.write(data[:4])

    store = MemoryStore.open(sys.argv[1] + '/memory.sqlite3')
    store.add_entity('person', 'Ada Lovelace')
"""


def run_steps(recording, steps):
    """Run STEPS then steps in a child; return its lines."""
    out = recording.python(textwrap.dedent(STEPS) + textwrap.dedent(steps),
                           recording.control_path, pathlib.Path(faultfs.__file__).parents[1])
    return [line.split(' ', 2) for line in out.splitlines()]


@pytest.fixture
def recording(tmp_path):
    root = tmp_path / 'root'
    root.mkdir()
    return faultfs.Recording(root, tmp_path)


@pytest.mark.parametrize('kind, error', [
    (faultfs.WRITE, errno.EIO), (faultfs.SYNC, errno.EIO), (faultfs.SYNC, errno.ENOSPC),
], ids=['write_EIO', 'sync_EIO', 'sync_ENOSPC'])
def test_after_a_storage_failure_writes_stop_and_reads_go_on(recording, kind, error):
    lines = run_steps(recording, f"""
        step('before', remember('kept'))
        control({kind}, {error})
        step('failing', remember('failed'))
        control(0, 0)
        step('after', remember('after the disk came back'))
        step('read', lambda: store.get_memory(1))
        print('stopped', store.writes_stopped is not None)
    """)
    assert lines[0] == ['before', 'ok']
    assert lines[1][:2] == ['failing', 'BackendError']
    # The disk works again, but a sync that failed may have lost what it
    # held: nothing more is written, and so nothing more acknowledged.
    assert lines[2][:2] == ['after', 'BackendError'] and 'writes stopped' in lines[2][2]
    assert lines[3] == ['read', 'ok']
    assert lines[4] == ['stopped', 'True']


def test_a_full_disk_fails_the_write_and_the_next_goes_on(recording):
    lines = run_steps(recording, f"""
        control({faultfs.WRITE}, {errno.ENOSPC})
        step('full', remember('no room'))
        control(0, 0)
        step('again', remember('written'))
        print('stopped', store.writes_stopped is not None)
    """)
    assert lines[0][:2] == ['full', 'BackendError'] and 'database or disk is full' in lines[0][2]
    assert lines[1] == ['again', 'ok']
    assert lines[2] == ['stopped', 'False']


# The WAL's syncs in a forget: its commit, the checkpoint's, then the one
# after the truncation (the store's own fsync; SQLite's are fdatasyncs).
SYNCS_BEFORE_THE_TRUNCATION_SYNC = 2


@pytest.mark.parametrize('kind, after', [
    (faultfs.TRUNCATE, 0), (faultfs.SYNC, SYNCS_BEFORE_THE_TRUNCATION_SYNC),
], ids=['truncate', 'sync_after_truncate'])
def test_a_forget_whose_truncation_fails_says_so_and_writes_stop(recording, kind, after):
    lines = run_steps(recording, f"""
        step('remember', remember('to be forgotten'))
        control({kind}, {errno.EIO}, match='memory.sqlite3-wal', after={after})
        step('forget', lambda: store.forget_memory(1, apply=True))
        control(0, 0)
        step('after', remember('after the disk came back'))
    """)
    assert lines[0] == ['remember', 'ok']
    assert lines[1][:2] == ['forget', 'BackendError']
    assert lines[1][2].startswith('the rows are removed, but'), lines[1]
    assert lines[2][:2] == ['after', 'BackendError'] and 'writes stopped' in lines[2][2]
    failed = [operation for operation in recording.operations() if operation.injected]
    assert len(failed) == 1 and failed[0].path.endswith('-wal')
    if kind == faultfs.SYNC:
        assert not failed[0].flags & faultfs.FLAG_DATA_ONLY, "not the store's own fsync"


@pytest.mark.parametrize('error', [errno.EIO, errno.ENOSPC], ids=['EIO', 'ENOSPC'])
def test_a_store_whose_directory_cannot_be_synced_does_not_open(recording, error):
    # SQLite syncs the directory when it first syncs a new WAL and goes on when
    # that fails: the WAL's name, every acknowledged write in it, could vanish.
    recording.python("""
        import sys
        from mira_memory.core.store import MemoryStore
        MemoryStore.open(sys.argv[1] + '/memory.sqlite3').close()
    """)
    recording.fail(faultfs.DIRECTORY_SYNC, error)
    done = recording.python("""
        import sys
        from mira_memory.core.store import MemoryStore, StoreError
        try:
            MemoryStore.open(sys.argv[1] + '/memory.sqlite3')
            print('opened')
        except StoreError as failed:
            print(type(failed).__name__, failed)
    """)
    assert done.startswith('BackendError cannot sync the database directory'), done
    assert recording.injected() >= 1
