# SPDX-License-Identifier: Apache-2.0
"""
The memory node's request handlers: request in, response out, without a ROS graph.

MemoryService owns what the node serves from: the store and its read-only
reader, the recall cache, the per-turn proposal log, the file claim and the
health figures. Every handler takes a generated request (and response) and
returns the response; none needs a node, an executor or a context, so the
tests and the bench call the same code the services run:

    service = MemoryService(config.settings_from_parameters(True, path),
                            robot_profile=lambda: 'Mira')
    service.admin('entity_add', AdminEntityAdd.Request(...), AdminEntityAdd.Response())
    service.remember(Remember.Request(...))        # an admission result
    service.recall(RecallMemory.Request(...), RecallMemory.Response())

The admin commands' handlers (admin_status ... admin_dismiss) are the
AdminHandlers mixin's (memory/admin_handlers.py); admin() here dispatches to
them. The node (memory/node.py) adds what needs ROS: the parameters, the
observed-turn gate in front of remember (memory/turn_gate.py), the
backup/export/verify worker thread (memory/copy_worker.py), the actions
that start its jobs (memory/admin_actions.py) and /diagnostics.

Supervised review (core/review, docs/review.md): a remember refused for a
reason a person can judge, for an operator turn the gate heard, is kept in
the store's pending queue (answer_remember's observed), and the admin
commands pending, pending_show, accept, supersede and dismiss decide it.

One owner per database: the service claims the file (core/store/ownership.py)
before SQLite opens it and holds the claim until close(). Nothing written to
a file that is no longer at database_path is acknowledged (see
database_in_place). Every handler answers through its response: no
exception leaves one.
"""

import collections
import os
import threading
import time

from mira_memory.core import recall, store
from mira_memory.core.admission import language, operator_turn, proposal_rules, results, rules
from mira_memory.core.admission import turns
from mira_memory.core.admission.turn_proposals import TurnProposalLog
from mira_memory.core.archive import verify_process
from mira_memory.core.review import keep
from mira_memory.core.store import health, ownership, private_files
from mira_memory.memory import responses
from mira_memory.memory.admin_handlers import AdminHandlers
from mira_memory.ros.node_runner import StartupError
from rclpy.logging import LoggingSeverity

# Findings one verify answer lists (its counts are exact however many there are).
VERIFY_FINDINGS_MAX = 10000


