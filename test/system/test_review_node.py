# SPDX-License-Identifier: Apache-2.0
"""
Supervised review through a real memory node process and the console.

Each test starts the installed memory_node on a database of its own, says
operator turns on its operator/utterance topic and calls remember over DDS
(as cognition does), then decides the kept proposals with the console's
`memory ...` commands (in this process through the console's own Session,
or as real memory_console processes where two must run at once). One test
kills the node with SIGKILL between supersede's retire and its write.
"""

import json
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

from helpers.action_goals import without_progress
from helpers.memory_services import MemoryServices, remember_request
from helpers.raw_scan import raw_hits
from helpers.review_cases import GHENT, HEDGED, LEUVEN, UNKNOWN
from helpers.rosutil import executable, unique_namespace, write_params_file
from mira_memory.client import names
from mira_memory.core.admission.operator_turn import TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.simulation import processes
import pytest

pytestmark = pytest.mark.ros

PROFILE = 'Mira'
# A deadline against a hang (a node that never comes back), not a timing.
DEADLINE_S = 60.0
# The memory node that dies inside a chosen write (a helper process).
CRASH_POINT_NODE = pathlib.Path(__file__).resolve().parents[1] / 'helpers' / 'crash_point_node.py'


def start(memory_node, ros, database, **parameters):
    node = memory_node({'enabled': True, 'database_path': str(database),
                        'robot_profile': PROFILE, **parameters}, ros=ros)
    node.services = MemoryServices(ros, node.prefix)
    return node


def seeded(memory_node, ros, tmp_path, console_memory, **parameters):
    """Start a node on a new database with Ada Lovelace, Zoe Quist and the robot."""
    node = start(memory_node, ros, tmp_path / 'memory.sqlite3', **parameters)
    console = console_memory(node)
    for entity_type, name in (('person', 'Ada Lovelace'), ('person', 'Zoe Quist'),
                              ('robot', PROFILE)):
        assert console('entity', 'add', entity_type, name)[0] == 0
    return node, console


_turns = iter(range(1, 1000))


def say(node, case):
    """Say the operator turn and call remember with the proposal; return the response."""
    utterance, proposal = case
    return node.services.remember(remember_request(
        TurnContext('episode-1', f'turn-{next(_turns)}', utterance), proposal))


def console_process(node, log_path, *words):
    """Start `memory_console ... memory <words>` as a real process; stdout is a pipe."""
    return processes.Process(
        [executable('memory_console'), '--memory-node', node.prefix, '--timeout', '60',
         'memory', *words], log_path, name='memory_console', stdout=subprocess.PIPE)


def ok(console, *words):
    code, out, err = console(*words)
    assert (code, without_progress(err)) == (0, ''), (words, out, err)
    return out


def failed(console, *words):
    code, out, err = console(*words)
    assert (code, out) == (1, ''), (words, out, err)
    return err


