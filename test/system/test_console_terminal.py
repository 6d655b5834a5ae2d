# SPDX-License-Identifier: Apache-2.0
"""
The console's long jobs in a real terminal: the bar, Ctrl-C, --no-wait, memory jobs, memory_import.

memory_console and memory_import run as real processes on a pseudo-terminal
(pexpect), against a real memory node on a store of 100,000 memories built
once for the module (bench/generate.py): an export of it takes seconds, long
enough to watch. What a terminal shows is the output with each line's
carriage returns applied (screen()); tqdm redraws its bar with them.
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

from helpers.copy_in_flight import backups_held
from helpers.rosutil import executable, NodeProcess, unique_namespace
from mira_memory.client import names
from mira_memory.core.archive import copies
import pexpect
import pytest

pytestmark = pytest.mark.ros

BENCH = pathlib.Path(__file__).resolve().parents[2] / 'bench'
MEMORIES, ENTITIES = 100_000, 10_000
# Header, then entities, aliases, memories, links, payloads (no receipts).
RECORDS = 407_491
BAR = re.compile(r'export writing: +(\d+)%\|[^|]*\| (\d+)/' + str(RECORDS)
                 + r' \[\d\d:\d\d<\d\d:\d\d, +[\d.]+ records/s\]')
INTERRUPTED_CONSOLE = pathlib.Path(__file__).parents[1] / 'helpers' / 'interrupted_console.py'
UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'


def screen(output):
    """Return what a terminal shows of output: each line as its last carriage return left it."""
    lines = output.replace('\r\n', '\n').split('\n')
    return '\n'.join(line.rsplit('\r', 1)[-1] for line in lines)


def generated_store(directory, memories, entities):
    """Return the path of a store of bench/generate.py (built in directory)."""
    sys.path.insert(0, str(BENCH))
    try:
        import generate
    finally:
        sys.path.remove(str(BENCH))
    path, _ = generate.cached_store(directory, memories, entities, 20260, log=lambda *a: None)
    return path


@pytest.fixture(scope='module')
def store(tmp_path_factory):
    return generated_store(tmp_path_factory.mktemp('store'), MEMORIES, ENTITIES)


@pytest.fixture(scope='module')
def node(store, tmp_path_factory):
    directory = tmp_path_factory.mktemp('node')
    database = directory / 'memory.sqlite3'
    shutil.copyfile(store, database)
    namespace = unique_namespace('tty')
    # Every test's tmp_path is under the run's base directory: copies may go there.
    process = NodeProcess('memory_node', namespace=namespace, directory=directory,
                          parameters={'enabled': True, 'database_path': str(database),
                                      'admin_output_dirs': str(tmp_path_factory.getbasetemp())},
                          hold_copies=directory / 'hold')
    process.prefix = names.memory_node_name(namespace)
    process.hold = directory / 'hold'
    yield process
    assert process.stop() == 0
    assert 'Traceback' not in process.output()


def console(node, *words, command=None, **options):
    """
    Start memory_console on a terminal of 100 columns.

    command: a program and its first arguments that run the console instead.
    """
    program, *arguments = command or [executable('memory_console')]
    return pexpect.spawn(program, [*arguments, '--memory-node', node.prefix, '--timeout', '60',
                                   'memory', *words],
                         encoding='utf-8', dimensions=(24, 100), timeout=120, **options)


def finish(child):
    """Read the child's output to its end; return (exit status, output)."""
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


def partial_files(directory):
    return [name for name in os.listdir(directory) if name.endswith('.partial')]


def test_export_draws_a_bar_with_count_rate_and_time_left(node, tmp_path):
    target = tmp_path / 'memory.jsonl'
    child = console(node, 'export', str(target))
    status, output = finish(child)
    assert status == 0, output
    bars = [(int(match[1]), int(match[2])) for match in BAR.finditer(output)]
    assert len(bars) >= 2 and bars[-1] == (100, RECORDS), output
    assert [count for _, count in bars] == sorted(count for _, count in bars)
    shown = screen(output).splitlines()
    assert BAR.fullmatch(shown[0].rstrip()) and BAR.fullmatch(shown[0].rstrip())[1] == '100'
    assert shown[1:] == [
        f'export written: {target} ({target.stat().st_size} bytes)',
        f'  entities {ENTITIES}, aliases 15558, memories {MEMORIES}, links 181933, '
        f'payloads {MEMORIES}']
    assert target.read_text(encoding='utf-8').count('\n') == RECORDS + 1


def test_ctrl_c_cancels_the_export_and_says_nothing_was_left(node, tmp_path):
    target = tmp_path / 'memory.jsonl'
    child = console(node, 'export', str(target))
    child.expect(r'export writing: +[1-9]\d*%')
    child.sendintr()
    status, output = finish(child)
    assert status == 130, output
    shown = screen(output).splitlines()
    assert re.fullmatch(rf'canceling the export \(goal {UUID}\) \.\.\.', shown[-2]), shown
    assert shown[-1] == 'export canceled (by its client); nothing was written'
    assert not target.exists() and partial_files(tmp_path) == []


