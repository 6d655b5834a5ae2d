# SPDX-License-Identifier: Apache-2.0
"""
The recall and remember service tests' view of one running memory node.

MemoryServices calls the node's real services (admin seeding, recall,
remember, set_parameters). remember first says the request's operator turn on
the node's operator/utterance topic over real DDS, as the operator source
does, because the node admits only turns it heard itself. The lock helpers
make the node's real SQLite store fail the way SQLite reports contention,
without touching a byte of data.
"""

import contextlib
import hashlib
import itertools
import sqlite3
import sys
import time

from mira_memory.simulation import processes
import pytest

srv = pytest.importorskip('mira_memory.srv', reason='the built ROS 2 environment is not active')
msg = pytest.importorskip('mira_memory.msg', reason='the built ROS 2 environment is not active')
rcl_srv = pytest.importorskip('rcl_interfaces.srv')
rcl_msg = pytest.importorskip('rcl_interfaces.msg')
names = pytest.importorskip('mira_memory.client.names')

# The services create_clients() makes clients of: every one MemoryServices calls.
CLIENT_SERVICES = (
    names.ADMIN_STATUS, names.ADMIN_ENTITY_ADD, names.ADMIN_ALIAS_ADD, names.ADMIN_ADD,
    names.ADMIN_SHOW, names.ADMIN_RETIRE, names.ADMIN_FORGET, names.ADMIN_PENDING,
    names.ADMIN_PENDING_SHOW, names.ADMIN_ACCEPT, names.ADMIN_SUPERSEDE, names.ADMIN_DISMISS,
    names.ADMIN_CHECK, names.RECALL_MEMORY, names.REMEMBER)
COUNT_FIELDS = ('entity_count', 'alias_count', 'memory_count', 'active_memory_count',
                'link_count', 'payload_count')
# A recall that waits out SQLite's whole WAL read retry loop (about ten
# seconds of backoff) still answers well within this.
SLOW_CALL_TIMEOUT = 90.0

# Discovery between the test client's publisher and a (new) memory node's
# subscription: a deadline against a hang, not a timing.
MATCH_TIMEOUT = 60.0

# Starting rclpy and opening the store on a loaded, shared machine can take
# a while; this is a deadline for a hung start, not a performance claim.
STARTUP_TIMEOUT = 90.0

# A node in another process hears a remember's operator turn over DDS; its
# wait for a turn it has not heard yet ends when the turn arrives (an
# event). A system-tier node that is sent remember calls gets these
# parameters, so that wait's limit is only a deadline against a hang: with
# the product's default (0.5 s) the test would rely on a timing.
OBSERVED_TURN_WAIT = {'observed_turn_wait_sec': 30.0}

_names = itertools.count(1)


def unique(label):
    """Return label made unique within this test run (tests share one node)."""
    return f'{label} {next(_names)}'


def unique_token(label):
    """Return a predicate/role token no other test of this run uses."""
    return f'{label}_{next(_names)}'


def start_enabled_node(start, ros, name, robot_profile, *, lock_wait_s=None, **parameters):
    """
    Start an enabled memory node on a database of its own; wait for its services.

    start is the node tier's module_memory_node starter (the node is built in
    this process); the returned node carries database_path. parameters are
    further node parameters. lock_wait_s, when given, is how long the node's
    SQLite connections wait for another connection's lock
    (transaction.LOCK_WAIT_S, 5 s in the product): a test that holds a lock
    checks what the node answers once the wait runs out, not how long it waits.
    """
    from mira_memory.core.store import transaction
    database_path = start.directory / name / 'memory.sqlite3'
    with pytest.MonkeyPatch.context() as patch:
        if lock_wait_s is not None:
            # Read when the node opens its connections, in its constructor.
            patch.setattr(transaction, 'LOCK_WAIT_S', lock_wait_s)
        process = start({'enabled': True, 'database_path': str(database_path),
                         'robot_profile': robot_profile, **parameters}, wait_service=None)
    process.database_path = database_path
    for service in (names.REMEMBER, names.RECALL_MEMORY, names.ADMIN_STATUS):
        if not ros.wait_for_service(names.SERVICE_TYPES[service],
                                    names.service_name(process.prefix, service),
                                    timeout=STARTUP_TIMEOUT):
            raise AssertionError(
                f'memory node offers no {service} (running: {process.running()}):\n'
                f'{process.output()}')
    # A reply needs the node to have discovered us too: see RosClient.settle.
    ros.settle(srv.AdminStatus, names.service_name(process.prefix, names.ADMIN_STATUS))
    return process


def message_strings(message):
    """Yield every string inside a ROS message, nested messages and arrays included."""
    if isinstance(message, str):
        yield message
    elif isinstance(message, (list, tuple)):
        for item in message:
            yield from message_strings(item)
    elif hasattr(message, 'get_fields_and_field_types'):
        for name in message.get_fields_and_field_types():
            yield from message_strings(getattr(message, name))


