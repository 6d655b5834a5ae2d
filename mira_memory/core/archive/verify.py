# SPDX-License-Identifier: Apache-2.0
"""
`memory verify`: judge every stored statement again against its receipt, writing nothing.

Every active operator_statement memory (or the ones asked for) is judged
again with the rules this process runs (rules.judge: rules 1-17, the
grounding rules with the current language data) against the store's
entities as they are now, on the proposal, utterance, turn and robot
profile its receipt recorded. Rules 18 and 19 (duplicate, conflict, one
memory per turn) are left out: a stored memory judged again would only find
itself. A memory is OK when the rules admit its receipt again and what they
would store is what is stored (summary, value, kind, predicate, links, the
turn's source label); otherwise it is a Finding:

- would_reject: a rule refuses it now (reason and rule number);
- no_receipt: remembered before schema version 3 (or imported without one);
- mismatch: the rules admit the receipt, but it does not ground the memory
  as stored (the field that differs; only an edited import can do this).

Everything is read through one read-only snapshot connection (archive's,
like backup and export), so the database's bytes stay exactly as they were
and the node keeps writing meanwhile. Findings are handed to on_finding one
at a time, so a million-memory store is verified in constant memory.

When no memory is named, the refused proposals waiting for review (core/review)
are judged too, each with every rule (1-19) and nothing overridden, and
handed to on_pending: NOW ADMISSIBLE marks one the running rules would admit
as it is, so a supervisor sees which refusals a rules change has settled.
They never make the verify fail: a pending item is not a memory.
"""

import contextlib
from dataclasses import dataclass
import sqlite3

from mira_memory.core.admission import language, operator_turn, proposal_rules, rules
from mira_memory.core.admission.normalize import display_form
from mira_memory.core.archive import copies
from mira_memory.core.archive.progress import Progress, VERIFY_JUDGING
from mira_memory.core.errors import BackendError, InvalidInputError, NotFoundError
from mira_memory.core.review import decisions
from mira_memory.core.store import pending, reads, records

OK = 'ok'
WOULD_REJECT = 'would_reject'
NO_RECEIPT = 'no_receipt'
MISMATCH = 'mismatch'
NOT_JUDGED = 'not_judged'

# should_stop() is asked every this many memories.
STOP_CHECK_MEMORIES = 100

_MEMORY_SQL = 'SELECT id FROM memories WHERE id = ?'
# How many memories a verify of every active remembered memory judges.
_COUNT_SQL = ('SELECT count(*) FROM memories AS m'
              " WHERE m.source_kind = 'operator_statement' AND m.status = 'active'")
# The active memories such a verify leaves alone: a person wrote them
# (supervised review, the console), so there is no admission to judge again.
_NOT_JUDGED_COUNT_SQL = ('SELECT count(*) FROM memories AS m'
                         " WHERE m.source_kind != 'operator_statement' AND m.status = 'active'")
_LINKS_SQL = ('SELECT entity_id, role FROM memory_links WHERE memory_id = ?'
              ' ORDER BY entity_id, role')


@dataclass(frozen=True)
class Finding:
    """One memory that is not OK (or, asked for by id, not judged: retired or not remembered)."""

    memory_id: int
    status: str
    # would_reject: the admission reason; mismatch: the field that differs;
    # not_judged: 'retired' or 'source <kind>'.
    reason: str = ''
    # would_reject: the number of the rule that refuses it (docs/remember.md's table).
    rule: str = ''
    # The rules that admitted it ('' without a receipt).
    rules_version: str = ''
    rules_digest: str = ''

    def line(self):
        """Return the console's line for this finding."""
        name = records.format_memory_id(self.memory_id)
        if self.status == WOULD_REJECT:
            return f'{name} WOULD REJECT {self.reason} ({self.rule})'
        if self.status == NO_RECEIPT:
            return f'{name} NO RECEIPT'
        if self.status == MISMATCH:
            return f'{name} MISMATCH {self.reason}'
        return f'{name} NOT JUDGED {self.reason}'

    def as_json(self):
        """Return the finding as a JSON-ready dict (memory verify --json)."""
        record = {'memory_id': records.format_memory_id(self.memory_id),
                  'status': self.status}
        if self.reason:
            record['reason'] = self.reason
        if self.rule:
            record['rule'] = self.rule
        if self.rules_version:
            record['rules_version'] = self.rules_version
            record['rules_digest'] = self.rules_digest
        return record