def test_a_refused_statement_is_accepted(ros, memory_node, tmp_path, console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    response = say(node, HEDGED)
    assert (response.status, response.reason, response.pending_review) == (
        'rejected', 'evidence_not_in_utterance', True)
    # Pending is private: recall does not see it.
    assert 'green tea' not in node.services.recall('Ada Lovelace').text
    listing = ok(console, 'pending').splitlines()
    assert listing[0] == ('1 pending (keeping new refusals: on, at most 200 items, each 7 days; '
                          'dropped 0, expired 0)')
    assert listing[1].split() == ['ID', 'AGE', 'REASON', 'SUBJECT', 'PREDICATE/VALUE',
                                  'UTTERANCE']
    assert listing[2].startswith('P1  ') and 'evidence_not_in_utterance (10)' in listing[2]
    assert listing[2].endswith('"Ada Lovelace"  prefers_drink = "green tea"  '
                               '"Maybe Ada Lovelace prefers green tea."')
    shown = ok(console, 'pending', 'show', 'P1').splitlines()
    assert shown[0] == 'P1' and shown[2] == '  refused:      evidence_not_in_utterance (10)'
    assert shown[4] == ('  decided by:   hedge "Maybe" at characters 0-5, reach sentence, '
                        'both ways, governs "Ada Lovelace prefers green tea"')
    assert shown[5] == '  utterance:    "Maybe Ada Lovelace prefers green tea."'
    assert shown[-1] == '  now:          still refused: evidence_not_in_utterance (10)'
    out = ok(console, 'accept', 'P1').splitlines()
    assert out[0] == 'accepted P1: created MEM1'
    assert out[1] == ('  MEM1 preference "Ada Lovelace prefers green tea" '
                      '(supervised_statement)')
    show = ok(console, 'show', 'MEM1')
    assert '  source kind:  supervised_statement\n' in show
    assert '    utterance:  "Maybe Ada Lovelace prefers green tea."\n' in show
    assert 'ran 1-19 except 10-13,17 (overridden at review)' in show
    assert '    review:     accept of P1 by "' in show and '(memory_console_' in show
    assert '    refused:    evidence_not_in_utterance (10) at ' in show
    assert 'green tea' in node.services.recall('Ada Lovelace').text
    assert ok(console, 'pending').startswith('no pending items')
    err = failed(console, 'accept', 'P1')
    assert err.startswith('error: closed: P1 was already accepted as MEM1 at ')
    assert err.endswith('; nothing was written\n')


def test_an_unknown_subject_is_accepted_with_a_new_entity(
        ros, memory_node, tmp_path, console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    response = say(node, UNKNOWN)
    assert (response.reason, response.pending_review) == ('subject_not_found', True)
    err = failed(console, 'accept', 'P1')
    assert err.startswith('error: refused: P1: the subject still names no entity')
    out = ok(console, 'accept', 'P1', '--new-entity', 'person', '--alias', 'Lou',
             '--alias', 'the new intern').splitlines()
    assert out == ['accepted P1: created MEM1 (and ENT4)',
                   '  MEM1 fact "Lou Arden is allergic to latex" (supervised_statement)',
                   '  ENT4 person "Lou Arden" (aliases: "Lou", "the new intern")']
    found = ok(console, 'find', 'the new intern')
    assert 'ENT4 person "Lou Arden"' in found and 'allergic_to = "latex"' in found
    assert 'review:     accept_new_entity of P1' in ok(console, 'show', 'MEM1')


def test_a_conflict_is_superseded_and_show_gives_the_chain(ros, memory_node, tmp_path,
                                                           console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    assert say(node, LEUVEN).memory_id == 'MEM1'
    response = say(node, GHENT)
    assert (response.reason, list(response.conflicting_memory_ids),
            response.pending_review) == ('conflict', ['MEM1'], True)
    assert ok(console, 'pending', 'show', 'P1').splitlines()[-3] == '  conflicts:    MEM1'
    err = failed(console, 'accept', 'P1')
    assert err.startswith('error: refused: P1 conflicts with MEM1: memory supersede P1')
    out = ok(console, 'supersede', 'P1').splitlines()
    assert out == ['P1 superseded MEM1: created MEM2',
                   '  MEM2 fact "Zoe Quist lives in Ghent" (supervised_statement)']
    old = ok(console, 'show', 'MEM1')
    assert '  status:       retired\n' in old and '  superseded by: MEM2\n' in old
    assert '  reason:       superseded at review of P1 by ' in old
    assert '  supersedes:   MEM1\n' in ok(console, 'show', 'MEM2')
    recalled = node.services.recall('Zoe Quist').text
    assert 'Ghent' in recalled and 'Leuven' not in recalled


def test_an_item_is_dismissed(ros, memory_node, tmp_path, console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    say(node, HEDGED)
    before = ok(console, 'persistent')
    assert '  pending review: 1' in before
    database = tmp_path / 'memory.sqlite3'
    assert raw_hits(database, ('green tea', 'prefers_drink'))
    assert ok(console, 'dismiss', 'P1') == 'dismissed P1\n'
    # The node still runs: no byte of the item in the file, its -wal or its -shm.
    assert raw_hits(database, ('green tea', 'prefers_drink')) == []
    after = ok(console, 'persistent')
    assert '  pending review: 0' in after
    assert after.replace('pending review: 0', '') == before.replace('pending review: 1', '')
    err = failed(console, 'accept', 'P1')
    assert err.startswith('error: closed: P1 was dismissed at ')


def test_an_item_expires(ros, memory_node, tmp_path, console_memory):
    # 0.0001 days: about 8.6 s, so the item is seen waiting, then gone.
    node, console = seeded(memory_node, ros, tmp_path, console_memory,
                           pending_max_age_days=0.0001)
    say(node, HEDGED)
    assert 'P1' in ok(console, 'pending')
    deadline = time.monotonic() + DEADLINE_S
    while 'P1' in ok(console, 'pending'):
        assert time.monotonic() < deadline, 'P1 never expired'
        time.sleep(0.5)
    listing = ok(console, 'pending')
    assert listing.startswith('no pending items') and 'expired 1' in listing
    err = failed(console, 'accept', 'P1')
    assert err.startswith('error: closed: P1 expired and left the queue at ')
    assert ok(console, 'persistent').count('memories:       0') == 1


def test_an_item_is_forgotten_with_its_entity(ros, memory_node, tmp_path, console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    secret = ('Maybe Zoe Quist drinks quorvish nettle brew.',
              Proposal('fact', 'Zoe Quist', 'drinks', 'quorvish nettle brew', None, None,
                       'Zoe Quist drinks quorvish nettle brew'))
    assert say(node, secret).pending_review
    say(node, HEDGED)  # about Ada: stays
    database = tmp_path / 'memory.sqlite3'
    assert raw_hits(database, ('quorvish',))
    preview = ok(console, 'forget', 'ENT2')
    assert preview.splitlines()[:2] == [
        'would forget ENT2: 0 memories, 0 aliases, 0 links, 0 payloads, 1 pending review items',
        '  pending review items: P1']
    ok(console, 'forget', 'ENT2', '--yes')
    assert [line.split()[0] for line in ok(console, 'pending').splitlines()[2:]] == ['P2']
    err = failed(console, 'accept', 'P1')
    assert err.startswith('error: closed: P1 was removed at ') and 'by memory forget' in err
    assert raw_hits(database, ('quorvish',)) == []
    assert node.stop() == 0
    assert raw_hits(database, ('quorvish',)) == []


def test_verify_marks_what_the_rules_admit_now(ros, memory_node, tmp_path, console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    say(node, HEDGED)
    say(node, UNKNOWN)
    ok(console, 'entity', 'add', 'person', 'Lou Arden')
    code, out, err = console('verify')
    assert (code, without_progress(err)) == (0, '')
    assert out.splitlines()[1:] == [
        'P1 STILL REFUSED evidence_not_in_utterance (10)',
        'P2 NOW ADMISSIBLE',
        'judged 2 pending review items: 1 now admissible']
    assert ok(console, 'pending', 'show', 'P2').splitlines()[-1] == (
        '  now:          NOW ADMISSIBLE (the rules would admit it as it is)')


def test_an_export_holds_pending_items_only_with_the_flag(ros, memory_node, tmp_path,
                                                          console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    say(node, HEDGED)
    copies = tmp_path / 'memory-copies'  # the default output directory
    ok(console, 'export', str(copies / 'plain.jsonl'))
    assert 'Maybe' not in (copies / 'plain.jsonl').read_text()
    ok(console, 'export', str(copies / 'full.jsonl'), '--with-pending')
    records = [json.loads(line) for line in (copies / 'full.jsonl').read_text().splitlines()]
    assert [r['utterance'] for r in records if r['type'] == 'pending'] == [HEDGED[0]]


def test_two_consoles_accepting_the_same_item_exactly_one_wins(ros, memory_node, tmp_path,
                                                               console_memory):
    node, _ = seeded(memory_node, ros, tmp_path, console_memory)
    say(node, HEDGED)
    consoles = [console_process(node, tmp_path / f'console_{number}.log', 'accept', 'P1')
                for number in (1, 2)]
    codes = [console.wait(timeout=DEADLINE_S) for console in consoles]
    outputs = [console.process.stdout.read() for console in consoles]
    assert sorted(codes) == [0, 1], [console.output() for console in consoles]
    winner = codes.index(0)
    assert outputs[winner].startswith('accepted P1: created MEM1\n')
    assert outputs[1 - winner] == ''
    assert 'error: closed: P1 was already accepted as MEM1 at ' in consoles[1 - winner].output()
    assert node.services.counts()['memory_count'] == 1


def test_a_kept_refusal_survives_a_kill_9_once_written(ros, memory_node, tmp_path,
                                                       console_memory):
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    assert say(node, HEDGED).pending_review
    # Served after the write: from here the item is in the write-ahead log.
    assert ok(console, 'pending').splitlines()[2].startswith('P1  ')
    assert node.stop(signal.SIGKILL) == -signal.SIGKILL
    node = start(memory_node, ros, tmp_path / 'memory.sqlite3')
    listing = console_memory(node)('pending')[1].splitlines()
    assert listing[2].startswith('P1  ') and listing[2].endswith(f'"{HEDGED[0]}"')


def test_a_kill_between_supersedes_retire_and_write_loses_nothing(ros, memory_node, tmp_path,
                                                                  console_memory):
    database = tmp_path / 'memory.sqlite3'
    node, console = seeded(memory_node, ros, tmp_path, console_memory)
    say(node, LEUVEN)
    say(node, GHENT)
    # The node writes a kept refusal after its reply, and before it serves the next call.
    assert ok(console, 'pending').splitlines()[2].startswith('P1  ')
    before = integrity_and_rows(database)
    assert node.stop() == 0
    # The same node, stopped dead inside supersede's transaction (crash_point_node.py).
    marker = tmp_path / 'crash_point.json'
    namespace = unique_namespace()
    crashing = processes.Process(
        [sys.executable, str(CRASH_POINT_NODE),
         str(marker), '--ros-args', '-r', f'__ns:={namespace}', '--params-file',
         write_params_file(tmp_path, {'enabled': True, 'database_path': str(database),
                                      'robot_profile': PROFILE})],
        tmp_path / 'crash_point_node.log', name='crash_point_node')
    try:
        crashing.prefix = names.memory_node_name(namespace)
        supersede = console_process(crashing, tmp_path / 'console.log', 'supersede', 'P1')
        deadline = time.monotonic() + DEADLINE_S
        while not marker.exists():
            assert crashing.running(), crashing.describe('exited before the crash point')
            assert time.monotonic() < deadline, crashing.describe('never reached the point')
            time.sleep(0.05)
        point = json.loads(marker.read_text())
        # The retire ran in the open transaction; nobody else sees it.
        assert point == {'pid': crashing.pid, 'retired_in_transaction': [1],
                         'in_transaction': True}
        assert integrity_and_rows(database, read_only=True)[1] == before[1]
        assert crashing.stop(first=signal.SIGKILL) == -signal.SIGKILL
    finally:
        crashing.stop(first=signal.SIGKILL)
    supersede.stop()
    assert supersede.process.stdout.read() == ''  # it was never told it had succeeded
    # Restarted: the memory it was replacing is active, nothing new, the item still waits.
    assert integrity_and_rows(database) == before
    node = start(memory_node, ros, database)
    console = console_memory(node)
    assert '  status:       active\n' in ok(console, 'show', 'MEM1')
    assert 'superseded by' not in ok(console, 'show', 'MEM1')
    assert ok(console, 'pending').splitlines()[2].startswith('P1  ')
    # And the person's decision can be made again, whole.
    assert ok(console, 'supersede', 'P1').startswith('P1 superseded MEM1: created MEM2\n')
    assert '  superseded by: MEM2\n' in ok(console, 'show', 'MEM1')


def integrity_and_rows(database, read_only=False):
    """Return (integrity_check, every row of the memory and review tables)."""
    uri = database.as_uri() + ('?mode=ro' if read_only else '')
    conn = sqlite3.connect(uri, uri=True)
    try:
        check = conn.execute('PRAGMA integrity_check').fetchone()[0]
        rows = {table: conn.execute(f'SELECT * FROM {table} ORDER BY 1').fetchall()
                for table in ('memories', 'memory_links', 'payloads', 'receipts',
                              'supersessions', 'pending', 'pending_closed')}
        return check, rows
    finally:
        conn.close()
