# SPDX-License-Identifier: Apache-2.0
"""
Replication health, read from Litestream's log: position, lag, last sync, last error.

Litestream (debug level, JSON lines) says at every sync "replica sync" with
the replica's and the database's transaction ids, "ltx file uploaded" when
a new position reached the replica, and logs an ERROR line when a sync
fails. From these:

- lag: how long the replica has been behind the database, 0 while it holds
  every transaction Litestream has seen (Litestream looks at the WAL once a
  second, so a commit can be up to 1 s older than the lag says); while
  Litestream is not running, the time since the last sync;
- last sync: when the replica last held everything Litestream had seen;
- error: the last ERROR line (or Litestream's exit), until the replica
  catches up again;
- restarts: how often Litestream exited by itself and was started again;
- state: "starting" from a start of Litestream until its first sync (after
  a forget's wipe the replica is empty until then), then "in sync" or
  "behind".

report(): ERROR while the replica cannot be reached (an error not yet
followed by a sync that caught up) or a forget's wipe is overdue, WARN
past the lag threshold, else OK.
"""

import collections
import datetime
import json
import threading
import time

DEFAULT_LAG_WARN_SEC = 10.0
LOG_LINES_KEPT = 20


def _txid(value):
    try:
        return int(value, 16)
    except (TypeError, ValueError):
        return None


def _log_entry(pairs):
    """
    Return one log line's fields; the first "level" (slog's) as "severity".

    Litestream's lines about LTX files carry a second "level" key, the
    compaction level (0 for what a sync uploads).
    """
    entry = {}
    for key, value in pairs:
        if key == 'level' and 'severity' not in entry and isinstance(value, str):
            key = 'severity'
        entry[key] = value
    return entry


def _iso(wall):
    if wall is None:
        return 'never'
    return datetime.datetime.fromtimestamp(wall, datetime.timezone.utc).isoformat(
        timespec='seconds').replace('+00:00', 'Z')


class ReplicationStatus:
    """Thread-safe replication health; fed by the supervisor and Litestream's log lines."""

    def __init__(self, display, clock=time.monotonic, wall=time.time):
        self.display = display
        self._clock, self._wall = clock, wall
        self._lock = threading.Lock()
        self.running = False
        self.pid = None
        self.restarts = 0
        self.replica_txid = 0
        self.db_txid = 0
        self._behind_since = None
        self._last_sync = None       # monotonic
        self._last_sync_wall = None
        self._error = ''
        self._error_at = None
        self._purge_requested_at = None
        self.purges = 0
        self._lines = collections.deque(maxlen=LOG_LINES_KEPT)
        self._starts = 0  # every start, also after a stop or a forget's wipe
        # No "in sync" before this run of Litestream has reported a sync: after
        # a forget's wipe the replica is empty until its new snapshot lands.
        self._synced_this_run = False

    # Events ------------------------------------------------------------------

    def started(self, pid):
        with self._lock:
            self.running, self.pid = True, pid
            self._starts += 1
            self._synced_this_run = False

    def stopped(self):
        with self._lock:
            self.running, self.pid = False, None

    def exited(self, code):
        with self._lock:
            self.running, self.pid = False, None
            self.restarts += 1
            self._set_error(f'litestream exited with status {code}')

    def error(self, message):
        with self._lock:
            self._set_error(message)

    def purge_requested(self):
        with self._lock:
            if self._purge_requested_at is None:
                self._purge_requested_at = self._clock()

    def purged(self):
        with self._lock:
            self._purge_requested_at = None
            self.purges += 1
            self.replica_txid = self.db_txid = 0
            self._behind_since = None
            self._error, self._error_at = '', None

    def _set_error(self, message):
        self._error, self._error_at = message, self._clock()

    def read_log_line(self, line):
        """Take one line of Litestream's output (JSON log lines; anything else is kept as text)."""
        line = line.strip()
        if not line:
            return
        try:
            entry = json.loads(line, object_pairs_hook=_log_entry)
        except ValueError:
            entry = None
        with self._lock:
            self._lines.append(line[-400:])
            if not isinstance(entry, dict):
                return
            message = entry.get('msg', '')
            if entry.get('severity') == 'ERROR':
                detail = entry.get('error') or entry.get('err') or ''
                self._set_error(f'{message}: {detail}' if detail else message)
            elif message == 'replica sync' and isinstance(entry.get('txid'), dict):
                replica = _txid(entry['txid'].get('replica'))
                database = _txid(entry['txid'].get('db'))
                if replica is not None and database is not None:
                    self.db_txid = max(self.db_txid, database)
                    self.replica_txid = max(self.replica_txid, replica)
                    self._judge_position()
            elif message == 'ltx file uploaded' and entry.get('level') == 0:
                uploaded = _txid(entry.get('maxTXID'))
                if uploaded is not None:
                    self.replica_txid = max(self.replica_txid, uploaded)
                    self._judge_position()

    def _judge_position(self):
        now = self._clock()
        if self.replica_txid >= self.db_txid:
            self._behind_since = None
            self._synced_this_run = True
            self._last_sync, self._last_sync_wall = now, self._wall()
            if self._error and (self._error_at is None or self._error_at < now):
                self._error, self._error_at = '', None
        elif self._behind_since is None:
            self._behind_since = now

    # Reading -----------------------------------------------------------------

    def last_error_line(self):
        """Return Litestream's last output line (why it exited), or ''."""
        with self._lock:
            return self._lines[-1] if self._lines else ''

    def lag_sec(self):
        """Return the replication lag in seconds (module docstring)."""
        with self._lock:
            return self._lag(self._clock())

    def _lag(self, now):
        if not self.running:
            return 0.0 if self._last_sync is None else now - self._last_sync
        if self._behind_since is None:
            return 0.0
        return now - self._behind_since

    def report(self, lag_warn_sec=DEFAULT_LAG_WARN_SEC):
        """Return (level, message or '', ((key, value), ...)) for /diagnostics."""
        with self._lock:
            now = self._clock()
            lag = self._lag(now)
            if self._purge_requested_at is not None and not self.running:
                state = 'wiping the replica after a forget'
            elif not self.running:
                state = 'litestream not running'
            elif self._error:
                state = 'replica unreachable'
            elif self._behind_since is not None:
                state = 'behind'
            elif not self._synced_this_run:
                state = 'starting'
            else:
                state = 'in sync'
            values = (
                ('replica', self.display),
                ('replication', state),
                ('replication lag sec', f'{lag:.1f}'),
                ('last replica sync', _iso(self._last_sync_wall)),
                ('replica txid', f'{self.replica_txid}'),
                ('replica error', self._error or 'none'),
                ('litestream restarts', f'{self.restarts}'),
            )
            purge_overdue = (self._purge_requested_at is not None
                             and now - self._purge_requested_at > 5.0)
            if self._error or purge_overdue:
                message = f'replication: {state}' + (f': {self._error}' if self._error else '')
                return 'ERROR', message, values
            if lag > lag_warn_sec:
                return 'WARN', f'replication lag {lag:.0f} s (over {lag_warn_sec:g} s)', values
            return 'OK', '', values
