# SPDX-License-Identifier: Apache-2.0
"""
The memory node: wiring and main around MemoryService (memory/service.py).

It serves, under its own name (/mira/memory in bringup):
- ~/recall_memory (RecallMemory): exact, bounded, read-only recall, through a
  connection that cannot write;
- ~/remember (Remember): operator-grounded admission, every rule enforced
  here whatever the caller checked, and only for an operator turn this node
  heard itself on operator/utterance (require_observed_turns; the gate is
  memory/turn_gate.py);
- ~/admin/<command>: one service per console command, but backup, export
  and verify: actions of the same names (memory/admin_actions.py), which run
  on a worker thread (memory/copy_worker.py) while the node keeps serving,
  one at a time, with feedback and cancel. pending, pending_show, accept,
  supersede and dismiss are supervised review (core/review, docs/review.md):
  a remember refused for a reason a person can judge waits there for a
  decision (parameters pending_enabled, pending_max, pending_max_per_episode,
  pending_max_per_minute, pending_max_age_days).

Recall and remember exist only while persistent memory is enabled; the admin
services and actions always exist so `memory persistent` can say that it is
disabled.
Every callback answers through its response: no exception leaves one.

The handlers themselves (request in, response out) are MemoryService's,
callable without a ROS graph. MemoryServing, shared with the managed node
(memory/lifecycle_node.py), declares the parameters, opens the memory in one
place (parameters read, file claimed, store opened and its schema checked,
turn gate, /diagnostics) and creates the services in one place; MemoryNode
does both at construction. A second node on the same database file exits 1
naming the owner. Health goes to /diagnostics once a second by default
(diagnostics_period_sec; mira_memory/ros/diagnostics.py).
"""

import sys
import time

from mira_memory.core import config, recall
from mira_memory.core.admission import results, turns
from mira_memory.core.admission.normalize import has_forbidden_characters
from mira_memory.core.archive import output_files
from mira_memory.core.errors import StoreError
from mira_memory.core.review import keep
from mira_memory.memory import replication, responses
from mira_memory.memory.admin_actions import AdminActions
from mira_memory.memory.copy_worker import CopyWorker
from mira_memory.memory.service import MemoryService
from mira_memory.memory.turn_gate import TurnGate
from mira_memory.ros import diagnostics, node_runner, parameters
from mira_memory.srv import AdminAccept, AdminCheck, AdminDismiss, AdminPending, AdminPendingShow
from mira_memory.srv import AdminAdd, AdminAliasAdd, AdminEntityAdd, AdminEntityFind
from mira_memory.srv import AdminFind, AdminForget, AdminJobs, AdminList, AdminRetire
from mira_memory.srv import AdminShow, AdminStatus, AdminSupersede, RecallMemory, Remember
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

ROBOT_PROFILE_MAX_LENGTH = 256
DEFAULT_OBSERVED_TURN_WAIT_SEC = 0.5
# How often expired pending review items are removed, besides at each keep and list.
PENDING_EXPIRY_PERIOD_SEC = 60.0

# admin/list comes last: once it is in the graph, every admin service is.
ADMIN_SERVICES = (
    (AdminStatus, 'status'),
    (AdminEntityAdd, 'entity_add'),
    (AdminEntityFind, 'entity_find'),
    (AdminAliasAdd, 'alias_add'),
    (AdminFind, 'find'),
    (AdminAdd, 'add'),
    (AdminShow, 'show'),
    (AdminRetire, 'retire'),
    (AdminForget, 'forget'),
    (AdminPending, 'pending'),
    (AdminPendingShow, 'pending_show'),
    (AdminAccept, 'accept'),
    (AdminSupersede, 'supersede'),
    (AdminDismiss, 'dismiss'),
    (AdminCheck, 'check'),
    (AdminList, 'list'),
)


