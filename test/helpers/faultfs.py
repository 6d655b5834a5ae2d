# SPDX-License-Identifier: Apache-2.0
"""
faultfs: record a process's file operations, fail them on command, rebuild what a power cut leaves.

The recorder is test/helpers/faultfs.c, an LD_PRELOAD library compiled here with
the system C compiler (tools/bootstrap requires one). A process started
with Recording.environment() runs unchanged, with the same libsqlite3 and
the same open code as in production; every open, write, truncate, fsync,
fdatasync, rename, link, unlink, mkdir and rmdir it makes under the
recording's root directory is appended to a log with the bytes written
and the CLOCK_MONOTONIC time the operation began (Python's
time.monotonic_ns() reads the same clock). Recording.fail() makes the
next matching write, sync, truncate or directory sync return an error
instead of running (the process sees EIO or ENOSPC from libc).

Disk replays such a log into the disk a power cut would leave, by the
rules a POSIX file system promises and no more:
- a write or truncate reaches the disk when its file is fsynced or
  fdatasynced; before that, any subset of them may have, in any order,
  and any of those writes may be torn: only some of its sectors (512-byte
  pieces, at file offsets a multiple of 512) reached the disk;
- a name (create, rename, link, unlink, mkdir) reaches the disk when its
  directory is fsynced; before that, any prefix of those operations may
  have (file systems journal them in order);
- a failed sync loses what was pending for good (the kernel marks the
  pages clean: the fsync lesson of 2018), whatever later syncs report;
- the -shm file is not durable state: SQLite rebuilds it from the WAL when
  the first connection opens the database after a crash, so it is left out.

This is the model of ALICE (Pillai et al., OSDI 2014) and of SQLite's own
crash-test VFS, applied to the system calls a real process made.
"""

import collections
import dataclasses
import hashlib
import os
import pathlib
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap

SOURCE = pathlib.Path(__file__).with_name('faultfs.c')

OP_OPEN, OP_WRITE, OP_TRUNCATE, OP_SYNC = 1, 2, 3, 4
OP_RENAME, OP_LINK, OP_UNLINK, OP_MKDIR, OP_RMDIR = 5, 6, 7, 8, 9
OP_NAMES = {OP_OPEN: 'open', OP_WRITE: 'write', OP_TRUNCATE: 'truncate', OP_SYNC: 'sync',
            OP_RENAME: 'rename', OP_LINK: 'link', OP_UNLINK: 'unlink', OP_MKDIR: 'mkdir',
            OP_RMDIR: 'rmdir'}
FLAG_CREATED, FLAG_TRUNCATED, FLAG_DIRECTORY, FLAG_DATA_ONLY, FLAG_INJECTED = 1, 2, 4, 8, 16

# The operations Recording.fail() can make fail (faultfs.c's enum kind).
WRITE, SYNC, TRUNCATE, DIRECTORY_SYNC = 1, 2, 4, 8
KIND_NAMES = {WRITE: 'write', SYNC: 'sync', TRUNCATE: 'truncate',
              DIRECTORY_SYNC: 'directory sync'}

_RECORD = struct.Struct('<IHHiiQQqIIII')
# The header's last field (faultfs.c's RECORD_MAGIC): where a whole record starts.
RECORD_MAGIC = 0x3153464D
_MAGIC_BYTES = struct.pack('<I', RECORD_MAGIC)
_CONTROL = struct.Struct('<IiiIi108s')  # kinds, error, remaining, injected, after, match
_CONTROL_SIZE = 128
SECTOR = 512
# SQLite's WAL format: a 32-byte file header, then frames of a 24-byte header and a page.
WAL_HEADER, WAL_FRAME_HEADER = 32, 24
# Under the 'random' policy, how often a write that reached the disk is torn.
TORN_CHANCE = 0.25
# SQLite's shared-memory WAL index: rebuilt after a crash, never read from disk as truth.
VOLATILE_SUFFIXES = ('-shm',)


