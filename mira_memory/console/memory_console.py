# SPDX-License-Identifier: Apache-2.0
"""
The operator console: the spec's `memory ...` commands over ROS services.

One-shot: `memory_console [options] memory entity add person "Ada Lovelace"`;
interactive: `memory_console [options]` reads the same commands from a prompt.
Persistent-memory commands call the memory node's admin services, `memory`
and `memory clear` the cognition node's working-memory services, each with a
deadline. backup, export and verify are goals of the node's actions, with
progress, Ctrl-C to cancel and no fixed wait (console/jobs.py); `memory
jobs` shows the one that runs.

The console checks only syntax (command words, argument count, ENT<n>/MEM<n>
format, option names, the confidence range). Everything else is decided by
the memory node, the single authority, whose error code and message are
printed as they come.

Exit codes: 0 success, 1 the call failed or nobody answered, 2 bad usage,
130 a job canceled with Ctrl-C.
"""

import dataclasses
from dataclasses import dataclass
import json
import math
import os
import shlex
import sys
import time

from mira_memory.action import Backup, Export, Verify
from mira_memory.console import jobs, review_lines
from mira_memory.core import store
from mira_memory.msg import MemoryLink
from mira_memory.ros import clients
from mira_memory.srv import AdminAccept, AdminDismiss, AdminPending, AdminPendingShow
from mira_memory.srv import AdminAdd, AdminAliasAdd, AdminEntityAdd, AdminEntityFind
from mira_memory.srv import AdminFind, AdminForget, AdminJobs, AdminList, AdminRetire
from mira_memory.srv import AdminShow, AdminStatus, AdminSupersede
from mira_memory.srv import WorkingMemoryClear, WorkingMemoryShow
import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

DEFAULT_MEMORY_NODE = '/mira/memory'
DEFAULT_COGNITION_NODE = '/mira/cognition'
DEFAULT_TIMEOUT = 5.0
PROMPT = 'mira> '

MEMORY = 'memory'
COGNITION = 'cognition'
# One attempt of the first, read-only call that checks both directions of
# discovery; a reply normally takes milliseconds.
SETTLE_ATTEMPT_SEC = 0.5
SETTLE_SERVICES = {
    MEMORY: (AdminStatus, 'admin/status'),
    COGNITION: (WorkingMemoryShow, 'working_memory/show'),
}


class UsageError(Exception):
    """The command line is malformed; nothing was sent."""


class CallError(Exception):
    """The service call did not produce an answer."""


@dataclass(frozen=True)
class Command:
    """One console command: its words, positional arguments and service."""

    words: tuple
    # (placeholder shown in usage, request field) per positional argument.
    arguments: tuple
    service_type: type
    service: str
    target: str
    summary: str
    # {option name: Option}; None when the command takes none.
    options: dict = None
    # The last positional argument takes any number of words (verify's MEM<n> ...).
    variadic: bool = False
    # --json was given (verify): print one JSON document.
    as_json: bool = False
    # A long job: service_type is the action (console/jobs.py), service its name.
    job: bool = False
    # --no-wait was given (a job): print the goal id once the node accepted it.
    no_wait: bool = False

    @property
    def usage(self):
        """Return the command's syntax as the spec writes it."""
        parts = ['memory', *self.words, *(
            f'[{placeholder} ...]' if self.variadic else placeholder
            for placeholder, _ in self.arguments)]
        for option, option_spec in (self.options or {}).items():
            text = option if option_spec.flag else f'{option} {option_spec.placeholder}'
            if option_spec.required:
                parts.append(text)
            else:
                parts.append(f'[{text}]' + ('...' if option_spec.repeatable else ''))
        return ' '.join(parts)


@dataclass(frozen=True)
class Option:
    """One command option: a value, or a flag that sets a bool field."""

    placeholder: str
    field: str
    repeatable: bool = False
    flag: bool = False
    required: bool = False


