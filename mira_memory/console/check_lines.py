# SPDX-License-Identifier: Apache-2.0
"""
The lines of `memory recall` and `memory check`: what the model would get, and why a rule decided.

recall prints what cognition hands the model for a recall_memory call, with
cognition's own wording (cognition/tools.py). check prints the dry run of
remember's rules (admin/check): the answer remember would give, and for the
person at the console the explanation, the grounding check and what else
the verdict records of what decided. Neither writes anything.
"""

from mira_memory.console.commands import EXIT_FAILED, EXIT_OK, quoted

COMMAND_WORDS = (('recall',), ('check',))
# recall answers that say memory could not be searched at all: exit 1.
RECALL_FAILURES = ('invalid', 'unavailable')


def render(name, response):
    """Map a recall or check response to (exit code, lines)."""
    if name == ('recall',):
        return _recall(response)
    if not response.success:
        return EXIT_FAILED, [f'error: {response.error_code}: {response.message}']
    return EXIT_OK, _check(response)


def _recall(response):
    # Imported here: the other commands need none of cognition's tool schemas.
    from mira_memory.cognition.tools import recall_result_text
    text = recall_result_text(response.status, response.reason, response.text)
    # One printed line per line of the text (the console escapes what is
    # inside a line, never the line breaks cognition hands the model).
    return (EXIT_FAILED if response.status in RECALL_FAILURES else EXIT_OK), text.splitlines()


def _check(response):
    dry_run = '(dry run: nothing was written)'
    if response.outcome == 'created':
        lines = [f'created: remember would store this as a new memory {dry_run}',
                 f'  summary:    {quoted(response.summary)}',
                 f'  value:      {quoted(response.stored_value)}',
                 f'  subject:    {response.subject_entity_id}']
        if response.related_entity_id:
            lines.append(f'  related:    {response.related_entity_id}')
    elif response.outcome == 'duplicate':
        lines = [f'duplicate: already stored as {" ".join(response.memory_ids)}; remember '
                 f'would write nothing new {dry_run}']
    else:
        lines = [f'rejected: {response.reason} (rule {response.rule or "-"}) {dry_run}',
                 f'  why:        {response.error}']
        if response.grounding_check:
            lines.append(f'  check:      {response.grounding_check}')
        if response.memory_ids:
            lines.append(f'  conflicts:  {" ".join(response.memory_ids)}')
    lines += [f'  decided by: {line}' for line in response.decided_by]
    if response.would_keep_for_review:
        lines.append("  review:     remember would keep it for a person's review "
                     '(memory pending)')
    return lines