def create_clients(ros, prefix):
    """
    Create ros's clients of the services MemoryServices calls under prefix.

    Call it before the first reply is awaited (settle): a server answers only
    a client whose reply reader it has discovered, and a participant
    announces its readers, reliably, in the order it created them, so every
    client made before that first reply is known to the node once it comes.
    A client first made later can lose its first reply on a loaded machine
    (rmw_fastrtps drops it: "client will not receive response").
    """
    for service in CLIENT_SERVICES:
        ros.client(names.SERVICE_TYPES[service], names.service_name(prefix, service))


class MemoryServices:
    """Calls to one memory node's services under its prefix (<ns>/memory)."""

    def __init__(self, ros, prefix, node=None):
        """
        Call the services under prefix through ros.

        node: the InProcessNode serving them (node tier), if any; remember()
        then waits until that node heard the turn it says (an event, not a
        sleep) before it calls, so the node's own wait for a late turn never
        runs out in a test that is not about it.
        """
        self.ros = ros
        self.prefix = prefix
        self.node = node
        # The memory node <ns>/memory subscribes to <ns>/operator/utterance.
        self.utterance_topic = prefix.rpartition('/')[0] + '/operator/utterance'
        self._utterances = None

    def admin(self, command, **fields):
        """Call admin/<command> and return the response (success unchecked)."""
        service = f'admin/{command}'
        service_type = names.SERVICE_TYPES[service]
        return self.ros.call(
            service_type, names.service_name(self.prefix, service), service_type.Request(**fields))

    def _admin_ok(self, command, **fields):
        response = self.admin(command, **fields)
        assert response.success, (command, response.error_code, response.message)
        return response

    def counts(self):
        """Return the row counts of admin/status as a dict."""
        status = self._admin_ok('status')
        return {name: getattr(status, name) for name in COUNT_FIELDS}

    def robot_profile(self):
        """Return the robot profile the node reports in admin/status."""
        return self._admin_ok('status').robot_profile

    def entity(self, name, entity_type='person', aliases=()):
        """Create an entity with aliases (supervised admin path); return ENT<n>."""
        entity_id = self._admin_ok(
            'entity_add', entity_type=entity_type, canonical_name=name).entity.id
        for alias in aliases:
            self.alias(entity_id, alias)
        return entity_id

    def alias(self, entity_id, alias):
        """Add an alias to an entity."""
        self._admin_ok('alias_add', entity_id=entity_id, alias=alias)

    def memory(self, summary, links, kind='fact', **fields):
        """Create a memory linked as (ENT<n>, role) pairs; return its message."""
        links = [msg.MemoryLink(entity_id=entity_id, role=role) for entity_id, role in links]
        return self._admin_ok('add', kind=kind, summary=summary, links=links, **fields).memory

    def show(self, memory_id):
        """Return admin/show for MEM<n> (memory and payloads)."""
        return self._admin_ok('show', memory_id=memory_id)

    def recall(self, query, timeout=20.0, include_entities=True, resend=None):
        """Call recall_memory (with the structured entities unless told otherwise)."""
        return self.ros.call(
            srv.RecallMemory, names.service_name(self.prefix, names.RECALL_MEMORY),
            srv.RecallMemory.Request(query=query, include_entities=include_entities),
            timeout=timeout, resend=resend)

    def say(self, episode_id, turn_id, text):
        """Publish one operator turn on the node's operator/utterance topic."""
        self.wait_for_listener()
        self._utterances.publish(
            msg.OperatorUtterance(episode_id=episode_id, turn_id=turn_id, text=text))

    def wait_for_listener(self):
        """Wait until a memory node's turn subscription matches our publisher."""
        if self._utterances is None:
            self._utterances = self.ros.node.create_publisher(
                msg.OperatorUtterance, self.utterance_topic, 100)
        deadline = time.monotonic() + MATCH_TIMEOUT
        while self._utterances.get_subscription_count() == 0:
            if time.monotonic() > deadline:
                raise AssertionError(f'nothing subscribes to {self.utterance_topic}')
            self.ros.spin_for(0.05)

    def remember(self, request, timeout=20.0):
        """Say the request's operator turn, then call remember with the Remember.Request."""
        self.say(request.episode_id, request.turn_id, request.utterance)
        if self.node is not None:
            self.wait_until_heard(request.episode_id, request.turn_id, request.utterance)
        return self.remember_unheard(request, timeout)

    def wait_until_heard(self, episode_id, turn_id, text):
        """Wait until the in-process node heard a turn it can hear at all (see __init__)."""
        from mira_memory.core.admission import turns
        gate = self.node.node.turn_gate
        # A turn the window refuses (ids empty or over-long, text over-long) is never heard.
        if gate is None or not turns.TurnWindow().observe(episode_id, turn_id, text):
            return
        deadline = time.monotonic() + MATCH_TIMEOUT
        # Any text counts: ROS cuts a string at a NUL, so the node may hear less.
        while gate.window.check(episode_id, turn_id, text) == turns.NOT_HEARD:
            if time.monotonic() > deadline:
                raise AssertionError(f'{self.prefix} never heard turn {turn_id!r}')
            time.sleep(0.002)

    def remember_unheard(self, request, timeout=20.0):
        """Call remember without saying the turn first."""
        return self.ros.call(srv.Remember, names.service_name(self.prefix, names.REMEMBER),
                             request, timeout=timeout)

    def set_robot_profile(self, name):
        """Set the robot_profile parameter through the node's set_parameters service."""
        parameter = rcl_msg.Parameter(name='robot_profile', value=rcl_msg.ParameterValue(
            type=rcl_msg.ParameterType.PARAMETER_STRING, string_value=name))
        response = self.ros.call(
            rcl_srv.SetParameters, f'{self.prefix}/set_parameters',
            rcl_srv.SetParameters.Request(parameters=[parameter]))
        assert [result.successful for result in response.results] == [True], response

    @contextlib.contextmanager
    def robot_profile_set_to(self, name):
        """Run a block with robot_profile set to name, then restore the old one."""
        previous = self.robot_profile()
        if name == previous:
            yield
            return
        self.set_robot_profile(name)
        try:
            yield
        finally:
            self.set_robot_profile(previous)


