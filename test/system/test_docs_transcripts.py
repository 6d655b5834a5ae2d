# SPDX-License-Identifier: Apache-2.0
"""
The documented console transcripts, run against real nodes.

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

Each page runs in a directory of its own, where the tools the pages name
are this build's programs in this test's own domain, without tools/bootstrap's
check (tools/node and tools/console themselves are test_own_node's;
simulation_demo, which tools/demo runs, test_simulation's): tools/console is the installed
memory_console, tools/demo the installed simulation_demo with tools/demo's
arguments (its "lost replies" section, there only when a reply was lost
under load, is taken out of the page's comparison and printed by the
test), and the programs' bare names (memory_node, memory_console,
memory_restore, memory_import, memory_migrate, memory_verify) are on the
PATH. A page's migrate session finds the old-version files of
PREPARED_FILES there, made by test/helpers/schema_v*.py. The pages say
`ROS_DOMAIN_ID=49 tools/console`, as tools/node prints by default; the
wrappers put this test's domain in its place, so parallel runs stay apart.

The memory node a page talks to is started as tools/node starts it (in
/mira, persistent memory on, robot profile Mira): on a fresh database
(memory.sqlite3 in the page's directory) before the page, or, for a page
that runs the demo first (review.md), on the demo's database once the
demo's block has run, as its reader starts tools/node in another terminal
then.

A page that starts its own programs gets none: storage.md starts and kills
its memory nodes itself; model.md runs tools/chat (which starts a memory
node and cognition) against the scripted model server of
test/helpers/chat_server.py, which the test starts before the page with the
answers the page's prose lists. There tools/chat is the clone's own script,
in the work directory, where its tools/bootstrap does nothing (this build
is already the environment) and its programs are this build's; a wrapper
puts the server's endpoint in place of the documented one
(DOCUMENTED_ENDPOINT), as the others put the test's domain in place of 49.
What a page leaves running when it fails is stopped with prysk's session.

No page holds a tools/console command that nothing runs:
test_every_documented_console_command_is_run checks that each one, on any
page and in any block, is a command of a transcript here (README.md's
session is console.md's).

On a difference the test prints prysk's diff, with the page's line
numbers: docs/dev/testing.md says how to take the new output.
"""

import contextlib
import os
import pathlib
import re
import shlex
import shutil
import signal
import subprocess
import sys

from helpers import chat_server
from helpers.rosutil import executable
from helpers.schema_v1 import make_version_1_database
from helpers.schema_v2 import make_version_2_database
from helpers.schema_v3 import make_version_3_database
import pytest

pytestmark = pytest.mark.ros

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRANSCRIPTS = ['docs/console.md', 'docs/operations.md', 'docs/review.md', 'docs/storage.md',
               'docs/model.md']
# Pages that start their own programs: the test starts no memory node for them.
OWN_PROGRAMS = {'docs/storage.md', 'docs/model.md'}
# The page whose tools/chat talks to the scripted model server, at this documented endpoint.
MODEL_PAGE = 'docs/model.md'
DOCUMENTED_ENDPOINT = 'http://127.0.0.1:8080/v1'
# A page whose session begins with the demo: its node starts on the demo's
# database (tools/demo's default workdir) after the block that runs the demo.
DEMO_DATABASE = pathlib.Path('.work/demo/memory.sqlite3')
# The demo's "lost replies" section is there only when a reply was lost
# and its call resent (docs/simulation.md): under load, now and then. The
# page shows the run without one; the section goes to this file of the
# page's directory, and the test prints it.
LOST_REPLIES = 'lost_replies.txt'
LOST_REPLIES_FILTER = """
import sys
with open(sys.argv[1], 'a', encoding='utf-8') as kept:
    in_section = False
    for line in sys.stdin:
        if line.startswith('lost replies ('):
            in_section = True
        elif in_section and not line.startswith('  '):
            in_section = False
        print(line, end='', file=kept if in_section else sys.stdout, flush=True)
"""
DEMO_COMMAND = '  $ tools/demo'
NODE = {'enabled': True, 'robot_profile': 'Mira'}
# The old-version databases a page's migrate session starts from, by file name.
PREPARED_FILES = {
    'docs/console.md': {'v1.sqlite3': make_version_1_database,
                        'v2.sqlite3': make_version_2_database,
                        'v3.sqlite3': make_version_3_database},
}


