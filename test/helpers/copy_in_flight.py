# SPDX-License-Identifier: Apache-2.0
"""A backup held in flight in a real memory node process, for as long as a test needs."""

import contextlib
import os
import pathlib
import sqlite3
import subprocess
import time

from helpers.rosutil import executable
from mira_memory.core.archive import copies
from mira_memory.simulation import processes


@contextlib.contextmanager
def partial_file_locked(target, pid):
    """
    Hold a write lock on the file a backup to target writes first (copies.partial_path).

    The node's backup thread then finds its destination locked, pauses and
    retries until the lock goes: a backup that stays in flight as long as the
    test needs, on a store of any size.
    """
    holder = sqlite3.connect(str(copies.partial_path(target, pid)), isolation_level=None)
    try:
        holder.execute('CREATE TABLE held (x)')
        holder.execute('BEGIN EXCLUSIVE')
        yield
    finally:
        holder.close()


def console_process(node, directory, *words):
    """Start a console command in the background; its stdout is a pipe (tests compare it)."""
    return processes.Process(
        [executable('memory_console'), '--memory-node', node.prefix, '--timeout', '60',
         'memory', *words], directory / f'console_{words[0]}.log', name='memory_console',
        stdout=subprocess.PIPE)


def wait_for_backup_in_flight(node, target, console):
    """
    Return once the node's backup thread has opened its partial file.

    It opens that file only after its snapshot is taken, so whatever is
    written from now on is not in the backup.
    """
    partial = str(copies.partial_path(target, node.process.pid))
    fds = pathlib.Path(f'/proc/{node.process.pid}/fd')
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert console.running(), console.describe('exited before the backup started')
        for fd in fds.iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd) == partial:
                    return
        time.sleep(0.05)
    raise AssertionError('the backup never started')