def test_a_ctrl_c_inside_rclpys_take_still_cancels_the_job(node, tmp_path):
    # The Ctrl-C reaches the console while rclpy's executor takes the first
    # message of the job's action client (interrupted_console.py take), as
    # it does on a loaded machine. Raised there, rclpy would never wait on
    # that client again: no answer to the cancel within its 30 s.
    target = tmp_path / 'memory.sqlite3'
    with backups_held(node.hold):
        child = console(node, 'backup', str(target),
                        command=[sys.executable, str(INTERRUPTED_CONSOLE), 'take'])
        status, output = finish(child)
    assert status == 130, output
    shown = screen(output).splitlines()
    assert re.fullmatch(rf'canceling the backup \(goal {UUID}\) \.\.\.', shown[-2]), shown
    assert shown[-1] == 'backup canceled (by its client); nothing was written', shown
    assert not target.exists() and partial_files(tmp_path) == []


def test_no_wait_returns_the_goal_id_and_memory_jobs_shows_the_job(node, tmp_path):
    target = tmp_path / 'memory.backup'
    # The backup waits for its partial file's lock: in flight for as long as the test needs.
    with backups_held(node.hold):
        status, output = finish(console(node, 'backup', str(target), '--no-wait'))
        assert status == 0, output
        match = re.fullmatch(
            rf'backup started: goal ({UUID}) \(memory jobs shows its progress\)',
            screen(output).strip())
        assert match, output
        status, output = finish(console(node, 'jobs'))
        shown = screen(output).strip().splitlines()
        assert status == 0 and shown[0] == f'backup running: goal {match[1]}', output
        assert re.fullmatch(r'  (no progress reported yet|\d+%: copying \d+ of \d+ pages, '
                            r'[\d.]+ s elapsed(, about [\d.]+ s left)?)', shown[1]), shown
    # The job goes on without the console that started it, to its end.
    while 'backup running' in screen(finish(console(node, 'jobs'))[1]):
        pass
    assert target.exists() and partial_files(tmp_path) == []
    status, output = finish(console(node, 'jobs'))
    assert (status, screen(output).strip()) == (0, 'no backup, export or verify is running')


def test_without_a_terminal_one_line_per_ten_percent(node, tmp_path):
    target = tmp_path / 'memory.jsonl'
    result = subprocess.run(
        [executable('memory_console'), '--memory-node', node.prefix, '--timeout', '60',
         'memory', 'export', str(target)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    percents = [int(re.match(r'export: (\d+)% \(writing (\d+) of 407491 records, [\d.]+ MB '
                             r'written, [\d.]+ s(, about [\d.]+ s left)?\)$', line)[1])
                for line in lines]
    assert 1 <= len(percents) <= 11 and percents[-1] == 100, lines
    # At most one line per tenth: no two lines in the same 10% step.
    assert len({percent // 10 for percent in percents}) == len(percents), lines
    assert '\r' not in result.stderr and result.stdout.startswith('export written: ')


def test_memory_import_shows_the_same_progress(tmp_path):
    # The bar is the terminal's, not the size's: an export of a store a tenth
    # of the module's (written by the product's own export, no node needed)
    # draws it as the 407,491 records did, in a tenth of the time.
    export = tmp_path / 'memory.jsonl'
    header = copies.export(str(generated_store(tmp_path / 'store', 10_000, 1_000)), str(export))
    total = sum(header['counts'].values())
    assert total == export.read_text(encoding='utf-8').count('\n') - 1 > 40_000
    database = tmp_path / 'imported.sqlite3'
    child = pexpect.spawn(executable('memory_import'),
                          ['--database', str(database), '--from', str(export)],
                          encoding='utf-8', dimensions=(24, 100), timeout=300)
    status, output = finish(child)
    assert status == 0, output
    bars = re.findall(rf'import importing: +(\d+)%\|[^|]*\| (\d+)/{total} \[', output)
    assert bars and bars[-1] == ('100', str(total)), output
    assert screen(output).splitlines()[-2].startswith(f'imported {export} into {database}: ')


def test_a_second_ctrl_c_does_not_wait_for_the_cancel(node, tmp_path):
    # The console is told twice: it says the job may still run, and exits at once.
    target = tmp_path / 'memory.jsonl'
    child = console(node, 'export', str(target))
    child.expect(r'export writing: +[1-9]\d*%')
    node_stopped = False
    try:
        os.kill(node.process.pid, signal.SIGSTOP)  # the node cannot answer the cancel
        node_stopped = True
        child.sendintr()
        child.expect(r'canceling the export')
        child.sendintr()
        status, output = finish(child)
    finally:
        if node_stopped:
            os.kill(node.process.pid, signal.SIGCONT)
    assert status == 130, output
    assert screen(output).splitlines()[-1] == (
        'interrupted again: the export may still be running on the node (memory jobs '
        'shows it)')
