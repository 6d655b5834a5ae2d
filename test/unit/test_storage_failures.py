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
import sys

import faultfs
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith('linux'),
                                reason='faultfs preloads a library into Linux processes')


@pytest.fixture
def recording(tmp_path):
    root = tmp_path / 'root'
    root.mkdir()
    return faultfs.Recording(root, tmp_path)


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
