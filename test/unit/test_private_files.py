# SPDX-License-Identifier: Apache-2.0
"""core/store/private_files.py and the files the store and the copies create, in process."""

import os
import stat

from mira_memory.core.archive import copies
from mira_memory.core.store import MemoryStore
from mira_memory.core.store import ownership, private_files
import pytest


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(autouse=True)
def permissive_umask():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_make_directories_creates_each_missing_level_0700(tmp_path):
    (tmp_path / 'kept').mkdir(mode=0o755)
    target = tmp_path / 'kept' / 'a' / 'b'
    private_files.make_directories(target)
    assert [oct(mode(path)) for path in (tmp_path / 'kept', target.parent, target)] == [
        oct(0o755), oct(0o700), oct(0o700)]
    private_files.make_directories(target)  # again: nothing changes


def test_a_new_store_and_its_wal_and_shm_are_0600(tmp_path):
    database = tmp_path / 'dir' / 'memory.sqlite3'
    store = MemoryStore.open(database, create_parent=True)
    try:
        store.add_entity('person', 'Ada')
        names = ('memory.sqlite3', 'memory.sqlite3-wal', 'memory.sqlite3-shm')
        assert {name: oct(mode(database.parent / name)) for name in names} == dict.fromkeys(
            names, oct(0o600))
        assert oct(mode(database.parent)) == oct(0o700)
        for copy in (copies.backup, copies.export):
            target = tmp_path / copy.__name__
            copy(str(database), str(target))
            assert oct(mode(target)) == oct(0o600)
    finally:
        store.close()


def test_an_existing_file_keeps_its_mode(tmp_path):
    database = tmp_path / 'memory.sqlite3'
    MemoryStore.open(database).close()
    database.chmod(0o640)
    MemoryStore.open(database).close()
    with ownership.claim(str(database)):
        pass
    assert oct(mode(database)) == oct(0o640)


def test_claim_creates_the_file_0600(tmp_path):
    with ownership.claim(str(tmp_path / 'memory.sqlite3')):
        assert oct(mode(tmp_path / 'memory.sqlite3')) == oct(0o600)


@pytest.mark.parametrize('bits, exposed', [(0o600, False), (0o400, False), (0o640, True),
                                           (0o604, True), (0o660, True), (0o602, True)])
def test_exposure_names_any_access_for_others(tmp_path, bits, exposed):
    path = tmp_path / 'memory.sqlite3'
    path.write_bytes(b'')
    path.chmod(bits)
    warning = private_files.exposure(path)
    assert (warning is not None) == exposed
    if exposed:
        assert f'(mode {bits:04o})' in warning and f'chmod 600 {path}' in warning
    assert private_files.exposure(tmp_path / 'missing') is None