def remember_request(context, proposal):
    """Build a Remember request from core TurnContext and Proposal (None is empty)."""
    return srv.Remember.Request(
        episode_id=context.episode_id, turn_id=context.turn_id, utterance=context.utterance,
        kind=proposal.kind, subject=proposal.subject, predicate=proposal.predicate,
        value=proposal.value, related_entity=proposal.related_entity or '',
        related_role=proposal.related_role or '', evidence=proposal.evidence)


def database_fingerprint(database_path):
    """
    Return the SHA-256 of the database file followed by its WAL.

    In WAL mode every committed write appends frames to the -wal file (or
    restarts it under new salts) until a checkpoint copies them into the main
    file, so no transaction can commit while both stay byte-identical. The
    -shm file is excluded: readers update their read marks there.
    """
    digest = hashlib.sha256()
    for suffix in ('', '-wal'):
        path = database_path.with_name(database_path.name + suffix)
        digest.update(suffix.encode() + b':')
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@contextlib.contextmanager
def memory_client(memory_node, name, timeout=60.0):
    """Yield a MemoryClient of memory_node on a node of its own (name), in a context of its own."""
    from mira_memory.client import MemoryClient
    import rclpy
    from rclpy.context import Context
    context = Context()
    rclpy.init(context=context)
    script_node = rclpy.create_node(name, context=context)
    memory = MemoryClient(script_node, memory_node=memory_node, timeout=timeout)
    try:
        yield memory
    finally:
        memory.destroy()
        script_node.destroy_node()
        rclpy.try_shutdown(context=context)


@contextlib.contextmanager
def write_lock_held(database_path):
    """
    Hold the database's write lock from another connection, as a second writer would.

    The node's BEGIN IMMEDIATE then waits out its lock wait (LOCK_WAIT_S;
    see start_enabled_node) and SQLite reports "database is locked". Nothing
    is written: the transaction is rolled back.
    """
    connection = sqlite3.connect(str(database_path), isolation_level=None, timeout=0)
    try:
        connection.execute('BEGIN IMMEDIATE')
        yield
        connection.execute('ROLLBACK')
    finally:
        connection.close()


# The WAL-index read-mark locks are bytes 123..127 of the -shm file (lock
# bytes start at offset 120: WRITE, CHECKPOINT, RECOVER, then READ0..READ4;
# https://www.sqlite.org/walformat.html). POSIX record locks belong to a
# process, so a child holds them: nothing in this process can drop them.
_READ_LOCK_HOLDER = """
import fcntl, os, signal, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 5, 123, os.SEEK_SET)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
print('locked', flush=True)
signal.sigwait({signal.SIGINT})  # the harness stops it with SIGINT
"""


@contextlib.contextmanager
def read_locks_held(database_path):
    """
    Hold every WAL read-mark lock exclusively, as a stuck checkpointer would.

    No connection can start a read transaction: after its retry loop SQLite
    reports a locking-protocol error (SQLITE_PROTOCOL). Nothing is written.
    """
    shm = database_path.with_name(database_path.name + '-shm')
    holder = processes.Process(
        [sys.executable, '-c', _READ_LOCK_HOLDER, str(shm)],
        database_path.with_name('read_lock_holder.log'), name='WAL index lock holder')
    try:
        holder.wait_ready('locked', timeout=MATCH_TIMEOUT, what='holding the WAL index locks')
        yield
    finally:
        holder.stop()
