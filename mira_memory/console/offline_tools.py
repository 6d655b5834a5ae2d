# SPDX-License-Identifier: Apache-2.0
"""
The offline database tools: `memory_migrate`, `memory_import` and `memory_verify`.

Migrate and import rewrite a database file, so they run only while no node
has it open: they take the file's ownership lock (core.ownership) first and
keep it until they are done, and a running memory node makes them stop with
one line. memory_verify writes nothing, and takes the same lock anyway (see
verify_file). None needs ROS.

Exit codes, as the console's: 0 success, 1 the operation failed or was
refused, 2 bad usage.
"""

import argparse
import datetime
import functools
import json
import os
import pathlib
import sqlite3
import sys

from mira_memory.console.progress import ProgressDisplay
from mira_memory.console.visible import visible
from mira_memory.core import store
from mira_memory.core.archive import copies, importing, verify
from mira_memory.core.errors import StoreError
from mira_memory.core.store import ownership, schema

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class _CommandLineEnded(Exception):
    """The command line ended the run (--help, or bad usage told on stderr) with this exit code."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


class ToolParser(argparse.ArgumentParser):
    """argparse with the console's usage exit code and a named stream (offline_entry_point)."""

    def __init__(self, prog, stderr, description, epilog):
        super().__init__(prog=prog, description=description, epilog=epilog)
        self._stderr = stderr

    def parse_args(self, args=None, namespace=None):
        # The entry point returns the code (--help's 0): a tool called in-process ends no process.
        try:
            return super().parse_args(args, namespace)
        except SystemExit as ended:
            raise _CommandLineEnded(ended.code) from None

    def error(self, message):
        self.print_usage(self._stderr)
        print(f'usage error: {message}', file=self._stderr)
        raise _CommandLineEnded(EXIT_USAGE)


def offline_entry_point(main):
    """
    Make main(argv, stdout, stderr) an entry point: main(argv=None, *, stdout=None, stderr=None).

    argv defaults to the process's arguments and the streams to sys's; a
    command line that ends the run in its ToolParser (--help, bad usage)
    returns that exit code.
    """
    @functools.wraps(main)
    def entry_point(argv=None, *, stdout=None, stderr=None):
        try:
            return main(sys.argv[1:] if argv is None else argv,
                        stdout or sys.stdout, stderr or sys.stderr)
        except _CommandLineEnded as ended:
            return ended.code
    return entry_point


def _counts_text(counts):
    names = (('entities', 'entities'), ('aliases', 'aliases'), ('memories', 'memories'),
             ('memory_links', 'links'), ('payloads', 'payloads'), ('receipts', 'receipts'))
    return ', '.join(f'{label} {counts[key]}' for key, label in names if key in counts)


def _claim(path, create):
    try:
        return ownership.claim(str(path), create=create)
    except ownership.DatabaseBusyError as error:
        raise _Refused(f'{error}; stop the memory node first') from None
    except FileNotFoundError:
        raise _Refused(f'no database at {path}') from None
    except OSError as error:
        raise _Refused(f'cannot open {path}: {error.strerror}') from None


class _Refused(Exception):
    """One line for stderr; exit code 1."""


def _backup_name(path, version):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime('%Y%m%dT%H%M%SZ')
    return path.with_name(f'{path.name}.v{version}-backup-{stamp}')