ADD_OPTIONS = {
    '--link': Option('ENT<n>:<role>', 'links', repeatable=True),
    '--predicate': Option('<token>', 'predicate'),
    '--value': Option('"<text>"', 'value'),
    '--source-kind': Option('<token>', 'source_kind'),
    '--source-label': Option('"<text>"', 'source_label'),
    '--confidence': Option('<0.0..1.0>', 'confidence'),
}
FORCE_OPTION = {'--force': Option('', 'force', flag=True)}
ACCEPT_OPTIONS = {
    '--new-entity': Option('TYPE', 'new_entity_type'),
    '--alias': Option('"<alias>"', 'aliases', repeatable=True),
}
# Every job's console option (not a goal field): handled in parse_command.
NO_WAIT = '--no-wait'
NO_WAIT_OPTION = {NO_WAIT: Option('', '', flag=True)}

COMMANDS = (
    Command(('persistent',), (), AdminStatus, 'admin/status', MEMORY,
            'is persistent memory enabled; its file, schema version and counts'),
    Command(('entity', 'add'),
            (('<entity_type>', 'entity_type'), ('"<canonical name>"', 'canonical_name')),
            AdminEntityAdd, 'admin/entity_add', MEMORY, 'create an entity'),
    Command(('entity', 'find'), (('"<name>"', 'name'),),
            AdminEntityFind, 'admin/entity_find', MEMORY,
            'entities whose canonical name or alias matches exactly (normalized)'),
    Command(('alias', 'add'), (('ENT<n>', 'entity_id'), ('"<alias>"', 'alias')),
            AdminAliasAdd, 'admin/alias_add', MEMORY, 'add an alias to an entity'),
    Command(('find',), (('"<name>"', 'name'),), AdminFind, 'admin/find', MEMORY,
            'every exact match in entity-id order with its linked active memories'),
    Command(('add',), (('<kind>', 'kind'), ('"<summary>"', 'summary')),
            AdminAdd, 'admin/add', MEMORY,
            'create a memory (fact, preference, relationship, observation or event) '
            'with one text/plain payload holding the summary', options=ADD_OPTIONS),
    Command(('show',), (('MEM<n>', 'memory_id'),), AdminShow, 'admin/show', MEMORY,
            'one memory with every field, its links and payloads'),
    Command(('list',), (('ENT<n>', 'entity_id'),), AdminList, 'admin/list', MEMORY,
            "an entity's linked active memories"),
    Command(('retire',), (('MEM<n>', 'memory_id'),), AdminRetire, 'admin/retire', MEMORY,
            'mark a memory retired (kept, shown by show; skipped by recall, find, list '
            'and admission)',
            options={'--reason': Option('"<text>"', 'reason', required=True)}),
    Command(('forget',), (('MEM<n>|ENT<n>', 'target'),), AdminForget, 'admin/forget', MEMORY,
            'show what would be removed; with --yes delete the memory (links, payloads) or '
            'the entity (aliases, every linked memory) for good',
            options={'--yes': Option('', 'confirm', flag=True)}),
    Command(('backup',), (('PATH', 'path'),), Backup, 'admin/backup', MEMORY,
            'consistent online copy of the database to an absolute PATH (never replaces '
            'a file without --force)', options={**FORCE_OPTION, **NO_WAIT_OPTION}, job=True),
    Command(('export',), (('PATH', 'path'),), Export, 'admin/export', MEMORY,
            'deterministic JSON Lines export to an absolute PATH (memory_import reads it); '
            '--with-pending adds the refused proposals waiting for review (private)',
            options={**FORCE_OPTION, **NO_WAIT_OPTION,
                     '--with-pending': Option('', 'include_pending', flag=True)},
            job=True),
    Command(('verify',), (('MEM<n>', 'memory_ids'),), Verify, 'admin/verify', MEMORY,
            'judge every active remembered memory (or those named) again against its '
            'receipt with the running rules; lists each one that is not OK; exit 1 if any',
            options={'--json': Option('', 'as_json', flag=True), **NO_WAIT_OPTION},
            variadic=True, job=True),
    Command(('jobs',), (), AdminJobs, 'admin/jobs', MEMORY,
            'the backup, export or verify running on the node: goal id and progress'),
    Command(('pending',), (), AdminPending, 'admin/pending', MEMORY,
            'the refused proposals waiting for review: id, age, reason, subject, '
            'predicate/value and the start of the utterance'),
    Command(('pending', 'show'), (('P<n>', 'pending_id'),), AdminPendingShow,
            'admin/pending_show', MEMORY,
            'one pending item in full, with its explanation and what the rules say of it now'),
    Command(('accept',), (('P<n>', 'pending_id'),), AdminAccept, 'admin/accept', MEMORY,
            'write the pending item as a memory a person accepted (supervised); '
            '--new-entity TYPE first creates the entity an unknown subject or related '
            'entity names', options=ACCEPT_OPTIONS),
    Command(('supersede',), (('P<n>', 'pending_id'),), AdminSupersede, 'admin/supersede',
            MEMORY, 'retire the memory the pending item conflicts with and write it, in one '
                    'transaction'),
    Command(('dismiss',), (('P<n>', 'pending_id'),), AdminDismiss, 'admin/dismiss', MEMORY,
            'remove the pending item'),
    Command((), (), WorkingMemoryShow, 'working_memory/show', COGNITION,
            "show the cognition node's volatile working memory"),
    Command(('clear',), (), WorkingMemoryClear, 'working_memory/clear', COGNITION,
            "clear the cognition node's volatile working memory"),
)

