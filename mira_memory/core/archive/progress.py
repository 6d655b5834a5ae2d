# SPDX-License-Identifier: Apache-2.0
"""
How far a long job (backup, export, verify, import) has come, and how long it may take.

A job reports Progress(phase, done, total, bytes_written) through a callable
whenever it passes a natural point (a backup step, a thousand export rows,
a verified memory): often, so reporting must cost nothing but a tuple. A
Meter keeps the latest report (one attribute set, safe to read from
another thread) and answers the elapsed time and an estimate of the time
left, which the memory node publishes as action feedback and the console
and memory_import draw.

The estimate: a job's phases run one after another, each with its share of
the whole job's expected time (PHASE_SHARES, measured on the bench's
stores); inside a phase the time left is its elapsed time scaled by what is
left of its items. Before the first item is done there is no estimate (None).
"""

from dataclasses import dataclass
import threading
import time

# The phases of each job, in order.
BACKUP_COPYING, BACKUP_CHECKING = 'copying', 'checking'
EXPORT_WRITING = 'writing'
VERIFY_JUDGING = 'judging'
IMPORT_READING = 'importing'
# Each phase's expected share of its job's time. backup: copying the pages is
# about 5% of a 1,000,000-memory backup, integrity_check on the copy the rest
# (docs/dev/bench-analysis.md); the other jobs have one phase.
PHASE_SHARES = {
    BACKUP_COPYING: (0.0, 0.05), BACKUP_CHECKING: (0.05, 1.0),
    EXPORT_WRITING: (0.0, 1.0), VERIFY_JUDGING: (0.0, 1.0), IMPORT_READING: (0.0, 1.0),
}


@dataclass(frozen=True)
class Progress:
    """One report of a job: its phase, items done of the phase's total, bytes written."""

    phase: str
    done: int
    total: int
    bytes_written: int = 0

    @property
    def fraction(self):
        """Return how much of the whole job is done, 0.0 to 1.0 (phases weighted)."""
        start, end = PHASE_SHARES.get(self.phase, (0.0, 1.0))
        inside = min(self.done / self.total, 1.0) if self.total > 0 else 0.0
        return start + (end - start) * inside


@dataclass(frozen=True)
class Snapshot:
    """What a Meter says at one moment: the latest Progress, elapsed and estimated seconds."""

    progress: Progress
    elapsed: float
    # Estimated seconds left in the whole job; None while there is no estimate.
    remaining: float


class Meter:
    """Keeps a job's latest Progress and its timing; report() is the job's callback."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self.started = clock()
        self._latest = None
        # (phase, time the phase's first report came, fraction of the job done then)
        self._phase_start = None
        self._lock = threading.Lock()

    def report(self, progress):
        """Keep the latest Progress of the job; the job calls this, on any thread."""
        if self._phase_start is None or self._phase_start[0] != progress.phase:
            with self._lock:
                self._phase_start = (progress.phase, self._clock(), progress.fraction)
        self._latest = progress

    def snapshot(self):
        """Return the latest Snapshot, or None before the first report."""
        latest = self._latest
        if latest is None:
            return None
        now = self._clock()
        with self._lock:
            phase_start = self._phase_start
        return Snapshot(latest, now - self.started, _remaining(latest, now, phase_start))


def _remaining(progress, now, phase_start):
    """Estimate the seconds left from the rate of the current phase; None when unknown."""
    fraction = progress.fraction
    if fraction >= 1.0:
        return 0.0
    _, since, fraction_then = phase_start
    done_in_phase = fraction - fraction_then
    if done_in_phase <= 0 or now <= since:
        return None
    return (1.0 - fraction) * (now - since) / done_in_phase