@dataclass(frozen=True)
class PendingFinding:
    """What the running rules say of one pending item now (decisions.assess)."""

    pending_id: int
    status: str  # decisions.ADMISSIBLE, STILL_REFUSED or ALREADY_STORED
    # The refusal it was kept for.
    refused_reason: str
    refused_rule: str
    # STILL_REFUSED: the reason and rule that refuse it now.
    reason: str = ''
    rule: str = ''
    # STILL_REFUSED by a conflict: its slot's memories; ALREADY_STORED: the memory.
    memory_ids: tuple = ()

    def line(self):
        """Return the console's line for this item."""
        name = records.format_pending_id(self.pending_id)
        was = f'(kept for {self.refused_reason} ({self.refused_rule}))'
        if self.status == decisions.ADMISSIBLE:
            return f'{name} NOW ADMISSIBLE {was}'
        if self.status == decisions.ALREADY_STORED:
            return f'{name} ALREADY STORED as {_memories(self.memory_ids)} {was}'
        text = f'{name} STILL REFUSED {self.reason} ({self.rule})'
        if self.memory_ids:
            text += f' with {_memories(self.memory_ids)}'
        return text

    def as_json(self):
        """Return the item's judgment as a JSON-ready dict."""
        record = {'pending_id': records.format_pending_id(self.pending_id),
                  'status': self.status, 'refused_reason': self.refused_reason,
                  'refused_rule': self.refused_rule}
        if self.reason:
            record.update(reason=self.reason, rule=self.rule)
        if self.memory_ids:
            record['memory_ids'] = [records.format_memory_id(i) for i in self.memory_ids]
        return record


def _memories(memory_ids):
    return ' '.join(records.format_memory_id(i) for i in memory_ids)


@dataclass(frozen=True)
class Summary:
    """The counts of one verify, and the rules it judged with."""

    judged: int
    ok: int
    would_reject: int
    no_receipt: int
    mismatch: int
    # Not judged: asked for by id, those retired or not remembered; otherwise
    # every active memory that is not remembered (supervised, console), so the
    # counts account for every active memory.
    not_judged: int
    # Receipts made under other rules than the running ones (judged like the rest).
    other_rules: int
    rules_version: str
    rules_digest: str
    # Pending items judged (no memory named), and those now admissible.
    pending_judged: int = 0
    pending_now_admissible: int = 0

    @property
    def all_ok(self):
        """Return True when every memory judged is OK."""
        return self.ok == self.judged

    def line(self):
        """Return the summary line."""
        text = (f'verified {self.judged} memories: {self.ok} ok, {self.would_reject} would '
                f'reject, {self.no_receipt} no receipt')
        if self.mismatch:
            text += f', {self.mismatch} mismatch'
        if self.not_judged:
            text += f', {self.not_judged} not judged'
        return (text + f' (rules {self.rules_version}+{self.rules_digest}; '
                f'{self.other_rules} admitted under other rules)')

    def pending_line(self):
        """Return the pending items' summary line, or '' when none was judged."""
        if not self.pending_judged:
            return ''
        return (f'judged {self.pending_judged} pending review items: '
                f'{self.pending_now_admissible} now admissible')

    def as_json(self):
        """Return the counts as a JSON-ready dict."""
        return {'judged': self.judged, 'ok': self.ok, 'would_reject': self.would_reject,
                'no_receipt': self.no_receipt, 'mismatch': self.mismatch,
                'not_judged': self.not_judged, 'other_rules': self.other_rules,
                'rules_version': self.rules_version, 'rules_digest': self.rules_digest,
                'pending_judged': self.pending_judged,
                'pending_now_admissible': self.pending_now_admissible}


class _SnapshotReads:
    """The one read judge() needs (find_entities), on the verify's snapshot connection."""

    def __init__(self, conn):
        self._conn = conn

    def find_entities(self, name, *, limit=None):
        return reads.query_find_entities(self._conn, name, limit, with_aliases=False)


def _never():
    return False


def _ignore(progress):
    return None


def verify(source, memory_ids=(), *, on_finding=None, should_stop=_never, on_pending=None,
           progress=_ignore):
    """
    Judge the memories of the database at source again; return the Summary.

    memory_ids: the memories to judge (ints); none means every active
    operator_statement memory (the other active ones are counted as not
    judged), and then every pending item too (on_pending(PendingFinding) for
    each, in id order). An id that does not
    exist raises NotFoundError before anything is judged. on_finding(Finding)
    is called for each memory that is not OK, in id order. should_stop as
    for backup (CopyStoppedError); progress gets the judging phase (memories
    judged of those to judge) as often. Never writes.
    """
    version, digest = language.RULES_VERSION, language.rules_digest()
    counts = dict.fromkeys((OK, WOULD_REJECT, NO_RECEIPT, MISMATCH, NOT_JUDGED), 0)
    other_rules = 0
    on_finding = on_finding or (lambda finding: None)
    on_pending = on_pending or (lambda finding: None)
    pending_counts = {'judged': 0, 'admissible': 0}
    wanted = sorted(set(memory_ids))
    with _failures(should_stop):
        with copies.read_snapshot(source, should_stop) as conn:
            reads = _SnapshotReads(conn)
            for memory_id in wanted:
                if conn.execute(_MEMORY_SQL, (memory_id,)).fetchone() is None:
                    raise NotFoundError(
                        'memory %s not found' % records.format_memory_id(memory_id))
            total = len(wanted) if wanted else conn.execute(_COUNT_SQL).fetchone()[0]
            progress(Progress(VERIFY_JUDGING, 0, total))
            for number, row in enumerate(_rows(conn, wanted)):
                if number % STOP_CHECK_MEMORIES == 0:
                    if should_stop():
                        raise copies.CopyStoppedError('verify stopped before it was complete')
                    progress(Progress(VERIFY_JUDGING, number, total))
                finding = _judge_row(conn, reads, row)
                status = OK if finding is None else finding.status
                counts[status] += 1
                receipt = row[1]
                if receipt is not None and (receipt.rules_version, receipt.rules_digest) != (
                        version, digest):
                    other_rules += 1
                if finding is not None:
                    on_finding(finding)
            if not wanted:
                counts[NOT_JUDGED] = conn.execute(_NOT_JUDGED_COUNT_SQL).fetchone()[0]
                for found in _judge_pending(conn, should_stop):
                    pending_counts['judged'] += 1
                    pending_counts['admissible'] += found.status == decisions.ADMISSIBLE
                    on_pending(found)
            progress(Progress(VERIFY_JUDGING, total, total))
    judged = counts[OK] + counts[WOULD_REJECT] + counts[NO_RECEIPT] + counts[MISMATCH]
    return Summary(judged, counts[OK], counts[WOULD_REJECT], counts[NO_RECEIPT],
                   counts[MISMATCH], counts[NOT_JUDGED], other_rules, version, digest,
                   pending_counts['judged'], pending_counts['admissible'])


