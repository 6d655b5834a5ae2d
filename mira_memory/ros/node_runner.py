# SPDX-License-Identifier: Apache-2.0
"""
The one main loop every long-running node of the package uses.

rclpy.init, build the node, spin until SIGINT/SIGTERM (the spin ends after
the callback in flight), then destroy the node and shut down.
A node that cannot start raises StartupError: one clear log line, exit 1.

The installed executables enter through start(), which makes SIGINT stop
the process from its first line on. A shell starts a background job (`&` in
a script, as tools/chat does) with SIGINT ignored, and Python keeps it
ignored; run() installs the node's handlers, but only after the imports,
which take a second or more on a loaded machine. A SIGINT in that window
was lost and the node then ran until a second one. rclpy is imported lazily
here so that start() runs before it.

SIGINT and SIGTERM are node_runner's alone: rclpy.init installs no signal
handler (SignalHandlerOptions.NO). With rclpy's, a thread of rclpy's own
shut the context down while the main thread was still spinning or already
destroying the node, and under load that lost the stop (an unconfigured
managed node, which has no timer, waited on for good), ended it with
exit -11, or with a traceback from rclpy.try_shutdown ("rcl_shutdown
already called"): seen in about 1 of 300 nodes stopped at once under load
(test_sigterm_under_load.py). Here a stop signal raises KeyboardInterrupt in
the main thread (stop_on_signals), which ends the spin, and only the main
thread then destroys the node and shuts rclpy down. While the main thread
waits inside rcl (the GIL released), Python runs the handler only once the
wait returns: so the signal also reaches a file descriptor
(signal.set_wakeup_fd) that a small thread watches (StopSignalWakeup), and
it triggers a guard condition of the node, which ends the wait.

kill -USR1 PID prints every thread's Python stack to the node's stderr
(faulthandler, which runs even while the main thread waits in C): how to see
where a node that does not stop is waiting. A crash in C or C++ prints them
too.

That KeyboardInterrupt is raised at whatever Python line runs, and some of
them run inside rclpy's C++: the warnings module when send_cancel_response
could not send, a message's conversion in take_result_request. rclpy then
turns it into another error (SystemError "returned a result with an
exception set", RuntimeError "Unable to convert call argument"), which used
to leave the memory node with a traceback and exit code 1 instead of a
clean stop (Kilted, test_console_terminal's node: 2 of 6 runs). So the
handlers note the signal (stop_signal_received) and run() ends any error
after a stop signal as the stop it is.
"""

import faulthandler
import gc
import importlib
import os
import signal
import sys
import threading
import time
import warnings

from mira_memory.ros import type_support

# rclpy's warning when the middleware did not send a service reply: with
# Fast DDS, the server had not yet discovered the client's reply reader
# (discovery still under way) and gave up after the writer's blocking time.
UNSENT_REPLY_WARNING = 'failed to send response'
# How long a node's cleanup after its spin may take (_shut_down). Above the
# replication supervisor's stop (10 s, then SIGKILL) and a copy job's stop.
SHUTDOWN_DEADLINE_SEC = 30.0
# How long the middleware may take to destroy a node whose own resources
# are released (_shut_down): far more than destroying a node takes, and
# inside launch's escalation of a stop (SIGTERM after 5 s, SIGKILL 5 s later).
MIDDLEWARE_RELEASE_SEC = 5.0


class StartupError(RuntimeError):
    """The node cannot serve (bad parameters, unusable database, bad scenario)."""


