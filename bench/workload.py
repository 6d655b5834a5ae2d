# SPDX-License-Identifier: Apache-2.0
"""
The requests of every measured series, built from a generated store's metadata.

Request objects are built before the clock starts, so client-side request
construction is never part of a measured round trip.
"""

import ctypes
import os
import signal
import time

from mira_memory.ros import clients
from mira_memory.srv import RecallMemory, Remember
from std_srvs.srv import Trigger

SERIES = (
    'trigger', 'trigger_after_turn', 'canned_recall', 'recall_found', 'canned_ambiguous',
    'recall_ambiguous', 'recall_miss', 'canned_found_full', 'recall_found_full',
    'remember_created', 'canned_remember', 'remember_duplicate', 'remember_rejected',
    'console_recall')
# Each recall series and the canned series of the same shape (same requests).
CANNED_OF = {
    'recall_found': 'canned_recall',
    'recall_ambiguous': 'canned_ambiguous',
    'recall_found_full': 'canned_found_full',
}
FLOOR = 'trigger'
# The floor of a remember call: the same empty Trigger, called the way the
# bench calls remember (its operator turn published first, then the same
# untimed --turn-lead-ms pause), so that what the node does for remember is
# all that separates the two. The turn and the pause move an empty call's
# cost either way: +0.04-0.06 ms after a 2 ms pause on a quiet machine
# (bench/executor_probe.py), 6-13% less than the plain floor in the full
# bench, where the calls alternate between two node processes.
TURN_FLOOR = 'trigger_after_turn'
# The throughput phases: the floor, the canned answer of recall_found's shape
# (what its message costs the node and the clients), recall found.
THROUGHPUT_SERIES = ('trigger', 'canned_recall', 'recall_found')
# The outcome label every call of a series must produce.
EXPECTED_OUTCOMES = {
    'trigger': 'ok',
    'trigger_after_turn': 'ok',
    # remember_duplicate's requests, after the same turn and pause, answered
    # with one prebuilt duplicate response: what the Remember message itself costs.
    'canned_remember': 'applied/duplicate',
    'canned_recall': 'found',
    'recall_found': 'found',
    'canned_ambiguous': 'ambiguous',
    'recall_ambiguous': 'ambiguous',
    # include_entities: the structured entities too (tools and UIs).
    'canned_found_full': 'found',
    'recall_found_full': 'found',
    'recall_miss': 'miss',
    'remember_created': 'applied/created',
    'remember_duplicate': 'applied/duplicate',
    'remember_rejected': 'rejected/value_not_supported',
    # recall_found's requests, waited for the way the console, operator source,
    # demo and tests wait (mira_memory.ros.clients.call), to show what they pay.
    'console_recall': 'found',
}
SERVICE_TYPES = {
    'trigger': Trigger, 'canned': RecallMemory, 'recall': RecallMemory, 'remember': Remember,
    'console': RecallMemory, 'canned_remember': Remember}
EPISODE_ID = 'bench'
# The runner exports its pid so that its children can tell it is gone.
RUNNER_PID_VARIABLE = 'MIRA_BENCH_RUNNER_PID'
_PR_SET_PDEATHSIG = 1
_VALUES = ('green tea', 'black coffee', 'ramen', 'jazz', 'chess', 'long walks', 'sushi',
           'the color teal')


def stop_with_runner():
    """
    Have Linux send this process SIGTERM when the runner that started it dies.

    A runner that crashes or is killed cannot stop its node and client
    processes; with this they stop themselves, as they do when the runner
    stops them (SIGTERM, never ignored the way a background job's SIGINT is).
    """
    runner = os.environ.get(RUNNER_PID_VARIABLE)
    if runner is None:
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != int(runner):
        # The runner died before the request above was in place.
        os.kill(os.getpid(), signal.SIGTERM)


# The empty floor is waited for exactly as recall is, resend included; the
# product itself never calls Trigger, so std_srvs stays a bench and test
# dependency (package.xml) and the bench adds it here.
clients.RESENDABLE_SERVICE_TYPES = clients.RESENDABLE_SERVICE_TYPES | {Trigger}


def call(executor, client, request, timeout_s):
    """
    Return (round trip in ns, response or None) of one service call.

    None means no response within timeout_s, or the context was shut down.

    The executor is spun once at a time until the future is done rather
    than with spin_until_future_complete: on Jazzy (rclpy 7.1) that adds a
    done callback per call which the executor only runs as a task on a later
    spin, costing milliseconds per call and growing over a long run (Kilted
    is not affected). Both distros then measure the same client work.
    """
    started = time.perf_counter_ns()
    deadline = time.monotonic() + timeout_s
    future = client.call_async(request)
    while not future.done():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not executor.context.ok():
            client.remove_pending_request(future)
            return time.perf_counter_ns() - started, None
        # Short waits, so a shut-down context is noticed soon; a response
        # still ends the wait the moment it arrives.
        executor.spin_once(timeout_sec=min(remaining, 0.1))
    return time.perf_counter_ns() - started, future.result()


