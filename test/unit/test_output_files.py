# SPDX-License-Identifier: Apache-2.0
"""Where backup and export may write, and their temporary file (core/archive/output_files.py)."""

import os
import pathlib
import re
import stat

from mira_memory.core.archive import copies, output_files
from mira_memory.core.errors import BackendError, InvalidInputError, PathNotAllowedError
import pytest


@pytest.fixture
def database(store):
    store.add_entity('person', 'Ada')
    return store.path


@pytest.mark.parametrize('name', [
    '{db}', '{db}-journal', '{db}-wal', '{db}-shm', '{db}-mj01234567', '{db}-mjABCDEF01',
    '{dir}/sub/../{base}-journal', '{dir}/sub/../../{dirname}/{base}-wal',
    'link-to-journal', 'link-to-dir/{base}-shm', 'hardlink'])
def test_every_file_of_the_database_is_refused_by_any_path(database, tmp_path, name):
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'link-to-journal').symlink_to(f'{database}-journal')
    (tmp_path / 'link-to-dir').symlink_to(tmp_path)
    os.link(database, tmp_path / 'hardlink')
    path = str(tmp_path / name.format(db=database, dir=tmp_path, base=database.name,
                                      dirname=tmp_path.name))
    for force in (False, True):
        with pytest.raises(InvalidInputError, match='the database itself or one of its files'):
            output_files.check_target(str(database), path, force, [tmp_path])


@pytest.mark.parametrize('name', ['{base}-journal.bak', '{base}.journal', 'x{base}-wal',
                                  '{base}-mj0123', '{base}-copies'])
def test_names_that_only_look_alike_are_not_refused(database, tmp_path, name):
    path = tmp_path / name.format(base=database.name)
    assert output_files.check_target(str(database), str(path), False) == path


def test_a_target_outside_the_directories_is_refused_force_or_not(database, tmp_path):
    allowed = tmp_path / 'copies'
    allowed.mkdir()
    (allowed / 'out').symlink_to(tmp_path)
    (allowed / 'deeper').mkdir()
    assert output_files.check_target(str(database), str(allowed / 'deeper' / 'x'), False,
                                     [allowed]) == allowed / 'deeper' / 'x'
    (tmp_path / 'elsewhere').mkdir()
    # A directory or a missing one outside: the same answer, so it tells nothing of either.
    for path in (tmp_path / 'x', allowed / 'out' / 'x', allowed / '..' / 'x',
                 tmp_path / 'absent' / 'x', tmp_path / 'elsewhere'):
        for force in (False, True):
            with pytest.raises(PathNotAllowedError, match='admin_output_dirs'):
                output_files.check_target(str(database), str(path), force, [allowed])


def test_the_default_output_directory_is_beside_the_database(tmp_path):
    assert output_files.output_directories('', tmp_path / 'memory.sqlite3') == (
        tmp_path / 'memory-copies',)
    assert output_files.output_directories('/a: /b/c:', tmp_path / 'm.db') == (
        pathlib.Path('/a'), pathlib.Path('/b/c'))
    with pytest.raises(InvalidInputError, match='absolute'):
        output_files.output_directories('/a:relative', tmp_path / 'm.db')


def test_temporary_names_are_unpredictable_new_and_private(tmp_path):
    target = tmp_path / 'copy.sqlite3'
    names = []
    for _ in range(2):
        fd, temporary = output_files.create_temporary(target)
        os.close(fd)
        names.append(temporary.name)
        assert stat.S_IMODE(temporary.stat().st_mode) == 0o600
    assert names[0] != names[1]
    assert all(re.fullmatch(r'\.copy\.sqlite3\.[0-9a-f]{32}\.partial', n) for n in names)


@pytest.mark.parametrize('copy', [copies.backup, copies.export])
@pytest.mark.parametrize('plant', ['symlink', 'hardlink', 'fifo'])
def test_anything_at_the_temporary_name_fails_the_copy_untouched(
        database, tmp_path, monkeypatch, copy, plant):
    monkeypatch.setattr(output_files.secrets, 'token_hex', lambda nbytes=None: 'guessed')
    victim = tmp_path / 'victim'
    victim.write_text('keep me')
    target = tmp_path / 'copy'
    planted = tmp_path / '.copy.guessed.partial'
    if plant == 'symlink':
        planted.symlink_to(victim)
    elif plant == 'hardlink':
        os.link(victim, planted)
    else:
        os.mkfifo(planted)
    with pytest.raises(BackendError, match='is taken; nothing was written'):
        copy(str(database), str(target))
    assert victim.read_text() == 'keep me' and not target.exists()
    assert os.path.lexists(planted)


def test_a_temporary_file_swapped_while_the_copy_runs_is_not_published(database, tmp_path):
    target = tmp_path / 'copy'
    swapped = []

    def swap(progress):
        if not swapped:
            [temporary] = tmp_path.glob('.copy.*.partial')
            os.replace(temporary, tmp_path / 'moved')
            (tmp_path / 'other').write_text('not the copy')
            os.link(tmp_path / 'other', temporary)
            swapped.append(temporary)
    with pytest.raises(BackendError, match='was replaced while the copy ran'):
        copies.export(str(database), str(target), progress=swap)
    assert not target.exists()
