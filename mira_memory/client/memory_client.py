# SPDX-License-Identifier: Apache-2.0
"""
MemoryClient: one object that drives a memory node, for scripts and for nodes.

Synchronous methods (recall, remember, the admin calls, the jobs) spin the
client's executor until the reply comes or the deadline passes, through
mira_memory.ros.clients.call - the one place that decides when a request is
sent a second time. Call them outside any callback of the executor, from a
plain script or a node's main loop. The asynchronous form (recall_async,
remember_async, call_async) is for a node whose executor is already
spinning (cognition): await it inside a coroutine; it never blocks the
executor.

Replies are the service's response messages (mira_memory/srv), returned as
they come: success, error_code and message say what the node decided. A
call that got no reply raises MemoryCallError (ServiceUnavailable when the
node was not found in time, NoReply when it did not answer).
"""

import time

from mira_memory.client import names
from mira_memory.client.jobs import Job
from mira_memory.ros import clients
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.executors import SingleThreadedExecutor
from rclpy.task import Future

DEFAULT_TIMEOUT_SEC = 5.0
# How often a call waiting for its service looks again.
SERVICE_POLL_SEC = 0.05


class MemoryCallError(Exception):
    """A call to the memory node got no answer; service_name says which."""

    def __init__(self, message, service_name):
        super().__init__(message)
        self.service_name = service_name


class ServiceUnavailable(MemoryCallError):
    """No memory node offered the service before the deadline."""


class NoReply(MemoryCallError):
    """The service was there, but no reply came before the deadline."""


