# SPDX-License-Identifier: Apache-2.0
"""
The operator console in-process against an in-process memory node (node tier).

The memory commands share one console Session per module (one DDS
participant); main() itself, with its options, its own session and the
interactive loop, runs in the tests that are about it. The executable as a
real process: test/system/test_console_process.py.
"""

import functools
import io
import itertools
import os
import re
import signal
import threading
import time
import types

from helpers.rosutil import console_memory_command, unique_namespace
from mira_memory import srv
from mira_memory.client import names
from mira_memory.console import jobs
from mira_memory.console import memory_console as console
import pytest

pytestmark = pytest.mark.ros

_names = itertools.count(1)


def unique(label):
    """Return a name no other test of this module uses."""
    return f'{label} {next(_names)}'


def run(*argv, stdin=None):
    """Run the console in-process; return (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = console.main(list(argv), stdin=stdin, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope='module')
def node(ros, shared_memory_node):
    return shared_memory_node


@pytest.fixture(scope='module')
def session(node):
    """One console session for the module's memory commands, as main() would open it."""
    opened = console.Session(['memory_console'], console.Settings(memory_node=node.prefix))
    yield opened
    opened.close()


@pytest.fixture
def memory(session):
    """Run a memory command in the shared session; return (code, stdout, stderr)."""
    return functools.partial(console_memory_command, session)


def created_id(output, prefix):
    match = re.match(rf'created ({prefix}[1-9][0-9]*) ', output)
    assert match, output
    return match.group(1)


def counts(ros, node):
    status = ros.call(srv.AdminStatus, names.service_name(node.prefix, names.ADMIN_STATUS))
    return (status.entity_count, status.alias_count, status.memory_count, status.link_count,
            status.payload_count)


# Usage errors: decided locally, exit 2, nothing sent ---------------------------------

USAGE_ERRORS = [
    (['memory', 'alias', 'add', 'ENTx', 'Ada'], '"ENTx" is not an entity id'),
    (['memory', 'show', 'MEM-1'], '"MEM-1" is not a memory id'),
    (['memory', 'list', 'ENT0'], '"ENT0" is not an entity id'),
    (['memory', 'list', 'MEM1'], '"MEM1" is not an entity id'),
    (['memory', 'add', 'fact', 'x', '--confidence', '1.5'], '--confidence needs a number'),
    (['memory', 'add', 'fact', 'x', '--confidence', 'high'], '--confidence needs a number'),
    (['memory', 'add', 'fact', 'x', '--confidence', 'nan'], '--confidence needs a number'),
    (['memory', 'add', 'fact', 'x', '--colour', 'red'], 'unknown option --colour'),
    (['memory', 'add', 'fact', 'x', '--link', 'ENT1'], '--link needs ENT<n>:<role>'),
    (['memory', 'add', 'fact', 'x', '--link', 'ENT1:'], '--link needs ENT<n>:<role>'),
    (['memory', 'add', 'fact', 'x', '--link', 'ENTx:subject'], '"ENTx" is not an entity id'),
    (['memory', 'add', 'fact', 'x', '--predicate'], '--predicate needs a value'),
    (['memory', 'add', 'fact', 'x', '--value', ''], '--value needs a non-empty value'),
    (['memory', 'add', 'fact', 'x', '--predicate', 'a', '--predicate', 'b'],
     '--predicate given twice'),
    (['memory', 'add', 'fact'], 'missing "<summary>"'),
    (['memory', 'entity', 'add', 'person'], 'missing "<canonical name>"'),
    (['memory', 'show'], 'missing MEM<n>'),
    (['memory', 'show', 'MEM1', 'MEM2'], 'unexpected argument "MEM2"'),
    (['memory', 'persistent', 'now'], 'unexpected argument "now"'),
    (['memory', 'find', 'Ada', '--link', 'ENT1:subject'], 'unknown option --link'),
    (['memory', 'frobnicate'], 'unknown command: memory frobnicate'),
    (['memory', 'retire', 'MEM1'], 'missing --reason "<text>"'),
    (['memory', 'retire', 'ENT1', '--reason', 'x'], '"ENT1" is not a memory id'),
    (['memory', 'forget', 'ADA1'], '"ADA1" is not a memory or entity id'),
    (['memory', 'forget', 'MEM1', '--yes=no'], '--yes takes no value'),
    (['memory', 'export', '/tmp/x.jsonl', '--overwrite'], 'unknown option --overwrite'),
    (['memory', 'verify', 'ENT1'], '"ENT1" is not a memory id'),
    (['memory', 'verify', 'MEM1', '--yes'], 'unknown option --yes'),
    (['memory', 'entity'], 'memory entity add <entity_type> "<canonical name>" | memory entity'),
    (['remember', 'x'], 'unknown command: remember'),
    (['--bogus', 'memory', 'persistent'], 'unknown option --bogus'),
    (['--timeout', '0', 'memory', 'persistent'], '--timeout needs a positive number'),
    (['--timeout', 'soon', 'memory', 'persistent'], '--timeout needs a positive number'),
    (['--memory-node'], '--memory-node needs a value'),
    (['memory', 'persistent', '--ros-args', '-p'], 'bad --ros-args'),
]