def migrate(path, out):
    """Migrate the version 1, 2 or 3 database at path to the current version; print each step."""
    if not path.is_file() or path.stat().st_size == 0:
        raise _Refused(f'no database at {path}')
    with _claim(path, create=False):
        version, _ = schema.read_version(path)
        if version == schema.SCHEMA_VERSION:
            print(f'{path} already has schema version {version}; nothing to do', file=out)
            return
        if version not in schema.MIGRATES_FROM:
            raise _Refused(f'{path} has schema version {version}; memory_migrate upgrades '
                           f'versions 1, 2 and 3 to {schema.SCHEMA_VERSION} only')
        print(f'migrating {path} from schema version {version} to {schema.SCHEMA_VERSION}',
              file=out)
        copy = copies.backup(str(path), str(_backup_name(path, version)), check_schema=False)
        print(f'backup: {copy["path"]} ({copy["bytes"]} bytes; integrity_check ok; '
              f'{_counts_text(copy["counts"])})', file=out)
        conn = sqlite3.connect(str(path), isolation_level=None)
        try:
            conn.execute('PRAGMA synchronous = FULL')
            _, counts = schema.migrate(conn)
            # Leave one self-contained file behind, like a node that stopped.
            conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall()
        except sqlite3.Error as error:
            raise _Refused(f'migration failed and was rolled back: {error}') from None
        finally:
            conn.close()
        print(f'migrated in one transaction: {_counts_text(counts)} '
              '(row counts unchanged; integrity_check and foreign_key_check ok)', file=out)
        if version < 3:
            print('receipts: none for the memories that existed before (memory verify '
                  'reports each active remembered one as NO RECEIPT)', file=out)
        print('review: no refused proposal is pending yet (memory pending; docs/review.md)',
              file=out)
        print(f'schema version: {schema.SCHEMA_VERSION}', file=out)


def _remove_database(path, existed):
    for suffix in ('-wal', '-shm', '-journal'):
        pathlib.Path(str(path) + suffix).unlink(missing_ok=True)
    if existed:
        os.truncate(path, 0)
    else:
        path.unlink(missing_ok=True)


def import_file(database, source, out, err):
    """Build the new database from the export at source; progress on err, the counts on out."""
    existed = database.exists()
    if existed and (not database.is_file() or database.stat().st_size > 0):
        raise _Refused(f'{database} exists and is not empty; import only builds a new database')
    if not database.parent.is_dir():
        raise _Refused(f'the directory of {database} does not exist')
    try:
        lines = open(source, encoding='utf-8', newline='')
    except OSError as error:
        raise _Refused(f'cannot read {source}: {error.strerror}') from None
    display = ProgressDisplay(err, 'import')
    with lines, _claim(database, create=True):
        try:
            counts = importing.import_export(database, lines, progress=display.reporter())
        except UnicodeDecodeError:
            _remove_database(database, existed)
            raise _Refused(f'{source}: not UTF-8 text; nothing was written') from None
        except BaseException as error:
            _remove_database(database, existed)
            if isinstance(error, StoreError):
                raise _Refused(f'{source}: {error}; nothing was written') from None
            raise
        finally:
            display.close()
    print(f'imported {source} into {database}: '
          + ', '.join(f'{name} {count}' for name, count in counts.items()), file=out)
    print(f'schema version: {schema.SCHEMA_VERSION}', file=out)


def verify_file(path, memory_ids, as_json, out):
    """
    Judge the memories of the database at path again (core.verify); return the exit code.

    It takes the file's ownership lock, like migrate and import, although
    it writes nothing: a running node (whose file may change under the
    verify) is told to use the console's `memory verify` instead, no node
    can start on the file while it is judged, and with no node there is no
    -wal file, so SQLite opens the file immutable and creates nothing beside
    it (the bytes are provably unchanged). The read itself is one snapshot.
    """
    if not path.is_file() or path.stat().st_size == 0:
        raise _Refused(f'no database at {path}')
    try:
        claim = ownership.claim(str(path), create=False)
    except ownership.DatabaseBusyError as error:
        raise _Refused(f'{error}; while the node runs use the console: memory verify') from None
    except OSError as error:
        raise _Refused(f'cannot open {path}: {error.strerror}') from None
    with claim:
        schema.inspect_existing(path)
        # --json is streamed like the text (one finding per line, however
        # many); its opening is written with the first finding or the
        # summary, so a refusal before any judgment prints no half document.
        state = {'findings': 0}

        def found(finding):
            if not as_json:
                print(visible(finding.line()), file=out)
                return
            if not state['findings']:
                print('{\n "database": %s,\n "findings": [' % json.dumps(str(path)), file=out)
            # ASCII JSON: stored text shows as escapes (console/visible.py's promise).
            line = json.dumps(finding.as_json(), sort_keys=True)
            print((' ,' if state['findings'] else '  ') + line, file=out)
            state['findings'] += 1
        pending = []  # bounded by the queue's size (core/review)
        summary = verify.verify(str(path), memory_ids, on_finding=found,
                                on_pending=pending.append)
    if as_json:
        if not state['findings']:
            print('{\n "database": %s,\n "findings": [' % json.dumps(str(path)), file=out)
        if pending:
            print(' ],\n "pending": %s,' % json.dumps(
                [found.as_json() for found in pending], sort_keys=True),
                file=out)
            print(' "summary": %s\n}' % json.dumps(summary.as_json(), sort_keys=True),
                  file=out)
        else:
            print(' ],\n "summary": %s\n}' % json.dumps(summary.as_json(), sort_keys=True),
                  file=out)
    else:
        print(summary.line(), file=out)
        for found in pending:
            print(visible(found.line()), file=out)
        if summary.pending_line():
            print(summary.pending_line(), file=out)
    return EXIT_OK if summary.all_ok else EXIT_FAILED


