# SPDX-License-Identifier: Apache-2.0
"""
The one place that turns domain results into ROS messages.

The ROS-free core returns dataclasses and raises named StoreErrors; the memory
node hands them here. Keeping the mapping in one module means a contract
change (a new field, a new error code) is made once.
"""

from mira_memory.action import Backup
from mira_memory.core import store
from mira_memory.core.admission import results, turns
from mira_memory.core.errors import ClosedError, PathNotAllowedError, RefusedError
from mira_memory.core.review import decisions, keep
from mira_memory.msg import EntityRecord, MemoryLink, PayloadRecord, PendingRecord, RecalledEntity
from mira_memory.msg import RecalledMemory, ReceiptRecord
from mira_memory.srv import AdminAccept, AdminRetire, AdminStatus


def memory_message(memory):
    """Build a RecalledMemory message from a store Memory."""
    message = RecalledMemory()
    message.id = store.format_memory_id(memory.id)
    message.kind = memory.kind
    message.summary = memory.summary
    message.predicate = memory.predicate or ''
    message.value = memory.value or ''
    message.source_kind = memory.source_kind
    message.source_label = memory.source_label
    message.has_confidence = memory.confidence is not None
    message.confidence = float(memory.confidence) if memory.confidence is not None else 0.0
    message.status = memory.status
    message.created_at = memory.created_at
    message.links = [link_message(link) for link in memory.links]
    return message


def link_message(link):
    """Build a MemoryLink message from a store Link."""
    message = MemoryLink()
    message.entity_id = store.format_entity_id(link.entity_id)
    message.entity_name = link.entity_name
    message.role = link.role
    return message


def entity_record(entity, memories=(), memories_truncated=False):
    """Build an EntityRecord message (admin responses)."""
    message = EntityRecord()
    message.id = store.format_entity_id(entity.id)
    message.entity_type = entity.entity_type
    message.canonical_name = entity.canonical_name
    message.aliases = list(entity.aliases)
    message.memories = [memory_message(memory) for memory in memories]
    message.memories_truncated = memories_truncated
    return message


def payload_record(payload):
    """Build a PayloadRecord message from a store Payload."""
    message = PayloadRecord()
    message.id = payload.id
    message.storage = payload.storage
    message.media_type = payload.media_type
    message.text = payload.text or ''
    message.object_ref = payload.object_ref or ''
    message.sha256 = payload.sha256 or ''
    return message


def fill_receipt(response, receipt):
    """Copy a store Receipt (or None) into an AdminShow response."""
    response.has_receipt = receipt is not None
    response.receipt = ReceiptRecord()
    if receipt is None:
        return response
    message = response.receipt
    for field in ('utterance', 'episode_id', 'turn_id', 'kind', 'subject', 'predicate',
                  'value', 'evidence', 'robot_profile', 'rules_version', 'rules_digest',
                  'rules_ran', 'created_at'):
        setattr(message, field, getattr(receipt, field))
    message.related_entity = receipt.related_entity or ''
    message.related_role = receipt.related_role or ''
    message.subject_entity_id = store.format_entity_id(receipt.subject_entity_id)
    message.related_entity_id = (store.format_entity_id(receipt.related_entity_id)
                                 if receipt.related_entity_id is not None else '')
    for field in ('review_action', 'reviewed_by', 'refused_at', 'refused_reason',
                  'refused_rule', 'refused_explanation'):
        setattr(message, field, getattr(receipt, field) or '')
    message.pending_id = (store.format_pending_id(receipt.pending_id)
                          if receipt.pending_id is not None else '')
    return response


def fill_supersessions(response, superseded_by, supersedes):
    """Copy a memory's supersession chain into an AdminShow response."""
    response.superseded_by = (store.format_memory_id(superseded_by)
                              if superseded_by is not None else '')
    response.supersedes = [store.format_memory_id(memory_id) for memory_id in supersedes]
    return response


def pending_record(item, review):
    """Build a PendingRecord message from a store PendingItem (review: its ReviewSettings)."""
    message = PendingRecord()
    message.id = store.format_pending_id(item.id)
    for field in ('created_at', 'episode_id', 'turn_id', 'utterance', 'kind', 'subject',
                  'predicate', 'value', 'evidence', 'robot_profile', 'reason', 'rule',
                  'explanation', 'rules_version', 'rules_digest'):
        setattr(message, field, getattr(item, field))
    message.related_entity = item.related_entity or ''
    message.related_role = item.related_role or ''
    message.conflicting_memory_ids = [
        store.format_memory_id(memory_id) for memory_id in item.conflicting_memory_ids]
    message.expires_at = keep.expires_at(item, review)
    return message