def domain():
    return os.environ.get('ROS_DOMAIN_ID', '0')


def write_tools(work):
    """Write the work directory's tools/console, tools/demo and the shell prysk runs."""
    (work / 'tools').mkdir()
    # The documented domain (49) becomes this test's; the rest is the real program.
    console = work / 'tools' / 'console'
    console.write_text(f'#!/bin/sh\nROS_DOMAIN_ID={domain()} exec '
                       f'{executable("memory_console")} "$@"\n')
    # As tools/demo runs it: its workdir, and tools/node on its database as the
    # next step. Its lost-replies section goes to LOST_REPLIES, not the page.
    demo = work / 'tools' / 'demo'
    lost_replies_filter = work / 'tools' / 'lost_replies_filter.py'
    lost_replies_filter.write_text(LOST_REPLIES_FILTER)
    demo.write_text(
        f'#!/bin/bash\nset -o pipefail\n'
        f'ROS_DOMAIN_ID={domain()} ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST '
        f'{executable("simulation_demo")} --workdir {work / DEMO_DATABASE.parent} '
        f'--node-command {shlex.quote("tools/node --database " + str(DEMO_DATABASE))} "$@" '
        f'2>&1 | {shlex.quote(sys.executable)} {lost_replies_filter} {work / LOST_REPLIES}\n')
    # The scenarios the pages name, as in the clone.
    (work / 'config').symlink_to(ROOT / 'config')
    shell = work / 'shell'
    # The programs' bare names (memory_node, memory_restore, ...), as the pages use them.
    programs = pathlib.Path(executable('memory_console')).parent
    # Fast DDS's own log stays out of the pages: the shell inherits the run's
    # profile, which has no log consumer (helpers/middleware_profile.py).
    shell.write_text(f'#!/bin/sh\nexport ROS_DOMAIN_ID={domain()} PATH={programs}:$PATH\n'
                     f'cd {work} && exec /bin/bash "$@"\n')
    for path in (console, demo, shell):
        path.chmod(0o755)


def model_answers():
    """Return model.md's answers: recall, remember, text, recall, text (then HTTP 500)."""
    evidence = 'Ada Lovelace prefers green tea'
    remember = {'kind': 'preference', 'subject': 'Ada Lovelace', 'predicate': 'prefers_drink',
                'value': 'green tea', 'related_entity': None, 'related_role': None,
                'evidence': evidence}
    return [chat_server.tool_calls(('recall_memory', {'query': 'Ada Lovelace'})),
            chat_server.tool_calls(('remember', remember)),
            chat_server.text(f'Noted: {evidence}.'),
            chat_server.tool_calls(('recall_memory', {'query': 'Ada'})),
            chat_server.text('I remember that Ada Lovelace prefers green tea (remembered, '
                             'may be out of date).')]


def write_chat(work, endpoint):
    """Make the work directory a clone for tools/chat: its script, this build, no bootstrap."""
    tools = work / 'tools'
    (tools / 'chat-script').symlink_to(ROOT / 'tools' / 'chat')
    bootstrap = tools / 'bootstrap'
    bootstrap.write_text('#!/bin/sh\n# This build is already the environment.\n')
    distro = os.environ.get('ROS_DISTRO', 'jazzy')
    built = work / '.work' / distro
    (built / 'install' / 'mira_memory' / 'lib').mkdir(parents=True)
    (built / 'install' / 'mira_memory' / 'lib' / 'mira_memory').symlink_to(
        pathlib.Path(executable('operator_chat')).parent)
    (built / 'env.sh').write_text('# The environment is already this build.\n')
    # The documented endpoint becomes the scripted server's; the rest is tools/chat's.
    chat = tools / 'chat'
    chat.write_text(
        '#!/bin/bash\nargs=()\nfor arg in "$@"; do\n'
        f'  [ "$arg" = {DOCUMENTED_ENDPOINT} ] && arg={endpoint}\n'
        '  args+=("$arg")\ndone\n'
        f'exec {tools / "chat-script"} --distro {distro} "${{args[@]}}"\n')
    for path in (bootstrap, chat):
        path.chmod(0o755)


