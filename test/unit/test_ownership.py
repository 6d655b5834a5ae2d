# SPDX-License-Identifier: Apache-2.0
"""Tests of the one-owner-per-database lock (ROS-free)."""

import hashlib
import os
import subprocess
import sys

from mira_memory.core.store.ownership import claim, DatabaseBusyError
import pytest


def test_second_claim_is_refused_and_names_the_owner(tmp_path):
    path = str(tmp_path / 'memory.sqlite3')
    with claim(path):
        with pytest.raises(DatabaseBusyError) as refused:
            claim(path)
    assert refused.value.owner_pid == os.getpid()
    assert path in str(refused.value) and str(os.getpid()) in str(refused.value)


def test_claim_from_another_process_is_refused(tmp_path):
    path = str(tmp_path / 'memory.sqlite3')
    script = ('import sys\n'
              'from mira_memory.core.store.ownership import claim, DatabaseBusyError\n'
              'try:\n'
              '    claim(sys.argv[1])\n'
              'except DatabaseBusyError as error:\n'
              '    print(error.owner_pid)\n'
              '    sys.exit(3)\n')
    with claim(path):
        held = subprocess.run([sys.executable, '-c', script, path],
                              capture_output=True, text=True, timeout=30)
    assert held.returncode == 3, held.stderr
    assert held.stdout.strip() == str(os.getpid())
    free = subprocess.run([sys.executable, '-c', script, path],
                          capture_output=True, text=True, timeout=30)
    assert free.returncode == 0, free.stderr


def test_release_lets_the_next_owner_in(tmp_path):
    path = str(tmp_path / 'memory.sqlite3')
    first = claim(path)
    first.release()
    first.release()
    with claim(path) as second:
        assert second.still_at_path()
    assert not first.still_at_path()


def test_claim_leaves_an_existing_file_byte_identical(tmp_path):
    path = tmp_path / 'memory.sqlite3'
    path.write_bytes(b'not a database, but not ours to change')
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with claim(str(path)):
        pass
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_without_create_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        claim(str(tmp_path / 'absent.sqlite3'), create=False)
    assert not (tmp_path / 'absent.sqlite3').exists()


@pytest.mark.parametrize('change', ['unlink', 'rename', 'replace'])
def test_still_at_path_notices_a_vanished_or_replaced_file(tmp_path, change):
    path = tmp_path / 'memory.sqlite3'
    with claim(str(path)) as owned:
        assert owned.still_at_path()
        if change == 'unlink':
            path.unlink()
        elif change == 'rename':
            path.rename(tmp_path / 'moved.sqlite3')
        else:
            other = tmp_path / 'other.sqlite3'
            other.write_bytes(b'')
            os.replace(other, path)
        assert not owned.still_at_path()
