# SPDX-License-Identifier: Apache-2.0
"""
Can the memory node's main loop be rclpy's EventsExecutor, and what would it save.

The memory node spins a SingleThreadedExecutor, which rebuilds its wait set
over every service, timer and subscription of the node on each cycle; the
bench's profile puts the remember round trip's excess over the floor there.
rclpy's experimental EventsExecutor is the candidate replacement. This
probe answers, on the installed distro, the questions that decide it:

1. Does EventsExecutor.spin() serve a plain service at all?
2. Does it serve an async service that awaits a subscription message (the
   shape of remember waiting for its observed operator turn)?
3. Does it accept a guard condition (the copy worker's completion signal)?
4. Round trip p50 of an empty Trigger and of that async service, on a node
   with as many services as the memory node, under each executor.

Each server runs in its own process (the package's process harness), ended
with SIGTERM, then SIGKILL, if it ignores SIGINT (EventsExecutor.spin() did
here). Loopback only, like every bench:

    . .work/kilted/env.sh
    ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=71 python bench/executor_probe.py
"""

import argparse
import contextlib
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

from mira_memory.simulation import processes

# The memory node has about this many services (recall, remember, 11 admin
# services, 6 parameter services, type description) besides its timers and
# its subscription; the padding services stand in for them.
PADDING_SERVICES = 20
TIMEOUT_S = 5.0
SPIN_STEP_S = 0.1
# The untimed pause before a paused call: the turn is heard first, as in real use.
PAUSE_S = 0.002
# Deadlines against a hang: a server starts within seconds and stops at once on SIGINT.
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 3.0


def serve(executor_kind, loop, prefix):
    """Run the probe's server node until SIGINT (or SIGKILL)."""
    import rclpy
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.task import Future
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    rclpy.init()
    node = Node('executor_probe_server', namespace=prefix)
    group = ReentrantCallbackGroup()
    heard = set()
    waiting = {}
    calls = [0]  # turn n belongs to call n, as the client sends them

    def on_turn(message):
        heard.add(message.data)
        for future in waiting.pop(message.data, []):
            future.set_result(True)

    async def on_turn_service(request, response):
        # Like remember: answer at once if the turn was heard, else await it.
        key = str(calls[0])
        calls[0] += 1
        if key not in heard:
            arrived = Future()
            waiting.setdefault(key, []).append(arrived)
            await arrived
        response.success = True
        return response

    node.create_subscription(String, 'turn', on_turn, 10, callback_group=group)
    node.create_service(Trigger, 'empty', lambda request, response: response)
    node.create_service(Trigger, 'turn_service', on_turn_service, callback_group=group)
    for index in range(PADDING_SERVICES):
        node.create_service(Trigger, f'padding_{index}', lambda request, response: response)
    if executor_kind == 'events':
        from rclpy.experimental import EventsExecutor
        executor = EventsExecutor()
    else:
        executor = SingleThreadedExecutor()
    executor.add_node(node)
    print(f'server up ({executor_kind}, {loop})', flush=True)
    try:
        if loop == 'spin':
            executor.spin()
        else:
            while rclpy.ok():
                executor.spin_once(timeout_sec=SPIN_STEP_S)
    except KeyboardInterrupt:
        pass
    except Exception as error:  # reported, the driver reads it
        print(f'server failed: {error!r}', flush=True)


def check_guard_condition():
    """Print whether an EventsExecutor spins a node that has a guard condition."""
    import rclpy
    from rclpy.experimental import EventsExecutor

    rclpy.init()
    node = rclpy.create_node('executor_probe_guard')
    triggered = []
    guard = node.create_guard_condition(lambda: triggered.append(True))
    executor = EventsExecutor()
    executor.add_node(node)
    try:
        guard.trigger()
        executor.spin_once(timeout_sec=SPIN_STEP_S)
        print(f'guard condition: {"served" if triggered else "not served within 0.1 s"}')
    except Exception as error:
        print(f'guard condition: refused ({error})')