@pytest.mark.parametrize('argv, reason', USAGE_ERRORS,
                         ids=[' '.join(argv) for argv, _ in USAGE_ERRORS])
def test_bad_usage_exits_2_with_a_one_line_reason(argv, reason):
    code, out, err = run(*argv)
    assert code == 2
    assert out == ''
    assert err.startswith('usage error: ') and err.count('\n') == 1
    assert reason in err


def test_help_lists_every_command():
    code, out, err = run('--help')
    assert code == 0 and err == ''
    for usage in ('memory persistent', 'memory entity add <entity_type> "<canonical name>"',
                  'memory entity find "<name>"', 'memory alias add ENT<n> "<alias>"',
                  'memory find "<name>"', 'memory show MEM<n>', 'memory list ENT<n>',
                  'memory clear',
                  'memory add <kind> "<summary>" [--link ENT<n>:<role>]... '
                  '[--predicate <token>] [--value "<text>"] [--source-kind <token>] '
                  '[--source-label "<text>"] [--confidence <0.0..1.0>]',
                  'memory retire MEM<n> --reason "<text>"', 'memory forget MEM<n>|ENT<n> [--yes]',
                  'memory backup PATH [--force] [--no-wait]',
                  'memory export PATH [--force] [--no-wait] [--with-pending]',
                  'memory verify [MEM<n> ...] [--json] [--no-wait]', 'memory jobs',
                  'memory pending', 'memory pending show P<n>',
                  'memory accept P<n> [--new-entity TYPE] [--alias "<alias>"]...',
                  'memory supersede P<n>', 'memory dismiss P<n>'):
        assert f'  {usage}\n' in out


# Every command in-process against a real node -----------------------------------------


def test_persistent_shows_path_schema_counts_and_profile(node, memory):
    code, out, err = memory('persistent')
    assert code == 0 and err == ''
    lines = out.splitlines()
    assert lines[0] == 'persistent memory is enabled'
    assert f'  database:       {node.database_path}' in lines
    assert '  schema version: 4' in lines
    assert '  robot profile:  "Mira"' in lines
    assert any(re.fullmatch(r'  entities:       \d+', line) for line in lines)
    assert any(re.fullmatch(r'  memories:       \d+ \(\d+ active\)', line) for line in lines)


def test_entity_add_prints_the_created_id(ros, node, memory):
    name = unique('Ada Lovelace')
    before = counts(ros, node)
    code, out, err = memory('entity', 'add', 'person', name)
    assert code == 0 and err == ''
    entity = created_id(out, 'ENT')
    assert out == f'created {entity} person "{name}"\n'
    assert counts(ros, node)[0] == before[0] + 1


