# SPDX-License-Identifier: Apache-2.0
"""A backup held in flight in a real memory node process, for as long as a test needs."""

import contextlib
import os
import pathlib
import subprocess
import sys
import time

from helpers.rosutil import executable
from mira_memory.core.archive import output_files
from mira_memory.simulation import processes


HELD_COPY_NODE = pathlib.Path(__file__).with_name('held_copy_node.py')
# The node module each executable runs (scripts/).
NODE_MODULES = {'memory_node': 'mira_memory.memory.node',
                'memory_lifecycle_node': 'mira_memory.memory.lifecycle_node'}


def held_copy_command(name, release):
    """Return the command running executable name as held_copy_node.py, held by release."""
    return [sys.executable, str(HELD_COPY_NODE), NODE_MODULES[name], str(release)]


@contextlib.contextmanager
def backups_held(release):
    """
    Hold every backup of a node started with hold_copies=release, until the block ends.

    The node (held_copy_node.py) locks each backup's temporary file as it
    creates it while release exists: a backup that stays in flight as long as
    the test needs, on a store of any size.
    """
    release = pathlib.Path(release)
    release.write_text('held\n')
    try:
        yield
    finally:
        release.unlink()


def temporary_files(directory):
    """Return the names of the copies' temporary files in directory."""
    return sorted(path.name for path in pathlib.Path(directory).iterdir()
                  if path.name.endswith(output_files.TEMPORARY_SUFFIX))


def console_process(node, directory, *words, console=None):
    """
    Start a console command in the background; its stdout is a pipe (tests compare it).

    console: the command that runs the console (default: the installed memory_console).
    """
    return processes.Process(
        [*(console or [executable('memory_console')]), '--memory-node', node.prefix,
         '--timeout', '60',
         'memory', *words], directory / f'console_{words[0]}.log', name='memory_console',
        stdout=subprocess.PIPE)


def wait_for_backup_in_flight(node, target, console):
    """
    Return the node's backup's temporary file once its backup thread has created it.

    It opens that file only after its snapshot is taken, so whatever is
    written from now on is not in the backup.
    """
    target = pathlib.Path(target)
    fds = pathlib.Path(f'/proc/{node.process.pid}/fd')
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert console.running(), console.describe('exited before the backup started')
        for fd in fds.iterdir():
            with contextlib.suppress(OSError):
                opened = pathlib.Path(os.readlink(fd))
                if (opened.parent == target.parent and opened.name.startswith(f'.{target.name}.')
                        and opened.name.endswith(output_files.TEMPORARY_SUFFIX)):
                    return opened
        time.sleep(0.05)
    raise AssertionError('the backup never started')
