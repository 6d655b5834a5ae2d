# SPDX-License-Identifier: Apache-2.0
"""
A long job's progress as the console and memory_import show it.

On a terminal a tqdm bar per phase: count of total, rate and time left
(tqdm keeps the bar on one line and redraws it at most a few times a
second). tqdm rather than rich: it does exactly this, is small (no
dependencies), and has the rosdep key python3-tqdm on every Ubuntu a ROS 2
distro supports. When the output is not a terminal (a log, a pipe, cron), or
a terminal of unknown size, one line per 10% of the whole job, so a log keeps a readable record:

    backup: 30% (checking 2567 of 14261 pages, 58.4 MB written, 1.2 s, about 2.9 s left)

ROS-free: memory_import uses it offline (reporter()); console/jobs.py feeds
it the node's feedback.
"""

import os
import time

from mira_memory.core.archive.progress import Meter

# What a phase counts, for the bar and the lines.
UNITS = {'copying': 'pages', 'checking': 'pages', 'writing': 'records', 'judging': 'memories',
         'importing': 'records'}
# Lines per job when the output is not a terminal: one per this many tenths of it.
LINE_TENTHS = 1
# reporter(): how often a job in this process is shown, as the node sends
# feedback; a job done before the first time shows nothing.
REPORT_PERIOD_SEC = 0.5


class ProgressDisplay:
    """Shows one job's progress on stream; update() per report, close() at the end."""

    def __init__(self, stream, what, *, terminal=None):
        self._stream = stream
        self._what = what
        self._terminal = _is_terminal(stream) if terminal is None else terminal
        self._bar = None
        self._phase = None
        # Not a terminal: the tenth of the job at which the next line is due;
        # None once nothing more is to be shown.
        self._next_line = LINE_TENTHS
        self._reports = 0
        # The last update: (Progress, seconds elapsed, time.monotonic() then).
        self._last = None

    def update(self, progress, elapsed, remaining):
        """Show a Progress, seconds elapsed and estimated seconds left (None: unknown)."""
        self._reports += 1
        self._last = (progress, elapsed, time.monotonic())
        if self._reports == 1 and progress.fraction >= 1.0:
            # Done before its first report (a small store): nothing to watch.
            self._next_line = None
        if self._next_line is None:
            return
        if self._terminal:
            self._draw(progress)
        else:
            self._line(progress, elapsed, remaining)

    def reporter(self, clock=time.monotonic):
        """Return a progress callback for a job run in this process (memory_import)."""
        meter = Meter(clock)
        shown = [meter.started]

        def report(progress):
            meter.report(progress)
            now = clock()
            if now - shown[0] >= REPORT_PERIOD_SEC or (
                    progress.fraction >= 1.0 and self._reports):
                shown[0] = now
                snapshot = meter.snapshot()
                self.update(progress, snapshot.elapsed, snapshot.remaining)
        return report

    def finish(self):
        """
        Show the job complete, after its success, when the last report was not.

        The node's last feedback (complete) is a topic message and its result
        a service reply: the result can come first, and rclpy's action client
        drops a goal's feedback once its result is in. Nothing is shown for a
        job that showed nothing.
        """
        if self._last is None:
            return
        progress, elapsed, at = self._last
        if progress.done < progress.total:
            self.update(type(progress)(progress.phase, progress.total, progress.total,
                                       progress.bytes_written),
                        elapsed + time.monotonic() - at, 0.0)

    def close(self):
        """End the bar (the terminal keeps its last state); print nothing more."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _draw(self, progress):
        from tqdm import tqdm  # only on a terminal: a log never loads it
        if progress.phase != self._phase:
            self.close()
            self._phase = progress.phase
            self._bar = tqdm(total=progress.total, desc=f'{self._what} {progress.phase}',
                             unit=' ' + UNITS.get(progress.phase, 'items'), file=self._stream,
                             dynamic_ncols=True, leave=True, mininterval=0.25)
        self._bar.total = progress.total
        self._bar.update(max(progress.done - self._bar.n, 0))

    def _line(self, progress, elapsed, remaining):
        fraction = progress.fraction
        # In whole tenths, so that 0.1 + 0.1 + 0.1 is 3 (not 0.30000000000000004).
        tenths = int(fraction * 10 + 1e-9)
        if tenths < self._next_line and fraction < 1.0:
            return
        self._next_line = tenths + LINE_TENTHS
        written = (f', {progress.bytes_written / 1e6:.1f} MB written'
                   if progress.bytes_written else '')
        left = f', about {remaining:.1f} s left' if remaining and fraction < 1.0 else ''
        # Whole percents rounded down, as the tenths: 69.5% is "69%", not a
        # "70%" line in the sixth tenth followed by a 78% line in the seventh.
        percent = int(fraction * 100 + 1e-9)
        print(f'{self._what}: {percent}% ({progress.phase} {progress.done} of '
              f'{progress.total} {UNITS.get(progress.phase, "items")}{written}, '
              f'{elapsed:.1f} s{left})', file=self._stream, flush=True)
        if fraction >= 1.0:
            self._next_line = None  # the last line


def _is_terminal(stream):
    """Return True for a terminal a bar can be drawn on: one that says its size."""
    try:
        if not stream.isatty():
            return False
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return False
    # A terminal of unknown size (a serial console, some CI runners) reports
    # 0 rows or columns, and tqdm draws nothing on it: lines are shown there.
    return size.lines > 0 and size.columns > 0
