# SPDX-License-Identifier: Apache-2.0
"""
The console's rendering: one response (or a job's result) to an exit code and lines.

The review commands' lines are in console/review_lines.py, the jobs' in
console/jobs.py; this module maps every other answer.
"""

import json

from mira_memory.console import check_lines, jobs, review_lines
from mira_memory.console.commands import COGNITION, EXIT_FAILED, EXIT_OK, quoted


def _table(rows, indent=''):
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [indent + '  '.join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in rows]


def _predicate_value(memory):
    if memory.predicate and memory.value:
        return f'{memory.predicate} = {quoted(memory.value)}'
    if memory.value:
        return f'= {quoted(memory.value)}'
    return memory.predicate or '-'


def _links(memory):
    return ' '.join(f'{link.entity_id}:{link.role}' for link in memory.links) or '-'


def _entity_heading(entity):
    heading = f'{entity.id} {entity.entity_type} {quoted(entity.canonical_name)}'
    if entity.aliases:
        heading += ' (aliases: ' + ', '.join(quoted(alias) for alias in entity.aliases) + ')'
    return heading


def _entity_block(entity):
    lines = [_entity_heading(entity)]
    if not entity.memories:
        return lines + ['  no active memories']
    rows = [('ID', 'KIND', 'SUMMARY', 'PREDICATE/VALUE', 'LINKS')]
    rows += [(memory.id, memory.kind, memory.summary, _predicate_value(memory), _links(memory))
             for memory in entity.memories]
    lines += _table(rows, indent='  ')
    if entity.memories_truncated:
        lines.append('  (older active memories not shown)')
    return lines


def _optional(text):
    return text if text else '-'


def render(command, response):
    """Map one response to (exit code, lines); a failure is one line for stderr."""
    if command.target == COGNITION:
        if command.words == ('clear',):
            return EXIT_OK, [f'cleared {response.cleared} working memory entries '
                             '(persistent memory is untouched)']
        if not response.entries:
            return EXIT_OK, [f'working memory is empty (capacity {response.capacity} entries, '
                             f'{response.max_characters} characters)']
        return EXIT_OK, (
            [f'working memory: {len(response.entries)} of {response.capacity} entries '
             f'({response.characters} of {response.max_characters} characters), '
             'oldest first (volatile)']
            + [f'  {index}. ' + ' '.join(entry.split())
               for index, entry in enumerate(response.entries, 1)])
    if command.words in check_lines.COMMAND_WORDS:
        return check_lines.render(command.words, response)
    if not response.success:
        return EXIT_FAILED, [f'error: {response.error_code}: {response.message}']
    name = command.words
    if name == ('persistent',):
        if not response.enabled:
            return EXIT_OK, ['persistent memory is disabled',
                             f'  robot profile:  {quoted(response.robot_profile)}']
        return EXIT_OK, [
            'persistent memory is enabled',
            f'  database:       {response.database_path}',
            f'  schema version: {response.schema_version}',
            f'  robot profile:  {quoted(response.robot_profile)}',
            f'  entities:       {response.entity_count}',
            f'  aliases:        {response.alias_count}',
            f'  memories:       {response.memory_count} '
            f'({response.active_memory_count} active)',
            f'  links:          {response.link_count}',
            f'  payloads:       {response.payload_count}',
            f'  pending review: {response.pending_count}',
        ] + [f'  {line}' for line in response.replication]
    if name == ('entity', 'add'):
        return EXIT_OK, ['created ' + _entity_heading(response.entity)]
    if name == ('alias', 'add'):
        # Aliases come in insertion order, so the new one (in display form) is last.
        return EXIT_OK, [f'added alias {quoted(response.entity.aliases[-1])} to '
                         + _entity_heading(response.entity)]
    if name == ('entity', 'find'):
        if not response.entities:
            return EXIT_OK, ['no entity has that exact name or alias']
        rows = [('ID', 'TYPE', 'CANONICAL NAME', 'ALIASES')]
        rows += [(entity.id, entity.entity_type, entity.canonical_name,
                  ', '.join(entity.aliases) or '-') for entity in response.entities]
        return EXIT_OK, _table(rows)
    if name == ('find',):
        if not response.entities:
            return EXIT_OK, ['no entity has that exact name or alias']
        lines = []
        for entity in response.entities:
            lines += ([''] if lines else []) + _entity_block(entity)
        return EXIT_OK, lines
    if name == ('list',):
        return EXIT_OK, _entity_block(response.entity)
    if name == ('forget',):
        lines = [response.message]
        if response.memory_ids:
            lines.append('  memories: ' + ' '.join(response.memory_ids))
        if response.pending_ids:
            lines.append('  pending review items: ' + ' '.join(response.pending_ids))
        if not response.applied:
            lines.append('nothing was removed; add --yes to remove it for good')
        return EXIT_OK, lines
    if name in (('backup',), ('export',)):
        return EXIT_OK, [
            f'{name[0]} written: {response.path} ({response.bytes} bytes)',
            f'  entities {response.entity_count}, aliases {response.alias_count}, '
            f'memories {response.memory_count}, links {response.link_count}, '
            f'payloads {response.payload_count}']
    if name == ('verify',):
        return _render_verify(command, response)
    if name == ('jobs',):
        return EXIT_OK, jobs.job_lines(response)
    if name in review_lines.COMMAND_WORDS:
        return EXIT_OK, review_lines.render(name, response, _table)
    if name == ('retire',):
        return EXIT_OK, [f'retired {response.memory.id} at {response.retired_at}: '
                         f'{quoted(response.retired_reason)}']
    memory = response.memory
    if name == ('add',):
        return EXIT_OK, [f'created {memory.id} {memory.kind} {quoted(memory.summary)}']
    lines = [
        memory.id,
        f'  kind:         {memory.kind}',
        f'  summary:      {memory.summary}',
        f'  predicate:    {_optional(memory.predicate)}',
        f'  value:        {_optional(memory.value)}',
        f'  source kind:  {memory.source_kind}',
        f'  source label: {_optional(memory.source_label)}',
        f'  confidence:   {memory.confidence if memory.has_confidence else "-"}',
        f'  status:       {memory.status}',
        f'  created at:   {memory.created_at}',
    ]
    if response.retired_at:
        lines += [f'  retired at:   {response.retired_at}',
                  f'  reason:       {response.retired_reason}']
    lines += review_lines.show_lines(response)
    lines += [f'  link:         {link.entity_id}:{link.role} {quoted(link.entity_name)}'
              for link in memory.links] or ['  links:        -']
    for payload in response.payloads:
        body = (quoted(payload.text) if payload.storage == 'inline'
                else f'ref {payload.object_ref} sha256 {payload.sha256}')
        lines.append(f'  payload {payload.id}:    {payload.storage} {payload.media_type} {body}')
    return EXIT_OK, lines + _receipt_lines(response)


