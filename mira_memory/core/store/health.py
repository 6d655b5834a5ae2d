# SPDX-License-Identifier: Apache-2.0
"""
The memory node's health, ROS-free: what its 1 Hz diagnostics report.

The node records every recall and remember (handling time, failure or
not), keeps row counts up to date and says when the database file left
its path or the store stopped writing after a storage failure; report()
turns that into one level (OK / WARN / ERROR), a message and ordered
key/value pairs, which mira_memory/ros/diagnostics.py publishes as a
diagnostic_msgs/DiagnosticStatus.

Counts are cheap by construction: one full count at startup (0.2-0.6 s at
1,000,000 memories, so the node makes it in a background thread, see
MemoryNode._count_rows; too slow to repeat every second on the node's only
thread), then the node adds what it wrote itself - it is the database's
only owner (core/store/ownership.py), so nobody else changes the rows. Every full
count the node makes anyway (admin status) resets them.
"""

import collections
from dataclasses import dataclass
import math
import time

LEVEL_OK = 'OK'
LEVEL_WARN = 'WARN'
LEVEL_ERROR = 'ERROR'

WINDOW_SEC = 60.0
# Bounds memory and the per-second sort; under a heavier load the window is
# the last WINDOW_SAMPLES calls of the last minute.
WINDOW_SAMPLES = 20000

COUNT_NAMES = ('entities', 'aliases', 'memories', 'active_memories')


def percentile(sorted_values, fraction):
    """Return the nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


class LatencyWindow:
    """Handling times of one operation over the last WINDOW_SEC seconds."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        # Two parallel deques, not one of (when, seconds) pairs: summary()
        # sorts the durations straight from their deque in C. Unpacking
        # 20,000 pairs in a generator every second cost the idle node about
        # 0.27% of a core for the minute after a busy one (bench/README.md,
        # "Targets").
        self._times = collections.deque(maxlen=WINDOW_SAMPLES)
        self._seconds = collections.deque(maxlen=WINDOW_SAMPLES)

    def add(self, seconds):
        """Record one call that took seconds."""
        self._times.append(self._clock())
        self._seconds.append(seconds)

    def summary(self):
        """Return (calls, p50 seconds, p99 seconds) of the window; p50/p99 None if no call."""
        horizon = self._clock() - WINDOW_SEC
        while self._times and self._times[0] < horizon:
            self._times.popleft()
            self._seconds.popleft()
        values = sorted(self._seconds)
        return len(values), percentile(values, 0.50), percentile(values, 0.99)


