# SPDX-License-Identifier: Apache-2.0
"""
admin/check, the dry run behind `memory check`, on a real memory node.

Cases of the grounding corpus go through admin/check and then through the
real remember service (their operator turn heard over DDS): the check must
have answered what remember answered, and must have written nothing (the
database file and its WAL byte for byte, the counts, the pending queue).
The console's `memory check` and `memory recall` print it. The core-level
comparison over the whole corpus: test/unit/test_memory_check.py.
"""

import functools

from helpers.corpus_cases import load, ROBOT_PROFILE
from helpers.memory_services import database_fingerprint, MemoryServices
from helpers.memory_services import remember_request, srv
from helpers.rosutil import console_memory_command
import pytest

pytestmark = pytest.mark.ros

# Enough of both answers, and quick.
CASES = 24


def start(memory_node, ros, tmp_path):
    database = tmp_path / 'memory.sqlite3'
    node = memory_node({'enabled': True, 'database_path': str(database),
                        'robot_profile': ROBOT_PROFILE}, ros=ros)
    return node, MemoryServices(ros, node.prefix, node), database


def check_request(case):
    proposal = case.proposal
    return srv.AdminCheck.Request(
        utterance=case.utterance, kind=proposal.kind, subject=proposal.subject,
        predicate=proposal.predicate, value=proposal.value,
        related_entity=proposal.related_entity or '', related_role=proposal.related_role or '',
        evidence=proposal.evidence)


def dry_run(memory, request):
    fields = {name: getattr(request, name) for name in request.get_fields_and_field_types()}
    response = memory.admin('check', **fields)
    assert response.success, (response.error_code, response.message)
    return response


