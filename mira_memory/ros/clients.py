# SPDX-License-Identifier: Apache-2.0
"""
The one way a synchronous client waits for a service reply: call().

Used by the console, the operator source, the demo and the tests (the
cognition library is asynchronous and keeps its own coroutine client and
resend: cognition/runner.py, call_with_retries).

Why not executor.spin_until_future_complete: on Jazzy (rclpy 7.1) it adds a
done callback per call that the executor runs only as a task on a later
spin; each call costs 4-14 ms and the cost grows over a run (Kilted is not
affected). call() spins the executor once at a time and checks the future
itself, against a monotonic deadline, which costs the same on both distros
(bench/README.md measures it as the `console` series).

Why a resend: DDS occasionally drops a service reply (a few per thousand
calls on a loaded machine). A call whose request is safe to repeat -
recall, the admin reads, memory check's dry run, remember (a repeated remember gets the turn's
first answer again, never a second row) and the working-memory show - is
sent a second time when no reply came within RESEND_AFTER_SEC (at most half
the time left), inside the same deadline. Both requests stay pending and
whichever reply comes first is the answer, except a store failure
(backend_failure, unavailable) while the other request is still out: a
store failure can be transient, so the other request may yet succeed - and
for remember it may write. The call then waits for the other reply; if none
comes by the deadline, a read answers the failure, and remember answers
nothing (None), since whether the other request wrote is unknown:
"rejected" must confirm that nothing was written. Writes that are not
idempotent (entity_add, alias_add, add, and any service not listed here)
are sent once: repeating them could write twice. Working memory clear is
idempotent in effect, but its reply counts what it dropped, and a resend
would answer 0: it is sent once too.
"""

import time

from mira_memory.srv import AdminCheck, AdminEntityFind, AdminFind, AdminList, AdminShow
from mira_memory.srv import AdminStatus
from mira_memory.srv import RecallMemory, Remember, WorkingMemoryShow

SPIN_STEP_SEC = 0.1
RESEND_AFTER_SEC = 1.0

# Services (by type) whose request may be sent twice with the same effect.
RESENDABLE_SERVICE_TYPES = frozenset({
    RecallMemory, Remember,
    AdminStatus, AdminEntityFind, AdminFind, AdminShow, AdminList, AdminCheck,
    WorkingMemoryShow,
})
# Of those, the ones that write: their outcome is unknown while a resent request is out.
RESENDABLE_WRITES = frozenset({Remember})


def _store_failed(response):
    """Return True for a reply that says the memory store failed (possibly for a moment)."""
    return (getattr(response, 'reason', '') == Remember.Response.REASON_BACKEND_FAILURE
            or getattr(response, 'status', '') == RecallMemory.Response.STATUS_UNAVAILABLE
            or getattr(response, 'error_code', '') == AdminStatus.Response.ERROR_BACKEND_FAILURE)


def resendable(client):
    """Return True when the client's service is read-only or idempotent."""
    return client.srv_type in RESENDABLE_SERVICE_TYPES


def call(executor, client, request, deadline, *, resend=None):
    """
    Send request and return its response, or None when none came by deadline.

    deadline is a time.monotonic() value; the service should already be
    available (client.service_is_ready()). resend=None
    resends once when the service type is resendable(); True or False decides
    explicitly (which reply answers a resent call: see the module docstring).
    Call it outside any callback: it spins executor, whose node owns client.
    """
    if resend is None:
        resend = resendable(client)
    writes = client.srv_type in RESENDABLE_WRITES
    futures = [client.call_async(request)]
    resend_at = None
    if resend:
        resend_at = time.monotonic() + min(
            RESEND_AFTER_SEC, max(deadline - time.monotonic(), 0.0) / 2)
    failure = None
    try:
        while True:
            replies = [future.result() for future in futures if future.done()]
            if replies:
                answers = [reply for reply in replies if not _store_failed(reply)]
                futures = [future for future in futures if not future.done()]
                if answers:
                    return answers[0]
                failure = failure or replies[0]
                if not futures:
                    return failure
                # A store failure while the resent request is out: wait for that one.
                resend_at = None
            now = time.monotonic()
            if now >= deadline or not executor.context.ok():
                return None if writes or failure is None else failure
            if resend_at is not None and now >= resend_at:
                # The first request stays pending: a late first reply still counts.
                futures.append(client.call_async(request))
                resend_at = None
            wake = deadline if resend_at is None else resend_at
            # Short waits notice a shut-down context; a reply ends the wait at once.
            executor.spin_once(timeout_sec=min(max(wake - now, 0.0), SPIN_STEP_SEC))
    finally:
        for future in futures:
            if not future.done():
                # A late reply must not complete anything any more.
                client.remove_pending_request(future)