def _run(action, stderr):
    try:
        code = action()
    except _Refused as error:
        print(visible(f'error: {error}'), file=stderr)
        return EXIT_FAILED
    except StoreError as error:
        print(visible(f'error: {error}'), file=stderr)
        return EXIT_FAILED
    return EXIT_OK if code is None else code


@offline_entry_point
def migrate_main(argv, stdout, stderr):
    """Entry point of `ros2 run mira_memory memory_migrate`."""
    parser = ToolParser(
        prog='memory_migrate', stderr=stderr,
        description='Upgrade a schema version 1, 2 or 3 memory database to version '
                    f'{schema.SCHEMA_VERSION}, in place, with the memory node stopped. '
                    'A verified backup copy is written beside the file first.',
        epilog='exit codes: 0 migrated (or already current), 1 refused or failed '
               '(the database is unchanged), 2 bad usage')
    parser.add_argument('--database', required=True, metavar='PATH',
                        help='the database file (relative to the working directory)')
    args = parser.parse_args(argv)
    path = pathlib.Path(args.database).absolute()
    return _run(lambda: migrate(path, stdout), stderr)


@offline_entry_point
def import_main(argv, stdout, stderr):
    """Entry point of `ros2 run mira_memory memory_import`."""
    parser = ToolParser(
        prog='memory_import', stderr=stderr,
        description='Build a new memory database from a `memory export` file, offline. '
                    'Every store rule is checked; a refused export leaves no file behind.',
        epilog='exit codes: 0 imported, 1 refused or failed (nothing written), 2 bad usage')
    parser.add_argument('--database', required=True, metavar='NEW',
                        help='the database to create: absent or an empty file')
    parser.add_argument('--from', required=True, metavar='FILE', dest='source',
                        help='the JSON Lines export to read')
    args = parser.parse_args(argv)
    database = pathlib.Path(args.database).absolute()
    source = pathlib.Path(args.source).absolute()
    return _run(lambda: import_file(database, source, stdout, stderr), stderr)


@offline_entry_point
def verify_main(argv, stdout, stderr):
    """Entry point of `ros2 run mira_memory memory_verify`."""
    parser = ToolParser(
        prog='memory_verify', stderr=stderr,
        description='Judge every active remembered memory of a database again against its '
                    'receipt, with the rules of this installation, offline (the memory node '
                    'stopped; while it runs, use the console: memory verify). Writes nothing.',
        epilog='exit codes: 0 every memory judged is OK, 1 some would be rejected, have no '
               'receipt or do not match it (or the database was refused), 2 bad usage')
    parser.add_argument('--database', required=True, metavar='PATH',
                        help='the database file (relative to the working directory)')
    parser.add_argument('--json', action='store_true', help='print one JSON document')
    parser.add_argument('memory_ids', nargs='*', metavar='MEM<n>',
                        help='judge only these memories (default: every active remembered one)')
    args = parser.parse_args(argv)
    memory_ids = []
    for text in args.memory_ids:
        try:
            memory_ids.append(store.parse_memory_id(text))
        except StoreError:
            parser.error(f'{text!r} is not a memory id (expected MEM<n>, e.g. MEM1)')
    path = pathlib.Path(args.database).absolute()
    return _run(lambda: verify_file(path, memory_ids, args.json, stdout), stderr)
