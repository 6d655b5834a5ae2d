# SPDX-License-Identifier: Apache-2.0
"""
The memory node's long admin jobs as ROS 2 actions: ~/admin/backup, ~/admin/export, ~/admin/verify.

Each goal runs on the copy worker (memory/copy_worker.py), one job at a
time, while the executor serves every other request. Every goal is
accepted and answered through its result, because a rejected goal carries
no reason: a goal that arrives while a job runs ends at once, ABORTED with
error_code busy and a message naming the running job; so does one refused
by the lifecycle (unavailable), disabled memory or bad input (the same
error codes as every admin command).

While a job runs a timer publishes its feedback every FEEDBACK_PERIOD_SEC
(phase, items done of total, bytes written, elapsed, an estimate of the
time left: core.archive.progress). An accepted cancel stops the job within
a second; the goal ends CANCELED with error_code canceled and the job's
partial file removed. A cancel that comes between the goal's acceptance
and its job's start is accepted too: the goal then ends CANCELED without
running. A cancel that comes once the job has passed its commit point
(memory/copy_worker.py) is refused, and the goal succeeds.
Deactivate, cleanup and shutdown of the managed node stop the job the same
way (CopyWorker.stop); its goal ends ABORTED with error_code canceled, as
Nav2's servers abort their goals on deactivate.

A goal status or feedback message that the middleware does not publish
(node_runner.spin_through_send_failures) is logged and lost: the goal
still runs, and still ends with its own result, which the client fetches
through the result service, not the status topic.
"""

import time
import uuid

from mira_memory.action import Backup, Export, Verify
from mira_memory.core import store
from mira_memory.core.archive import copies
from mira_memory.core.archive.progress import Meter
from mira_memory.memory import responses
from mira_memory.ros.node_runner import is_send_failure
from rclpy.action import ActionServer, CancelResponse

FEEDBACK_PERIOD_SEC = 0.5
ACTION_TYPES = {'backup': Backup, 'export': Export, 'verify': Verify}