def prepare_files(work, page):
    """Write into work the old-version databases that page's sessions migrate."""
    for name, make in PREPARED_FILES.get(page, {}).items():
        make(work / name)


def transcript_blocks(text):
    """Return the (first, last) line numbers of each prysk block of text, fences included."""
    lines = text.split('\n')
    blocks = []
    start = None
    for number, line in enumerate(lines):
        if not line.startswith('```'):
            continue
        if start is None:
            start = number
            continue
        block = lines[start + 1:number]
        if lines[start].startswith('```console') and block and block[0].startswith('  $ '):
            blocks.append((start, number))
        start = None
    return blocks


def transcripts_only(text, blocks):
    """Return text with every line outside blocks blanked, so line numbers stay."""
    lines = text.split('\n')
    kept = [''] * len(lines)
    for first, last in blocks:
        kept[first:last + 1] = lines[first:last + 1]
    return '\n'.join(kept)


def run_prysk(work, test_file, page):
    prysk = shutil.which('prysk')
    if prysk is None:
        pytest.skip('prysk is not installed: tools/bootstrap installs it; on a ROS install, '
                    'pip install prysk (no rosdep key, see package.xml)')
    # A session of its own: what a failed page left running (its background
    # nodes) is stopped with it.
    process = subprocess.Popen(
        [prysk, '--shell', str(work / 'shell'), '--color', 'never', str(test_file)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        differences, _ = process.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == 0, f'{page} differs from the real run:\n{differences}'


@pytest.mark.parametrize('page', TRANSCRIPTS)
def test_the_documented_transcript_is_what_the_programs_print(ros, memory_node, page, tmp_path,
                                                              request):
    work = tmp_path / 'work'
    work.mkdir()
    write_tools(work)
    if page == MODEL_PAGE:
        chat_server.no_proxies()
        server = chat_server.ChatServer()
        request.addfinalizer(server.close)
        server.script(*model_answers())
        write_chat(work, server.base_url)
    prepare_files(work, page)
    text = (ROOT / page).read_text()
    blocks = transcript_blocks(text)
    lines = text.split('\n')
    demo_blocks = [block for block in blocks
                   if any(line.startswith(DEMO_COMMAND) for line in lines[block[0]:block[1]])]
    if page in OWN_PROGRAMS:
        parts = [blocks]
    elif not demo_blocks:
        memory_node({**NODE, 'database_path': str(work / 'memory.sqlite3')},
                    namespace='/mira', ros=ros)
        parts = [blocks]
    else:
        split = blocks.index(demo_blocks[-1]) + 1
        parts = [blocks[:split], blocks[split:]]
    for number, part in enumerate(parts):
        if number == 1:
            memory_node({**NODE, 'database_path': str(work / DEMO_DATABASE)},
                        namespace='/mira', ros=ros)
        test_file = tmp_path / f'{pathlib.Path(page).name}.{number}.t'
        test_file.write_text(transcripts_only(text, part))
        run_prysk(work, test_file, page)
    if (work / LOST_REPLIES).exists():
        print((work / LOST_REPLIES).read_text())


def documented_commands(text):
    """Return the commands in text's code blocks (a line ending in a backslash continues)."""
    commands = []
    inside = False
    pending = ''
    for line in text.split('\n'):
        if line.startswith('```'):
            inside = not inside
            continue
        if not inside:
            continue
        line = line.strip()
        if line.startswith('$ '):
            line = line[2:]
        line = pending + line
        if line.endswith('\\'):
            pending = line[:-1].rstrip() + ' '
            continue
        pending = ''
        commands.append(re.sub(r'\s+#.*$', '', line).strip())
    return commands


def test_every_documented_console_command_is_run():
    run = set()
    for page in TRANSCRIPTS:
        text = (ROOT / page).read_text()
        run.update(documented_commands(transcripts_only(text, transcript_blocks(text))))
    pages = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]
    not_run = [f'{page.relative_to(ROOT)}: {command}'
               for page in pages
               for command in documented_commands(page.read_text())
               if command.startswith('ROS_DOMAIN_ID=49 tools/console ') and command not in run]
    assert not not_run, ('documented console commands that no transcript runs (make them a '
                         'transcript of a page in TRANSCRIPTS):\n' + '\n'.join(not_run))
