# SPDX-License-Identifier: Apache-2.0
"""
The operator console: the spec's `memory ...` commands over ROS services.

One-shot: `memory_console [options] memory entity add person "Ada Lovelace"`;
interactive: `memory_console [options]` reads the same commands from a prompt.
Persistent-memory commands call the memory node's admin services, `memory`
and `memory clear` the cognition node's working-memory services, each with a
deadline. backup, export and verify are goals of the node's actions, with
progress, Ctrl-C to cancel and no fixed wait (console/jobs.py); `memory
jobs` shows the one that runs.

This module is the entry point: the help, the prompt and the running of one
line. The command table and its parsing are in console/commands.py, the
session that calls the services in console/session.py, the rendering of the
answers in console/render.py.

Exit codes: 0 success, 1 the call failed or nobody answered, 2 bad usage,
130 a job canceled with Ctrl-C, 141 the output pipe was closed early (quietly,
as a program ended by SIGPIPE); a script of commands (stdin not a terminal)
exits with the code of its first failed line.
"""

import os
import shlex
import sys

from mira_memory.console import jobs
from mira_memory.console.commands import COMMANDS, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from mira_memory.console.commands import parse_command, UsageError
from mira_memory.console.render import render
from mira_memory.console.session import CallError, DEFAULT_COGNITION_NODE
from mira_memory.console.session import DEFAULT_MEMORY_NODE, DEFAULT_TIMEOUT
from mira_memory.console.session import parse_console_options, Session, Settings
from mira_memory.console.visible import visible, visible_lines
from mira_memory.ros import node_runner
from rclpy.utilities import remove_ros_args

# The names other modules and the tests take from here.
__all__ = ['CallError', 'COMMANDS', 'main', 'parse_command', 'parse_console_options',
           'render', 'run_command', 'run_line', 'Session', 'Settings', 'UsageError']

PROMPT = 'mira> '
# Ctrl-C: a one-shot command, or a job it canceled.
EXIT_INTERRUPTED = 130
# The output pipe was closed early: the code of a program ended by SIGPIPE.
EXIT_PIPE_CLOSED = 141


def help_text():
    """Return the console's help: options, commands and exit codes."""
    lines = [
        'usage: memory_console [--memory-node NODE] [--cognition-node NODE] '
        '[--timeout SECONDS] [--reviewer NAME] [COMMAND...] [--ros-args ...]',
        '',
        'Without a command, commands are read from an interactive prompt',
        '(help, quit or exit; Ctrl-D ends). Quote names with spaces: "Ada Lovelace".',
        'Commands piped in or read from a file run as a script, which exits with the',
        'code of its first failed line and names the failed lines last, on stderr.',
        '',
        'options:',
        f'  --memory-node NODE     memory node to call (default {DEFAULT_MEMORY_NODE})',
        f'  --cognition-node NODE  cognition node for memory / memory clear '
        f'(default {DEFAULT_COGNITION_NODE})',
        f'  --timeout SECONDS      deadline of every call, and of a job until the node '
        f'accepted it (default {DEFAULT_TIMEOUT})',
        '  --reviewer NAME        who accepts, supersedes or dismisses pending items, kept in',
        '                         the receipt with this console session (default: the OS user)',
        '',
        'commands:',
    ]
    for command in COMMANDS:
        lines += [f'  {command.usage}', f'      {command.summary}']
    lines += [
        '',
        'backup, export and verify show their progress (a bar on a terminal, one line',
        'per 10% otherwise, on stderr) and wait as long as the job runs; Ctrl-C cancels',
        'the job; --no-wait prints the goal id and returns.',
        '',
        'exit codes: 0 success, 1 the call failed or no node answered, 2 bad usage,',
        '130 a job canceled with Ctrl-C, 141 the output pipe was closed early',
    ]
    return '\n'.join(lines)


def run_command(session, tokens, stdout, stderr):
    """Parse, call and print one command given as words; return the exit code."""
    try:
        command, request = parse_command(tokens)
    except UsageError as error:
        print(visible(f'usage error: {error}'), file=stderr)
        return EXIT_USAGE
    try:
        if command.job:
            return jobs.run_command(session, command, request, stdout, stderr,
                                    _print_response)
        response = session.call(command, request)
    except CallError as error:
        print(visible(f'error: {error}'), file=stderr)
        return EXIT_FAILED
    return _print_response(command, response, stdout, stderr)


def _print_response(command, response, stdout, stderr):
    """Print a response (or a job's result) as render() says; return the exit code."""
    status, lines = render(command, response)
    # A verify that ran prints its report on stdout, whatever it found.
    report = command.words == ('verify',) and response.success
    # Stored text reaches the terminal only through visible() (console/visible.py).
    print(visible_lines(lines), file=stdout if status == EXIT_OK or report else stderr)
    return status