def picked_cases(corpus):
    """Return the first CASES cases on turns of their own, half created, half rejected."""
    created = [case for case in corpus.cases
               if case.expect == 'created' and case.episode_id is None]
    rejected = [case for case in corpus.cases
                if case.expect == 'rejected' and case.episode_id is None]
    return created[:CASES // 2] + rejected[:CASES // 2]


def test_check_answers_what_remember_answers_and_writes_nothing(memory_node, ros, tmp_path):
    node, memory, database = start(memory_node, ros, tmp_path)
    corpus = load()
    for entity in corpus.entities:
        memory.entity(entity.name, entity_type=entity.entity_type, aliases=entity.aliases)
    answers = set()
    for number, case in enumerate(picked_cases(corpus), 1):
        counts, pending = memory.counts(), memory.admin('pending').pending_count
        before = database_fingerprint(database)
        checked = dry_run(memory, check_request(case))
        assert database_fingerprint(database) == before, case.label
        assert memory.counts() == counts and memory.admin('pending').pending_count == pending

        remembered = memory.remember(remember_request(case.context(number), case.proposal))
        assert (checked.status, checked.outcome, checked.reason) == (
            remembered.status, remembered.outcome, remembered.reason), case.label
        answers.add(remembered.status)
    assert answers == {'applied', 'rejected'}


def test_check_explains_a_refusal_and_uses_no_turn(memory_node, ros, tmp_path):
    node, memory, database = start(memory_node, ros, tmp_path)
    ada = memory.entity('Ada Lovelace')
    request = srv.AdminCheck.Request(
        utterance='Maybe Ada Lovelace prefers green tea.', kind='preference',
        subject='Ada Lovelace', predicate='prefers_drink', value='green tea')
    refused = dry_run(memory, request)
    assert (refused.status, refused.reason, refused.rule) == (
        'rejected', 'evidence_not_in_utterance', '10')
    assert refused.grounding_check == 'hedged' and refused.would_keep_for_review
    assert 'hedged' in refused.error
    assert memory.admin('pending').pending_count == 0

    request.utterance = 'Ada Lovelace prefers green tea.'
    admitted = dry_run(memory, request)
    assert (admitted.status, admitted.outcome, admitted.memory_ids) == ('applied', 'created', [])
    assert (admitted.summary, admitted.stored_value, admitted.subject_entity_id) == (
        'Ada Lovelace prefers green tea.', 'green tea', ada)
    assert memory.counts()['memory_count'] == 0


def test_check_on_a_disabled_node_says_so(memory_node, ros):
    node = memory_node({'enabled': False}, ros=ros)
    response = ros.call(srv.AdminCheck, f'{node.prefix}/admin/check', srv.AdminCheck.Request(
        utterance='Ada likes tea.', kind='fact', subject='Ada', predicate='likes', value='tea'))
    assert (response.success, response.error_code) == (False, 'disabled')


# The console's memory check and memory recall ---------------------------------------------


@pytest.fixture
def console(memory_node, ros, tmp_path):
    """Yield (run `memory ...` in a console session, MemoryServices, database path)."""
    from mira_memory.console import memory_console
    node, memory, database = start(memory_node, ros, tmp_path)
    session = memory_console.Session(
        ['memory_console'], memory_console.Settings(memory_node=node.prefix, timeout=20.0))
    try:
        yield functools.partial(console_memory_command, session), memory, database
    finally:
        session.close()


CHECK_TEA = ('check', 'Ada Lovelace prefers green tea.', '--subject', 'Ada Lovelace',
             '--predicate', 'prefers_drink', '--value', 'green tea', '--kind', 'preference',
             '--evidence', 'Ada Lovelace prefers green tea')


def test_console_check_prints_the_decision_and_why_and_writes_nothing(console):
    run, memory, database = console
    ada = memory.entity('Ada Lovelace')
    before, counts = database_fingerprint(database), memory.counts()

    code, out, err = run(*CHECK_TEA)
    assert (code, err) == (0, '')
    assert out.splitlines() == [
        'created: remember would store this as a new memory (dry run: nothing was written)',
        '  summary:    "Ada Lovelace prefers green tea"',
        '  value:      "green tea"',
        f'  subject:    {ada}']

    hedged = list(CHECK_TEA)
    hedged[1] = 'Maybe Ada Lovelace prefers green tea.'
    code, out, err = run(*hedged)
    assert (code, err) == (0, '')
    assert out.splitlines()[0] == (
        'rejected: evidence_not_in_utterance (rule 10) (dry run: nothing was written)')
    assert '  check:      hedged' in out.splitlines()
    assert "remember would keep it for a person's review" in out
    assert database_fingerprint(database) == before and memory.counts() == counts
    assert memory.admin('pending').pending_count == 0


def test_console_check_of_a_stored_statement_is_a_duplicate_and_recall_prints_it(console):
    run, memory, database = console
    ada = memory.entity('Ada Lovelace')
    stored = memory.memory('Ada Lovelace prefers green tea', [(ada, 'subject')],
                           kind='preference', predicate='prefers_drink', value='green tea')

    code, out, err = run(*CHECK_TEA)
    assert (code, err) == (0, '')
    assert out == (f'duplicate: already stored as {stored.id}; remember would write nothing '
                   'new (dry run: nothing was written)\n')

    code, out, err = run('recall', 'Ada Lovelace')
    assert (code, err) == (0, '')
    lines = out.splitlines()
    # What cognition hands the model: its header, then the node's text.
    assert lines[0] == 'recall_memory: found (exact_match)'
    assert any(line.startswith(f'  - {stored.id} preference: "Ada Lovelace prefers green tea"')
               for line in lines), out
    code, out, err = run('recall', 'Nobody Known')
    assert code == 0 and out.startswith('recall_memory: miss (no_exact_match)'), out


def test_console_check_needs_subject_predicate_and_value(console):
    run, memory, database = console
    code, out, err = run('check', 'Ada likes tea.', '--subject', 'Ada', '--value', 'tea')
    assert (code, out) == (2, '')
    assert err.startswith('usage error: missing --predicate <token> (usage: memory check ')