def _judge_pending(conn, should_stop):
    """Yield the PendingFinding of every waiting item, in id order (the queue is bounded)."""
    for number, item in enumerate(pending.items(conn, -1)):
        if number % STOP_CHECK_MEMORIES == 0 and should_stop():
            raise copies.CopyStoppedError('verify stopped before it was complete')
        now = decisions.assess(conn, item)
        yield PendingFinding(item.id, now.status, item.reason, item.rule, now.reason, now.rule,
                             now.memory_ids)


def _rows(conn, wanted):
    """Yield (memory row, Receipt or None, not-judged reason) per memory to judge, by id."""
    width = len(records.RECEIPT_COLUMNS)
    if not wanted:
        for row in conn.execute(reads.VERIFY_MEMORIES_SQL):
            yield row[:6], _receipt(row[6:6 + width]), ''
        return
    sql = reads.VERIFY_MEMORIES_SQL.replace(
        " WHERE m.source_kind = 'operator_statement' AND m.status = 'active'",
        ' WHERE m.id = :memory_id')
    sql = sql.replace('SELECT m.id,', 'SELECT m.source_kind, m.status, m.id,')
    for memory_id in wanted:
        row = conn.execute(sql, {'memory_id': memory_id}).fetchone()
        source_kind, status, row = row[0], row[1], row[2:]
        reason = ''
        if source_kind != records.SOURCE_OPERATOR_STATEMENT:
            reason = 'source ' + source_kind
        elif status != records.STATUS_ACTIVE:
            reason = status
        yield row[:6], _receipt(row[6:6 + width]), reason


def _receipt(columns):
    return None if columns[0] is None else records.Receipt(*columns)


def _judge_row(conn, reads, row):
    """Return the Finding of one memory, or None when it is OK."""
    memory, receipt, not_judged = row
    memory_id, kind, summary, predicate, value, source_label = memory
    if not_judged:
        return Finding(memory_id, NOT_JUDGED, not_judged)
    if receipt is None:
        return Finding(memory_id, NO_RECEIPT)
    admitted_under = (receipt.rules_version, receipt.rules_digest)
    context = operator_turn.TurnContext(receipt.episode_id, receipt.turn_id, receipt.utterance)
    proposal = proposal_rules.Proposal(
        kind=receipt.kind, subject=receipt.subject, predicate=receipt.predicate,
        value=receipt.value, related_entity=receipt.related_entity,
        related_role=receipt.related_role, evidence=receipt.evidence)
    try:
        judgment = rules.judge(reads, context, proposal, receipt.robot_profile)
    except InvalidInputError as error:  # pragma: no cover - judge checks its input first
        raise BackendError(f'verify could not judge {memory_id}: {error}') from None
    if judgment.rejection is not None:
        return Finding(memory_id, WOULD_REJECT, judgment.rejection.reason,
                       judgment.rejection.rule, *admitted_under)
    links = tuple(conn.execute(_LINKS_SQL, (memory_id,)).fetchall())
    stored = (('summary', summary, display_form(judgment.summary)),
              ('value', value, display_form(judgment.value)),
              ('kind', kind, judgment.kind), ('predicate', predicate, judgment.predicate),
              ('links', links, tuple(sorted(judgment.decision.links))),
              ('source_label', source_label,
               records.stored_source_label(operator_turn.source_label(context))))
    for field, actual, expected in stored:
        if actual != expected:
            return Finding(memory_id, MISMATCH, field, '', *admitted_under)
    return None


@contextlib.contextmanager
def _failures(should_stop):
    """Turn SQLite errors into the store's errors, as archive does for copies."""
    try:
        yield
    except sqlite3.Error as exc:
        if should_stop():  # an SQLite 'interrupted' that should_stop caused
            raise copies.CopyStoppedError('verify stopped before it was complete') from exc
        raise BackendError('verify failed: %s: %s' % (type(exc).__name__, exc)) from exc
