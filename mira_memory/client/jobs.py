# SPDX-License-Identifier: Apache-2.0
"""
One long job (backup, export, verify) of the memory node, as a goal of its action.

MemoryClient.start_job() returns a Job once the node has the goal (its
acceptance came, or a repeat of the goal showed the node has it: GoalSending);
wait() spins until the result (as long as the action server stays in
sight, with no fixed limit: a backup of a large file takes what it takes),
cancel() asks the node to stop and returns what it says was left behind.
"""

from dataclasses import dataclass, field
import time
import uuid

from action_msgs.msg import GoalInfo, GoalStatus
from action_msgs.srv import CancelGoal
from rclpy.action.client import ClientGoalHandle
from unique_identifier_msgs.msg import UUID

SPIN_STEP_SEC = 0.1
# How long the action server may be out of sight before a job is given up.
SERVER_GONE_SEC = 10.0
# How long a cancel may take to end its goal (the node stops a job within 1 s).
CANCEL_WAIT_SEC = 30.0
# A cancel request with no reply yet is sent again this often: under load a
# request or its reply can be lost (a verify once ran to its end while its
# client waited 30 s for the reply), and a second cancel of a goal that is
# already canceling changes nothing.
CANCEL_RESEND_SEC = 3.0
# A goal with no answer yet is sent again this often, with the same id. Its
# acceptance is a service reply: lost when the node answers before it has
# discovered its client's reader, late on a loaded machine, while the node
# runs the job. rclpy's action server rejects a goal id it already has, and
# the memory node rejects no other goal: a repeat rejected means the node
# has the goal.
GOAL_RESEND_SEC = 2.0

_STATUS_WORDS = {
    GoalStatus.STATUS_SUCCEEDED: 'succeeded',
    GoalStatus.STATUS_CANCELED: 'canceled',
    GoalStatus.STATUS_ABORTED: 'aborted',
}


class JobError(Exception):
    """The goal could not be sent, or its result not received (one line)."""


@dataclass(frozen=True)
class JobResult:
    """
    How a job ended.

    status: 'succeeded', 'canceled' or 'aborted'; result: the action's
    Result message (success, error_code, message and the job's figures:
    Backup/Export: path, bytes, counts; Verify: the findings).
    """

    goal_id: str
    status: str
    result: object

    @property
    def succeeded(self):
        return self.status == 'succeeded' and self.result.success


def goal_id_text(goal_id):
    """Return a goal id (unique_identifier_msgs/UUID) as text."""
    return str(uuid.UUID(bytes=bytes(goal_id.uuid)))


def new_goal_id():
    """Return a fresh goal id, for send_goal_async(..., goal_uuid=...)."""
    return UUID(uuid=list(uuid.uuid4().bytes))


@dataclass(frozen=True)
class _AssumedAcceptance:
    """The goal response a handle needs (accepted, stamp), for a response not received."""

    accepted: bool = True
    stamp: object = field(default_factory=lambda: GoalInfo().stamp)


# Cancel replies that show the node has the goal: canceling it, refused
# (past its commit point) or already ended. ERROR_UNKNOWN_GOAL_ID does not.
_GOAL_KNOWN = frozenset({CancelGoal.Response.ERROR_NONE, CancelGoal.Response.ERROR_REJECTED,
                         CancelGoal.Response.ERROR_GOAL_TERMINATED})


def cancel_before_acceptance(sending, spin_once, deadline):
    """
    Cancel the goal of sending (a GoalSending) that no answer has come to; return its handle.

    The reply to a goal can come late or be lost, while the node runs the
    job. The goal's id is the sender's own (new_goal_id), so its cancel
    needs no acceptance: the request goes every CANCEL_RESEND_SEC until a
    reply shows the node has the goal (the goal's request and the cancel
    travel on different topics; the cancel can arrive first), or an answer
    to the goal comes. The goal itself is not sent again: a goal the node
    never got stays unstarted. Return a handle the caller cancels and waits
    on as any other (cancel_until_ended); None when the node rejected the
    goal. Raise JobError at deadline.
    """
    unconfirmed = sending.handle_for_id()
    requests = []
    sent_at = None
    while not sending.done():
        if any(request.done() and request.result().return_code in _GOAL_KNOWN
               for request in requests):
            return unconfirmed
        if time.monotonic() > deadline:
            raise JobError('no answer to the goal')
        if sent_at is None or time.monotonic() - sent_at >= CANCEL_RESEND_SEC:
            requests.append(unconfirmed.cancel_goal_async())
            sent_at = time.monotonic()
        spin_once()
    return sending.handle()