def test_entity_find_prints_a_table_in_id_order(memory):
    name = unique('Twin')
    first = created_id(memory('entity', 'add', 'person', name)[1], 'ENT')
    second = created_id(memory('entity', 'add', 'robot', name)[1], 'ENT')
    memory('alias', 'add', second, unique('Robo'))
    code, out, err = memory('entity', 'find', name.upper())
    assert code == 0 and err == ''
    lines = out.splitlines()
    assert lines[0].split() == ['ID', 'TYPE', 'CANONICAL', 'NAME', 'ALIASES']
    assert [line.split()[0] for line in lines[1:]] == [first, second]
    assert lines[1].split()[1] == 'person' and lines[2].split()[1] == 'robot'


def test_entity_find_without_match_says_so(memory):
    code, out, err = memory('entity', 'find', unique('Nobody'))
    assert (code, out, err) == (0, 'no entity has that exact name or alias\n', '')


def test_alias_add_prints_the_entity_with_its_aliases(memory):
    name = unique('Charles Babbage')
    entity = created_id(memory('entity', 'add', 'person', name)[1], 'ENT')
    code, out, err = memory('alias', 'add', entity, 'Charlie  B')
    assert code == 0 and err == ''
    assert out == f'added alias "Charlie B" to {entity} person "{name}" (aliases: "Charlie B")\n'


def test_add_with_every_option_reaches_the_node(ros, node, memory):
    subject = created_id(memory('entity', 'add', 'person', unique('Subject'))[1], 'ENT')
    other = created_id(memory('entity', 'add', 'person', unique('Friend'))[1], 'ENT')
    code, out, err = memory(
        'add', 'relationship', 'is friends with a friend', '--link', f'{subject}:subject',
        '--link', f'{other}:friend', '--predicate', 'friend_of', '--value', 'a friend',
        '--source-kind', 'interview', '--source-label', 'tape 3', '--confidence', '0.8')
    assert code == 0 and err == ''
    memory_id = created_id(out, 'MEM')
    assert out == f'created {memory_id} relationship "is friends with a friend"\n'
    shown = ros.call(srv.AdminShow, names.service_name(node.prefix, names.ADMIN_SHOW),
                     srv.AdminShow.Request(memory_id=memory_id)).memory
    assert [(link.entity_id, link.role) for link in shown.links] == [
        (subject, 'subject'), (other, 'friend')]
    assert (shown.predicate, shown.value, shown.source_kind, shown.source_label) == (
        'friend_of', 'a friend', 'interview', 'tape 3')
    assert shown.has_confidence and shown.confidence == 0.8


def test_add_accepts_option_equals_value(memory):
    code, out, err = memory('add', 'event', unique('it rained'), '--confidence=0.5')
    assert code == 0 and err == ''
    assert created_id(out, 'MEM')


def test_show_prints_every_field_and_the_payload(memory):
    entity = created_id(memory('entity', 'add', 'person', unique('Shown'))[1], 'ENT')
    memory_id = created_id(memory(
        'add', 'preference', 'likes green tea', '--link', f'{entity}:subject',
        '--predicate', 'drink', '--value', 'green tea')[1], 'MEM')
    code, out, err = memory('show', memory_id)
    assert code == 0 and err == ''
    lines = out.splitlines()
    assert lines[0] == memory_id
    for expected in ('  kind:         preference', '  summary:      likes green tea',
                     '  predicate:    drink', '  value:        green tea',
                     '  source kind:  console', '  source label: -', '  confidence:   -',
                     '  status:       active'):
        assert expected in lines
    assert any(re.fullmatch(r'  created at:   \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', line)
               for line in lines)
    assert any(line.startswith(f'  link:         {entity}:subject "Shown') for line in lines)
    assert any(re.fullmatch(r'  payload \d+: +inline text/plain "likes green tea"', line)
               for line in lines)