_ID_PARSERS = {
    'ENT<n>': (store.parse_entity_id, 'an entity id', 'ENT1'),
    'MEM<n>': (store.parse_memory_id, 'a memory id', 'MEM1'),
    'P<n>': (store.parse_pending_id, 'a pending item id', 'P1'),
    'MEM<n>|ENT<n>': (
        lambda text: (store.parse_entity_id if text.startswith('ENT')
                      else store.parse_memory_id)(text),
        'a memory or entity id', 'MEM1'),
}


def _check_id(placeholder, text):
    parse, what, example = _ID_PARSERS[placeholder]
    try:
        parse(text)
    except store.InvalidInputError:
        raise UsageError(
            f'{_quoted(text)} is not {what} (expected {placeholder}, e.g. {example})') from None
    return text


def _link(text):
    entity_id, separator, role = text.partition(':')
    if not separator or not role:
        raise UsageError(f'--link needs ENT<n>:<role>, got {_quoted(text)}')
    return MemoryLink(entity_id=_check_id('ENT<n>', entity_id), role=role)


def _confidence(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise UsageError(f'--confidence needs a number from 0.0 to 1.0, got {_quoted(text)}')
    return value


def _match_command(words):
    matches = [command for command in COMMANDS
               if tuple(words[:len(command.words)]) == command.words]
    command = max(matches, key=lambda candidate: len(candidate.words))
    if command.words or not words:
        return command
    # Only bare `memory` matched, so the first word names no command.
    first = tuple(words[:1])
    related = [candidate.usage for candidate in COMMANDS if candidate.words[:1] == first]
    if related:
        raise UsageError('usage: ' + ' | '.join(related))
    raise UsageError(f'unknown command: memory {words[0]} (type help for the commands)')


def parse_command(tokens):
    """Turn the words of one command into (Command, request); raise UsageError."""
    if not tokens or tokens[0] != 'memory':
        shown = tokens[0] if tokens else ''
        raise UsageError(
            f'unknown command: {shown} (commands start with "memory"; type help)')
    command = _match_command(tokens[1:])
    rest = tokens[1 + len(command.words):]
    # Anything that starts with -- is an option, so arguments come first.
    count = next((i for i, token in enumerate(rest) if token.startswith('--')), len(rest))
    arguments, options = rest[:count], rest[count:]
    if command.job and NO_WAIT in options:
        options.remove(NO_WAIT)
        command = dataclasses.replace(command, no_wait=True)
    if command.variadic:
        return _parse_variadic(command, arguments, options)
    if len(arguments) < len(command.arguments):
        missing = command.arguments[len(arguments)][0]
        raise UsageError(f'missing {missing} (usage: {command.usage})')
    if len(arguments) > len(command.arguments):
        raise UsageError(
            f'unexpected argument {_quoted(arguments[len(command.arguments)])} '
            f'(usage: {command.usage})')
    request = _new_request(command)
    for (placeholder, field), text in zip(command.arguments, arguments):
        if placeholder in _ID_PARSERS:
            _check_id(placeholder, text)
        if placeholder == 'PATH' and not os.path.isabs(text):
            # The node, not this console, writes the file: a relative path
            # would silently mean the node's working directory.
            raise UsageError(f'PATH must be absolute, got {_quoted(text)}')
        setattr(request, field, text)
    if command.options:
        _apply_options(request, options, command)
    elif options:
        raise UsageError(f'unknown option {options[0]} (usage: {command.usage})')
    return command, request


def _new_request(command):
    """Return an empty request: a job's goal, or a service's request."""
    return command.service_type.Goal() if command.job else command.service_type.Request()


def _parse_variadic(command, arguments, options):
    """Parse verify: any number of MEM<n> ids, then --json (a console option)."""
    (placeholder, field), = command.arguments
    request = _new_request(command)
    setattr(request, field, [_check_id(placeholder, text) for text in arguments])
    for option in options:
        if option != '--json':
            raise UsageError(f'unknown option {option.partition("=")[0]} '
                             f'(usage: {command.usage})')
        command = dataclasses.replace(command, as_json=True)
    return command, request


def _apply_options(request, tokens, command):
    seen = set()
    links = []
    tokens = list(tokens)
    while tokens:
        name, separator, value = tokens.pop(0).partition('=')
        option = command.options.get(name)
        if option is None:
            raise UsageError(f'unknown option {name} (usage: {command.usage})')
        if option.flag:
            if separator:
                raise UsageError(f'{name} takes no value')
            setattr(request, option.field, True)
            continue
        if not separator:
            if not tokens:
                raise UsageError(f'{name} needs a value {option.placeholder}')
            value = tokens.pop(0)
        if name in seen and not option.repeatable:
            raise UsageError(f'{name} given twice')
        seen.add(name)
        # An empty text is how the request says "absent", so it cannot be a value.
        if not value:
            raise UsageError(f'{name} needs a non-empty value {option.placeholder}')
        if name == '--link':
            links.append(_link(value))
        elif option.repeatable:
            setattr(request, option.field, [*getattr(request, option.field), value])
        elif name == '--confidence':
            request.has_confidence = True
            request.confidence = _confidence(value)
        else:
            setattr(request, option.field, value)
    for name, option in command.options.items():
        if option.required and name not in seen:
            raise UsageError(f'missing {name} {option.placeholder} (usage: {command.usage})')
    if command.options is ADD_OPTIONS:
        request.links = links


def _quoted(text):
    return json.dumps(text, ensure_ascii=False)


def _table(rows, indent=''):
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [indent + '  '.join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in rows]


def _predicate_value(memory):
    if memory.predicate and memory.value:
        return f'{memory.predicate} = {_quoted(memory.value)}'
    if memory.value:
        return f'= {_quoted(memory.value)}'
    return memory.predicate or '-'


def _links(memory):
    return ' '.join(f'{link.entity_id}:{link.role}' for link in memory.links) or '-'


def _entity_heading(entity):
    heading = f'{entity.id} {entity.entity_type} {_quoted(entity.canonical_name)}'
    if entity.aliases:
        heading += ' (aliases: ' + ', '.join(_quoted(alias) for alias in entity.aliases) + ')'
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
    if not response.success:
        return EXIT_FAILED, [f'error: {response.error_code}: {response.message}']
    name = command.words
    if name == ('persistent',):
        if not response.enabled:
            return EXIT_OK, ['persistent memory is disabled',
                             f'  robot profile:  {_quoted(response.robot_profile)}']
        return EXIT_OK, [
            'persistent memory is enabled',
            f'  database:       {response.database_path}',
            f'  schema version: {response.schema_version}',
            f'  robot profile:  {_quoted(response.robot_profile)}',
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
        return EXIT_OK, [f'added alias {_quoted(response.entity.aliases[-1])} to '
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
                         f'{_quoted(response.retired_reason)}']
    memory = response.memory
    if name == ('add',):
        return EXIT_OK, [f'created {memory.id} {memory.kind} {_quoted(memory.summary)}']
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
    lines += [f'  link:         {link.entity_id}:{link.role} {_quoted(link.entity_name)}'
              for link in memory.links] or ['  links:        -']
    for payload in response.payloads:
        body = (_quoted(payload.text) if payload.storage == 'inline'
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
        f'    utterance:  {_quoted(receipt.utterance)}',
        f'    turn:       episode {_quoted(receipt.episode_id)} turn '
        f'{_quoted(receipt.turn_id)}',
        f'    proposal:   {receipt.kind} subject {_quoted(receipt.subject)} predicate '
        f'{_quoted(receipt.predicate)} value {_quoted(receipt.value)}',
    ]
    if receipt.related_entity or receipt.related_role:
        lines.append(f'    related:    {_quoted(receipt.related_entity)} role '
                     f'{_quoted(receipt.related_role)}')
    resolved = f'subject {receipt.subject_entity_id}'
    if receipt.related_entity_id:
        resolved += f', related {receipt.related_entity_id}'
    return lines + [
        f'    evidence:   {_quoted(receipt.evidence)}',
        f'    robot:      {_quoted(receipt.robot_profile)}',
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


class Session:
    """One console node in a private rclpy context; every call has a deadline."""

    def __init__(self, ros_args, settings):
        self.settings = settings
        self.context = Context()
        # The console handles Ctrl-C itself (cancel the line or the call).
        rclpy.init(args=ros_args, context=self.context,
                   signal_handler_options=SignalHandlerOptions.NO)
        try:
            self.node = rclpy.create_node(
                f'memory_console_{os.getpid()}', context=self.context,
                start_parameter_services=False)
            self.executor = SingleThreadedExecutor(context=self.context)
            self.executor.add_node(self.node)
        except BaseException:
            rclpy.try_shutdown(context=self.context)
            raise
        self._clients = {}
        # The jobs' action clients (console/jobs.py), destroyed in close().
        self.action_clients = {}
        self._settled = set()

    def _client(self, service_type, name):
        key = (service_type, name)
        if key not in self._clients:
            self._clients[key] = self.node.create_client(service_type, name)
        return self._clients[key]

    def _settle(self, kind, target, deadline):
        """
        Get one reply from a read-only service of the target node first.

        wait_for_service only says that this new console found the service;
        until the node has discovered the console in turn, a reply can be
        dropped for good (seen on a loaded machine with Kilted). Repeating a
        read is harmless, repeating a write is not, so no command goes out
        before one read came back.
        """
        service_type, service = SETTLE_SERVICES[kind]
        client = self._client(service_type, f'{target.rstrip("/")}/{service}')
        while time.monotonic() < deadline:
            attempt = min(time.monotonic() + SETTLE_ATTEMPT_SEC, deadline)
            if clients.call(self.executor, client, service_type.Request(), attempt) is not None:
                self._settled.add(kind)
                return

    def call(self, command, request):
        """Call the command's service and return the response; raise CallError."""
        target = self._target(command)
        name = f'{target.rstrip("/")}/{command.service}'
        client = self._client(command.service_type, name)
        timeout = self.settings.timeout
        deadline = time.monotonic() + timeout
        if not client.wait_for_service(timeout_sec=timeout):
            raise CallError(f'no {command.target} node answered at {target} within {timeout} s')
        if command.target not in self._settled:
            self._settle(command.target, target, deadline)
        if hasattr(request, 'reviewer'):
            # Accept, supersede and dismiss say who decides (review_lines.reviewer).
            request.reviewer = review_lines.reviewer(self.settings.reviewer)
        response = clients.call(self.executor, client, request, deadline)
        if response is None:
            raise CallError(
                f'the {command.target} node at {target} did not answer {name} '
                f'within {timeout} s')
        return response

    def settle_memory(self, deadline):
        """Get one reply from the memory node before a job's goal (a write) goes out."""
        if MEMORY not in self._settled:
            self._settle(MEMORY, self.settings.memory_node, deadline)

    def _target(self, command):
        return (self.settings.memory_node if command.target == MEMORY
                else self.settings.cognition_node)

    def close(self):
        """Destroy the node and shut the private context down."""
        for client in self.action_clients.values():
            client.destroy()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@dataclass
class Settings:
    """Console options given before the command."""

    memory_node: str = DEFAULT_MEMORY_NODE
    cognition_node: str = DEFAULT_COGNITION_NODE
    timeout: float = DEFAULT_TIMEOUT
    # Who accepts, supersedes or dismisses pending items; default: the OS user.
    reviewer: str = ''
    show_help: bool = False


def _node_name(option, value):
    if not value or value.strip() != value or '//' in value:
        raise UsageError(f'{option} needs a node name such as /mira/memory, got {_quoted(value)}')
    return value


def _timeout(option, value):
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f'{option} needs a positive number of seconds, got {_quoted(value)}')
    return seconds


def _reviewer(option, value):
    if not value.strip() or not value.isprintable():
        raise UsageError(f'{option} needs a name, got {_quoted(value)}')
    return value


_CONSOLE_OPTIONS = {
    '--memory-node': ('memory_node', _node_name),
    '--cognition-node': ('cognition_node', _node_name),
    '--timeout': ('timeout', _timeout),
    '--reviewer': ('reviewer', _reviewer),
}


def parse_console_options(args):
    """Split leading console options from the command words; raise UsageError."""
    settings = Settings()
    args = list(args)
    while args and args[0].startswith('-') and args[0] != '-':
        name, separator, value = args.pop(0).partition('=')
        if name in ('-h', '--help') and not separator:
            settings.show_help = True
            continue
        if name not in _CONSOLE_OPTIONS:
            raise UsageError(f'unknown option {name} (options: --memory-node, '
                             '--cognition-node, --timeout, --reviewer, --help)')
        if not separator:
            if not args:
                raise UsageError(f'{name} needs a value')
            value = args.pop(0)
        field, convert = _CONSOLE_OPTIONS[name]
        setattr(settings, field, convert(name, value))
    return settings, args


def help_text():
    """Return the console's help: options, commands and exit codes."""
    lines = [
        'usage: memory_console [--memory-node NODE] [--cognition-node NODE] '
        '[--timeout SECONDS] [--reviewer NAME] [COMMAND...] [--ros-args ...]',
        '',
        'Without a command, commands are read from an interactive prompt',
        '(help, quit or exit; Ctrl-D ends). Quote names with spaces: "Ada Lovelace".',
        '',
        'options:',
        f'  --memory-node NODE     memory node to call (default {DEFAULT_MEMORY_NODE})',
        f'  --cognition-node NODE  cognition node for memory / memory clear '
        f'(default {DEFAULT_COGNITION_NODE})',
        f'  --timeout SECONDS      deadline of every call, and of a job until the node '
        f'accepted it (default {DEFAULT_TIMEOUT})',
        '  --reviewer NAME        who accepts, supersedes or dismisses pending items, kept in',
        '                         the receipt with this console session (default: the OS user)',
        '',
        'commands:',
    ]
    for command in COMMANDS:
        lines += [f'  {command.usage}', f'      {command.summary}']
    lines += [
        '',
        'backup, export and verify show their progress (a bar on a terminal, one line',
        'per 10% otherwise, on stderr) and wait as long as the job runs; Ctrl-C cancels',
        'the job; --no-wait prints the goal id and returns.',
        '',
        'exit codes: 0 success, 1 the call failed or no node answered, 2 bad usage,',
        '130 a job canceled with Ctrl-C',
    ]
    return '\n'.join(lines)


def run_command(session, tokens, stdout, stderr):
    """Parse, call and print one command given as words; return the exit code."""
    try:
        command, request = parse_command(tokens)
    except UsageError as error:
        print(f'usage error: {error}', file=stderr)
        return EXIT_USAGE
    try:
        if command.job:
            return jobs.run_command(session, command, request, stdout, stderr,
                                    _print_response)
        response = session.call(command, request)
    except CallError as error:
        print(f'error: {error}', file=stderr)
        return EXIT_FAILED
    return _print_response(command, response, stdout, stderr)


def _print_response(command, response, stdout, stderr):
    """Print a response (or a job's result) as render() says; return the exit code."""
    status, lines = render(command, response)
    # A verify that ran prints its report on stdout, whatever it found.
    report = command.words == ('verify',) and response.success
    print('\n'.join(lines), file=stdout if status == EXIT_OK or report else stderr)
    return status


def run_line(session, line, stdout, stderr):
    """Split one typed line like a shell and run it as a command; return the exit code."""
    try:
        tokens = _split_line(line)
    except UsageError as error:
        print(f'usage error: {error}', file=stderr)
        return EXIT_USAGE
    return run_command(session, tokens, stdout, stderr)


def _split_line(line):
    try:
        return shlex.split(line)
    except ValueError as error:
        if 'closing quotation' in str(error):
            raise UsageError('missing closing quote') from None
        raise UsageError(f'cannot split the line: {str(error).lower()}') from None


def _line_reader(stdin):
    if stdin is sys.stdin and stdin.isatty():
        # Imported for its side effect: input() gains line editing and history.
        import readline  # noqa: F401

        def read():
            return input(PROMPT)
        return read

    def read_stream():
        line = stdin.readline()
        if not line:
            raise EOFError
        return line
    return read_stream


def interactive(session, stdin, stdout, stderr):
    """Read and run commands until quit, exit or end of input; return 0."""
    read = _line_reader(stdin)
    while True:
        try:
            line = read()
        except EOFError:
            break
        except KeyboardInterrupt:
            print(file=stdout)
            continue
        try:
            tokens = _split_line(line)
        except UsageError as error:
            print(f'usage error: {error}', file=stderr)
            continue
        if tokens in (['quit'], ['exit']):
            break
        if tokens == ['help']:
            print(help_text(), file=stdout)
        elif tokens:
            try:
                run_command(session, tokens, stdout, stderr)
            except KeyboardInterrupt:
                print('interrupted', file=stderr)
        stdout.flush()
        stderr.flush()
    return EXIT_OK


def _without_ros_args(ros_args):
    try:
        return remove_ros_args(ros_args)[1:]
    except Exception as error:  # rclpy reports malformed --ros-args as RCL errors
        raise UsageError(f'bad --ros-args: {error}') from None


def main(argv=None, *, stdin=None, stdout=None, stderr=None):
    """Run one command from argv, or an interactive session; return the exit code."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    ros_args = ['memory_console', *argv]
    try:
        settings, tokens = parse_console_options(_without_ros_args(ros_args))
        if settings.show_help:
            print(help_text(), file=stdout)
            return EXIT_OK
        if tokens:
            # Bad usage is reported before any ROS setup.
            parse_command(tokens)
    except UsageError as error:
        print(f'usage error: {error}', file=stderr)
        return EXIT_USAGE
    session = Session(ros_args, settings)
    try:
        if tokens:
            return run_command(session, tokens, stdout, stderr)
        return interactive(session, stdin, stdout, stderr)
    except KeyboardInterrupt:
        print('interrupted', file=stderr)
        return 130
    finally:
        session.close()
