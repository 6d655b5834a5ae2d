# SPDX-License-Identifier: Apache-2.0
"""
The console's lines for supervised review: pending, pending show, accept, supersede, dismiss.

commands.py parses the commands and session.py calls the services; the answers of
the review commands are rendered here, and so are the review parts of
`memory show` (a supervised memory's receipt, the supersession chain).
docs/review.md shows every one of them with real output.
"""

import datetime
import getpass
import json
import os
import socket

# The words of the commands rendered here (commands.COMMANDS).
COMMAND_WORDS = (('pending',), ('pending', 'show'), ('accept',), ('supersede',), ('dismiss',))
# The utterance quoted in the list: its first characters.
QUOTE_CHARACTERS = 48


def reviewer(person=None):
    """
    Return who decides, as the console sends it: the person and this console session.

    person: the console's --reviewer; by default the operating system user.
    The memory node keeps it in the receipt of what was accepted; it cannot
    check it (docs/review.md: who may decide is the admin enclave).
    """
    if not person:
        try:
            person = getpass.getuser()
        except (KeyError, OSError):
            person = f'uid {os.getuid()}'
    return f'{person} (memory_console_{os.getpid()} on {socket.gethostname()})'


def _quoted(text):
    return json.dumps(text, ensure_ascii=False)


def _short(text):
    text = ' '.join(text.split())
    if len(text) <= QUOTE_CHARACTERS:
        return _quoted(text)
    return _quoted(text[:QUOTE_CHARACTERS - 1].rstrip() + '…')


def age(created_at, now=None):
    """Return how long ago an ISO-8601 UTC time was: 40s, 12m, 5h, 3d."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    created = datetime.datetime.strptime(created_at, '%Y-%m-%dT%H:%M:%SZ').replace(
        tzinfo=datetime.timezone.utc)
    seconds = max(0, int((now - created).total_seconds()))
    for unit, size in (('d', 86400), ('h', 3600), ('m', 60)):
        if seconds >= size:
            return f'{seconds // size}{unit}'
    return f'{seconds}s'


def _refusal(item):
    return f'{item.reason} ({item.rule})'


def _slot(item):
    return f'{item.predicate} = {_quoted(item.value)}'


def render(words, response, table):
    """Return the lines of a successful review command's response (table: the console's)."""
    if words == ('pending',):
        return _pending(response, table)
    if words == ('pending', 'show'):
        return _pending_show(response)
    lines = [response.message]
    if words != ('dismiss',):
        memory = response.memory
        lines.append(f'  {memory.id} {memory.kind} {_quoted(memory.summary)} '
                     f'({memory.source_kind})')
    if getattr(response, 'entity_created', False):
        entity = response.entity
        aliases = ''
        if entity.aliases:
            aliases = ' (aliases: ' + ', '.join(_quoted(a) for a in entity.aliases) + ')'
        lines.append(f'  {entity.id} {entity.entity_type} {_quoted(entity.canonical_name)}'
                     + aliases)
    return lines


def _pending(response, table):
    queue = (f'keeping new refusals: {"on" if response.enabled else "off"}, at most '
             f'{response.max_items} items, each {response.max_age_days:g} days; dropped '
             f'{response.dropped_count}, expired {response.expired_count}')
    if not response.items:
        return [f'no pending items ({queue})']
    lines = [f'{response.pending_count} pending ({queue})']
    rows = [('ID', 'AGE', 'REASON', 'SUBJECT', 'PREDICATE/VALUE', 'UTTERANCE')]
    rows += [(item.id, age(item.created_at), _refusal(item), _quoted(item.subject),
              _slot(item), _short(item.utterance)) for item in response.items]
    lines += table(rows)
    if response.items_truncated:
        lines.append(f'(only the oldest {len(response.items)} are listed)')
    return lines


def _pending_show(response):
    item = response.item
    # The rules end an explanation with the trigger that decided (results.explanation).
    explanation, _, decided_by = item.explanation.partition(' Decided by: ')
    lines = [
        f'{item.id}',
        f'  kept:         {item.created_at} (expires {item.expires_at})',
        f'  refused:      {_refusal(item)}',
        f'  explanation:  {explanation}',
        f'  utterance:    {_quoted(item.utterance)}',
        f'  turn:         episode {_quoted(item.episode_id)} turn {_quoted(item.turn_id)}',
        f'  proposal:     {item.kind} subject {_quoted(item.subject)} predicate '
        f'{_quoted(item.predicate)} value {_quoted(item.value)}',
    ]
    if decided_by:
        lines.insert(4, f'  decided by:   {decided_by.removesuffix(".")}')
    if item.related_entity or item.related_role:
        lines.append(f'  related:      {_quoted(item.related_entity)} role '
                     f'{_quoted(item.related_role)}')
    lines += [
        f'  evidence:     {_quoted(item.evidence)}',
        f'  robot:        {_quoted(item.robot_profile)}',
    ]
    if item.conflicting_memory_ids:
        lines.append(f'  conflicts:    {" ".join(item.conflicting_memory_ids)}')
    now = now_text(response.now_status, response.now_reason, response.now_rule,
                   response.now_memory_ids)
    return lines + [f'  rules:        {item.rules_version}+{item.rules_digest}',
                    f'  now:          {now}']


def now_text(status, reason, rule, memory_ids):
    """Return what the running rules say of a pending item now (show and verify)."""
    if status == 'now_admissible':
        return 'NOW ADMISSIBLE (the rules would admit it as it is)'
    if status == 'already_stored':
        return f'ALREADY STORED as {" ".join(memory_ids)}'
    text = f'still refused: {reason} ({rule})'
    if memory_ids:
        text += f' with {" ".join(memory_ids)}'
    return text


def show_lines(response):
    """Return memory show's review lines: the supersession chain."""
    lines = []
    if response.superseded_by:
        lines.append(f'  superseded by: {response.superseded_by}')
    if response.supersedes:
        lines.append(f'  supersedes:   {" ".join(response.supersedes)}')
    return lines


def receipt_review_lines(receipt):
    """Return a supervised memory's receipt lines: who accepted it, and why it had been refused."""
    if not receipt.review_action:
        return []
    return [
        f'    review:     {receipt.review_action} of {receipt.pending_id} by '
        f'{_quoted(receipt.reviewed_by)}',
        f'    refused:    {receipt.refused_reason} ({receipt.refused_rule}) at '
        f'{receipt.refused_at}: {receipt.refused_explanation}',
    ]


def _verify_pending(response):
    return zip(response.pending_ids, response.pending_statuses, response.pending_reasons,
               response.pending_rules)


def verify_pending_lines(response):
    """Return memory verify's lines for the pending items judged (none when there are none)."""
    if not response.pending_judged:
        return []
    lines = []
    for pending_id, status, reason, rule in _verify_pending(response):
        if status == 'now_admissible':
            lines.append(f'{pending_id} NOW ADMISSIBLE')
        elif status == 'already_stored':
            lines.append(f'{pending_id} ALREADY STORED')
        else:
            lines.append(f'{pending_id} STILL REFUSED {reason} ({rule})')
    return lines + [f'judged {response.pending_judged} pending review items: '
                    f'{response.pending_now_admissible} now admissible']


def verify_pending_records(response):
    """Return memory verify --json's pending records."""
    records = []
    for pending_id, status, reason, rule in _verify_pending(response):
        record = {'pending_id': pending_id, 'status': status}
        if reason:
            record.update(reason=reason, rule=rule)
        records.append(record)
    return records