def test_find_prints_each_match_with_its_active_memories(memory):
    name = unique('Found')
    first = created_id(memory('entity', 'add', 'person', name)[1], 'ENT')
    second = created_id(memory('entity', 'add', 'person', name)[1], 'ENT')
    memory_id = created_id(memory(
        'add', 'fact', 'they met', '--link', f'{first}:subject', '--link',
        f'{second}:met', '--predicate', 'met', '--value', 'in 1833')[1], 'MEM')
    code, out, err = memory('find', name)
    assert code == 0 and err == ''
    blocks = out.split('\n\n')
    assert [block.split()[0] for block in blocks] == [first, second]
    for block in blocks:
        row = block.splitlines()[2]
        assert row.split()[:2] == [memory_id, 'fact']
        assert 'they met' in row and 'met = "in 1833"' in row
        assert row.endswith(f'{first}:subject {second}:met')


def test_find_without_match_says_so(memory):
    code, out, err = memory('find', unique('Nobody'))
    assert (code, out, err) == (0, 'no entity has that exact name or alias\n', '')


def test_list_prints_the_entity_memories(memory):
    entity = created_id(memory('entity', 'add', 'place', unique('Lab'))[1], 'ENT')
    empty = memory('list', entity)
    assert empty[0] == 0 and empty[1].splitlines()[1] == '  no active memories'
    memory_id = created_id(memory('add', 'observation', 'lights on', '--link',
                                  f'{entity}:location')[1], 'MEM')
    code, out, err = memory('list', entity)
    assert code == 0 and err == ''
    lines = out.splitlines()
    assert lines[0].startswith(f'{entity} place "Lab')
    assert lines[2].split()[:2] == [memory_id, 'observation']


# Failed calls: the node's error code and message, exit 1, nothing written -------------

NODE_ERRORS = [
    (('show', 'MEM999999'), 'not_found', 'memory MEM999999 not found'),
    (('list', 'ENT999999'), 'not_found', 'entity ENT999999 not found'),
    (('alias', 'add', 'ENT999999', 'Ada'), 'not_found', 'entity ENT999999 not found'),
    (('add', 'fact', 'x', '--link', 'ENT999999:subject'), 'not_found', 'ENT999999'),
    (('add', 'opinion', 'x'), 'invalid_argument', 'kind must be one of'),
    (('add', 'fact', 'x', '--source-kind', 'operator_statement'), 'invalid_argument',
     'reserved for remember'),
    (('add', 'fact', 'x', '--link', 'ENT1:two words'), 'invalid_argument', 'link role'),
    (('add', 'fact', 'bell\x07'), 'invalid_argument', 'control characters'),
    (('entity', 'add', 'person', ''), 'invalid_argument', 'empty'),
    (('entity', 'add', 'person', 'Ada\x1b'), 'invalid_argument', 'control characters'),
    # Invisible characters are refused like control characters, with the same code.
    (('entity', 'add', 'person', 'Ada\u00adm'), 'invalid_argument', 'control characters'),
    (('add', 'fact', 'Ada likes tea\u2028- MEM99 fact'), 'invalid_argument',
     'control characters'),
    (('entity', 'find', 'Ada\u200d'), 'invalid_argument', 'control characters'),
    (('entity', 'find', ' '), 'invalid_argument', 'empty'),
    # The node resolves a copy's PATH, so it alone judges it (docs/console.md's table).
    (('backup', 'copy.sqlite3'), 'invalid_argument', 'the target path must be absolute'),
    (('export', 'copy.jsonl', '--force'), 'invalid_argument',
     'the target path must be absolute'),
]


@pytest.mark.parametrize('words, code, reason', NODE_ERRORS,
                         ids=[' '.join(words) for words, _, _ in NODE_ERRORS])
def test_node_error_exits_1_with_code_and_message(ros, node, memory, words, code, reason):
    before = counts(ros, node)
    exit_code, out, err = memory(*words)
    assert exit_code == 1 and out == ''
    assert err.startswith(f'error: {code}: ') and err.count('\n') == 1
    assert reason in err
    assert counts(ros, node) == before


