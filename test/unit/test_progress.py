# SPDX-License-Identifier: Apache-2.0
"""A long job's progress (core/archive/progress.py) and how it is shown without a terminal."""

import fcntl
import io
import os
import pty
import struct
import termios

from mira_memory.console.progress import ProgressDisplay
from mira_memory.core.archive import copies, importing, verify
from mira_memory.core.archive.progress import Meter, Progress


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_fraction_weighs_backups_phases_and_caps_at_one():
    assert Progress('copying', 50, 100).fraction == 0.025
    assert Progress('checking', 0, 100).fraction == 0.05
    assert Progress('checking', 100, 100).fraction == 1.0
    assert Progress('writing', 300, 200).fraction == 1.0
    assert Progress('judging', 0, 0).fraction == 0.0


def test_the_estimate_follows_the_current_phases_rate():
    clock = Clock()
    meter = Meter(clock)
    assert meter.snapshot() is None
    meter.report(Progress('writing', 0, 1000))
    assert meter.snapshot().remaining is None  # nothing done yet: no estimate
    clock.now += 2.0
    meter.report(Progress('writing', 250, 1000))
    snapshot = meter.snapshot()
    assert (snapshot.elapsed, snapshot.remaining) == (2.0, 6.0)
    clock.now += 6.0
    meter.report(Progress('writing', 1000, 1000))
    assert meter.snapshot().remaining == 0.0


def test_a_backups_estimate_covers_the_checking_phase_still_to_come():
    clock = Clock()
    meter = Meter(clock)
    meter.report(Progress('copying', 0, 100))
    clock.now += 1.0
    meter.report(Progress('copying', 100, 100))  # 5% of the job in 1 s: 19 s to go
    assert round(meter.snapshot().remaining, 6) == 19.0


def test_without_a_terminal_one_line_per_ten_percent_and_the_last_once():
    out = io.StringIO()
    display = ProgressDisplay(out, 'export', terminal=False)
    for done in range(0, 1001, 50):
        display.update(Progress('writing', done, 1000, done * 10), done / 100, 1.0)
    display.update(Progress('writing', 1000, 1000, 10000), 10.0, 0.0)
    lines = out.getvalue().splitlines()
    assert [line.split(' (')[0] for line in lines] == [
        f'export: {percent}%' for percent in range(10, 101, 10)]
    assert lines[0] == ('export: 10% (writing 100 of 1000 records, 0.0 MB written, 1.0 s, '
                        'about 1.0 s left)')
    assert lines[-1] == 'export: 100% (writing 1000 of 1000 records, 0.0 MB written, 10.0 s)'


def test_a_line_shows_the_percent_of_its_own_tenth():
    # 69.5% is in the sixth tenth: shown as 69%, never as a second "70%" step.
    out = io.StringIO()
    display = ProgressDisplay(out, 'export', terminal=False)
    for done in (695, 780, 1000):
        display.update(Progress('writing', done, 1000), 1.0, 1.0)
    assert [line.split(' (')[0] for line in out.getvalue().splitlines()] == [
        'export: 69%', 'export: 78%', 'export: 100%']


def test_finish_shows_a_job_complete_when_its_last_feedback_came_after_its_result():
    out = io.StringIO()
    display = ProgressDisplay(out, 'verify', terminal=False)
    display.update(Progress('judging', 0, 1000), 0.5, None)
    display.update(Progress('judging', 950, 1000), 9.5, 0.5)
    display.finish()  # the result is in; the complete feedback never came
    display.finish()  # once only
    lines = out.getvalue().splitlines()
    assert [line.split(' (')[0] for line in lines] == ['verify: 95%', 'verify: 100%']
    assert lines[-1].startswith('verify: 100% (judging 1000 of 1000 memories, ')
    silent = io.StringIO()
    ProgressDisplay(silent, 'verify', terminal=False).finish()  # nothing shown: nothing to end
    assert silent.getvalue() == ''


def test_a_job_done_before_its_first_report_shows_nothing():
    out = io.StringIO()
    display = ProgressDisplay(out, 'verify', terminal=False)
    display.update(Progress('judging', 2, 2), 0.2, 0.0)
    assert out.getvalue() == ''


def test_every_job_reports_its_phase_to_the_end(tmp_path, store):
    seen = {name: [] for name in ('backup', 'export', 'import', 'verify')}
    store.add_entity('person', 'Ada Lovelace')
    copies.backup(str(store.path), str(tmp_path / 'b.sqlite3'), progress=seen['backup'].append)
    copies.export(str(store.path), str(tmp_path / 'e.jsonl'), progress=seen['export'].append)
    with open(tmp_path / 'e.jsonl', encoding='utf-8') as lines:
        importing.import_export(tmp_path / 'i.sqlite3', lines, progress=seen['import'].append)
    verify.verify(str(store.path), progress=seen['verify'].append)
    assert {name: (reports[-1].phase, reports[-1].done == reports[-1].total)
            for name, reports in seen.items()} == {
        'backup': ('checking', True), 'export': ('writing', True),
        'import': ('importing', True), 'verify': ('judging', True)}
    assert seen['backup'][0].phase == 'copying'
    assert seen['export'][-1].bytes_written == (tmp_path / 'e.jsonl').stat().st_size


def test_a_terminal_of_unknown_size_gets_lines_not_a_bar():
    # A pseudo-terminal that reports 0 rows and 0 columns, as a serial console does.
    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 0, 0, 0, 0))
        with os.fdopen(os.dup(slave), 'w') as terminal:
            display = ProgressDisplay(terminal, 'backup')
            display.update(Progress('checking', 50, 100), 1.0, 1.0)
            display.close()
        shown = os.read(master, 4096).decode()
    finally:
        os.close(master)
        os.close(slave)
    assert shown.startswith('backup: 52% (checking 50 of 100 pages, 1.0 s, about 1.0 s left)')