def fill_assessment(response, assessment):
    """Copy what the rules say of a pending item now (decisions.assess) into pending_show."""
    response.now_status = assessment.status
    response.now_reason = assessment.reason
    response.now_rule = assessment.rule
    response.now_memory_ids = [store.format_memory_id(i) for i in assessment.memory_ids]
    return response


def fill_check(response, checked):
    """Copy a dry run of the admission rules (core/review/check.py) into its admin/check answer."""
    result = checked.result
    response.status = result.status
    response.outcome = result.outcome
    response.reason = result.reason
    response.rule = result.rule
    ids = result.conflicting_memory_ids or ((result.memory_id,) if result.memory_id else ())
    response.memory_ids = [store.format_memory_id(i) for i in ids]
    response.error = result.error
    response.grounding_check = checked.grounding_check
    response.decided_by = [f'{name}: {text}' for name, text in checked.decided_by]
    response.would_keep_for_review = checked.would_keep_for_review
    response.summary = checked.summary
    response.stored_value = checked.value
    for field, entity_id in (('subject_entity_id', checked.subject_entity_id),
                             ('related_entity_id', checked.related_entity_id)):
        setattr(response, field, store.format_entity_id(entity_id) if entity_id else '')
    described = result.outcome or f'{result.reason} (rule {result.rule})'
    return fill_admin_success(response, f'remember would answer {result.status} {described}; '
                                        'nothing was written')


def fill_reviewed(response, reviewed, memory):
    """Copy a person's decision (decisions.Reviewed) into its accept/supersede/dismiss response."""
    name = store.format_pending_id(reviewed.pending_id)
    if reviewed.action == decisions.DISMISS:
        return fill_admin_success(response, f'dismissed {name}')
    response.outcome = reviewed.outcome
    response.memory = memory_message(memory)
    memory_id = store.format_memory_id(reviewed.memory_id)
    if reviewed.outcome == decisions.ALREADY_STORED:
        return fill_admin_success(
            response, f'{name} is already stored as {memory_id}; nothing new was written')
    if reviewed.action == decisions.SUPERSEDE:
        response.retired_memory_ids = [store.format_memory_id(i) for i in reviewed.retired_ids]
        return fill_admin_success(response, f'{name} superseded '
                                  f'{", ".join(response.retired_memory_ids)}: created {memory_id}')
    message = f'accepted {name}: created {memory_id}'
    if reviewed.entity is not None:
        response.entity_created = True
        response.entity = entity_record(reviewed.entity)
        message += f' (and {store.format_entity_id(reviewed.entity.id)})'
    return fill_admin_success(response, message)


def fill_verify(response, summary, findings, truncated, pending=()):
    """Copy a verify Summary, its first findings and its pending items into a Verify result."""
    response.finding_memory_ids = [store.format_memory_id(f.memory_id) for f in findings]
    response.finding_statuses = [f.status for f in findings]
    response.finding_reasons = [f.reason for f in findings]
    response.finding_rules = [f.rule for f in findings]
    response.finding_rules_versions = [f.rules_version for f in findings]
    response.finding_rules_digests = [f.rules_digest for f in findings]
    response.findings_truncated = truncated
    for field in ('judged', 'ok', 'would_reject', 'no_receipt', 'mismatch', 'not_judged',
                  'other_rules', 'rules_version', 'rules_digest', 'pending_judged',
                  'pending_now_admissible'):
        setattr(response, field, getattr(summary, field))
    response.pending_ids = [store.format_pending_id(p.pending_id) for p in pending]
    response.pending_statuses = [p.status for p in pending]
    response.pending_reasons = [p.reason for p in pending]
    response.pending_rules = [p.rule for p in pending]
    return fill_admin_success(response, summary.line())