def test_duplicate_alias_exits_1(memory):
    entity = created_id(memory('entity', 'add', 'person', unique('Grace'))[1], 'ENT')
    assert memory('alias', 'add', entity, 'Amazing Grace')[0] == 0
    code, out, err = memory('alias', 'add', entity, 'amazing  GRACE')
    assert code == 1 and out == ''
    assert err.startswith('error: duplicate_alias: ')


def test_no_memory_node_exits_1_naming_node_and_deadline():
    missing = f'{unique_namespace()}/memory'
    code, out, err = run('--memory-node', missing, '--timeout', '0.5', 'memory', 'persistent')
    assert code == 1 and out == ''
    assert err == f'error: no memory node answered at {missing} within 0.5 s\n'


def test_ros_args_are_accepted(node):
    code, out, err = run('--memory-node', node.prefix, 'memory', 'persistent',
                         '--ros-args', '-r', '__node:=renamed_console')
    assert code == 0 and err == ''
    assert out.startswith('persistent memory is enabled\n')


def test_disabled_node_is_reported(ros, memory_node):
    disabled = memory_node({'enabled': False, 'robot_profile': 'Mira'}, ros=ros)
    code, out, err = run('--memory-node', disabled.prefix, 'memory', 'persistent')
    assert (code, err) == (0, '')
    assert out.splitlines()[0] == 'persistent memory is disabled'
    code, out, err = run('--memory-node', disabled.prefix, 'memory', 'find', 'Ada')
    assert (code, out) == (1, '')
    assert err == 'error: disabled: persistent memory is disabled\n'


# Working memory (the cognition node's services) ----------------------------------------


class FakeCognition:
    """Serves the cognition node's working-memory services from a thread."""

    def __init__(self, namespace, entries, capacity):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        self._rclpy = rclpy
        self.entries = list(entries)
        self.capacity = capacity
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('cognition', namespace=namespace, context=self.context)
        self.node.create_service(srv.WorkingMemoryShow, '~/working_memory/show', self._show)
        self.node.create_service(srv.WorkingMemoryClear, '~/working_memory/clear', self._clear)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        from rclpy.executors import ExternalShutdownException
        try:
            self.executor.spin()
        except ExternalShutdownException:
            pass

    def _show(self, request, response):
        response.entries = self.entries
        response.capacity = self.capacity
        response.characters = sum(len(entry) for entry in self.entries)
        response.max_characters = 48000
        return response

    def _clear(self, request, response):
        response.cleared = len(self.entries)
        self.entries = []
        return response

    def close(self):
        # The executor first, while the context lives (see rosutil.spinning):
        # its shutdown() ends spin() in the thread.
        self.executor.shutdown(timeout_sec=10.0)
        self.thread.join()
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


@pytest.fixture
def cognition():
    namespace = unique_namespace('cog')
    fake = FakeCognition(namespace, ['operator: hello', 'assistant: hi\nthere'], 20)
    fake.prefix = f'{namespace}/cognition'
    yield fake
    fake.close()


def test_memory_shows_working_memory(cognition):
    code, out, err = run('--cognition-node', cognition.prefix, 'memory')
    assert code == 0 and err == ''
    assert out == ('working memory: 2 of 20 entries (34 of 48000 characters), '
                   'oldest first (volatile)\n'
                   '  1. operator: hello\n'
                   '  2. assistant: hi there\n')


def test_memory_clear_clears_working_memory(cognition):
    code, out, err = run('--cognition-node', cognition.prefix, 'memory', 'clear')
    assert (code, err) == (0, '')
    assert out == 'cleared 2 working memory entries (persistent memory is untouched)\n'
    assert cognition.entries == []
    assert run('--cognition-node', cognition.prefix, 'memory')[1] == (
        'working memory is empty (capacity 20 entries, 48000 characters)\n')


@pytest.mark.parametrize('words', [(), ('clear',)], ids=['memory', 'memory clear'])
def test_working_memory_without_cognition_node_exits_1(words):
    missing = f'{unique_namespace()}/cognition'
    code, out, err = run('--cognition-node', missing, '--timeout', '0.5', 'memory', *words)
    assert code == 1 and out == ''
    assert err == f'error: no cognition node answered at {missing} within 0.5 s\n'


