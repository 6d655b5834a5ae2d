# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The memory node: sole owner of the SQLite store and its single authority.

It serves, under its own name (/mira/memory in bringup):
- ~/recall_memory (RecallMemory): exact, bounded, read-only recall, through a
  connection that cannot write;
- ~/remember (Remember): operator-grounded admission, every rule enforced
  here whatever the caller checked, and only for an operator turn this node
  heard itself on operator/utterance (require_observed_turns, see below);
- ~/admin/<command>: one service per console command. backup and export
  run on a worker thread (mira_memory/copy_worker.py) while the node keeps
  serving; one at a time.

Recall and remember exist only while persistent memory is enabled; the admin
services always exist so `memory persistent` can say that it is disabled.
Every callback answers through its response: no exception leaves one.

Observed operator turns. The node subscribes to operator/utterance, the topic
cognition reads, and keeps the turns it heard in a core TurnWindow. remember
is admitted only for a turn in that window with exactly the request's
utterance. Cognition and this node receive each utterance independently, so a
remember may arrive first: its callback is a coroutine that waits for the
turn (observed_turn_wait_sec) on a future that the subscription completes, or
a one-shot steady-clock timer ends. The remember service and those timers are
in a ReentrantCallbackGroup, so on the single-threaded executor (rclpy.spin)
other requests, and the subscription itself, are served while it waits.