class MemoryClient:
    """
    The memory node's services and actions, for one rclpy node.

    node: the caller's node; the clients are created on it.
    namespace: where the memory node runs (its name is <namespace>/memory);
    memory_node overrides that with the node's full name, absolute
    (/mira/memory) or relative to node's namespace (memory).
    timeout: the default deadline of one call, in seconds, including the
    wait for the memory node to appear.
    executor: what the synchronous methods spin; default: the node's
    executor, else a private one that this client adds the node to.
    services: when given, the only services this client may call; their
    clients are created at once (so the ROS graph shows them), and no other
    service's client ever is (a node that must not remember has no
    remember client). Default: any service, each client made on first use.
    callback_group: the clients' group (default: a reentrant one, which the
    asynchronous calls need to take a reply while a coroutine waits).
    """

    def __init__(self, node, namespace=names.DEFAULT_NAMESPACE, *, memory_node=None,
                 timeout=DEFAULT_TIMEOUT_SEC, executor=None, services=None,
                 callback_group=None):
        if not timeout > 0:
            raise ValueError('timeout must be positive')
        self.node = node
        self.memory_node = memory_node or names.memory_node_name(namespace)
        self.timeout = float(timeout)
        self._executor = executor
        self._group = callback_group or ReentrantCallbackGroup()
        # Deadlines of async calls are intervals: a clock jump must not move them.
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._allowed = None if services is None else frozenset(services)
        self._clients = {}
        self._action_clients = {}
        # Jobs whose action client the node is known to have discovered (goal_client).
        self._goal_ready = set()
        self._settled = False
        for service in sorted(self._allowed or ()):
            self.client(service)

    # Names and clients -----------------------------------------------------

    def service_name(self, service):
        """Return the full name of service (a names.SERVICE_TYPES key)."""
        return names.service_name(self.memory_node, service)

    def offers(self, service):
        """Return True when this client may call service (see services in the class doc)."""
        return self._allowed is None or service in self._allowed

    def client(self, service):
        """Return the rclpy client of service, created once."""
        if service not in self._clients:
            name = self.service_name(service)  # KeyError for a service the node lacks
            if not self.offers(service):
                raise PermissionError(f'this MemoryClient has no {service} client')
            self._clients[service] = self.node.create_client(
                names.SERVICE_TYPES[service], name, callback_group=self._group)
        return self._clients[service]

    def action_client(self, job):
        """Return the rclpy ActionClient of job (backup, export or verify), created once."""
        if job not in self._action_clients:
            from rclpy.action import ActionClient
            self._action_clients[job] = ActionClient(
                self.node, names.ACTION_TYPES[job], names.action_name(self.memory_node, job))
        return self._action_clients[job]

    @property
    def executor(self):
        """Return the executor the synchronous methods spin (made on first use if need be)."""
        if self._executor is None:
            self._executor = self.node.executor
        if self._executor is None:
            self._executor = SingleThreadedExecutor(context=self.node.context)
            self._executor.add_node(self.node)
        return self._executor

    @executor.setter
    def executor(self, executor):
        self._executor = executor

    def destroy(self):
        """Destroy every client this object created (the node stays)."""
        for client in self._clients.values():
            self.node.destroy_client(client)
        for client in self._action_clients.values():
            client.destroy()
        self._clients.clear()
        self._action_clients.clear()

    # Synchronous calls ------------------------------------------------------

    def deadline(self, timeout=None):
        """Return the time.monotonic() deadline of a call that starts now."""
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    def wait_for_service(self, service, deadline):
        """Spin until service is offered; return False when deadline passed first."""
        client = self.client(service)
        while not client.service_is_ready():
            now = time.monotonic()
            if now >= deadline:
                return False
            self.executor.spin_once(timeout_sec=min(SERVICE_POLL_SEC, deadline - now))
        return True

    def call(self, service, request=None, *, timeout=None, deadline=None, resend=None):
        """
        Send request to service and return the response; raise MemoryCallError.

        The deadline (or timeout from now; default: the client's timeout)
        covers the wait for the service and the reply. Whether a request is
        sent twice is clients.call's decision (resend=None), or the caller's.
        """
        if deadline is None:
            deadline = self.deadline(timeout)
        client = self.client(service)
        if request is None:
            request = client.srv_type.Request()
        if not self.wait_for_service(service, deadline):
            raise ServiceUnavailable(
                f'service {client.srv_name} is not available', client.srv_name)
        response = clients.call(self.executor, client, request, deadline, resend=resend)
        if response is None:
            raise NoReply(f'service {client.srv_name} did not answer in time', client.srv_name)
        return response

    def settle(self, deadline, attempt_sec=0.5):
        """
        Get one reply from the memory node's admin/status before a write; return True.

        The service being offered says only that this client found the node;
        until the node has discovered this client in turn, a reply can be
        dropped for good (seen with Kilted on a loaded machine). Repeating a
        read is harmless, repeating a write is not, so a client that writes
        first reads once. Returns False when no reply came by deadline.
        """
        if self._settled:
            return True
        self._settled = self._one_reply(self.client(names.ADMIN_STATUS), deadline, attempt_sec)
        return self._settled

    def _one_reply(self, client, deadline, attempt_sec):
        """Call client's (read-only) service until one reply came; False at deadline."""
        while time.monotonic() < deadline:
            attempt = min(time.monotonic() + attempt_sec, deadline)
            if not client.service_is_ready():
                self.executor.spin_once(timeout_sec=min(SERVICE_POLL_SEC, attempt_sec))
                continue
            if clients.call(self.executor, client, client.srv_type.Request(),
                            attempt) is not None:
                return True
        return False

    def goal_client(self, job, deadline, attempt_sec=0.5):
        """
        Return job's ActionClient once the node can answer a goal sent on it.

        The reply to a goal is dropped for good while the node has not yet
        discovered this client's reply readers, and wait_for_server cannot
        tell: it sees only this side's matches (a goal lost that way was
        seen on a loaded machine with Kilted). A node usually discovers a
        participant's endpoints in the order they were made (not always:
        docs/client.md), so one reply through a status client made after
        the action client shows that the node most likely knows it; that
        round trip runs once per action client. When no
        reply came by deadline the client is returned all the same: waiting
        for its server then says that no node offers the action.
        """
        action_client = self.action_client(job)
        if job in self._goal_ready:
            return action_client
        probe = self.node.create_client(
            names.SERVICE_TYPES[names.ADMIN_STATUS], self.service_name(names.ADMIN_STATUS),
            callback_group=self._group)
        try:
            if self._one_reply(probe, deadline, attempt_sec):
                self._goal_ready.add(job)
                self._settled = True
        finally:
            self.node.destroy_client(probe)
        return action_client

    def request(self, service, **fields):
        """Return a new request of service with fields set."""
        request = names.SERVICE_TYPES[service].Request()
        for field, value in fields.items():
            setattr(request, field, value)
        return request

    def _admin(self, service, timeout, **fields):
        return self.call(service, self.request(service, **fields), timeout=timeout)

    def recall(self, query, *, include_entities=False, timeout=None):
        """Recall query exactly; return RecallMemory.Response (status, reason, text, entities)."""
        return self._admin(names.RECALL_MEMORY, timeout, query=query,
                           include_entities=include_entities)

    def remember(self, request, *, timeout=None):
        """
        Send one Remember.Request (or a dict of its fields); return Remember.Response.

        The memory node admits it only for a turn the operator just said
        (episode_id, turn_id, utterance): see docs/remember.md.
        """
        if isinstance(request, dict):
            request = self.request(names.REMEMBER, **request)
        return self.call(names.REMEMBER, request, timeout=timeout)

    def status(self, *, timeout=None):
        """Return AdminStatus.Response: enabled, file, schema version, counts."""
        return self._admin(names.ADMIN_STATUS, timeout)

    def entity_add(self, entity_type, canonical_name, *, timeout=None):
        """Create an entity; return AdminEntityAdd.Response (.entity.id is ENT<n>)."""
        return self._admin(names.ADMIN_ENTITY_ADD, timeout, entity_type=entity_type,
                           canonical_name=canonical_name)

    def entity_find(self, name, *, timeout=None):
        """Return AdminEntityFind.Response: the entities whose name or alias matches exactly."""
        return self._admin(names.ADMIN_ENTITY_FIND, timeout, name=name)

    def alias_add(self, entity_id, alias, *, timeout=None):
        """Add alias to entity_id; return AdminAliasAdd.Response."""
        return self._admin(names.ADMIN_ALIAS_ADD, timeout, entity_id=entity_id, alias=alias)

    def find(self, name, *, timeout=None):
        """Return AdminFind.Response: every exact match with its linked active memories."""
        return self._admin(names.ADMIN_FIND, timeout, name=name)

    def show(self, memory_id, *, timeout=None):
        """Return AdminShow.Response: one memory (MEM<n>) with its links and payloads."""
        return self._admin(names.ADMIN_SHOW, timeout, memory_id=memory_id)

    def pending(self, *, timeout=None):
        """Return AdminPending.Response: the proposals waiting for review."""
        return self._admin(names.ADMIN_PENDING, timeout)

    def pending_show(self, pending_id, *, timeout=None):
        """Return AdminPendingShow.Response: one pending item (P<n>) and why it waits."""
        return self._admin(names.ADMIN_PENDING_SHOW, timeout, pending_id=pending_id)

    def accept(self, pending_id, reviewer, *, new_entity_type='', aliases=(), timeout=None):
        """Accept a pending item (with a new entity when new_entity_type is given)."""
        return self._admin(names.ADMIN_ACCEPT, timeout, pending_id=pending_id,
                           reviewer=reviewer, new_entity_type=new_entity_type,
                           aliases=list(aliases))

    def supersede(self, pending_id, reviewer, *, timeout=None):
        """Store a pending item in place of the memories it conflicts with."""
        return self._admin(names.ADMIN_SUPERSEDE, timeout, pending_id=pending_id,
                           reviewer=reviewer)

    def dismiss(self, pending_id, reviewer, *, timeout=None):
        """Drop a pending item; return AdminDismiss.Response."""
        return self._admin(names.ADMIN_DISMISS, timeout, pending_id=pending_id,
                           reviewer=reviewer)

    def diagnostics(self, *, timeout=None):
        """
        Return the memory node's next DiagnosticStatus from /diagnostics.

        The node publishes one a second: level, message, hardware_id (the
        database path) and values (counts, file size, latencies, failures;
        docs/operations.md). Raises NoReply when none came by the deadline
        (default: the client's timeout, at least 3 s).
        """
        from diagnostic_msgs.msg import DiagnosticArray
        from mira_memory.wire import DIAGNOSTICS_DEPTH, DIAGNOSTICS_TOPIC
        prefix = self.node.resolve_topic_name(self.memory_node, only_expand=True) + ': '
        seen = []

        def take(message):
            seen.extend(status for status in message.status if status.name.startswith(prefix))

        deadline = self.deadline(max(self.timeout if timeout is None else timeout, 3.0))
        subscription = self.node.create_subscription(
            DiagnosticArray, DIAGNOSTICS_TOPIC, take, DIAGNOSTICS_DEPTH,
            callback_group=self._group)
        try:
            while not seen:
                now = time.monotonic()
                if now >= deadline:
                    raise NoReply(f'no diagnostics of {prefix[:-2]} on {DIAGNOSTICS_TOPIC} '
                                  'in time', DIAGNOSTICS_TOPIC)
                self.executor.spin_once(timeout_sec=min(SERVICE_POLL_SEC, deadline - now))
        finally:
            self.node.destroy_subscription(subscription)
        return seen[0]

    def jobs(self, *, timeout=None):
        """Return AdminJobs.Response: which long job runs, and its progress."""
        return self._admin(names.ADMIN_JOBS, timeout)

    # Long jobs: actions ------------------------------------------------------

    def start_job(self, job, goal, *, on_progress=None, timeout=None):
        """
        Send goal to a job's action (backup, export, verify); return its Job once the node has it.

        on_progress(feedback) is called with each feedback message (phase,
        items_done, items_total, bytes_written, elapsed_sec, remaining_sec)
        while the synchronous waits spin. The deadline (timeout) covers
        finding the action server and the goal's acceptance (a goal whose
        acceptance is lost is sent again: client/jobs.py GoalSending);
        raises MemoryCallError, or JobError.
        """
        deadline = self.deadline(timeout)
        # A goal writes: the node must have discovered this client first.
        job_client = self.goal_client(job, deadline)
        job = Job(self, job_client, job, goal, on_progress)
        job.send(deadline)
        return job

    def backup(self, path, *, force=False, on_progress=None, timeout=None):
        """Back the database up to path (absolute, on the node's machine); return JobResult."""
        from mira_memory.action import Backup
        return self.start_job(names.BACKUP, Backup.Goal(path=path, force=force),
                              on_progress=on_progress, timeout=timeout).wait()

    def export(self, path, *, force=False, include_pending=False, on_progress=None,
               timeout=None):
        """Export the memories to the directory path; return JobResult."""
        from mira_memory.action import Export
        return self.start_job(names.EXPORT, Export.Goal(
            path=path, force=force, include_pending=include_pending),
            on_progress=on_progress, timeout=timeout).wait()

    def verify(self, memory_ids=(), *, on_progress=None, timeout=None):
        """Judge memories (all when memory_ids is empty) by the rules; return JobResult."""
        from mira_memory.action import Verify
        return self.start_job(names.VERIFY, Verify.Goal(memory_ids=list(memory_ids)),
                              on_progress=on_progress, timeout=timeout).wait()

    # Asynchronous calls (inside a spinning executor) ----------------------------

    async def recall_async(self, query):
        """Recall query; return RecallMemory.Response, or None when no reply came in time."""
        return await self.call_async(names.RECALL_MEMORY,
                                     self.request(names.RECALL_MEMORY, query=query))

    async def remember_async(self, request):
        """Send a Remember.Request (or dict of its fields); return the response or None."""
        if isinstance(request, dict):
            request = self.request(names.REMEMBER, **request)
        return await self.call_async(names.REMEMBER, request)

    async def call_async(self, service, request, *, timeout=None):
        """
        Send request within the deadline; return the response, or None.

        Waiting for the service to appear counts against the same deadline,
        so a node started before the memory node still gets its answer, and
        a missing memory node costs at most one deadline per call. When the
        deadline passes the request is removed (a late reply is dropped).
        """
        client = self.client(service)
        deadline = self.deadline(timeout)
        while not client.service_is_ready():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            await self.sleep(min(SERVICE_POLL_SEC, remaining))
        future = client.call_async(request)
        timer = self._one_shot(max(deadline - time.monotonic(), 0.001), future.cancel)
        try:
            response = await future
        finally:
            timer.cancel()
            self.node.destroy_timer(timer)
        if future.cancelled():
            # The reply may still arrive; it must not complete anything now.
            client.remove_pending_request(future)
            return None
        return response

    async def sleep(self, seconds):
        """Wait without blocking the executor."""
        done = Future()
        timer = self._one_shot(seconds, lambda: done.set_result(None))
        try:
            await done
        finally:
            timer.cancel()
            self.node.destroy_timer(timer)

    def _one_shot(self, seconds, action):
        timer = None

        def fire():
            timer.cancel()
            action()

        timer = self.node.create_timer(
            seconds, fire, callback_group=self._group, clock=self._steady)
        return timer