class MemoryService(AdminHandlers):
    """Owns the memory store; answers recall, remember and the admin commands."""

    def __init__(self, settings, *, robot_profile, logger=None, copies_busy=None,
                 review=keep.ReviewSettings()):
        """
        Open the store of settings (when enabled); raise StartupError when it cannot.

        robot_profile: a callable returning the current robot profile name.
        logger: an rclpy logger (the node's); by default the 'memory' logger.
        copies_busy: a callable, True while a backup, export or verify runs.
        review: the pending queue's keep.ReviewSettings.
        """
        if logger is None:
            import rclpy.logging
            logger = rclpy.logging.get_logger('memory')
        self.settings = settings
        self.review = review
        self.log = logger
        self._robot_profile = robot_profile
        self._copies_busy = copies_busy or (lambda: False)
        self.store = None
        self.reader = None
        self.recall_cache = None
        self.ownership = None
        # One proposal per operator turn (volatile; the store keeps the durable limit).
        self.turn_proposals = TurnProposalLog()
        # Refusals kept for review that remember answered but has not written yet.
        self._kept = collections.deque()
        # Which refusals fit the queue's bounds (core/review/keep.py); logs once per run.
        self.intake = keep.Intake(review, log=self._log_intake)
        # Kept refusals answered but never written (store gone or failing): counted,
        # logged when a run of them starts.
        self.kept_lost = 0
        self._lost_streak = 0
        self.health = health.Health()
        self._row_count = None  # a background row count in progress (_count_rows)
        self._rules_logged = False  # the startup line about older rules (_log_rules)
        self.admin_handlers = {
            'status': self.admin_status,
            'entity_add': self.admin_entity_add,
            'entity_find': self.admin_entity_find,
            'alias_add': self.admin_alias_add,
            'find': self.admin_find,
            'add': self.admin_add,
            'show': self.admin_show,
            'retire': self.admin_retire,
            'forget': self.admin_forget,
            'pending': self.admin_pending,
            'pending_show': self.admin_pending_show,
            'accept': self.admin_accept,
            'supersede': self.admin_supersede,
            'dismiss': self.admin_dismiss,
            'check': self.admin_check,
            'list': self.admin_list,
        }
        if settings.enabled:
            self._open_store(settings.database_path)

    @property
    def enabled(self):
        """Return True while a store is open."""
        return self.store is not None

    @property
    def robot_profile(self):
        """Return the current robot profile name."""
        return self._robot_profile()

    # The store ---------------------------------------------------------------

    def _open_store(self, path):
        self.ownership = self._claim(path)
        try:
            self.store = store.MemoryStore.open(path, create_parent=True)
            self.reader = self.store.open_reader()
            # Rendered answers, kept until a write changes what they show.
            self.recall_cache = recall.RecallCache(self.reader, self.store)
            self._count_rows()
        except store.StoreError as error:
            self.close()
            raise StartupError(f'cannot open persistent memory at {path}: {error}') from None
        exposure = private_files.exposure(path)
        if exposure:
            # Served anyway (the operator chose the mode), but said once here
            # and in every /diagnostics report while it lasts.
            self.log.warning(exposure)

    @staticmethod
    def _claim(path):
        """Own the database file (creating its directory first) before SQLite opens it."""
        try:
            # A directory the node creates is 0700, the file 0600 (core/store/private_files.py).
            private_files.make_directories(path.parent)
        except OSError as error:
            raise StartupError(
                f'cannot open persistent memory at {path}: cannot create the database '
                f'directory {path.parent}: {error.strerror}') from None
        try:
            return ownership.claim(str(path))
        except ownership.DatabaseBusyError as error:
            raise StartupError(f'cannot open persistent memory: {error}') from None
        except OSError as error:
            raise StartupError(
                f'cannot open persistent memory at {path}: {error.strerror}') from None

    def close(self):
        """Write what was kept for review, close the store once, give up the file (idempotent)."""
        self.write_kept()
        for handle in (self.reader, self.store):
            if handle is not None:
                handle.close()
        if self.ownership is not None:
            self.ownership.release()
        self.reader = self.store = self.ownership = self.recall_cache = None

    def _count_rows(self):
        """
        Count the rows for /diagnostics in a thread, through its own read-only connection.

        A full count reads every memory row: 0.2-0.6 s at 1,000,000 memories,
        which held up start-up and would stall the executor.
        SQLite lets other threads run while it counts. _take_row_count
        applies the result on the executor thread, and only when the node
        wrote nothing meanwhile (else it counts again), so the counts stay
        exact; until then diagnostics show no counts. The same thread
        counts what verify would judge again (receipts of other rules, none).
        Once the database left its path nothing is counted any more.
        """
        if self.health.database_lost is not None:
            return
        generation = self.store.generation
        try:
            reader = self.store.open_reader()
        except store.StoreError:
            return  # counted again at the next report
        outcome = {}

        def count():
            try:
                outcome['counts'] = reader.counts()
                outcome['receipts'] = reader.receipt_rules_counts(
                    language.RULES_VERSION, language.rules_digest())
            except store.StoreError:
                pass  # counted again at the next report
            finally:
                reader.close()
        thread = threading.Thread(target=count, name='memory row count', daemon=True)
        self._row_count = (generation, thread, outcome)
        thread.start()

    def _take_row_count(self):
        """Apply a finished background count; count again when it is stale or failed."""
        if self._row_count is None:
            return
        generation, thread, outcome = self._row_count
        if thread.is_alive():
            return
        self._row_count = None
        if 'counts' in outcome and generation == self.store.generation:
            self.health.set_counts(outcome['counts'])
        # A memory insert changes neither receipt count (its receipt names
        # the running rules); only a broad write (retire, forget) does.
        if 'receipts' in outcome and not self.store.changed_since(generation):
            self.health.set_receipt_counts(*outcome['receipts'])
            if not self._rules_logged:
                self._log_rules(*outcome['receipts'])
        if self.health.counts is None or self.health.receipt_counts is None:
            self._count_rows()

    def _log_rules(self, other_rules, no_receipt):
        """Say once, after the first count, how many memories the running rules did not judge."""
        self._rules_logged = True
        running = f'{language.RULES_VERSION}+{language.rules_digest()}'
        if other_rules or no_receipt:
            self.log.info(
                f'{other_rules} active remembered memories were admitted under other grounding '
                f'rules than the running ones ({running}) and {no_receipt} have no receipt; '
                'judge them again with: memory verify')
        else:
            self.log.info('every active remembered memory was admitted under the running '
                          f'grounding rules ({running})')

    def _recount_receipts(self):
        """Count again what verify would judge (a retire or forget changed it)."""
        self.health.set_receipt_counts(None, None)
        if self._row_count is None:
            self._count_rows()

    # The database stays at its path -----------------------------------------------

    def database_in_place(self):
        """
        Return True while the owned file is still the file at database_path.

        A file that was unlinked (or its directory removed), moved or
        replaced while the node ran keeps taking SQLite writes through the
        open descriptors, but nobody will find them at the path again: the
        next start opens whatever is there. The check is made after the work
        and before the answer (for writes: after the commit), so no reply
        says applied for a write that is not at the path when the reply
        leaves. Once lost, the database stays lost until a restart.
        """
        if self.health.database_lost is None and self.ownership.still_at_path():
            return True
        if self.health.lose_database(
                f'{self.settings.database_path} was removed, moved or replaced while the '
                'node ran'):
            self.log.error(
                f'the database file {self.settings.database_path} was removed, moved or '
                'replaced while this node ran: remember answers backend_failure, recall '
                'unavailable and admin commands fail until the node is restarted')
        return False

    def require_database_in_place(self):
        """Raise store.BackendError once the database file is no longer at its path."""
        if not self.database_in_place():
            raise store.BackendError(
                'the database file was removed, moved or replaced while the memory node '
                'ran; restart the node')

    def note_writes_stopped(self):
        """Log once, and report, that the store stopped writing after a storage failure."""
        reason = self.store.writes_stopped if self.store is not None else None
        if reason is not None and self.health.stop_writes(reason):
            self.log.error(
                f'the store stopped writing after a storage failure ({reason}): remember '
                'answers backend_failure and admin writes fail until the node is restarted; '
                'recall and the admin reads go on. Check the disk, then restart the node: '
                'it finds every write that was acknowledged')

    # Diagnostics ---------------------------------------------------------------

    def diagnostic_report(self, extra_values=()):
        """Return the health report for /diagnostics (see core/store/health.py)."""
        extra_values = (*extra_values, *self.intake.diagnostic_values(),
                        ('review notes lost', str(self.kept_lost)))
        if self.store is None:
            return self.health.report(enabled=False, extra_values=extra_values)
        self.note_writes_stopped()
        if self.health.database_lost is None:
            # The 1 Hz report notices a lost file even when no request comes.
            self.database_in_place()
        self._take_row_count()
        path = self.settings.database_path
        return self.health.report(
            enabled=True, database_path=path, schema_version=self.store.schema_version,
            file_sizes=(_file_size(path), _file_size(f'{path}-wal')),
            file_mode=_file_mode(path), exposure=private_files.exposure(path),
            extra_values=extra_values)

    # Recall and remember -----------------------------------------------------

    def recall(self, request, response):
        """Answer a RecallMemory request."""
        started = time.perf_counter()
        try:
            result = self.recall_cache.recall(request.query)
        except Exception:  # recall() never raises by contract; this guards the contract
            self.log.error('recall failed unexpectedly', throttle_duration_sec=1.0)
            result = recall.unavailable()
        if not self.database_in_place():
            result = recall.unavailable()
        if result.status == recall.STATUS_UNAVAILABLE:
            self.health.recall_failures.add()
        self.health.recall.add(time.perf_counter() - started)
        return responses.fill_recall(response, result, request.include_entities)

    def answer_remember(self, request, response, heard=turns.HEARD, started=None,
                        observed=False, defer=None):
        """
        Answer a Remember request whose operator turn the gate judged heard.

        heard: turns.HEARD, NOT_HEARD or DIFFERENT (memory/turn_gate.py);
        started: the time.perf_counter() at which the call came in;
        observed, defer: as for remember().
        """
        if started is None:
            started = time.perf_counter()
        if heard != turns.HEARD:
            self.health.remember.add(time.perf_counter() - started)
            return responses.fill_remember_turn_not_heard(response, heard)
        result = self.remember(request, observed=observed, defer=defer)
        if result.reason == results.REASON_BACKEND_FAILURE:
            self.health.remember_failures.add()
            self.note_writes_stopped()
        self.health.remember.add(time.perf_counter() - started)
        return responses.fill_remember(response, result)

    def remember(self, request, observed=False, defer=None):
        """
        Admit a Remember request (its turn already heard); return the admission result.

        observed: the node heard the turn itself; a refusal a person can
        judge is then kept for review (pending_review), once per turn: an
        identical retry gets the first answer. defer(work): runs work (the
        kept refusal's write, write_kept) after the reply: the node's
        executor, core/review/keep.py says why; by default it is written at
        once. Either way it is written before anything else reads or writes
        the store (write_kept).
        """
        self.write_kept()
        kept = []
        if not self.database_in_place():
            return results.backend_failure()
        try:
            # The turn is read once, here: every rule reads this one value.
            context = operator_turn.Turn(
                episode_id=request.episode_id, turn_id=request.turn_id,
                utterance=request.utterance)
            proposal = proposal_rules.Proposal(
                kind=request.kind, subject=request.subject, predicate=request.predicate,
                value=request.value, related_entity=request.related_entity or None,
                related_role=request.related_role or None, evidence=request.evidence)
            robot_profile = self.robot_profile

            def admit():
                result = rules.admit(self.store, context, proposal, robot_profile)
                if observed:
                    result = self.intake.mark(self.store, context, proposal, result)
                    if result.pending_review:
                        kept.append((context, proposal, robot_profile, result))
                return result
            result = self.turn_proposals.answer(context, proposal, admit)
        except Exception:  # admit() never raises by contract; this guards the contract
            self.log.error('remember failed unexpectedly', throttle_duration_sec=1.0)
            result = results.backend_failure()
        if result.status == results.STATUS_APPLIED and not self.database_in_place():
            # Committed, but to a file no longer at the path: not acknowledged.
            return results.backend_failure()
        if kept:
            self._kept.extend(kept)
            (defer or _at_once)(self.write_kept)
        if result.outcome == results.OUTCOME_CREATED:
            self.health.wrote(memories=1, active_memories=1)
        if result.status == results.STATUS_APPLIED and self.log.is_enabled_for(
                LoggingSeverity.DEBUG):
            # Debug, not info: an rclpy log call costs about as much as the
            # admission itself (see bench/README.md), and the row's source
            # label already records the episode and turn of every write.
            # Asked first, so a retry does not build the line only for
            # rclpy to drop it (every microsecond of a retry counts).
            self.log.debug(
                f'remember {result.outcome} {store.format_memory_id(result.memory_id)} '
                f'(episode {request.episode_id!r} turn {request.turn_id!r})')
        return result

    def write_kept(self):
        """
        Write the refusals kept for review and not written yet, in the order kept; never raises.

        remember defers the write past its reply; everything that reads or
        writes the store calls this first (remember, admin, verify, close),
        so nobody sees the store without a note that was answered kept.
        """
        while self._kept:
            context, proposal, robot_profile, result = self._kept.popleft()
            if self.store is None or self.health.database_lost is not None:
                self._lose_kept('the store is gone')
                continue
            try:
                keep.write(self.store, context, proposal, robot_profile, result, self.review)
            except Exception as error:  # the refusal stands as answered; only the note is lost
                self._lose_kept(repr(str(error)))
            else:
                self._lost_streak = 0

    def _lose_kept(self, why):
        """Count a kept refusal that was not written; log the first of a run of them."""
        self.kept_lost += 1
        self._lost_streak += 1
        if self._lost_streak == 1:
            self.log.error(f'a refused proposal kept for review was not written ({why}); '
                           'further ones are counted on /diagnostics (review notes lost)')

    def _log_intake(self, text, warning):
        if warning:
            self.log.warning(text)
        else:
            self.log.info(text)

    def expire_pending(self):
        """Close the pending items past their age (the node's timer); return how many."""
        if self.store is None or self.health.database_lost is not None:
            return 0
        self.write_kept()
        try:
            return self.store.expire_pending(self.review.max_age)
        except store.StoreError as error:
            self.log.error(f'expiring pending review items failed: {str(error)!r}',
                           throttle_duration_sec=60.0)
            return 0

    # Admin -----------------------------------------------------------------

    def admin(self, command, request, response, *, handler=None):
        """
        Answer the admin command (a key of admin_handlers); return the response.

        handler replaces the command's own handler (tests use it to act
        between a write's commit and its answer).
        """
        handler = handler or self.admin_handlers[command]
        if self.store is None and command != 'status':
            return responses.fill_admin_disabled(response)
        self.write_kept()
        try:
            if self.store is not None:
                self.require_database_in_place()
            handler(request, response)
            if self.store is not None and not self.database_in_place():
                # After a write's commit, before its answer (see database_in_place):
                # nothing of what the handler filled in is answered.
                response = type(response)()
                self.require_database_in_place()
        except store.StoreError as error:
            responses.fill_admin_error(response, error)
            self.note_writes_stopped()
        except Exception as error:  # never let a callback raise into the executor
            self.log.error(f'admin {command} failed: {error!r}')
            responses.fill_admin_error(response, error)
        return response

    # Verify (on the copy worker) -------------------------------------------------

    def verify_work(self, request):
        """
        Return (work, finish) for a Verify goal; the node runs work on the copy worker.

        work(should_stop=..., progress=...) judges the memories in a child
        process, through its own read-only snapshot (core.verify_process),
        and returns the summary; finish(summary, result) fills the answer.
        Bad ids raise InvalidInputError here, before anything runs.
        """
        memory_ids = [store.parse_memory_id(text) for text in request.memory_ids]
        self.write_kept()
        path = str(self.store.path)
        findings = []
        # The queue is bounded (pending_max), so every pending item is answered.
        pending = []
        truncated = {'any': False}

        def found(finding):
            if len(findings) < VERIFY_FINDINGS_MAX:
                findings.append(finding)
            else:
                truncated['any'] = True

        def work(should_stop, progress):
            # One finding past the list's end tells that there were more.
            return verify_process.run(path, memory_ids, on_finding=found,
                                      should_stop=should_stop, on_pending=pending.append,
                                      progress=progress, findings_max=VERIFY_FINDINGS_MAX + 1)

        def finish(summary, response):
            return responses.fill_verify(response, summary, findings, truncated['any'],
                                         pending)
        return work, finish


def _at_once(work):
    work()


def _file_size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _file_mode(path):
    try:
        return private_files.mode_text(os.stat(path).st_mode)
    except OSError:
        return None