def call_series(series, executor, client, request, timeout_s):
    """Return (round trip in ns, response or None) of one call of series."""
    if service_kind(series) != 'console':
        return call(executor, client, request, timeout_s)
    started = time.perf_counter_ns()
    response = clients.call(executor, client, request, time.monotonic() + timeout_s)
    return time.perf_counter_ns() - started, response


def service_kind(series):
    """Return 'trigger', 'canned', 'recall', 'remember', 'console' or 'canned_remember'."""
    if series == 'canned_remember':
        return series
    return series.split('_', 1)[0]


def service_names(node_prefix):
    """Return the full service name of each service kind under a node prefix."""
    return {
        'trigger': node_prefix + '/bench/empty',
        'canned': node_prefix + '/bench/canned_recall',
        'recall': node_prefix + '/recall_memory',
        'remember': node_prefix + '/remember',
        'console': node_prefix + '/recall_memory',
        'canned_remember': node_prefix + '/bench/canned_remember',
    }


def outcome(series, response):
    """Return the outcome label of a response (compared with EXPECTED_OUTCOMES)."""
    kind = service_kind(series)
    if kind == 'trigger':
        # The floor's callback is empty: any response is the expected one.
        return 'ok'
    if kind in ('canned', 'recall', 'console'):
        return response.status
    return '%s/%s' % (response.status, response.outcome or response.reason)


class Workload:
    """Deterministic request sequences over one store's query pools."""

    def __init__(self, metadata):
        self._found = metadata['found_queries']
        self._ambiguous = metadata['ambiguous_queries']
        self._miss = metadata['miss_queries']
        self._subjects = metadata['remember_subjects']
        # Proposals already created, said again in a turn of their own (duplicates;
        # the identical request in its own turn would be a retry, answered as the
        # first time: applied/created).
        self._created = []

    def request(self, series, n):
        """Return the n-th request of a series (n counts from 0)."""
        if series in ('trigger', 'trigger_after_turn'):
            return Trigger.Request()
        if series in ('canned_recall', 'recall_found', 'console_recall'):
            return RecallMemory.Request(query=self._found[n % len(self._found)])
        if series in ('canned_found_full', 'recall_found_full'):
            return RecallMemory.Request(
                query=self._found[n % len(self._found)], include_entities=True)
        if series in ('canned_ambiguous', 'recall_ambiguous'):
            return RecallMemory.Request(query=self._ambiguous[n % len(self._ambiguous)])
        if series == 'recall_miss':
            return RecallMemory.Request(query=self._miss[n % len(self._miss)])
        if series == 'remember_created':
            request = self._proposal(n, supported=True)
            self._created.append(request)
            return request
        if series in ('remember_duplicate', 'canned_remember'):
            if not self._created:
                raise RuntimeError('duplicates need an earlier created proposal (warm up first)')
            created = self._created[n % len(self._created)]
            return Remember.Request(**{
                **{name: getattr(created, name) for name in created.get_fields_and_field_types()},
                'turn_id': f'{created.turn_id}d{n}'})
        if series == 'remember_rejected':
            return self._proposal(n, supported=False)
        raise ValueError('unknown series %r' % series)

    def turn_before(self, series, n, request):
        """
        Return the operator turn (episode id, turn id, text) published before a call, or None.

        A remember call brings its own turn. The turn floor gets a turn of
        the same shape that no remember names, so the node does the same
        work for it (the window keeps it).
        """
        if series.startswith('remember') or series == 'canned_remember':
            return request.episode_id, request.turn_id, request.utterance
        if series == TURN_FLOOR:
            subject = self._subjects[n % len(self._subjects)]
            return (EPISODE_ID, 'f%d' % n,
                    'By the way, %s really likes %s, these days.' % (
                        subject, _VALUES[n % len(_VALUES)]))
        return None

    def _proposal(self, n, supported):
        """
        Return a grounded proposal about an existing person, new in its slot.

        Every created proposal has its own predicate (so it never conflicts
        with an earlier one) and its own turn (one memory per turn). A
        rejected one names a value the operator did not say.
        """
        subject = self._subjects[n % len(self._subjects)]
        said = _VALUES[n % len(_VALUES)]
        value = said if supported else _VALUES[(n + 1) % len(_VALUES)]
        evidence = '%s really likes %s' % (subject, said)
        return Remember.Request(
            episode_id=EPISODE_ID,
            turn_id='%s%d' % ('c' if supported else 'r', n),
            utterance='By the way, %s, these days.' % evidence,
            kind=('preference', 'fact')[n % 2],
            subject=subject,
            predicate='bench_likes_%d' % n,
            value=value,
            evidence=evidence)
