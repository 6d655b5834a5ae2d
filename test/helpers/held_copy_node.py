#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
A real memory node whose backups wait, for as long as a test needs, once their file exists.

    held_copy_node.py MODULE RELEASE --ros-args ...   (the node's command line)

It runs the installed node of MODULE (mira_memory.memory.node or
mira_memory.memory.lifecycle_node; node_runner.start, as the installed
executables do) with one change: while the file RELEASE exists, each
backup's temporary file is write-locked by a second SQLite connection of
this process as soon as it is created (core/archive/output_files.py). The
backup thread then finds its destination locked, pauses and retries (as it
does for any lock on it) until RELEASE is removed: a backup in flight on a
store of any size. The temporary file's name is random and it is created
with O_EXCL, so no test can lock it from outside before the node makes it.
"""

import pathlib
import sqlite3
import sys
import threading
import time

from mira_memory.core.archive import output_files
from mira_memory.ros import node_runner


def main():
    module, release = sys.argv.pop(1), pathlib.Path(sys.argv.pop(1))
    hold_backups(release)
    return node_runner.start(module)


def hold_backups(release):
    """Make each backup's temporary file write-locked from its creation while release exists."""
    create = output_files.create_temporary

    def create_held(target):
        fd, temporary = create(target)
        if release.exists():
            holder = sqlite3.connect(str(temporary), isolation_level=None,
                                     check_same_thread=False)
            holder.execute('CREATE TABLE held (x)')
            holder.execute('BEGIN EXCLUSIVE')
            threading.Thread(target=_release_when_gone, args=(holder, release),
                             daemon=True).start()
        return fd, temporary

    output_files.create_temporary = create_held


def _release_when_gone(holder, release):
    while release.exists():
        time.sleep(0.05)
    holder.close()


if __name__ == '__main__':
    sys.exit(main())