class MemoryServing:
    """
    What both memory nodes share; mixed into an rclpy Node or LifecycleNode.

    _init_serving() and _declare_parameters() run at construction;
    _open_memory() and _close_memory() open and close the memory (the one
    place that does); _create_services() creates every service (the one
    place that does). Every callback first asks _refusal(): None while the
    node serves, else the one-line reason it does not (a managed node that
    is not active), and then answers without touching the store.
    """

    def _init_serving(self):
        self.settings = None
        self.service = None
        self.turn_gate = None  # set while remember requires observed turns
        self._diagnostics = None
        self._pending_expiry = None  # the timer that expires pending review items
        # remember and the turn gate's deadline timers (memory/turn_gate.py).
        self._remember_group = ReentrantCallbackGroup()
        # The backup/export/verify worker (memory/copy_worker.py) and the
        # actions that start its jobs (memory/admin_actions.py).
        self._copies = CopyWorker(self)
        self._admin_actions = None
        self._replication = None  # core.replication Supervisor while replica_url is set
        # Where backup and export may write (admin_output_dirs), once the memory is open.
        self.output_dirs = ()

    def _refusal(self):
        """Return None while calls are served, else why they are not (one line)."""
        return None

    def _open_memory(self):
        """
        Read the parameters, claim the file, open the store and check its schema.

        Then the observed-turn gate and /diagnostics. Raises StartupError
        (one line) and leaves nothing open when a step fails.
        """
        settings = self._resolve_settings()
        period = self._diagnostics_period()
        gate_settings = self._turn_gate_settings() if settings.enabled else None
        review = self._review_settings()
        # Before the store opens: a bad replica leaves the database untouched.
        self._replication = replication.prepare(self, settings)
        output_dirs = self._output_dirs(settings) if settings.enabled else ()
        try:
            service = MemoryService(
                settings, robot_profile=lambda: self.robot_profile, logger=self.get_logger(),
                copies_busy=lambda: self._copies.busy, review=review)
        except BaseException:
            self._close_memory()
            raise
        if self._replication is not None:
            service.store.leave_checkpoints_to_replication(self._replication.wal_truncation)
        self.settings, self.service = settings, service
        self.output_dirs = output_dirs
        try:
            # Only once the store is open: a node that cannot start leaves nothing behind.
            self._prepare_output_dirs(output_dirs)
            if gate_settings is not None:
                window, wait = gate_settings
                self.turn_gate = TurnGate(self, window, wait, self._remember_group)
            self._diagnostics = diagnostics.DiagnosticsPublisher(
                self, 'persistent memory',
                str(settings.database_path) if settings.enabled else '',
                self._diagnostic_report, period)
            if settings.enabled:
                service.expire_pending()
                self._pending_expiry = self.create_timer(
                    PENDING_EXPIRY_PERIOD_SEC, service.expire_pending)
        except BaseException:
            self._close_memory()
            raise
        if settings.enabled:
            self.get_logger().info(
                f'persistent memory enabled: {settings.database_path} '
                f'(schema version {service.store.schema_version}), '
                f'robot profile {self.robot_profile!r}; backup and export write to '
                + ', '.join(repr(str(d)) for d in output_dirs))
        else:
            self.get_logger().info('persistent memory is disabled; no database is opened')

    def _close_memory(self, because='the memory node stopped'):
        """Stop a job in flight, close the store and the file, stop listening and reporting."""
        self.release_resources(because)
        if self.turn_gate is not None:
            self.destroy_subscription(self.turn_gate.subscription)
            self.turn_gate = None
        if self._diagnostics is not None:
            self._diagnostics.destroy()
            self._diagnostics = None
        if self._pending_expiry is not None:
            self.destroy_timer(self._pending_expiry)
            self._pending_expiry = None

    def release_resources(self, because='the memory node stopped'):
        """
        Stop a job in flight, stop Litestream and close the store: all but ROS entities.

        node_runner calls it once the spin has ended, before the middleware
        destroys the node (which it bounds: ros/node_runner.py), and
        _close_memory before it destroys the memory's ROS entities. No
        callback runs meanwhile (one executor thread, stopped or inside
        this transition), so closing the store first answers nothing wrong.
        """
        # A backup, export or verify in flight ends early (its partial file
        # is removed; its goal says canceled because) before the store
        # closes and the file is given up.
        self._copies.stop(because)
        # Litestream lets go of the file before the store closes it.
        if self._replication is not None:
            self._replication.close()
            self._replication = None
        if self.service is not None:
            self.service.close()
            self.service = None

    def _start_replication(self):
        """Start Litestream when replica_url is set (plain node: at start; managed: activate)."""
        if self._replication is not None:
            self._replication.start()
            self.get_logger().info(
                f'replicating {self.settings.database_path} to '
                f'{self._replication.target.display} (litestream)')

    def _create_services(self, recall_and_remember):
        """Create the services; recall and remember only when recall_and_remember."""
        if recall_and_remember:
            self.create_service(RecallMemory, '~/recall_memory', self._on_recall)
            self.create_service(Remember, '~/remember', self._on_remember,
                                callback_group=self._remember_group)
        self._admin_actions = AdminActions(self)
        self.create_service(AdminJobs, '~/admin/jobs', self._on_jobs)
        for service_type, command in ADMIN_SERVICES:
            self.create_service(
                service_type, f'~/admin/{command}', self._admin_callback(command))

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
            ('diagnostics_period_sec', diagnostics.PERIOD_SEC,
             'Period of the /diagnostics report (seconds, '
             f'{diagnostics.MIN_PERIOD_SEC} to {diagnostics.MAX_PERIOD_SEC}).'),
            ('pending_enabled', True,
             'Keep a remember refused for a reason a person can judge (grounding, unknown '
             'subject or related entity, conflict), for an operator turn this node heard, '
             'for supervised review (memory pending). false keeps nothing new.'),
            ('pending_max', keep.DEFAULT_MAX_ITEMS,
             'Refused proposals waiting for review at most (1 to '
             f'{keep.MAX_ITEMS_LIMIT}); when full, new refusals are not kept (counted on '
             '/diagnostics) and nothing waiting is removed.'),
            ('pending_max_per_episode', keep.DEFAULT_MAX_PER_EPISODE,
             'Refused proposals of one episode waiting for review at most (1 to '
             f'{keep.MAX_ITEMS_LIMIT}); more of that episode are not kept.'),
            ('pending_max_per_minute', keep.DEFAULT_MAX_PER_MINUTE,
             'New refused proposals kept for review in any minute at most (1 to '
             f'{keep.MAX_ITEMS_LIMIT}); more are not kept.'),
            ('pending_max_age_days', keep.DEFAULT_MAX_AGE_DAYS,
             'A refused proposal kept for review expires after this many days '
             f'(at most {keep.MAX_AGE_DAYS_LIMIT:g}).'),
            ('admin_output_dirs', '',
             'Directories where backup and export may write, separated by ":" (absolute, '
             '~ expanded; missing ones are created 0700). Empty: one directory beside the '
             'database, <database name without suffix>-copies. A target elsewhere is '
             'refused (outside_output_dirs), --force included.'),
        ))
        replication.declare_parameters(self)
        parameters.declare(
            self, 'robot_profile', '',
            'Name of the active robot profile: the entity that you/your/yours/yourself '
            'denote in remember. Resolved at admission time, so it may change at runtime.',
            read_only=False)
        # Kept as a plain attribute: remember reads it on every call, and
        # rclpy's get_parameter (lock, lookup, Parameter object) costs a few
        # microseconds each time; the post-set callback keeps it current.
        self._robot_profile = self.get_parameter('robot_profile').value
        self._check_robot_profile(self._robot_profile)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.add_post_set_parameters_callback(self._after_set_parameters)

    @property
    def robot_profile(self):
        """Return the current robot profile name."""
        return self._robot_profile

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

    def _after_set_parameters(self, parameters):
        for parameter in parameters:
            if parameter.name == 'robot_profile':
                self._robot_profile = parameter.value

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

    def _output_dirs(self, settings):
        """Return the directories backup and export may write to (admin_output_dirs)."""
        try:
            return output_files.output_directories(
                self.get_parameter('admin_output_dirs').value, settings.database_path)
        except StoreError as error:
            raise node_runner.StartupError(str(error)) from None

    @staticmethod
    def _prepare_output_dirs(directories):
        """Create the output directories that are missing, each 0700."""
        try:
            output_files.prepare_directories(directories)
        except OSError as error:
            raise node_runner.StartupError(
                f'cannot create the admin output directory {error.filename!r}: '
                f'{error.strerror}') from None

    def _diagnostics_period(self):
        period = self.get_parameter('diagnostics_period_sec').value
        if not diagnostics.MIN_PERIOD_SEC <= period <= diagnostics.MAX_PERIOD_SEC:
            raise node_runner.StartupError(
                f'diagnostics_period_sec must be between {diagnostics.MIN_PERIOD_SEC} and '
                f'{diagnostics.MAX_PERIOD_SEC}')
        return period

    def _review_settings(self):
        """Return the pending review queue's keep.ReviewSettings from the parameters."""
        try:
            return keep.ReviewSettings.from_parameters(
                self.get_parameter('pending_enabled').value,
                self.get_parameter('pending_max').value,
                self.get_parameter('pending_max_age_days').value,
                self.get_parameter('pending_max_per_episode').value,
                self.get_parameter('pending_max_per_minute').value)
        except ValueError as error:
            raise node_runner.StartupError(str(error)) from None

    def _turn_gate_settings(self):
        """Return (TurnWindow, wait seconds) of the turn gate; None when turns are not required."""
        if not self.get_parameter('require_observed_turns').value:
            self.get_logger().warning(
                'require_observed_turns is false: remember trusts the utterance in each '
                'request instead of operator turns heard on operator/utterance')
            return None
        wait = self.get_parameter('observed_turn_wait_sec').value
        if not 0.0 <= wait <= 60.0:
            raise node_runner.StartupError('observed_turn_wait_sec must be between 0 and 60')
        try:
            window = turns.TurnWindow(
                self.get_parameter('observed_turns_max').value,
                self.get_parameter('observed_turn_max_age_sec').value)
        except ValueError as error:
            raise node_runner.StartupError(f'invalid parameter: {error}') from None
        return window, wait

    # Diagnostics ---------------------------------------------------------------

    def _diagnostic_report(self):
        return replication.with_health(
            self.service.diagnostic_report(self._diagnostic_extra_values()), self._replication)

    def _diagnostic_extra_values(self):
        """Return the observed-turn window's (key, value) pairs for /diagnostics."""
        if not self.service.enabled:
            return ()
        if self.turn_gate is None:
            return (('observed turns', 'not required'),)
        return self.turn_gate.diagnostic_values()

    # Recall and remember -----------------------------------------------------

    def _store_refused(self):
        """Return True when recall and remember cannot reach a store (see _refusal)."""
        return self._refusal() is not None or self.service is None or not self.service.enabled

    def _on_recall(self, request, response):
        if self._store_refused():
            return responses.fill_recall(response, recall.unavailable(), request.include_entities)
        return self.service.recall(request, response)

    async def _on_remember(self, request, response):
        started = time.perf_counter()
        if self._store_refused():
            return responses.fill_remember(response, results.backend_failure())
        heard = turns.HEARD  # require_observed_turns is false
        gate = self.turn_gate
        if gate is not None:
            heard = await gate.heard(request)
            if self._store_refused():
                # The managed node was deactivated while this call waited: nothing is written.
                return responses.fill_remember(response, results.backend_failure())
        # Only a turn this node heard itself may leave a refusal for review,
        # written after this reply (_after_reply).
        return self.service.answer_remember(request, response, heard, started,
                                            observed=gate is not None, defer=self._after_reply)

    def _after_reply(self, work):
        """
        Run work on this node's executor after the reply in flight is sent.

        rclpy sends a service's reply when its callback returns; the task
        runs when the executor next takes its tasks. A kept refusal's write
        (core/review/keep.py) so costs remember nothing; whatever the
        service serves first writes it before it reads the store
        (MemoryService.write_kept), and closing the memory writes it too.
        """
        executor = self.executor
        if executor is None:
            work()
        else:
            executor.create_task(work)

    # Admin -----------------------------------------------------------------

    def _admin_callback(self, command):
        def callback(request, response):
            refusal = self._refusal()
            if refusal is not None:
                return responses.fill_admin_unavailable(response, refusal)
            response = self.service.admin(command, request, response)
            if command == 'status':
                response.replication = replication.status_lines(self._replication)
            return response
        return callback

    def _on_jobs(self, request, response):
        refusal = self._refusal()
        if refusal is not None:
            return responses.fill_admin_unavailable(response, refusal)
        return responses.fill_jobs(response, self._copies.running)

    def _destroy_actions(self):
        """Destroy the action servers (destroy_node, after _close_memory)."""
        if self._admin_actions is not None:
            self._admin_actions.destroy()
            self._admin_actions = None


class MemoryNode(MemoryServing, Node):
    """Serves MemoryService's recall, remember and admin handlers over ROS from its start."""

    def __init__(self, **kwargs):
        super().__init__('memory', **kwargs)
        self._init_serving()
        self._declare_parameters()
        self._open_memory()
        self._create_services(recall_and_remember=self.settings.enabled)
        self._start_replication()

    def destroy_node(self):
        """Close the store (once), then destroy the node."""
        # node_runner calls this after spinning stopped, so no request is in flight.
        self._close_memory()
        self._destroy_actions()
        super().destroy_node()


def main(args=None):
    """Run the memory node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    return node_runner.run(MemoryNode, 'memory', args)


if __name__ == '__main__':
    sys.exit(main())
