# SPDX-License-Identifier: Apache-2.0
"""
The console's command table and the parsing of one command's words.

The console checks only syntax (command words, argument count, ENT<n>/MEM<n>
format, option names, the confidence range). Everything else is decided by
the memory node, the single authority, whose error code and message are
printed as they come (console/render.py).
"""

import dataclasses
from dataclasses import dataclass
import json
import math
import os

from mira_memory.action import Backup, Export, Verify
from mira_memory.core import store
from mira_memory.msg import MemoryLink
from mira_memory.srv import AdminAccept, AdminDismiss, AdminPending, AdminPendingShow
from mira_memory.srv import AdminAdd, AdminAliasAdd, AdminEntityAdd, AdminEntityFind
from mira_memory.srv import AdminFind, AdminForget, AdminJobs, AdminList, AdminRetire
from mira_memory.srv import AdminShow, AdminStatus, AdminSupersede
from mira_memory.srv import WorkingMemoryClear, WorkingMemoryShow

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

# The node a command calls.
MEMORY = 'memory'
COGNITION = 'cognition'


class UsageError(Exception):
    """The command line is malformed; nothing was sent."""


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
            f'{quoted(text)} is not {what} (expected {placeholder}, e.g. {example})') from None
    return text


def _link(text):
    entity_id, separator, role = text.partition(':')
    if not separator or not role:
        raise UsageError(f'--link needs ENT<n>:<role>, got {quoted(text)}')
    return MemoryLink(entity_id=_check_id('ENT<n>', entity_id), role=role)


def _confidence(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise UsageError(f'--confidence needs a number from 0.0 to 1.0, got {quoted(text)}')
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
            f'unexpected argument {quoted(arguments[len(command.arguments)])} '
            f'(usage: {command.usage})')
    request = _new_request(command)
    for (placeholder, field), text in zip(command.arguments, arguments):
        if placeholder in _ID_PARSERS:
            _check_id(placeholder, text)
        if placeholder == 'PATH' and not os.path.isabs(text):
            # The node, not this console, writes the file: a relative path
            # would silently mean the node's working directory.
            raise UsageError(f'PATH must be absolute, got {quoted(text)}')
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


def quoted(text):
    """Return text in double quotes, escaped as JSON, as every console line shows it."""
    return json.dumps(text, ensure_ascii=False)