class FailureLog:
    """How many failures since start, and how many in the last WINDOW_SEC seconds."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self.total = 0
        self._recent = collections.deque(maxlen=WINDOW_SAMPLES)

    def add(self):
        """Record one failure now."""
        self.total += 1
        self._recent.append(self._clock())

    def recent(self):
        """Return the failures of the last WINDOW_SEC seconds."""
        horizon = self._clock() - WINDOW_SEC
        while self._recent and self._recent[0] < horizon:
            self._recent.popleft()
        return len(self._recent)


@dataclass(frozen=True)
class Report:
    """One diagnostics report: level, one-line message, ordered (key, value) strings."""

    level: str
    message: str
    values: tuple


class Health:
    """Everything the memory node's diagnostics report, kept as it serves."""

    def __init__(self, clock=time.monotonic):
        self.recall = LatencyWindow(clock)
        self.remember = LatencyWindow(clock)
        self.recall_failures = FailureLog(clock)
        self.remember_failures = FailureLog(clock)
        self.counts = None
        self.database_lost = None
        # Why the store stopped writing (transaction.py: a storage failure), or None.
        self.writes_stopped = None
        # (active remembered memories admitted under other rules than the
        # running ones, those without a receipt), or None until counted.
        self.receipt_counts = None

    def set_counts(self, counts):
        """Replace the counts with a full count (a mapping with COUNT_NAMES)."""
        self.counts = {name: int(counts[name]) for name in COUNT_NAMES}

    def set_receipt_counts(self, other_rules, no_receipt):
        """Record what memory verify would find to judge again (None, None: recounting)."""
        if other_rules is None:
            self.receipt_counts = None
        else:
            self.receipt_counts = (int(other_rules), int(no_receipt))

    def wrote(self, *, entities=0, aliases=0, memories=0, active_memories=0):
        """Add rows this node just committed (negative for rows it removed)."""
        if self.counts is None:
            return
        for name, delta in (('entities', entities), ('aliases', aliases),
                            ('memories', memories), ('active_memories', active_memories)):
            self.counts[name] += delta

    def lose_database(self, reason):
        """Record that the database file left its path; return True the first time."""
        if self.database_lost is not None:
            return False
        self.database_lost = reason
        return True

    def stop_writes(self, reason):
        """Record that the store stopped writing after a storage failure; True the first time."""
        if self.writes_stopped is not None:
            return False
        self.writes_stopped = reason
        return True

    def report(self, *, enabled, database_path=None, schema_version=None,
               file_sizes=None, file_mode=None, exposure=None, extra_values=()):
        """
        Return the Report for this moment.

        file_sizes: (database bytes or None when missing, WAL bytes or None).
        file_mode: the database file's permission bits ('0600'), None when missing.
        exposure: a warning when other users may read the file (core/store/private_files.py).
        extra_values: further (key, value) pairs another part of the node
        reports (the observed-turn window, for one).
        """
        if not enabled:
            return Report(LEVEL_OK, 'persistent memory is disabled',
                          (('enabled', 'false'),) + tuple(extra_values))
        values = [('enabled', 'true'), ('database path', str(database_path)),
                  ('schema version', str(schema_version))]
        database_bytes, wal_bytes = file_sizes or (None, None)
        values.append(('file size bytes', _text(database_bytes, 'missing')))
        values.append(('wal size bytes', _text(wal_bytes, 'none')))
        values.append(('file mode', _text(file_mode, 'missing')))
        for name in COUNT_NAMES:
            values.append((name.replace('_', ' '), _text((self.counts or {}).get(name))))
        other_rules, no_receipt = self.receipt_counts or (None, None)
        values.append(('memories admitted under other rules', _text(other_rules)))
        values.append(('remembered memories without receipt', _text(no_receipt)))
        for label, window in (('recall', self.recall), ('remember', self.remember)):
            calls, p50, p99 = window.summary()
            values.append((f'{label} calls last minute', str(calls)))
            values.append((f'{label} p50 ms last minute', _milliseconds(p50)))
            values.append((f'{label} p99 ms last minute', _milliseconds(p99)))
        recall_recent = self.recall_failures.recent()
        remember_recent = self.remember_failures.recent()
        values += [
            ('recall unavailable last minute', str(recall_recent)),
            ('recall unavailable total', str(self.recall_failures.total)),
            ('remember backend_failure last minute', str(remember_recent)),
            ('remember backend_failure total', str(self.remember_failures.total)),
        ]
        values += list(extra_values)
        if self.database_lost is not None:
            level = LEVEL_ERROR
            message = (f'database file {self.database_lost}; nothing is acknowledged '
                       'until the node is restarted')
        elif self.writes_stopped is not None:
            level = LEVEL_ERROR
            message = (f'storage failure: {self.writes_stopped}; no write is acknowledged '
                       'until the node is restarted, reads go on')
        elif recall_recent or remember_recent:
            level = LEVEL_WARN
            message = (f'store failures in the last minute: {recall_recent} recall, '
                       f'{remember_recent} remember')
        elif exposure:
            level = LEVEL_WARN
            message = exposure
        else:
            level = LEVEL_OK
            message = 'persistent memory is serving'
        values.append(('database lost', self.database_lost or 'no'))
        values.append(('writes stopped', self.writes_stopped or 'no'))
        return Report(level, message, tuple(values))


def _text(value, absent='unknown'):
    return absent if value is None else str(value)


def _milliseconds(seconds):
    return '-' if seconds is None else f'{seconds * 1000:.3f}'