def _receipt_lines(response):
    if not response.has_receipt:
        return ['  receipt:      none (added by the console, or remembered before schema '
                'version 3)']
    receipt = response.receipt
    lines = [
        f'  receipt:      rules {receipt.rules_version}+{receipt.rules_digest}, '
        f'ran {receipt.rules_ran}, written {receipt.created_at}',
        f'    utterance:  {quoted(receipt.utterance)}',
        f'    turn:       episode {quoted(receipt.episode_id)} turn '
        f'{quoted(receipt.turn_id)}',
        f'    proposal:   {receipt.kind} subject {quoted(receipt.subject)} predicate '
        f'{quoted(receipt.predicate)} value {quoted(receipt.value)}',
    ]
    if receipt.related_entity or receipt.related_role:
        lines.append(f'    related:    {quoted(receipt.related_entity)} role '
                     f'{quoted(receipt.related_role)}')
    resolved = f'subject {receipt.subject_entity_id}'
    if receipt.related_entity_id:
        resolved += f', related {receipt.related_entity_id}'
    return lines + [
        f'    evidence:   {quoted(receipt.evidence)}',
        f'    robot:      {quoted(receipt.robot_profile)}',
        f'    resolved:   {resolved}',
    ] + review_lines.receipt_review_lines(receipt)


VERIFY_COUNTS = ('judged', 'ok', 'would_reject', 'no_receipt', 'mismatch', 'not_judged',
                 'other_rules')


def _verify_findings(response):
    return zip(response.finding_memory_ids, response.finding_statuses,
               response.finding_reasons, response.finding_rules,
               response.finding_rules_versions, response.finding_rules_digests)


def _render_verify(command, response):
    """Print each finding and the summary (or one JSON document); exit 1 unless all OK."""
    status = EXIT_OK if response.ok == response.judged else EXIT_FAILED
    if command.as_json:
        findings = []
        for memory_id, state, reason, rule, version, digest in _verify_findings(response):
            record = {'memory_id': memory_id, 'status': state}
            record.update((key, value) for key, value in (
                ('reason', reason), ('rule', rule), ('rules_version', version),
                ('rules_digest', digest)) if value)
            findings.append(record)
        summary = {name: getattr(response, name) for name in VERIFY_COUNTS}
        summary.update(rules_version=response.rules_version,
                       rules_digest=response.rules_digest)
        document = {'findings': findings, 'findings_truncated': response.findings_truncated,
                    'summary': summary}
        if response.pending_judged:
            document['pending'] = review_lines.verify_pending_records(response)
        return status, [json.dumps(document, ensure_ascii=False, indent=1, sort_keys=True)]
    lines = []
    for memory_id, state, reason, rule, _, _ in _verify_findings(response):
        if state == 'would_reject':
            lines.append(f'{memory_id} WOULD REJECT {reason} ({rule})')
        elif state == 'no_receipt':
            lines.append(f'{memory_id} NO RECEIPT')
        elif state == 'mismatch':
            lines.append(f'{memory_id} MISMATCH {reason}')
        else:
            lines.append(f'{memory_id} NOT JUDGED {reason}')
    if response.findings_truncated:
        lines.append(f'(only the first {len(response.finding_memory_ids)} are listed; '
                     'the counts below are exact)')
    # The pending items never change the exit code: they are not memories.
    return status, lines + [response.message] + review_lines.verify_pending_lines(response)