class GoalSending:
    """
    One goal, sent by its own id (new_goal_id) until the node answers.

    poll() sends it again every GOAL_RESEND_SEC while no answer has come,
    and says whether one has. handle() then returns the goal's handle: the
    accepted one, or, when a repeat was rejected because the node has the
    goal already, a handle for its id, whose result request the node
    answers as the accepted goal's. The feedback callback is rclpy's for
    the id, whichever request was accepted.
    """

    def __init__(self, action_client, goal, feedback_callback=None):
        self._client = action_client
        self._goal = goal
        self._feedback_callback = feedback_callback
        self.goal_id = new_goal_id()
        self._answers = []
        self._sent_at = None

    def send(self):
        """Send the goal (again)."""
        self._answers.append(self._client.send_goal_async(
            self._goal, feedback_callback=self._feedback_callback, goal_uuid=self.goal_id))
        self._sent_at = time.monotonic()

    def done(self):
        """Return True once an answer to the goal has come."""
        return any(answer.done() for answer in self._answers)

    def poll(self):
        """Send the goal again if its answer is overdue; return True once one has come."""
        if self.done():
            return True
        if not self._answers or time.monotonic() - self._sent_at >= GOAL_RESEND_SEC:
            self.send()
        return False

    def handle_for_id(self):
        """Return a handle for the goal's id alone (cancel and result requests carry it)."""
        return ClientGoalHandle(self._client, self.goal_id, _AssumedAcceptance())

    def handle(self):
        """Return the goal's handle once done(); None when the node rejected the goal."""
        answers = [answer.result() for answer in self._answers if answer.done()]
        for handle in answers:
            if handle.accepted:
                return handle
        # The first request rejected: the node rejected the goal. Only a
        # repeat rejected: the node has it (a goal it rejected, whose
        # answer was lost, has no result: the wait for it says so).
        return None if self._answers[0].done() else self.handle_for_id()


class Job:
    """A goal sent to one of the memory node's actions (see MemoryClient.start_job)."""

    def __init__(self, memory, action_client, name, goal, on_progress=None):
        self._memory = memory
        self._client = action_client
        self.name = name
        self._goal = goal
        self._on_progress = on_progress
        self.handle = None
        self._result = None

    @property
    def goal_id(self):
        return goal_id_text(self.handle.goal_id)

    def _spin_until(self, condition, deadline, failure):
        while not condition():
            if time.monotonic() > deadline:
                raise JobError(failure)
            self._memory.executor.spin_once(timeout_sec=SPIN_STEP_SEC)

    def send(self, deadline):
        """Send the goal; return once the node has it (GoalSending), else raise JobError."""
        self._spin_until(self._client.server_is_ready, deadline,
                         f'no memory node offers the {self.name} action at '
                         f'{self._memory.memory_node.rstrip("/")}/admin/{self.name}')
        feedback = None if self._on_progress is None else self._feedback
        sending = GoalSending(self._client, self._goal, feedback)
        self._spin_until(sending.poll, deadline,
                         f'no answer from the node to the {self.name} goal '
                         f'{goal_id_text(sending.goal_id)}: it may have started on the node')
        self.handle = sending.handle()
        if self.handle is None:
            raise JobError(f'the memory node rejected the {self.name} goal')
        self._result = self.handle.get_result_async()

    def _feedback(self, message):
        self._on_progress(message.feedback)

    def done(self):
        """Return True once the job ended (its result is in)."""
        return self._result.done()

    def spin(self, seconds):
        """Spin for a while: feedback reaches on_progress, the result may come."""
        deadline = time.monotonic() + seconds
        while not self._result.done() and time.monotonic() < deadline:
            self._memory.executor.spin_once(
                timeout_sec=min(SPIN_STEP_SEC, max(deadline - time.monotonic(), 0.0)))

    def wait(self):
        """Spin until the job ends; return its JobResult. Raise JobError if the node goes away."""
        gone_since = None
        while not self._result.done():
            self._memory.executor.spin_once(timeout_sec=SPIN_STEP_SEC)
            if self._client.server_is_ready():
                gone_since = None
            elif gone_since is None:
                gone_since = time.monotonic()
            elif time.monotonic() - gone_since > SERVER_GONE_SEC:
                raise JobError(f'the memory node went away while the {self.name} ran')
        answer = self._result.result()
        if answer.status == GoalStatus.STATUS_UNKNOWN:
            raise JobError(f'the memory node rejected the {self.name} goal')
        return JobResult(self.goal_id, _STATUS_WORDS.get(answer.status, str(answer.status)),
                         answer.result)

    def cancel(self, timeout=CANCEL_WAIT_SEC):
        """Ask the node to stop the job; return its JobResult (what was left behind)."""
        cancel_until_ended(self.handle, self._result,
                           lambda: self._memory.executor.spin_once(timeout_sec=SPIN_STEP_SEC),
                           time.monotonic() + timeout)
        return self.wait()


def cancel_until_ended(handle, result, spin_once, deadline):
    """
    Cancel handle's goal and call spin_once() until result (its future) is done.

    The goal's result says what the cancel did (CANCELED: nothing was
    written; SUCCEEDED: the job had passed its commit point), so the reply
    to the cancel request is not waited for; while no reply came, the
    request goes again every CANCEL_RESEND_SEC. Raise JobError at deadline.
    """
    requests = []
    sent_at = None
    while not result.done():
        answered = any(request.done() for request in requests)
        if time.monotonic() > deadline:
            raise JobError('no result after the cancel request' if answered
                           else 'no answer to the cancel request')
        if not answered and (sent_at is None or time.monotonic() - sent_at >= CANCEL_RESEND_SEC):
            requests.append(handle.cancel_goal_async())
            sent_at = time.monotonic()
        spin_once()