def measure(prefix, calls, warmup):
    """Return {series: p50 ms or a failure} for the server under prefix."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    import report
    import workload

    node = rclpy.create_node('executor_probe_client', namespace=prefix)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    empty = node.create_client(Trigger, 'empty')
    turn_service = node.create_client(Trigger, 'turn_service')
    publisher = node.create_publisher(String, 'turn', 10)
    results = {}
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline and not (
                empty.service_is_ready() and turn_service.service_is_ready()
                and publisher.get_subscription_count()):
            executor.spin_once(timeout_sec=SPIN_STEP_S)
        turns = 0
        for series, client in (('empty', empty), ('empty_after_pause', empty),
                               ('turn_service', turn_service)):
            samples = []
            for index in range(warmup + calls):
                if series == 'turn_service':
                    # The turn first, as in real use (the bench's --turn-lead-ms).
                    publisher.publish(String(data=str(turns)))
                    turns += 1
                if series != 'empty':
                    time.sleep(PAUSE_S)
                elapsed, response = workload.call(executor, client, Trigger.Request(), TIMEOUT_S)
                if response is None:
                    results[series] = f'no answer within {TIMEOUT_S:.0f} s'
                    break
                if index >= warmup:
                    samples.append(elapsed)
            else:
                results[series] = report.latency_summary(samples)['p50_ms']
            if isinstance(results[series], str):
                break
    finally:
        node.destroy_node()
    return results


def run_server(executor_kind, loop, prefix, calls, warmup):
    with tempfile.TemporaryDirectory(prefix='executor_probe_') as directory:
        server = processes.Process(
            [sys.executable, '-u', __file__, '--serve', executor_kind, '--loop', loop,
             '--prefix', prefix], pathlib.Path(directory) / 'server.log',
            name=f'{executor_kind} server')
        try:
            # A server that fails to start shows in its failures below.
            with contextlib.suppress(processes.ProcessError):
                server.wait_ready('server up', timeout=START_TIMEOUT_S)
            results = measure(prefix, calls, warmup)
        finally:
            code = server.stop(timeout=STOP_TIMEOUT_S)
        output = server.output()
    if server.stopped_by is None:
        stopped = f'had exited with {code}'
    elif server.stopped_by == signal.SIGINT:
        stopped = 'exits on SIGINT'
    elif server.stopped_by == signal.SIGKILL:
        stopped = 'ignored SIGINT (killed)'
    else:
        stopped = 'ignored SIGINT (ended by SIGTERM)'
    failures = [line for line in output.splitlines()
                if re.match(r'(server failed|\w*Error\b)', line)]
    return results, stopped, failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--serve', choices=('single', 'events'), help=argparse.SUPPRESS)
    parser.add_argument('--check-guard-condition', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--loop', choices=('spin', 'spin_once'), default='spin',
                        help=argparse.SUPPRESS)
    parser.add_argument('--prefix', default='/executor_probe', help=argparse.SUPPRESS)
    parser.add_argument('--calls', type=int, default=1000)
    parser.add_argument('--warmup', type=int, default=50)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.loop, args.prefix)
        return 0
    if args.check_guard_condition:
        check_guard_condition()
        return 0
    import rclpy
    rclpy.init()
    try:
        print(f'rclpy {_rclpy_version()}, {PADDING_SERVICES + 2} services on the server node, '
              f'{args.calls} calls per series, p50 ms')
        for kind, loop in (('single', 'spin'), ('events', 'spin'), ('events', 'spin_once')):
            prefix = f'/executor_probe_{os.getpid()}_{kind}_{loop}'
            results, stopped, failures = run_server(kind, loop, prefix, args.calls, args.warmup)
            shown = ', '.join(
                f'{series} {value:.3f}' if isinstance(value, float) else f'{series}: {value}'
                for series, value in results.items())
            print(f'  {kind:6} executor, {loop:9}: {shown}; server {stopped}')
            for line in failures:
                print(f'      server: {line}')
        guard = subprocess.run(
            [sys.executable, __file__, '--check-guard-condition'], capture_output=True,
            text=True, timeout=30)
        print('  events executor, ' + (guard.stdout.strip() or guard.stderr.strip()[-200:]))
    finally:
        rclpy.try_shutdown()
    return 0


def _rclpy_version():
    from importlib.metadata import PackageNotFoundError, version
    for name in ('rclpy', 'ros-rclpy'):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return 'unknown version'


if __name__ == '__main__':
    sys.exit(main())