def fill_recall(response, result, include_entities=True):
    """
    Copy a core RecallResult into a RecallMemory response.

    include_entities=False (the request's default) leaves entities empty:
    the text carries the same ids and fields.
    """
    response.status = result.status
    response.reason = result.reason
    if include_entities:
        response.entities = [recalled_entity(view) for view in result.entities]
    response.entities_truncated = result.entities_truncated
    response.text = result.text
    response.text_truncated = result.text_truncated
    return response


def recalled_entity(view):
    """Build a RecalledEntity message from a core RecalledEntityView."""
    message = RecalledEntity()
    message.id = store.format_entity_id(view.entity.id)
    message.entity_type = view.entity.entity_type
    message.canonical_name = view.entity.canonical_name
    message.memories = [memory_message(memory) for memory in view.memories]
    message.memories_truncated = view.memories_truncated
    return message


def fill_remember(response, result):
    """Copy a core AdmissionResult into a Remember response."""
    response.status = result.status
    response.outcome = result.outcome
    response.reason = result.reason
    response.memory_id = (
        store.format_memory_id(result.memory_id) if result.memory_id is not None else '')
    response.conflicting_memory_ids = [
        store.format_memory_id(memory_id) for memory_id in result.conflicting_memory_ids]
    response.error = result.error
    response.pending_review = result.pending_review
    return response


# Why a remember was refused before admission: the fixed sentences echo
# nothing of the request (ids included).
TURN_NOT_HEARD_ERRORS = {
    turns.NOT_HEARD: (
        'No operator turn with this episode and turn id was heard; nothing was written.'),
    turns.DIFFERENT: (
        'The utterance differs from the operator turn that was heard; nothing was written.'),
}


def fill_remember_turn_not_heard(response, heard):
    """Answer a remember whose turn the memory node did not hear (turns.NOT_HEARD/DIFFERENT)."""
    response.status = results.STATUS_REJECTED
    response.outcome = ''
    response.reason = results.REASON_EVIDENCE_NOT_IN_UTTERANCE
    response.memory_id = ''
    response.conflicting_memory_ids = []
    response.error = TURN_NOT_HEARD_ERRORS[heard]
    return response


# Admin error codes, as declared in every Admin*.srv response.
ERROR_INVALID_ARGUMENT = AdminStatus.Response.ERROR_INVALID_ARGUMENT
ERROR_NOT_FOUND = AdminStatus.Response.ERROR_NOT_FOUND
ERROR_DUPLICATE_ALIAS = AdminStatus.Response.ERROR_DUPLICATE_ALIAS
ERROR_DISABLED = AdminStatus.Response.ERROR_DISABLED
ERROR_BACKEND_FAILURE = AdminStatus.Response.ERROR_BACKEND_FAILURE
ERROR_UNAVAILABLE = AdminStatus.Response.ERROR_UNAVAILABLE
# Declared in the responses of retire, forget, backup and export.
ERROR_BUSY = AdminRetire.Response.ERROR_BUSY
ERROR_EXISTS = AdminRetire.Response.ERROR_EXISTS
# Declared in the responses of the review commands (pending_show, accept, ...).
ERROR_CLOSED = AdminAccept.Response.ERROR_CLOSED
ERROR_REFUSED = AdminAccept.Response.ERROR_REFUSED
# The long jobs' results (action/*.action) only.
ERROR_CANCELED = Backup.Result.ERROR_CANCELED
ERROR_OUTSIDE_OUTPUT_DIRS = Backup.Result.ERROR_OUTSIDE_OUTPUT_DIRS
# Feedback's remaining_sec while there is no estimate yet.
NO_ESTIMATE = -1.0

_ADMIN_ERROR_CODES = {
    store.InvalidInputError: ERROR_INVALID_ARGUMENT,
    store.NotFoundError: ERROR_NOT_FOUND,
    store.DuplicateAliasError: ERROR_DUPLICATE_ALIAS,
    store.BusyError: ERROR_BUSY,
    store.TargetExistsError: ERROR_EXISTS,
    PathNotAllowedError: ERROR_OUTSIDE_OUTPUT_DIRS,
    ClosedError: ERROR_CLOSED,
    RefusedError: ERROR_REFUSED,
}


def fill_retirement(response, memory):
    """Copy a memory's retirement (empty while active) into a show or retire response."""
    response.retired_at = memory.retired_at or ''
    response.retired_reason = memory.retired_reason or ''
    return response