def library():
    """Compile faultfs.c once per source text; return the shared library's path."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    cache = pathlib.Path(tempfile.gettempdir()) / f'mira_faultfs_{os.getuid()}'
    built = cache / f'faultfs-{digest}.so'
    if built.exists():
        return built
    cache.mkdir(mode=0o700, exist_ok=True)
    compiler = shutil.which('cc') or shutil.which('gcc')
    if compiler is None:
        raise RuntimeError('faultfs needs a C compiler (Debian: apt-get install gcc)')
    partial = cache / f'.faultfs-{digest}.{os.getpid()}.so'
    subprocess.run([compiler, '-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-o',
                    str(partial), str(SOURCE), '-ldl', '-pthread'], check=True,
                   capture_output=True, text=True)
    os.replace(partial, built)  # concurrent builders each put a complete file in place
    return built


@dataclasses.dataclass(frozen=True)
class Operation:
    """One recorded file operation (faultfs.c's struct record)."""

    index: int
    op: int
    flags: int
    pid: int
    error: int
    began_ns: int
    inode: int
    offset: int
    path: str
    path2: str
    data: bytes

    @property
    def name(self):
        """Return what the operation was: 'write', 'sync' and so on."""
        return OP_NAMES[self.op]

    @property
    def injected(self):
        """Return True when faultfs failed it on command (it did not run)."""
        return bool(self.flags & FLAG_INJECTED)

    @property
    def directory(self):
        """Return True for an open or sync of a directory."""
        return bool(self.flags & FLAG_DIRECTORY)

    def describe(self, root=''):
        """Return one line: the operation, its file (relative to root) and its outcome."""
        path = self.path[len(root):].lstrip('/') if root and self.path.startswith(root) \
            else self.path
        text = f'#{self.index} {self.name} {path or "."}'
        if self.path2:
            text += ' -> ' + self.path2[len(root):].lstrip('/')
        if self.op == OP_WRITE:
            text += f' @{self.offset}+{len(self.data)}'
        if self.op == OP_TRUNCATE:
            text += f' to {self.offset}'
        if self.error:
            text += f' failed ({os.strerror(self.error)}{", injected" if self.injected else ""})'
        return text


def parse_log(data):
    """
    Return the Operations of a faultfs log (bytes), in order.

    A process killed while it appended a record can leave that record torn
    (a SIGKILL cuts a write short), and the next process appends after it;
    the last record may still be on its way while the log is read. So a
    record counts only when it is whole: its header is one (RECORD_MAGIC,
    sizes that add up) and no other header starts inside it; past a torn
    one the parse resumes at the next header. A torn record is the killed
    process's last operation, cut while it was being logged; a record still
    on its way is left for the next read.
    """
    operations = []
    at = 0
    while at < len(data):
        fields = _header(data, at)
        following = at + fields[0] if fields else len(data) + 1
        if following > len(data) or _next_header(data, at + 1, following) < following:
            # No whole record here: not a header, or torn (the next process's
            # record starts inside it). Resume at the next header; none comes
            # after a record still on its way.
            at = _next_header(data, at + 1)
            continue
        (_, op, flags, pid, error, began, inode, offset, path_length, path2_length,
         data_length, _) = fields
        body = at + _RECORD.size
        path = data[body:body + path_length].decode('utf-8', 'surrogateescape')
        body += path_length
        path2 = data[body:body + path2_length].decode('utf-8', 'surrogateescape')
        body += path2_length
        written = bytes(data[body:body + data_length])
        operations.append(Operation(len(operations), op, flags, pid, error, began, inode,
                                    offset, path, path2, written))
        at = following
    return operations


def _header(data, at):
    """
    Return the fields of the record header at offset at.

    None when no record can start there; () when the log ends before a
    header would (a record on its way cannot be told from a torn one yet).
    """
    if at + _RECORD.size > len(data):
        return ()
    fields = _RECORD.unpack_from(data, at)
    size, op, path_length, path2_length, data_length, magic = (
        fields[0], fields[1], *fields[8:])
    if (magic != RECORD_MAGIC or op not in OP_NAMES
            or size != _RECORD.size + path_length + path2_length + data_length):
        return None
    return fields


def _next_header(data, start, end=None):
    """Return the offset of the first record header in [start, end), or end (default len)."""
    end = len(data) if end is None else end
    offset = _RECORD.size - len(_MAGIC_BYTES)  # of the magic in a header
    search = start + offset
    while True:
        found = data.find(_MAGIC_BYTES, search, end + offset + len(_MAGIC_BYTES))
        if found < 0:
            return end
        if _header(data, found - offset) is not None:
            return found - offset
        search = found + 1


def control_bytes(kinds, error, match='', times=-1, after=0, injected=0):
    """Return the control file's bytes for a fault (faultfs.c's struct control)."""
    encoded = match.encode()
    if len(encoded) >= 108:
        raise ValueError('match is too long')
    return _CONTROL.pack(kinds, error, times, injected, after, encoded)


class Recording:
    """A log and a fault switch for the processes started with environment()."""

    def __init__(self, root, directory):
        """
        Record operations under root (which must exist); keep the log in directory.

        directory must be outside root. What root holds now is the disk's
        starting state, taken as durable (snapshot()).
        """
        self.root = pathlib.Path(root).resolve()
        directory = pathlib.Path(directory)
        self.log_path = directory / 'faultfs.log'
        self.control_path = directory / 'faultfs.control'
        self.log_path.write_bytes(b'')
        self.control_path.write_bytes(bytes(_CONTROL_SIZE))
        self.initial = snapshot(self.root)

    def environment(self, base=None):
        """Return base (os.environ by default) with faultfs preloaded and pointed here."""
        env = dict(os.environ if base is None else base)
        preload = str(library())
        env['LD_PRELOAD'] = ' '.join(filter(None, (preload, env.get('LD_PRELOAD', ''))))
        env['MIRA_FAULTFS_ROOT'] = str(self.root)
        env['MIRA_FAULTFS_LOG'] = str(self.log_path)
        env['MIRA_FAULTFS_CONTROL'] = str(self.control_path)
        return env

    def fail(self, kinds, error, *, match='', times=-1, after=0):
        """
        Make the next matching operations fail with errno error, times of them (-1: all).

        kinds: WRITE, SYNC, TRUNCATE, DIRECTORY_SYNC or'ed; match: a text the
        file's path must contain ('' for any file under the root); after:
        how many matching operations run before the first failure.
        """
        data = control_bytes(kinds, error, match, times, after)
        with open(self.control_path, 'r+b') as control:
            # In place (the processes map the file), the count of injected
            # faults kept, and the kinds last: the switch is armed once the
            # rest is in place.
            control.seek(4)
            control.write(data[4:12])
            control.seek(16)
            control.write(data[16:])
            control.flush()
            control.seek(0)
            control.write(data[:4])

    def clear(self):
        """Let every operation run again."""
        with open(self.control_path, 'r+b') as control:
            control.write(struct.pack('<I', 0))

    def injected(self):
        """Return how many operations faultfs has failed on command so far."""
        return _CONTROL.unpack(self.control_path.read_bytes()[:_CONTROL.size])[3]

    def operations(self):
        """Return everything recorded so far."""
        return parse_log(self.log_path.read_bytes())

    def python(self, code, *args):
        """Run Python code (dedented) under faultfs, the root as argv[1]; return its stdout."""
        done = subprocess.run(
            [sys.executable, '-c', textwrap.dedent(code), str(self.root), *map(str, args)],
            env=self.environment(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def disk(self):
        """Return a Disk with everything recorded so far replayed."""
        disk = Disk(self.initial)
        for operation in self.operations():
            disk.apply(operation)
        return disk


@dataclasses.dataclass
class Snapshot:
    """The durable state a recording starts from: names and file contents."""

    directories: list
    files: dict  # path -> (inode, bytes)


def snapshot(root):
    """Return root's directories and files as they are now (all taken as durable)."""
    directories, files = [str(root)], {}
    for path in sorted(pathlib.Path(root).rglob('*')):
        if path.is_dir():
            directories.append(str(path))
        elif path.is_file():
            files[str(path)] = (path.stat().st_ino, path.read_bytes())
    return Snapshot(directories, files)


DIRECTORY = ('directory',)


class Disk:
    """
    A file system rebuilt from a recording, one operation at a time.

    It keeps, per file, what is on the disk for sure (durable) and the
    writes and truncates since its last sync (pending), and per directory
    the names made or removed since its last sync; state() then gives any
    disk a power cut at this point may leave.
    """

    def __init__(self, initial):
        self.root = initial.directories[0]
        self._next_file = 0
        self.names = {}          # path -> DIRECTORY or ('file', id): what the processes see
        self.durable_names = {}  # the same, as the disk has it for sure
        self.pending_names = collections.defaultdict(list)  # directory -> [[(path, entry)]]
        self.durable = {}        # file id -> bytearray
        self.volatile = {}       # file id -> bytearray: what the processes read
        self.pending = collections.defaultdict(list)  # file id -> [('write', at, data)...]
        self.inodes = {}         # inode -> file id of the file it is now
        self.lost_operations = 0  # discarded by failed syncs
        for directory in initial.directories:
            self.names[directory] = self.durable_names[directory] = DIRECTORY
        for path, (inode, data) in initial.files.items():
            file_id = self._new_file(inode)
            self.durable[file_id] = bytearray(data)
            self.volatile[file_id] = bytearray(data)
            self.names[path] = self.durable_names[path] = ('file', file_id)

    def _new_file(self, inode):
        file_id = self._next_file
        self._next_file += 1
        self.inodes[inode] = file_id
        self.durable[file_id] = bytearray()
        self.volatile[file_id] = bytearray()
        return file_id

    def _file(self, operation):
        try:
            return self.inodes[operation.inode]
        except KeyError:
            raise AssertionError(f'faultfs: {operation.describe()} on a file never opened'
                                 ' under the root') from None

    def _name_change(self, directory, changes):
        self.pending_names[directory].append(changes)
        for path, entry in changes:
            if entry is None:
                self.names.pop(path, None)
            else:
                self.names[path] = entry

    def apply(self, operation):
        """Replay one recorded operation."""
        if operation.error and not (operation.op == OP_SYNC):
            return  # a failed write, truncate or name operation changed nothing
        kind = operation.op
        if kind == OP_OPEN:
            if operation.flags & FLAG_CREATED:
                entry = DIRECTORY if operation.directory else (
                    'file', self._new_file(operation.inode))
                self._name_change(_parent(operation.path), [(operation.path, entry)])
            elif not operation.directory:
                entry = self.names.get(operation.path)
                if entry is None or entry == DIRECTORY:
                    raise AssertionError(f'faultfs: {operation.describe()}: no such file')
                self.inodes[operation.inode] = entry[1]
            if operation.flags & FLAG_TRUNCATED:
                self._content(self.inodes[operation.inode], ('truncate', 0))
        elif kind in (OP_WRITE, OP_TRUNCATE):
            change = (('write', operation.offset, operation.data) if kind == OP_WRITE
                      else ('truncate', operation.offset))
            self._content(self._file(operation), change)
        elif kind == OP_SYNC:
            self._sync(operation)
        elif kind == OP_RENAME:
            entry = self.names[operation.path]
            changes = [(operation.path2, entry), (operation.path, None)]
            if _parent(operation.path) == _parent(operation.path2):
                self._name_change(_parent(operation.path), changes)
            else:
                self._name_change(_parent(operation.path2), changes[:1])
                self._name_change(_parent(operation.path), changes[1:])
        elif kind == OP_LINK:
            self._name_change(_parent(operation.path2),
                              [(operation.path2, self.names[operation.path])])
        elif kind in (OP_UNLINK, OP_RMDIR):
            self._name_change(_parent(operation.path), [(operation.path, None)])
        elif kind == OP_MKDIR:
            self._name_change(_parent(operation.path), [(operation.path, DIRECTORY)])

    def _content(self, file_id, change):
        _change_bytes(self.volatile[file_id], change)
        self.pending[file_id].append(change)

    def _sync(self, operation):
        if operation.directory:
            changes = self.pending_names.pop(operation.path, [])
            if not operation.error:
                for group in changes:
                    for path, entry in group:
                        if entry is None:
                            self.durable_names.pop(path, None)
                        else:
                            self.durable_names[path] = entry
            else:
                self.lost_operations += len(changes)
            return
        file_id = self._file(operation)
        changes = self.pending.pop(file_id, [])
        if operation.error:
            # The kernel dropped them (pages marked clean): they never reach the disk.
            self.lost_operations += len(changes)
            return
        for change in changes:
            _change_bytes(self.durable[file_id], change)

    def state(self, policy='lose', rng=None):
        """
        Return a disk a power cut now may leave: {path: bytes, or DIRECTORY}.

        policy 'lose': nothing pending reached the disk; 'keep': all of it
        did (what the processes saw, unless a sync failed); 'random': each
        pending write and truncate did or did not (rng decides), any write
        that did may be torn (some of its sectors missing: _torn), and each
        directory kept a prefix of its pending name operations.
        """
        names = dict(self.durable_names)
        for directory, groups in self.pending_names.items():
            count = {'lose': 0, 'keep': len(groups)}.get(policy)
            if count is None:
                count = rng.randint(0, len(groups))
            for group in groups[:count]:
                for path, entry in group:
                    if entry is None:
                        names.pop(path, None)
                    else:
                        names[path] = entry
        contents = {}
        for path, entry in names.items():
            if not _reachable(path, names, self.root) or path.endswith(VOLATILE_SUFFIXES):
                continue
            if entry == DIRECTORY:
                contents[path] = DIRECTORY
            else:
                contents[path] = bytes(self._content_after_cut(entry[1], policy, rng))
        return contents

    def _content_after_cut(self, file_id, policy, rng):
        data = bytearray(self.durable[file_id])
        pending = self.pending.get(file_id, [])
        if policy == 'lose' or not pending:
            return data
        if policy == 'keep':
            kept = list(pending)
        else:
            kept = []
            for change in pending:
                if rng.random() < 0.5:
                    continue  # this one never reached the disk
                if change[0] == 'write' and rng.random() < TORN_CHANCE:
                    kept += _torn(change, rng)
                else:
                    kept.append(change)
        for change in kept:
            _change_bytes(data, change)
        return data


def _torn(change, rng):
    """
    Return the pieces of a torn write that reached the disk: a random subset of its sectors.

    A disk writes a sector whole or not at all, but the sectors of one write
    in any order: any of them may be missing after a cut, the first, a
    middle one or the last.
    """
    _, at, data = change
    end = at + len(data)
    pieces = []
    start = at
    while start < end:
        stop = min((start // SECTOR + 1) * SECTOR, end)
        if rng.random() < 0.5:
            pieces.append(('write', start, data[start - at:stop - at]))
        start = stop
    return pieces


def _change_bytes(data, change):
    if change[0] == 'truncate':
        length = change[1]
        if length < len(data):
            del data[length:]
        else:
            data.extend(bytes(length - len(data)))
        return
    _, at, written = change
    if at > len(data):
        data.extend(bytes(at - len(data)))
    data[at:at + len(written)] = written


def _parent(path):
    return os.path.dirname(path)


def _reachable(path, names, root):
    """Return True when every directory from root down to path's is in names."""
    if path == root:
        return True
    if not path.startswith(root + '/'):
        return False
    parent = _parent(path)
    while parent != root:
        if names.get(parent) != DIRECTORY:
            return False
        parent = _parent(parent)
    return True


def materialize(contents, source_root, target_root):
    """Write a state() under target_root, with source_root's paths moved there."""
    source_root, target_root = str(source_root), pathlib.Path(target_root)
    for path in sorted(contents):
        relative = os.path.relpath(path, source_root)
        if relative.startswith('..'):
            continue
        destination = target_root / relative if relative != '.' else target_root
        if contents[path] == DIRECTORY:
            destination.mkdir(parents=True, exist_ok=True)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(contents[path])


def state_digest(contents):
    """Return a digest naming a state() (equal states, equal digests)."""
    digest = hashlib.sha256()
    for path in sorted(contents):
        digest.update(path.encode() + b'\0')
        value = contents[path]
        digest.update(b'D' if value == DIRECTORY else hashlib.sha256(value).digest())
    return digest.hexdigest()


def is_commit_frame(operation, wal):
    """
    Return True for the write of a WAL commit frame's header (the page comes next).

    SQLite's WAL: a 32-byte file header, then frames of a 24-byte header and
    a page; a frame header's second field, the database size after the
    commit, is not 0 only in a transaction's last frame.
    """
    return (operation.op == OP_WRITE and operation.path == wal
            and len(operation.data) == WAL_FRAME_HEADER and operation.offset >= WAL_HEADER
            and int.from_bytes(operation.data[4:8], 'big') != 0)


def cut_points(operations, sample=None, seed=0):
    """
    Return the cut points of a recording: {index: kind}; a cut at i loses operations i onward.

    Every sync (cut just before it: the most is pending; just after it),
    every truncate and every name operation, right after every WAL commit
    frame (a commit written, its sync not yet begun, or none of its own),
    and the end of the recording.
    kind names the operation the cut comes before (or 'end'). sample: keep
    that many, spread over every kind, chosen with seed.
    """
    points = {}
    for operation in operations:
        if operation.path.endswith(VOLATILE_SUFFIXES):
            continue
        if operation.op == OP_SYNC or operation.op in (OP_TRUNCATE, OP_RENAME, OP_LINK,
                                                       OP_UNLINK, OP_MKDIR, OP_RMDIR):
            points.setdefault(operation.index, point_kind(operation))
        if operation.op == OP_SYNC:
            after = operation.index + 1
            points.setdefault(after, point_kind(operations[after])
                              if after < len(operations) else 'end')
        if operation.path.endswith('-wal') and is_commit_frame(operation, operation.path):
            points.setdefault(operation.index + 2, 'after a commit frame')
    points.setdefault(len(operations), 'end')
    if sample is None or sample >= len(points):
        return points
    rng = random.Random(seed)
    by_kind = collections.defaultdict(list)
    for index, kind in points.items():
        by_kind[kind].append(index)
    chosen = set()
    # Every kind first, then the rest at random.
    for indexes in by_kind.values():
        chosen.add(rng.choice(indexes))
    rest = sorted(set(points) - chosen)
    chosen.update(rng.sample(rest, max(0, min(len(rest), sample - len(chosen)))))
    return {index: points[index] for index in sorted(chosen)}


def point_kind(operation):
    """Return what a cut just before operation interrupts, as a short label."""
    name = os.path.basename(operation.path)
    if operation.op == OP_SYNC:
        if operation.directory:
            return 'directory sync'
        return f'sync {_file_role(name)}'
    if operation.op == OP_WRITE:
        return f'write {_file_role(name)}'
    if operation.op == OP_TRUNCATE:
        return f'truncate {_file_role(name)}'
    return operation.name


def _file_role(name):
    for suffix, role in (('-wal', 'WAL'), ('-journal', 'journal'), ('.partial', 'copy')):
        if name.endswith(suffix):
            return role
    return 'database' if name.endswith('.sqlite3') else 'file'