def start(module_name, interrupted_exit_code=0, entry='main'):
    """
    Entry point of an installed executable: import module_name, run its entry() and exit.

    SIGINT raises KeyboardInterrupt from here on, even when the parent
    ignored it. A SIGINT while the modules load ends the process quietly
    with interrupted_exit_code: nothing has started that needs stopping.
    Once entry() returns, the process exits with its code at once
    (exit_after_cleanup).
    """
    # A crash (SIGSEGV, SIGABRT, ...) in rclpy's or DDS's C++ leaves every
    # thread's Python stack in the log; SIGUSR1 prints them on demand.
    faulthandler.enable(all_threads=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # The imports run finalizers (importlib's module-lock callbacks): a
    # KeyboardInterrupt raised inside one is dropped there, and the signal
    # would be lost. It is noted (_stop_signals) and ends the start below,
    # or the node's spin at its first wait (_wake_on_stop_signals).
    hook = sys.unraisablehook
    sys.unraisablehook = quiet_interrupts_in_finalizers(hook)
    try:
        # Inside the try: a SIGINT that lands between installing the handler
        # and the import is a quiet stop too (a coverage run, which slows
        # every line, showed it as a traceback and exit -2).
        signal.signal(signal.SIGINT, _stop_signal)
        type_support.load_runtime_only()
        module = importlib.import_module(module_name)
    except KeyboardInterrupt:
        return interrupted_exit_code
    finally:
        sys.unraisablehook = hook
    if stop_signal_received():
        return interrupted_exit_code  # raised inside a finalizer, and dropped there
    exit_after_cleanup(getattr(module, entry)())


def exit_after_cleanup(code):
    """
    End the process with code, without the interpreter's teardown.

    The program has destroyed its node (or given up waiting for the
    middleware to), closed its store and shut rclpy down (logging
    included). What the interpreter's teardown would still run is
    the middleware's own: the release of DDS objects and C++ static
    destructors. Under load that spun for good in about 1 of 500 managed
    nodes stopped at once (main thread running, SIGINT and SIGTERM already
    ignored, faulthandler already gone): a lost stop. So the process ends
    here, once its own streams are flushed.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe or stream: nothing more can reach it
    os._exit(0 if code is None else code)


_stop_signals = []  # the stop signals received, in order (signal numbers)
# True once the spin (or a one-shot node's run) has ended: a stop signal then
# only counts. Its KeyboardInterrupt would otherwise cut the cleanup short.
_spin_ended = False


def stop_on_signals():
    """Make SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, and note them."""
    signal.signal(signal.SIGINT, _stop_signal)
    signal.signal(signal.SIGTERM, _stop_signal)


def init_ros(args=None):
    """stop_on_signals(), then rclpy.init without rclpy's signal handlers (module docstring)."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    stop_on_signals()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)


def _stop_signal(signum, frame):
    _stop_signals.append(signum)
    if not _spin_ended:
        raise KeyboardInterrupt


class StopSignalWakeup:
    """
    Wake the node's executor on every stop signal, from a thread of its own.

    Python's own signal handler runs in the main thread only once it runs
    Python again; one waiting inside rcl would not. signal.set_wakeup_fd
    writes the signal's number to a pipe at once, whatever the main thread
    does, and this thread then calls wake() (InterruptAgain: a guard
    condition of the node, thread-safe), which ends the executor's wait.
    """

    def __init__(self, wake):
        self._read, self._write = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self._write, False)  # set_wakeup_fd needs it; a signal never waits
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._thread = threading.Thread(target=self._watch, args=(wake,),
                                        name='stop-signal-wakeup', daemon=True)
        self._thread.start()

    def _watch(self, wake):
        stops = {int(signal.SIGINT), int(signal.SIGTERM)}
        while True:
            try:
                numbers = os.read(self._read, 64)
            except OSError:
                return
            if not numbers:
                return  # close(): the writing end is closed
            if stops.intersection(numbers):
                wake()

    def close(self):
        """Stop watching (before the node's guard condition is destroyed)."""
        signal.set_wakeup_fd(self._previous)
        os.close(self._write)
        self._thread.join(5.0)
        os.close(self._read)


def _until_stopped(work):
    """
    Return work(); once it ended, however it ended, a stop signal no longer raises.

    rclpy's own handler can end the spin first (it shuts the context down)
    while Python's for the same SIGINT is still pending; Python runs it at
    its next check, which signal.signal(SIG_IGN) in the cleanup makes: its
    KeyboardInterrupt left run() from there and the process died of the
    signal (exit -2, seen once in CI on Jazzy). The flag is set in a finally
    without a call, where Python runs no signal handler.
    """
    global _spin_ended
    try:
        return work()
    finally:
        _spin_ended = True


# How rclpy's RCLError begins when the middleware did not send a message:
# Publisher.publish, an action server's goal status and feedback, a service's
# reply and a client's request.
SEND_FAILURES = ('Failed to publish', 'Failed publish', 'failed to send response',
                 'failed to send request')


def is_send_failure(error):
    """Return True if error is rclpy's for a message the middleware did not send."""
    from rclpy.impl.implementation_singleton import rclpy_implementation
    return (isinstance(error, rclpy_implementation.RCLError)
            and str(error).startswith(SEND_FAILURES))


def spin_through_send_failures(rclpy, node):
    """
    rclpy.spin(node); a message the middleware did not send is logged, and the spin goes on.

    Fast DDS can refuse a write ("cannot publish data": its DataWriter's
    write returned an error; seen once, in CI on a loaded machine), and
    rclpy raises it from the callback that sent the message (a publish, a
    service's reply), which ends rclpy.spin: the whole node died of one lost
    message (an action server's goal status). Here the message is lost and
    the callback that sent it ended there: a status, a feedback or a
    diagnostics array is replaced by the next one; a reply lost this way is
    a lost reply like any other, which the clients resend or read back
    (docs/operations.md). Where a lost message must not end the work that
    sent it, that code handles it itself (memory/admin_actions.py: a goal
    still runs and ends with its own result).
    """
    while True:
        try:
            return rclpy.spin(node)
        except Exception as error:
            if not is_send_failure(error) or stop_signal_received():
                raise
            node.get_logger().warning(
                f'a message was not sent and the node goes on: {error}')