def fill_forget(response, plan):
    """Copy a store ForgetPlan into an AdminForget response."""
    response.applied = plan.applied
    response.memory_ids = [store.format_memory_id(memory_id) for memory_id in plan.memory_ids]
    response.alias_count = plan.alias_count
    response.link_count = plan.link_count
    response.payload_count = plan.payload_count
    response.pending_ids = [store.format_pending_id(i) for i in plan.pending_ids]
    verb = 'forgot' if plan.applied else 'would forget'
    text = (f'{verb} {plan.target}: {len(plan.memory_ids)} memories, '
            f'{plan.alias_count} aliases, {plan.link_count} links, '
            f'{plan.payload_count} payloads')
    if plan.pending_ids:
        # Said only when there are some: the line is as it was before review existed.
        text += f', {len(plan.pending_ids)} pending review items'
    return fill_admin_success(response, text)


def fill_copy(response, result, what):
    """Copy a backup or export result (core.archive) into its admin response."""
    counts = result['counts']
    response.path = result['path']
    response.bytes = result['bytes']
    response.entity_count = counts['entities']
    response.alias_count = counts['aliases']
    response.memory_count = counts['memories']
    response.link_count = counts.get('links', counts.get('memory_links', 0))
    response.payload_count = counts['payloads']
    return fill_admin_success(response, f'{what} written to {result["path"]}')


def fill_admin_success(response, message):
    """Mark an admin response successful."""
    response.success = True
    response.error_code = ''
    response.message = message
    return response


def fill_admin_error(response, error):
    """Mark an admin response failed from a StoreError (or anything else)."""
    response.success = False
    response.error_code = _ADMIN_ERROR_CODES.get(type(error), ERROR_BACKEND_FAILURE)
    if isinstance(error, RefusedError) and hasattr(response, 'refused_reason'):
        response.refused_reason = error.reason
        response.refused_rule = error.rule
        response.conflicting_memory_ids = [store.format_memory_id(i) for i in error.memory_ids]
    if isinstance(error, store.StoreError):
        response.message = str(error)
    else:
        # Unexpected failures keep their detail in the node log, not the reply.
        response.message = 'internal error in the memory node; see its log'
    return response


def fill_admin_disabled(response):
    """Answer an admin command while persistent memory is disabled."""
    response.success = False
    response.error_code = ERROR_DISABLED
    response.message = 'persistent memory is disabled'
    return response


def fill_admin_unavailable(response, reason):
    """Answer an admin command while the managed memory node is not active."""
    response.success = False
    response.error_code = ERROR_UNAVAILABLE
    response.message = reason
    return response


def fill_feedback(feedback, snapshot):
    """Copy a core progress Snapshot into a long job's action feedback."""
    progress = snapshot.progress
    feedback.phase = progress.phase
    feedback.items_done = progress.done
    feedback.items_total = progress.total
    feedback.bytes_written = progress.bytes_written
    feedback.elapsed_sec = snapshot.elapsed
    feedback.remaining_sec = NO_ESTIMATE if snapshot.remaining is None else snapshot.remaining
    return feedback


def fill_jobs(response, running):
    """Answer `memory jobs`: the running job (CopyWorker.running) or none."""
    if running is None:
        response.running = False
        return fill_admin_success(response, 'no backup, export or verify is running')
    response.running = True
    response.job = running.name
    response.goal_id = running.goal_id
    snapshot = running.meter.snapshot()
    if snapshot is not None:
        fill_feedback(response, snapshot)
    else:
        response.remaining_sec = NO_ESTIMATE
    return fill_admin_success(response, f'{running.name} running: goal {running.goal_id}')


def fill_canceled(result, what, why):
    """Answer a long job that was canceled (by its client, deactivate or shutdown)."""
    result.success = False
    result.error_code = ERROR_CANCELED
    written = 'nothing was written' if what != 'verify' else 'nothing was changed'
    result.message = f'{what} canceled ({why}); {written}'
    return result


def fill_busy(result, running):
    """Answer a goal that arrived while another long job runs; running is that job."""
    snapshot = running.meter.snapshot()
    done = f', {snapshot.progress.fraction:.0%} done' if snapshot is not None else ''
    result.success = False
    result.error_code = ERROR_BUSY
    result.message = (f'another job is running: {running.name} (goal {running.goal_id}{done}); '
                      'this goal was not started; try again when it is done')
    return result