def run_line(session, line, stdout, stderr):
    """Split one typed line like a shell and run it as a command; return the exit code."""
    try:
        tokens = _split_line(line)
    except UsageError as error:
        print(visible(f'usage error: {error}'), file=stderr)
        return EXIT_USAGE
    return run_command(session, tokens, stdout, stderr)


def _split_line(line):
    try:
        return shlex.split(line)
    except ValueError as error:
        if 'closing quotation' in str(error):
            raise UsageError('missing closing quote') from None
        raise UsageError(f'cannot split the line: {str(error).lower()}') from None


def _is_prompt(stdin):
    return stdin is sys.stdin and stdin.isatty()


def _line_reader(stdin):
    if _is_prompt(stdin):
        # Imported for its side effect: input() gains line editing and history.
        import readline  # noqa: F401

        def read():
            return input(PROMPT)
        return read

    def read_stream():
        line = stdin.readline()
        if not line:
            raise EOFError
        return line
    return read_stream


def interactive(session, stdin, stdout, stderr):
    """
    Read and run commands until quit, exit or end of input; return the exit code.

    At a prompt that is 0: the person saw each failure. Commands read from a
    pipe or a file are a script, and a script whose line failed must not
    look like one that worked: the exit code is that of the first line that
    failed, and a last line on stderr names every failed line.
    """
    read = _line_reader(stdin)
    failed = []  # (line number, exit code) of each line that failed
    number = 0
    while True:
        try:
            line = read()
        except EOFError:
            break
        except KeyboardInterrupt:
            print(file=stdout)
            continue
        number += 1
        try:
            tokens = _split_line(line)
        except UsageError as error:
            print(visible(f'usage error: {error}'), file=stderr)
            failed.append((number, EXIT_USAGE))
            continue
        if tokens in (['quit'], ['exit']):
            break
        code = EXIT_OK
        if tokens == ['help']:
            print(help_text(), file=stdout)
        elif tokens:
            try:
                code = run_command(session, tokens, stdout, stderr)
            except KeyboardInterrupt:
                print('interrupted', file=stderr)
                code = EXIT_INTERRUPTED
        if code != EXIT_OK:
            failed.append((number, code))
        stdout.flush()
        stderr.flush()
    if not failed or _is_prompt(stdin):
        return EXIT_OK
    print(f'{len(failed)} of {number} lines failed: ' + ', '.join(
        f'line {failed_line} (exit {code})' for failed_line, code in failed), file=stderr)
    return failed[0][1]


def _without_ros_args(ros_args):
    try:
        return remove_ros_args(ros_args)[1:]
    except Exception as error:  # rclpy reports malformed --ros-args as RCL errors
        raise UsageError(f'bad --ros-args: {error}') from None


def program():
    """
    Run the memory_console executable (scripts/memory_console): main(), its end bounded.

    Once the answer is out, the middleware gets node_runner's
    MIDDLEWARE_RELEASE_SEC to let the console's node go; past that the
    process exits with the command's code without waiting (Session.close).
    """
    return main(release_sec=node_runner.MIDDLEWARE_RELEASE_SEC)


def main(argv=None, *, stdin=None, stdout=None, stderr=None, release_sec=None):
    """
    Run one command from argv, or an interactive session; return the exit code.

    release_sec bounds the middleware's release of the console's node at
    the end (program(); None: no bound, as in a test's own process).
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        code = _run(argv, stdin, stdout, stderr, release_sec)
        # Written out here, so that a reader gone away is noticed here too.
        stdout.flush()
        stderr.flush()
        return code
    except BrokenPipeError:
        # The reader of the output went away (`memory_console --help | head`):
        # nothing more can be shown, which is no error to report. The session
        # is closed by then; Python's own flush at exit must not fail again.
        _discard_closed_output(stdout, stderr)
        return EXIT_PIPE_CLOSED


def _discard_closed_output(*streams):
    for stream in streams:
        try:
            stream.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)


def _run(argv, stdin, stdout, stderr, release_sec):
    ros_args = ['memory_console', *argv]
    try:
        settings, tokens = parse_console_options(_without_ros_args(ros_args))
        if settings.show_help:
            print(help_text(), file=stdout)
            return EXIT_OK
        if tokens:
            # Bad usage is reported before any ROS setup.
            parse_command(tokens)
    except UsageError as error:
        print(visible(f'usage error: {error}'), file=stderr)
        return EXIT_USAGE
    session = Session(ros_args, settings)
    code = EXIT_FAILED  # an unexpected error's, should the release not end
    try:
        if tokens:
            code = run_command(session, tokens, stdout, stderr)
        else:
            code = interactive(session, stdin, stdout, stderr)
    except KeyboardInterrupt:
        print('interrupted', file=stderr)
        code = EXIT_INTERRUPTED
    finally:
        # The answer is out before the middleware lets the node go.
        _flush(stdout, stderr)
        session.close(code, release_sec)
    return code


def _flush(*streams):
    for stream in streams:
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a reader gone away: main() says so once the session is closed