One owner per database: the node claims the file (core/ownership.py) before
SQLite opens it and holds the claim until it exits; a second node on the
same file exits 1 naming the owner. Nothing written to a file that is no
longer at database_path is acknowledged (see _require_database_in_place).
Health goes to /diagnostics once a second (mira_memory/diagnostics.py).
"""

import os
import sys
import threading
import time

from mira_memory.core import admission, archive, config, health, normalize, ownership, recall
from mira_memory.core import store, turns
from mira_memory.core.normalize import has_forbidden_characters
from mira_memory.core.turn_proposals import TurnProposalLog
from mira_memory.memory import responses
from mira_memory.memory.copy_worker import CopyWorker
from mira_memory.msg import OperatorUtterance
from mira_memory.ros import diagnostics
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.srv import AdminAdd, AdminAliasAdd, AdminEntityAdd, AdminEntityFind
from mira_memory.srv import AdminBackup, AdminExport, AdminForget, AdminRetire
from mira_memory.srv import AdminFind, AdminList, AdminShow, AdminStatus
from mira_memory.srv import RecallMemory, Remember
from mira_memory.wire import LIVE_SUBSCRIBER_QOS, UTTERANCE_TOPIC
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.task import Future

FIND_MEMORY_LIMIT = 100
LIST_MEMORY_LIMIT = 1000
ROBOT_PROFILE_MAX_LENGTH = 256
DEFAULT_OBSERVED_TURN_WAIT_SEC = 0.5
# remember calls waiting for their turn at once; more are decided at once
# (a flood of calls for turns nobody said must not pile up timers).
MAX_TURN_WAITS = 64


class MemoryNode(Node):
    """Owns the memory store and serves recall, remember and admin."""

    def __init__(self, **kwargs):
        super().__init__('memory', **kwargs)
        self._store = None
        self._reader = None
        self._recall = None
        # One proposal per operator turn (volatile; the store keeps the durable limit).
        self._turn_proposals = TurnProposalLog()
        self._ownership = None
        self._health = health.Health()
        self._turn_window = None  # set when remember exists and requires observed turns
        self._copies = None  # the backup/export worker, once the services exist
        self._row_count = None  # a background row count in progress (_count_rows)
        self._declare_parameters()
        self.settings = self._resolve_settings()
        if self.settings.enabled:
            self._open_store(self.settings.database_path)
            self.create_service(RecallMemory, '~/recall_memory', self._on_recall)
            self._listen_for_operator_turns()
            self.create_service(Remember, '~/remember', self._on_remember,
                                callback_group=self._remember_group)
        self._diagnostics = diagnostics.DiagnosticsPublisher(
            self, 'persistent memory',
            str(self.settings.database_path) if self.settings.enabled else '',
            self._diagnostic_report)
        self._copies = CopyWorker(self)
        for service_type, command, work in ((AdminBackup, 'backup', archive.backup),
                                            (AdminExport, 'export', archive.export)):
            self.create_service(
                service_type, f'~/admin/{command}', self._copy_callback(command, work),
                callback_group=self._copies.callback_group)
        # admin/list comes last: once it is in the graph, every admin service is.
        admin = (
            (AdminStatus, 'status', self._admin_status),
            (AdminEntityAdd, 'entity_add', self._admin_entity_add),
            (AdminEntityFind, 'entity_find', self._admin_entity_find),
            (AdminAliasAdd, 'alias_add', self._admin_alias_add),
            (AdminFind, 'find', self._admin_find),
            (AdminAdd, 'add', self._admin_add),
            (AdminShow, 'show', self._admin_show),
            (AdminRetire, 'retire', self._admin_retire),
            (AdminForget, 'forget', self._admin_forget),
            (AdminList, 'list', self._admin_list),
        )
        for service_type, command, handler in admin:
            self.create_service(
                service_type, f'~/admin/{command}', self._admin_callback(command, handler))
        if self.settings.enabled:
            self.get_logger().info(
                f'persistent memory enabled: {self.settings.database_path} '
                f'(schema version {self._store.schema_version}), '
                f'robot profile {self.robot_profile!r}')
        else:
            self.get_logger().info('persistent memory is disabled; no database is opened')

    # Parameters -----------------------------------------------------------

    def _declare_parameters(self):
        parameters.declare_read_only(self, (
            ('enabled', False,
             'Open persistent memory. Off: no database, no directory, '
             'no recall or remember services.'),
            ('database_path', '',
             'Absolute path of the SQLite file (~ expanded); its parent '
             'directory is created when missing.'),
            ('config_file', '',
             'Optional TOML file with a [memory] section (enabled, '
             'database_path relative to the file). When set, it decides '
             'enabled and database_path instead of those parameters.'),
            ('require_observed_turns', True,
             'Admit remember only for an operator turn this node heard on '
             "operator/utterance with exactly the request's utterance. false "
             "trusts the caller's utterance (integrations that cannot publish "
             'turns; see the README for what is lost).'),
            ('observed_turns_max', turns.DEFAULT_MAX_TURNS,
             'Operator turns kept in the volatile window; the oldest leaves first.'),
            ('observed_turn_max_age_sec', turns.DEFAULT_MAX_AGE_SEC,
             'A heard operator turn older than this (seconds) is forgotten.'),
            ('observed_turn_wait_sec', DEFAULT_OBSERVED_TURN_WAIT_SEC,
             'How long a remember whose turn has not been heard yet waits '
             'for it (seconds; 0 decides at once). Other requests are '
             'served meanwhile.'),
        ))
        parameters.declare(
            self, 'robot_profile', '',
            'Name of the active robot profile: the entity that you/your/yours/yourself '
            'denote in remember. Resolved at admission time, so it may change at runtime.',
            read_only=False)
        self._check_robot_profile(self.robot_profile)
        self.add_on_set_parameters_callback(self._on_set_parameters)

    @property
    def robot_profile(self):
        """Return the current robot profile name."""
        return self.get_parameter('robot_profile').value

    @staticmethod
    def _check_robot_profile(value):
        if len(value) > ROBOT_PROFILE_MAX_LENGTH or has_forbidden_characters(value):
            raise node_runner.StartupError(
                f'robot_profile must be at most {ROBOT_PROFILE_MAX_LENGTH} characters '
                'without control characters')

    def _on_set_parameters(self, parameters):
        for parameter in parameters:
            if parameter.name == 'robot_profile':
                try:
                    self._check_robot_profile(parameter.value)
                except node_runner.StartupError as error:
                    return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _resolve_settings(self):
        config_file = self.get_parameter('config_file').value
        try:
            if config_file:
                return config.settings_from_config_file(config_file)
            return config.settings_from_parameters(
                self.get_parameter('enabled').value,
                self.get_parameter('database_path').value)
        except config.ConfigError as error:
            raise node_runner.StartupError(str(error)) from None

    def _open_store(self, path):
        self._ownership = self._claim(path)
        try:
            self._store = store.MemoryStore.open(path, create_parent=True)
            self._reader = self._store.open_reader()
            # Rendered answers, kept until a write changes what they show.
            self._recall = recall.RecallCache(self._reader, self._store)
            self._count_rows()
        except store.StoreError as error:
            self.close()
            raise node_runner.StartupError(
                f'cannot open persistent memory at {path}: {error}') from None

    def _count_rows(self):
        """
        Count the rows for /diagnostics in a thread, through its own read-only connection.

        A full count reads every memory row: 0.2-0.6 s at 1,000,000 memories,
        which held up start-up (issue 15) and would stall the executor.
        SQLite lets other threads run while it counts. _take_row_count
        applies the result on the executor thread, and only when the node
        wrote nothing meanwhile (else it counts again), so the counts stay
        exact; until then diagnostics show no counts.
        """
        generation = self._store.generation
        reader = self._store.open_reader()
        outcome = {}

        def count():
            try:
                outcome['counts'] = reader.counts()
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
        if 'counts' in outcome and generation == self._store.generation:
            self._health.set_counts(outcome['counts'])
        elif self._health.counts is None:
            self._count_rows()

    @staticmethod
    def _claim(path):
        """Own the database file (creating its directory first) before SQLite opens it."""
        try:
            if not path.parent.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
            return ownership.claim(str(path))
        except ownership.DatabaseBusyError as error:
            raise node_runner.StartupError(f'cannot open persistent memory: {error}') from None
        except OSError as error:
            raise node_runner.StartupError(
                f'cannot open persistent memory at {path}: {error.strerror}') from None

    def close(self):
        """Close the store once, then give up the file (idempotent); after spinning stopped."""
        if self._copies is not None:
            # A backup or export in flight ends early (its partial file is
            # removed) before the store closes and the file is given up.
            self._copies.stop()
        for handle in (self._reader, self._store):
            if handle is not None:
                handle.close()
        if self._ownership is not None:
            self._ownership.release()
        self._reader = self._store = self._ownership = self._recall = None

    # The database stays at its path -----------------------------------------------

    def _database_in_place(self):
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
        if self._health.database_lost is None and self._ownership.still_at_path():
            return True
        if self._health.lose_database(
                f'{self.settings.database_path} was removed, moved or replaced while the '
                'node ran'):
            self.get_logger().error(
                f'the database file {self.settings.database_path} was removed, moved or '
                'replaced while this node ran: remember answers backend_failure, recall '
                'unavailable and admin commands fail until the node is restarted')
        return False

    def _require_database_in_place(self):
        if not self._database_in_place():
            raise store.BackendError(
                'the database file was removed, moved or replaced while the memory node '
                'ran; restart the node')

    # Diagnostics ---------------------------------------------------------------

    def _diagnostic_report(self):
        if self._store is None:
            return self._health.report(enabled=False, extra_values=self._diagnostic_extra_values())
        if self._health.database_lost is None:
            # The 1 Hz report notices a lost file even when no request comes.
            self._database_in_place()
        self._take_row_count()
        path = self.settings.database_path
        return self._health.report(
            enabled=True, database_path=path, schema_version=self._store.schema_version,
            file_sizes=(_file_size(path), _file_size(f'{path}-wal')),
            extra_values=self._diagnostic_extra_values())

    def _diagnostic_extra_values(self):
        """Return the observed-turn window's (key, value) pairs for /diagnostics."""
        if self._store is None:
            return ()
        if self._turn_window is None:
            return (('observed turns', 'not required'),)
        return (
            ('observed turns', str(len(self._turn_window))),
            ('observed turns max', str(self._turn_window.max_turns)),
        )

    def destroy_node(self):
        """Close the store (once), then destroy the node."""
        # node_runner calls this after spinning stopped, so no request is in flight.
        self.close()
        super().destroy_node()

    # Observed operator turns -------------------------------------------------

    def _listen_for_operator_turns(self):
        self._remember_group = ReentrantCallbackGroup()
        self._turn_window = None
        if not self.get_parameter('require_observed_turns').value:
            self.get_logger().warning(
                'require_observed_turns is false: remember trusts the utterance in each '
                'request instead of operator turns heard on operator/utterance')
            return
        wait = self.get_parameter('observed_turn_wait_sec').value
        if not 0.0 <= wait <= 60.0:
            raise node_runner.StartupError('observed_turn_wait_sec must be between 0 and 60')
        try:
            self._turn_window = turns.TurnWindow(
                self.get_parameter('observed_turns_max').value,
                self.get_parameter('observed_turn_max_age_sec').value)
        except ValueError as error:
            raise node_runner.StartupError(f'invalid parameter: {error}') from None
        self._turn_wait_sec = wait
        # (episode_id, turn_id) -> [(utterance, Future)] of remember calls waiting.
        self._turn_waiters = {}
        self._waiting = 0
        # A deadline is an interval: simulated or wall-clock time jumps must not move it.
        self._steady_clock = Clock(clock_type=ClockType.STEADY_TIME)
        # Volatile: a restarted node must not refill its window with old words.
        self._turns_subscription = self.create_subscription(
            OperatorUtterance, UTTERANCE_TOPIC, self._on_operator_turn, LIVE_SUBSCRIBER_QOS)

    def _on_operator_turn(self, message):
        if not self._turn_window.observe(message.episode_id, message.turn_id, message.text):
            self.get_logger().warning(
                'ignored an operator turn with an empty or over-long id or text',
                throttle_duration_sec=5.0)
            return
        for utterance, heard in self._turn_waiters.get((message.episode_id, message.turn_id), ()):
            if utterance == message.text and not heard.done():
                heard.set_result(True)

    async def _operator_turn_heard(self, request):
        """
        Return turns.HEARD, NOT_HEARD or DIFFERENT for the request's turn.

        A turn not (yet) heard with this utterance is waited for up to
        observed_turn_wait_sec; the executor serves everything else meanwhile.
        """
        if self._turn_window is None:
            return turns.HEARD  # require_observed_turns is false
        key = (request.episode_id, request.turn_id)
        heard = self._turn_window.check(*key, request.utterance)
        if heard == turns.HEARD or self._turn_wait_sec == 0 or self._waiting >= MAX_TURN_WAITS:
            return heard
        arrived = Future()
        waiter = (request.utterance, arrived)
        self._turn_waiters.setdefault(key, []).append(waiter)
        self._waiting += 1
        timer = None

        def deadline():
            timer.cancel()
            if not arrived.done():
                arrived.set_result(False)

        timer = self.create_timer(self._turn_wait_sec, deadline,
                                  callback_group=self._remember_group, clock=self._steady_clock)
        started = self._steady_clock.now()
        try:
            await arrived
        finally:
            timer.cancel()
            self.destroy_timer(timer)
            self._waiting -= 1
            waiters = self._turn_waiters[key]
            waiters.remove(waiter)
            if not waiters:
                del self._turn_waiters[key]
        # Debug, not info: see the remember log line below.
        self.get_logger().debug(
            f'remember waited {(self._steady_clock.now() - started).nanoseconds / 1e6:.1f} ms '
            f'for its operator turn ({"heard" if arrived.result() else "not heard"})')
        return self._turn_window.check(*key, request.utterance)

    # Recall and remember -----------------------------------------------------

    def _on_recall(self, request, response):
        started = time.perf_counter()
        try:
            result = self._recall.recall(request.query)
        except Exception:  # recall() never raises by contract; this guards the contract
            self.get_logger().error('recall failed unexpectedly', throttle_duration_sec=1.0)
            result = recall.unavailable()
        if not self._database_in_place():
            result = recall.unavailable()
        if result.status == recall.STATUS_UNAVAILABLE:
            self._health.recall_failures.add()
        self._health.recall.add(time.perf_counter() - started)
        return responses.fill_recall(response, result, request.include_entities)

    async def _on_remember(self, request, response):
        started = time.perf_counter()
        heard = await self._operator_turn_heard(request)
        if heard != turns.HEARD:
            self._health.remember.add(time.perf_counter() - started)
            return responses.fill_remember_turn_not_heard(response, heard)
        result = self._remember(request)
        if result.reason == admission.REASON_BACKEND_FAILURE:
            self._health.remember_failures.add()
        self._health.remember.add(time.perf_counter() - started)
        return responses.fill_remember(response, result)

    def _remember(self, request):
        if not self._database_in_place():
            return admission.backend_failure()
        try:
            context = admission.TurnContext(
                episode_id=request.episode_id, turn_id=request.turn_id,
                utterance=request.utterance)
            proposal = admission.Proposal(
                kind=request.kind, subject=request.subject, predicate=request.predicate,
                value=request.value, related_entity=request.related_entity or None,
                related_role=request.related_role or None, evidence=request.evidence)
            robot_profile = self.robot_profile
            result = self._turn_proposals.answer(
                context, proposal,
                lambda: admission.admit(self._store, context, proposal, robot_profile),
                self._store, robot_profile)
        except Exception:  # admit() never raises by contract; this guards the contract
            self.get_logger().error('remember failed unexpectedly', throttle_duration_sec=1.0)
            result = admission.backend_failure()
        if result.status == admission.STATUS_APPLIED and not self._database_in_place():
            # Committed, but to a file no longer at the path: not acknowledged.
            return admission.backend_failure()
        if result.outcome == admission.OUTCOME_CREATED:
            self._health.wrote(memories=1, active_memories=1)
        if result.status == admission.STATUS_APPLIED:
            # Debug, not info: an rclpy log call costs about as much as the
            # admission itself (see bench/README.md), and the row's source
            # label already records the episode and turn of every write.
            self.get_logger().debug(
                f'remember {result.outcome} {store.format_memory_id(result.memory_id)} '
                f'(episode {request.episode_id!r} turn {request.turn_id!r})')
        return result

    # Admin -----------------------------------------------------------------

    def _admin_callback(self, command, handler):
        def callback(request, response):
            if self._store is None and command != 'status':
                return responses.fill_admin_disabled(response)
            try:
                if self._store is not None:
                    self._require_database_in_place()
                handler(request, response)
                if self._store is not None and not self._database_in_place():
                    # After a write's commit, before its answer (see _database_in_place):
                    # nothing of what the handler filled in is answered.
                    response = type(response)()
                    self._require_database_in_place()
            except store.StoreError as error:
                responses.fill_admin_error(response, error)
            except Exception as error:  # never let a callback raise into the executor
                self.get_logger().error(f'admin {command} failed: {error!r}')
                responses.fill_admin_error(response, error)
            return response
        return callback

    def _admin_status(self, request, response):
        response.robot_profile = self.robot_profile
        if self._store is None:
            response.enabled = False
            return responses.fill_admin_success(response, 'persistent memory is disabled')
        counts = self._store.counts()
        self._health.set_counts(counts)
        response.enabled = True
        response.database_path = str(self._store.path)
        response.schema_version = self._store.schema_version
        response.entity_count = counts['entities']
        response.alias_count = counts['aliases']
        response.memory_count = counts['memories']
        response.active_memory_count = counts['active_memories']
        response.link_count = counts['links']
        response.payload_count = counts['payloads']
        responses.fill_admin_success(response, 'persistent memory is enabled')

    def _admin_entity_add(self, request, response):
        entity = self._store.add_entity(request.entity_type, request.canonical_name)
        self._health.wrote(entities=1)
        response.entity = responses.entity_record(entity)
        responses.fill_admin_success(
            response, f'created {store.format_entity_id(entity.id)}')

    def _admin_entity_find(self, request, response):
        entities = self._store.find_entities(request.name)
        response.entities = [responses.entity_record(entity) for entity in entities]
        responses.fill_admin_success(response, f'{len(entities)} exact match(es)')

    def _admin_alias_add(self, request, response):
        entity = self._store.add_alias(store.parse_entity_id(request.entity_id), request.alias)
        self._health.wrote(aliases=1)
        response.entity = responses.entity_record(entity)
        responses.fill_admin_success(
            response, f'alias added to {store.format_entity_id(entity.id)}')

    def _admin_find(self, request, response):
        found, _ = self._store.find_with_newest_memories(
            request.name, entity_limit=None, memory_limit=FIND_MEMORY_LIMIT, with_aliases=True)
        records = [
            responses.entity_record(entity, memories, truncated)
            for entity, memories, truncated in found]
        response.entities = records
        responses.fill_admin_success(response, f'{len(records)} exact match(es)')

    def _admin_add(self, request, response):
        new = store.NewMemory(
            kind=request.kind,
            summary=request.summary,
            links=tuple(
                (store.parse_entity_id(link.entity_id), link.role) for link in request.links),
            predicate=request.predicate or None,
            value=request.value or None,
            source_kind=request.source_kind or store.SOURCE_CONSOLE,
            source_label=request.source_label,
            confidence=request.confidence if request.has_confidence else None)
        memory = self._store.add_memory(new)
        self._health.wrote(memories=1, active_memories=1 if memory.status == 'active' else 0)
        response.memory = responses.memory_message(memory)
        responses.fill_admin_success(
            response, f'created {store.format_memory_id(memory.id)}')

    def _admin_show(self, request, response):
        memory, payloads = self._store.get_memory(store.parse_memory_id(request.memory_id))
        response.memory = responses.memory_message(memory)
        response.payloads = [responses.payload_record(payload) for payload in payloads]
        responses.fill_retirement(response, memory)
        responses.fill_admin_success(response, store.format_memory_id(memory.id))

    def _admin_list(self, request, response):
        entity = self._store.get_entity(store.parse_entity_id(request.entity_id))
        memories, truncated = self._store.newest_active_memories(entity.id, LIST_MEMORY_LIMIT)
        response.entity = responses.entity_record(entity, memories, truncated)
        responses.fill_admin_success(response, f'{len(memories)} active memories')

    def _admin_retire(self, request, response):
        memory = self._store.retire_memory(
            store.parse_memory_id(request.memory_id), request.reason)
        self._health.wrote(active_memories=-1)
        response.memory = responses.memory_message(memory)
        responses.fill_retirement(response, memory)
        responses.fill_admin_success(
            response, f'retired {store.format_memory_id(memory.id)}')

    def _admin_forget(self, request, response):
        if request.confirm and self._copies.busy:
            # The copy's read snapshot would keep the forgotten text in the WAL.
            raise store.BusyError('a backup or export is running; forget when it is done')
        target = request.target
        if target.startswith('ENT'):
            plan = self._store.forget_entity(
                store.parse_entity_id(target), apply=request.confirm)
        else:
            plan = self._store.forget_memory(
                store.parse_memory_id(target), apply=request.confirm)
        if request.confirm:
            # A forget may remove any number of rows of every kind: count afresh.
            self._health.set_counts(self._store.counts())
            # Kept answers and folded texts would hold the forgotten text in
            # this process until replaced: the forget drops them now.
            self._recall.clear()
            normalize.forget_kept_texts()
        responses.fill_forget(response, plan)

    def _copy_callback(self, command, work):
        """
        Serve backup or export on the worker thread; the executor serves the rest meanwhile.

        The copy reads through its own read-only snapshot connection
        (core.archive), so the node's reader and writer are never shared
        with the thread. A second copy while one runs is answered busy.
        """
        async def callback(request, response):
            if self._store is None:
                return responses.fill_admin_disabled(response)
            started = time.perf_counter()
            try:
                self._require_database_in_place()
                result = await self._copies.run(
                    work, str(self._store.path), request.path, force=request.force)
            except Exception as error:  # never let a callback raise into the executor
                if not isinstance(error, store.StoreError):
                    self.get_logger().error(f'admin {command} failed: {error!r}')
                return responses.fill_admin_error(response, error)
            self.get_logger().info(
                f'{command} of {self.settings.database_path} written to {result["path"]} '
                f'in {time.perf_counter() - started:.1f} s')
            return responses.fill_copy(response, result, command)
        return callback


def _file_size(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def main(args=None):
    """Run the memory node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    return node_runner.run(MemoryNode, 'memory', args)


if __name__ == '__main__':
    sys.exit(main())