def stop_signal_received():
    """Return True once SIGINT or SIGTERM reached a handler of stop_on_signals()."""
    return bool(_stop_signals)


def run(node_class, logger_name, args=None):
    """Spin node_class() until SIGINT/SIGTERM; return the process exit code."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.impl.implementation_singleton import rclpy_implementation
    import rclpy.logging

    try:
        init_ros(args)
    except KeyboardInterrupt:
        # A stop signal during rclpy.init: a stop like any other.
        rclpy.try_shutdown()
        return 0
    except rclpy_implementation.RCLError as error:
        # Unusable ROS arguments, such as a params file that is missing or not valid YAML.
        rclpy.logging.get_logger(logger_name).error(f'cannot start: {error}')
        return 1
    log_unsent_replies(rclpy.logging.get_logger(logger_name).warning)
    interrupt_again = InterruptAgain()
    sys.unraisablehook = quiet_interrupts_in_finalizers(sys.unraisablehook, interrupt_again)
    node = wakeup = None
    code = 1  # until the node has stopped as a node stops
    try:
        node = node_class()
        wakeup = _wake_on_stop_signals(interrupt_again, node)
        # Everything built so far (modules, the node, a store's caches) lives
        # as long as the process: frozen, the garbage collector no longer
        # walks it on every full collection, which then costs a callback
        # only its own young objects (docs/dev/bench-analysis.md).
        gc.freeze()
        _until_stopped(lambda: spin_through_send_failures(rclpy, node))
        code = 0
    except StartupError as error:
        rclpy.logging.get_logger(logger_name).error(str(error))
    except (KeyboardInterrupt, ExternalShutdownException):
        code = 0
    except Exception:
        # The interrupt raised inside rclpy's C++ and turned into another
        # error there (the module's docstring); without a stop signal, a bug.
        if not stop_signal_received():
            raise
        code = 0
    finally:
        _shut_down(rclpy, node, wakeup, code)
    return code


def quiet_interrupts_in_finalizers(hook, interrupt_again=None):
    """
    Return an unraisable hook that keeps a KeyboardInterrupt lost in a finalizer out of the log.

    A SIGINT or SIGTERM raises KeyboardInterrupt in the main thread
    wherever it is (stop_on_signals). When that is inside a __del__
    (rclpy's Task.__del__ runs after every callback), Python can only drop
    it and prints "Exception ignored in ..." with a traceback (seen in CI,
    Kilted's lifecycle node). This hook prints nothing and calls
    interrupt_again() (an InterruptAgain), which ends the spin from a
    callback instead. Any other unraisable exception goes to hook as before.
    """
    def drop_interrupt(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            if interrupt_again is not None:
                interrupt_again()
            return
        hook(unraisable)
    return drop_interrupt


class InterruptAgain:
    """
    Raise a KeyboardInterrupt that a finalizer swallowed again, from a callback of the node.

    attach(node) gives the node a guard condition whose callback raises
    KeyboardInterrupt; calling this object triggers it (a thread-safe rcl
    call, harmless inside a finalizer). The executor runs the callback at
    its next wait and spin re-raises the interrupt, which ends the spin
    like any other stop. StopSignalWakeup triggers it on every stop signal.
    """

    def __init__(self):
        self._guard = None

    def attach(self, node):
        """Create the guard condition on node (once it exists)."""
        self._guard = node.create_guard_condition(_interrupt)

    def __call__(self):
        if self._guard is not None:
            self._guard.trigger()


def _interrupt():
    raise KeyboardInterrupt


def _wake_on_stop_signals(interrupt_again, node):
    """Give node its wake guard and return the StopSignalWakeup that triggers it."""
    interrupt_again.attach(node)
    wakeup = StopSignalWakeup(interrupt_again)
    if _stop_signals and not _spin_ended:
        # A stop signal while the node was being built was raised there or lost
        # inside rclpy's C++; it ends the spin at its first wait.
        interrupt_again()
    return wakeup


def _shut_down(rclpy, node, wakeup, code):
    """
    Release the node's resources, destroy it and shut rclpy down, in the main thread.

    A node's own resources (the memory node's store, its Litestream and a
    copy job: node.release_resources(), when it has one) are released
    first, within SHUTDOWN_DEADLINE_SEC: past it faulthandler prints every
    thread's stack ("Timeout (0:00:30)!") and the process exits 1. What is
    left is the middleware's, and under load it has waited for good there
    (rcl_action_server_fini, rcl_node_fini: every DDS thread waiting too;
    about 1 node in 300 stopped at once under load; a deadlock of the kind
    reported in eProsima/Fast-DDS#6193). Nothing of the node's is at stake any more,
    so past MIDDLEWARE_RELEASE_SEC a warning says where it waited and the
    process exits with code, the node's own; other participants may list
    it until its DDS lease ends.
    """
    # A second Ctrl-C, or launch forwarding SIGINT to a process that already
    # got it from the terminal, must not interrupt the cleanup (the memory
    # node closes its store there).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    faulthandler.dump_traceback_later(SHUTDOWN_DEADLINE_SEC, exit=True)
    watchdog = None
    try:
        if wakeup is not None:
            wakeup.close()
        if node is not None:
            release = getattr(node, 'release_resources', None)
            if release is not None:
                release()
            watchdog = _MiddlewareWatchdog(node.get_logger().name, code)
            node.destroy_node()
        rclpy.try_shutdown()
    finally:
        if watchdog is not None:
            watchdog.cancel()
        faulthandler.cancel_dump_traceback_later()


class _MiddlewareWatchdog:
    """Past MIDDLEWARE_RELEASE_SEC, say where the main thread waits and exit with code."""

    def __init__(self, logger_name, code):
        self._logger_name, self._code = logger_name, code
        self._main = threading.get_ident()
        self._timer = threading.Timer(MIDDLEWARE_RELEASE_SEC, self._give_up)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self):
        self._timer.cancel()

    def _give_up(self):
        frame = sys._current_frames().get(self._main)
        where = ('an unknown place' if frame is None else
                 f'{frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})')
        # Straight to stderr: rclpy's logging publishes on /rosout, through
        # the very middleware that waits.
        message = (f'[WARN] [{time.time():.9f}] [{self._logger_name}]: the middleware did '
                   f'not destroy the node within {MIDDLEWARE_RELEASE_SEC:g} s of its stop; '
                   f'its own resources are released, so the process exits without waiting '
                   f'(it waits in {where}; other nodes may list it until its DDS lease '
                   f'ends)\n')
        try:
            os.write(sys.stderr.fileno(), message.encode('utf-8', 'backslashreplace'))
        except (OSError, ValueError):
            pass
        exit_after_cleanup(self._code)


def run_once(node_class, logger_name, failures, what, args=None):
    """
    Build node_class() and let it do its one job; return the process exit code.

    For the one-shot processes (the seed step, the operator source):
    node.run(executor) does the work outside any callback, driving the
    executor itself. Exit 0 when it returns; 1 with the error's one line
    for StartupError or one of failures (exception types); a SIGINT or
    SIGTERM before the node is complete (its completed attribute) logs
    "interrupted before the <what> was complete" and exits 1.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.impl.implementation_singleton import rclpy_implementation
    import rclpy.logging

    logger = rclpy.logging.get_logger(logger_name)
    try:
        init_ros(args)
    except KeyboardInterrupt:
        # A stop signal during rclpy.init: nothing was done.
        rclpy.try_shutdown()
        logger.error(f'interrupted before the {what} was complete')
        return 1
    except rclpy_implementation.RCLError as error:
        # Unusable ROS arguments, such as a params file that is missing or not valid YAML.
        logger.error(f'cannot start: {error}')
        return 1
    interrupt_again = InterruptAgain()
    sys.unraisablehook = quiet_interrupts_in_finalizers(sys.unraisablehook, interrupt_again)
    node = wakeup = None
    code = 1  # until the job is done
    executor = SingleThreadedExecutor()
    try:
        node = node_class()
        wakeup = _wake_on_stop_signals(interrupt_again, node)
        executor.add_node(node)
        _until_stopped(lambda: node.run(executor))
        code = 0
    except (StartupError, *failures) as error:
        logger.error(str(error))
    except (KeyboardInterrupt, Exception) as error:
        # The interrupt may come out of rclpy's C++ as another error (the
        # module's docstring). Without a stop signal, anything but the stop
        # itself is a bug.
        stopped = isinstance(error, (KeyboardInterrupt, ExternalShutdownException))
        if not (stopped or stop_signal_received()):
            raise
        if getattr(node, 'completed', False):
            code = 0
        else:
            logger.error(f'interrupted before the {what} was complete')
    finally:
        try:
            executor.shutdown()
        finally:
            _shut_down(rclpy, node, wakeup, code)
    return code


def log_unsent_replies(log):
    """
    Send every unsent-reply warning of rclpy to log (one call per reply).

    rclpy reports a reply the middleware could not send as a RuntimeWarning,
    which Python prints once per code location and then stays silent; the
    client only sees no reply. Each one is logged here so that a lost reply
    can be matched with the client's resend. Other warnings are shown as before.
    """
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, RuntimeWarning) and str(message).startswith(
                UNSENT_REPLY_WARNING):
            log(f'a service reply was not sent: {message}. The client was not discovered '
                'in time; a client that resends gets its answer from the resend.')
            return
        shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.filterwarnings('always', message=UNSENT_REPLY_WARNING, category=RuntimeWarning)