class AdminActions:
    """The three action servers of one memory node (MemoryServing)."""

    def __init__(self, node):
        self._node = node
        # Goals accepted whose execute coroutine has not begun: rclpy runs it
        # as a task of a later executor step, and a cancel can come first.
        self._not_begun = set()
        self._servers = {
            name: ActionServer(node, action_type, f'~/admin/{name}', self._execute_callback(name),
                               cancel_callback=self._on_cancel,
                               callback_group=node._copies.callback_group)
            for name, action_type in ACTION_TYPES.items()}
        for server in self._servers.values():
            server.register_handle_accepted_callback(
                lambda goal_handle, server=server: self._start(server, goal_handle))

    def destroy(self):
        """Destroy the action servers (the node's destroy_node)."""
        for server in self._servers.values():
            server.destroy()
        self._servers = {}

    def _on_cancel(self, goal_handle):
        # An accepted cancel stops the job within a second and its execute
        # coroutine ends the goal CANCELED; a job past its commit point
        # (copy_worker) refuses it and its goal succeeds.
        # A goal whose job has not started yet ends CANCELED when its
        # execute coroutine begins (_execute), so its cancel counts too.
        goal_id = _goal_id(goal_handle)
        if goal_id in self._not_begun or self._node._copies.cancel(goal_id):
            return CancelResponse.ACCEPT
        return CancelResponse.REJECT

    def _start(self, server, goal_handle):
        # rclpy's own accepted callback, goal_handle.execute(), publishes the
        # EXECUTING status and then schedules the execute coroutine; when the
        # publish fails, the goal is executing but nothing would ever run it.
        self._not_begun.add(_goal_id(goal_handle))
        try:
            goal_handle.execute()
        except Exception as error:
            if not (is_send_failure(error) and goal_handle.is_active):
                raise
            self._not_published(error)
            server.notify_execute(goal_handle, None)

    def _end(self, name, goal_handle, transition):
        """End the goal (goal_handle.succeed, abort or canceled), published or not."""
        try:
            transition()
        except Exception as error:
            if not (is_send_failure(error) and not goal_handle.is_active):
                raise
            self._not_published(error)
            # What the transition would have done after its publish: the
            # server then keeps the goal's result for its result timeout.
            self._servers[name].notify_goal_done()

    def _publish_feedback(self, goal_handle, name, meter):
        snapshot = meter.snapshot()
        if snapshot is not None and goal_handle.is_active:
            feedback = ACTION_TYPES[name].Feedback()
            try:
                goal_handle.publish_feedback(responses.fill_feedback(feedback, snapshot))
            except Exception as error:
                if not is_send_failure(error):
                    raise
                self._not_published(error)

    def _not_published(self, error):
        self._node.get_logger().warning(
            f'a goal message was not published and the goal goes on: {error}')

    def _execute_callback(self, name):
        async def execute(goal_handle):
            return await self._execute(name, goal_handle)
        return execute

    async def _execute(self, name, goal_handle):
        node = self._node
        result = ACTION_TYPES[name].Result()
        goal_id = _goal_id(goal_handle)
        self._not_begun.discard(goal_id)
        refusal = node._refusal()
        service = node.service
        if goal_handle.is_cancel_requested:
            # Canceled before its job started (_on_cancel): nothing was written.
            responses.fill_canceled(result, name, 'by its client')
            self._end(name, goal_handle, goal_handle.canceled)
            node.get_logger().info(f'{name} goal {goal_id}: {result.message}')
            return result
        if refusal is not None:
            responses.fill_admin_unavailable(result, refusal)
        elif not service.enabled:
            responses.fill_admin_disabled(result)
        elif node._copies.busy:
            responses.fill_busy(result, node._copies.running)
        else:
            await self._run(name, goal_id, goal_handle, service, result)
            return result
        self._end(name, goal_handle, goal_handle.abort)
        return result

    async def _run(self, name, goal_id, goal_handle, service, result):
        """Run the job of an accepted goal and end the goal; fill result."""
        node = self._node
        request = goal_handle.request
        started = time.perf_counter()
        meter = Meter()
        timer = node.create_timer(FEEDBACK_PERIOD_SEC,
                                  lambda: self._publish_feedback(goal_handle, name, meter),
                                  callback_group=node._copies.callback_group)
        try:
            service.require_database_in_place()
            if name == 'verify':
                work, finish = service.verify_work(request)
                summary = await node._copies.run(name, goal_id, meter, work)
                seconds = time.perf_counter() - started
                node.get_logger().info(
                    f'verify of {node.settings.database_path} in {seconds:.1f} s: '
                    f'{summary.line()}')
                finish(summary, result)
            else:
                work = copies.backup if name == 'backup' else copies.export
                # An export holds the pending review items only when asked (core/archive).
                private = {'include_pending': True} if getattr(
                    request, 'include_pending', False) else {}
                copied = await node._copies.run(
                    name, goal_id, meter, work, str(service.store.path), request.path,
                    force=request.force, directories=node.output_dirs,
                    may_publish=node._copies.may_publish, **private)
                seconds = time.perf_counter() - started
                # !r: the path is the caller's text; a newline or an escape
                # sequence in it must not forge a log line.
                node.get_logger().info(
                    f'{name} of {node.settings.database_path} written to {copied["path"]!r} '
                    f'in {seconds:.1f} s')
                responses.fill_copy(result, copied, name)
        except copies.CopyStoppedError:
            if goal_handle.is_cancel_requested:
                responses.fill_canceled(result, name, 'by its client')
                self._end(name, goal_handle, goal_handle.canceled)
            else:
                responses.fill_canceled(result, name, node._copies.stopped_because)
                self._end(name, goal_handle, goal_handle.abort)
            node.get_logger().info(f'{name} goal {goal_id}: {result.message}')
            return
        except Exception as error:
            if not isinstance(error, store.StoreError):
                node.get_logger().error(f'admin {name} failed: {error!r}')
            responses.fill_admin_error(result, error)
            self._end(name, goal_handle, goal_handle.abort)
            return
        finally:
            node.destroy_timer(timer)
        # The last feedback says complete, before the result.
        self._publish_feedback(goal_handle, name, meter)
        self._end(name, goal_handle, goal_handle.succeed)


def _goal_id(goal_handle):
    """Return the goal's id as text (its UUID), as the console prints it."""
    return str(uuid.UUID(bytes=bytes(goal_handle.goal_id.uuid)))