# Interactive, in-process ----------------------------------------------------------------


def test_interactive_reports_a_missing_quote_and_goes_on(node):
    name = unique('Quoted Name')
    lines = [f'memory entity add person "{name}', f'memory entity add person "{name}"']
    code, out, err = run('--memory-node', node.prefix,
                         stdin=io.StringIO('\n'.join(lines) + '\n'))
    assert code == 2
    assert err == 'usage error: missing closing quote\n1 of 2 lines failed: line 1 (exit 2)\n'
    assert re.fullmatch(rf'created ENT[1-9][0-9]* person "{name}"\n', out)


def test_interactive_reports_an_escape_with_nothing_to_escape(node):
    # Only the input's last line can end in a lone backslash (before a line
    # break, the backslash escapes the break).
    name = unique('Quoted Name')
    lines = [f'memory entity add person "{name}"', f'memory entity find "{name}" \\']
    code, out, err = run('--memory-node', node.prefix, stdin=io.StringIO('\n'.join(lines)))
    assert code == 2
    assert err == ('usage error: cannot split the line: no escaped character\n'
                   '1 of 2 lines failed: line 2 (exit 2)\n')
    assert re.fullmatch(rf'created ENT[1-9][0-9]* person "{name}"\n', out)


def test_a_ctrl_c_python_dropped_in_a_finalizer_is_raised_again_by_the_job_waits(monkeypatch):
    # A SIGINT's KeyboardInterrupt raised inside a __del__ is dropped by Python
    # (its unraisable hook); the job's waits still see the Ctrl-C, once.
    interrupts = jobs._Interrupts()
    dropped = []
    monkeypatch.setattr('sys.unraisablehook', dropped.append)

    class Finalized:
        def __del__(self):
            interrupts._handler(signal.SIGINT, None)

    Finalized()
    assert (interrupts.count, [type(u.exc_value) for u in dropped]) == (1, [KeyboardInterrupt])
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_pending()
    interrupts.raise_pending()  # once only


def test_from_the_goals_send_on_a_ctrl_c_during_a_spin_is_raised_after_it(monkeypatch):
    # Raised where it lands, a Ctrl-C inside rclpy's executor (a take of the
    # job's action client) would leave that client out of every later wait,
    # deaf to the answer to its cancel. From the send on (held), the spin
    # ends and the job's wait raises the Ctrl-C.
    interrupts = jobs._Interrupts()
    monkeypatch.setattr(jobs, '_interrupts', interrupts)
    spins = []

    class TakingExecutor:
        def spin_once(self, timeout_sec):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(200):  # Python runs the handler at the next bytecodes
                time.sleep(0.001)
            spins.append(timeout_sec)

    with interrupts.counting(), interrupts.held():
        with pytest.raises(KeyboardInterrupt):
            jobs._spin_once(types.SimpleNamespace(executor=TakingExecutor()), timeout_sec=0.1)
    assert spins == [0.1]


def test_a_second_ctrl_c_during_a_job_is_raised_by_its_waits_only():
    # Before the goal is sent, the first SIGINT raises at once (the job
    # ends); a second one, raised at any line of the cancel, could escape
    # the code that reports it, so it is counted and the waits raise it.
    interrupts = jobs._Interrupts()

    def interrupt():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(200):  # Python runs the handler at the next bytecodes
            time.sleep(0.001)

    with interrupts.counting():
        with pytest.raises(KeyboardInterrupt):
            interrupt()
        interrupts.mark_seen()
        try:
            interrupt()
        except KeyboardInterrupt:
            pytest.fail('the second Ctrl-C was raised where it landed, not by a wait')
        assert interrupts.count == 2
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_pending()
        interrupts.raise_pending()  # once only
    with interrupts.counting():  # a new job: its first Ctrl-C raises again
        with pytest.raises(KeyboardInterrupt):
            interrupt()
