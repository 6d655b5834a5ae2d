# SPDX-License-Identifier: Apache-2.0
"""
The documented console transcripts, run against a real memory node.

Each page in TRANSCRIPTS holds prysk transcripts: fenced `console` blocks
whose lines are indented two spaces, `$ ` before a command and its output
under it (`[N]` after a non-zero exit code; a line ending in ` (re)` is a
regular expression, for ids, times and paths). prysk (a cram-style runner)
runs the commands of a page in one bash session and compares what they
print. The test hands prysk the page with every other line blanked (the
commentary's own indented lines would read as expected output), so line
numbers in prysk's diff are the page's. Blocks in the old style (no
indent, e.g. the `ros2 ...` ones: the `ros2` CLI is not installable here)
are not run.

One memory node in /mira on a fresh database (the test helpers' process
starter, as tools/node starts it: persistent memory on, robot profile Mira)
serves all pages, which run in the order listed and share its state. The
pages say `ROS_DOMAIN_ID=49 tools/console`, as tools/node prints by default;
the shell runs in the database's directory, where tools/console is the
installed memory_console in this test's own domain (tools/console itself,
bootstrap check included, is test_own_node's), so parallel runs stay apart
and each command costs a console start, not a bootstrap check.

On a difference the test prints prysk's diff, with the page's line
numbers: docs/dev/testing.md says how to take the new output.
"""

import os
import pathlib
import shutil
import subprocess

from helpers.rosutil import executable
import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRANSCRIPTS = ['docs/console.md']


def domain():
    return os.environ.get('ROS_DOMAIN_ID', '0')


@pytest.fixture(scope='module')
def docs_node(ros, module_memory_node):
    """Start the memory node in /mira; return the directory the transcripts run in."""
    work = module_memory_node.directory
    module_memory_node({'enabled': True, 'database_path': str(work / 'memory.sqlite3'),
                        'robot_profile': 'Mira'}, namespace='/mira', ros=ros)
    console = executable('memory_console')
    (work / 'tools').mkdir()
    script = work / 'tools' / 'console'
    # The documented domain (49) becomes this test's; the rest is the real console.
    script.write_text(f'#!/bin/sh\nROS_DOMAIN_ID={domain()} exec {console} "$@"\n')
    shell = work / 'shell'
    shell.write_text(f'#!/bin/sh\ncd {work} && exec /bin/bash "$@"\n')
    for path in (script, shell):
        path.chmod(0o755)
    return work


def transcripts_only(text):
    """Return text with every line outside the prysk blocks blanked, so line numbers stay."""
    lines = text.split('\n')
    kept = [''] * len(lines)
    start = None
    for number, line in enumerate(lines):
        if not line.startswith('```'):
            continue
        if start is None:
            start = number
            continue
        block = lines[start + 1:number]
        if lines[start].startswith('```console') and block and block[0].startswith('  $ '):
            kept[start:number + 1] = lines[start:number + 1]
        start = None
    return '\n'.join(kept)


@pytest.mark.parametrize('page', TRANSCRIPTS)
def test_the_documented_transcript_is_what_the_programs_print(docs_node, page, tmp_path):
    prysk = shutil.which('prysk')
    if prysk is None:
        pytest.skip('prysk is not installed: tools/bootstrap installs it; on a ROS install, '
                    'pip install prysk (no rosdep key, see package.xml)')
    test_file = tmp_path / (pathlib.Path(page).name + '.t')
    test_file.write_text(transcripts_only((ROOT / page).read_text()))
    result = subprocess.run(
        [prysk, '--shell', str(docs_node / 'shell'), '--color', 'never', str(test_file)],
        capture_output=True, text=True, timeout=300)
    differences = result.stdout + result.stderr
    assert result.returncode == 0, f'{page} differs from the real run:\n{differences}'
