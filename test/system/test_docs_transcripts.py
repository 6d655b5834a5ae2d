# SPDX-License-Identifier: Apache-2.0
"""
The documented console transcripts, run against a real memory node.

Each page in TRANSCRIPTS is a prysk test file as it stands: prysk (a
cram-style runner) runs every line indented two spaces and starting with
`$ ` in one bash session and compares what it prints with the indented
lines under it; lines ending in ` (re)` are regular expressions (ids,
times, paths). Everything else on the page is commentary to prysk, so the
`ros2 ...` blocks (the `ros2` CLI is not installable here) are not run.

One memory node, started with tools/node on a fresh database, serves all
pages, which run in the order listed and share its state. The pages say
`ROS_DOMAIN_ID=49 tools/console`, as tools/node prints by default; the
shell runs in a directory whose tools/console reaches this test's node in
this test's own domain instead, so parallel runs stay apart.

After editing a transcript, `prysk -i` rewrites a page with what the
programs really printed (see docs/dev/testing.md).
"""

import os
import pathlib
import shutil
import signal
import subprocess
import time

import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRANSCRIPTS = ['docs/console.md']
START_TIMEOUT = 120.0
READY = 'one command, e.g.:'


def domain():
    return os.environ.get('ROS_DOMAIN_ID', '0')


@pytest.fixture(scope='module')
def docs_node(tmp_path_factory):
    """Start tools/node on a fresh database; yield the working directory of the transcripts."""
    work = tmp_path_factory.mktemp('docs')
    database = work / 'memory.sqlite3'
    env = dict(os.environ)
    env.pop('ROS_DOMAIN_ID', None)
    process = subprocess.Popen(
        [str(ROOT / 'tools' / 'node'), '--database', str(database), '--domain-id', domain()],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not any(READY in line for line in lines):
            line = process.stdout.readline()
            assert line and time.monotonic() < deadline, ''.join(lines)
            lines.append(line)
        shell = work / 'shell'
        (work / 'tools').mkdir()
        console = work / 'tools' / 'console'
        # The documented domain (49) becomes this test's; everything else is the real tool.
        console.write_text('#!/bin/sh\n'
                           f'ROS_DOMAIN_ID={domain()} exec {ROOT}/tools/console "$@"\n')
        shell.write_text(f'#!/bin/sh\ncd {work} && exec /bin/bash "$@"\n')
        for script in (console, shell):
            script.chmod(0o755)
        yield work
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize('page', TRANSCRIPTS)
def test_the_documented_transcript_is_what_the_programs_print(docs_node, page):
    prysk = shutil.which('prysk')
    if prysk is None:
        pytest.skip('prysk is not installed: tools/bootstrap installs it; on a ROS install, '
                    'pip install prysk (no rosdep key, see package.xml)')
    result = subprocess.run(
        [prysk, '--shell', str(docs_node / 'shell'), '--color', 'never', str(ROOT / page)],
        capture_output=True, text=True, timeout=300)
    differences = result.stdout + result.stderr
    assert result.returncode == 0, f'{page} differs from the real run:\n{differences}'
