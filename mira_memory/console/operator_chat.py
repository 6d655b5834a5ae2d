# SPDX-License-Identifier: Apache-2.0
"""
The operator chat console: a person types operator turns to cognition.

`ros2 run mira_memory operator_chat --ros-args -r __ns:=/mira`. Each line
typed is one operator turn, published on operator/utterance as an
OperatorUtterance exactly as the operator source publishes it (the memory
node may check remember against the turns it heard there). It then prints,
as they arrive on cognition/tool_results, every tool call's result, the
assistant's reply and the runtime's acknowledgement line, until the turn's
end-of-turn marker.

A run is one operator episode with an id of its own (chat-<UTC time>-<random>,
so a restart never reuses one); `/new` starts the next episode, which gets a
fresh acquisition budget. Lines starting with `memory` are console commands
(docs/console.md) run by an in-process memory_console, so entities can be
added and memories inspected alongside the conversation; that console is a
participant of its own, in the SROS2 enclave console_enclave names (the
admin enclave, docs/trust.md). `/quit`, `quit`,
`exit` or end of input leave (exit 0). Exit 1: a parameter of the wrong type, or
cognition never subscribed.
"""

import datetime
import secrets
import sys
import time

from mira_memory.client import names
from mira_memory.console import memory_console as console
from mira_memory.console.visible import visible, visible_lines
from mira_memory.msg import ToolResult
from mira_memory.ros import node_runner
from mira_memory.ros import parameters
from mira_memory.ros.operator_topics import (
    absolute_node_name, OperatorTopics, SPIN_STEP_SEC, spin_until)
from mira_memory.wire import UTTERANCE_TOPIC
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

PROMPT = 'operator> '
NEW_EPISODE = '/new'
QUIT = ('/quit', 'quit', 'exit')
HELP = """Type what the operator says; each line is one turn of the current episode.
  /new           start a new episode (a fresh recall budget)
  memory ...     a console command, e.g. memory entity add person "Ada Lovelace"
  /quit          leave (also quit, exit, end of input)"""


def new_episode_id():
    """Return an episode id no earlier run used: UTC time plus random bits."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return f'chat-{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}'


class OperatorChat(Node):
    """Publishes typed operator turns and collects cognition's results."""

    def __init__(self, **kwargs):
        super().__init__('operator_chat', **kwargs)
        self.settings = parameters.declare_read_only(self, (
            ('cognition_node', 'cognition',
             'Cognition node to wait for before the first turn; relative names '
             "resolve in this node's namespace."),
            ('memory_node', 'memory',
             'Memory node the memory console commands go to; relative names '
             "resolve in this node's namespace."),
            ('start_timeout_sec', 30.0,
             'How long to wait for the cognition node (and, before a turn, the memory '
             'node) to subscribe.'),
            ('console_enclave', '',
             'SROS2 enclave of the console that runs the "memory ..." commands (a '
             'participant of its own), such as /mira/admin. Empty: no --enclave.'),
            ('turn_timeout_sec', 300.0,
             "How long to wait for a turn's end-of-turn marker (a local model can be "
             'slow).'),
        ))
        self._results = []
        self._topics = OperatorTopics(self, self._results.append)
        self.executor_ = SingleThreadedExecutor(context=self.context)
        self.executor_.add_node(self)
        self.episode_id = new_episode_id()
        self._turns = 0

    def absolute(self, name):
        """Return a node name resolved in this node's namespace."""
        return absolute_node_name(name, self.get_namespace())

    def wait_for_cognition(self):
        """Return True once cognition (and every other subscriber seen) is matched."""
        return spin_until(
            self.executor_,
            lambda: self._topics.listeners_matched([self.settings['cognition_node']]),
            self.settings['start_timeout_sec'])

    def _wait_for_turn_listeners(self):
        """
        Wait until the memory node, when it serves remember, hears turns too.

        It admits remember only for turns it heard itself, and its
        subscription may be matched later than cognition's (discovery is
        asynchronous): a turn published before would be lost to it. Bounded by
        start_timeout_sec; after that the turn goes out anyway, and a remember
        gets the memory node's own answer.
        """
        memory = self.absolute(self.settings['memory_node'])
        listeners = [self.settings['cognition_node']]
        remember = names.service_name(memory, names.REMEMBER)
        # The graph's names include a service that only has clients: cognition's
        # remember client counts too, so the first turn of a fresh chat waits
        # for a memory node this process has not discovered yet (the memory
        # node waits only observed_turn_wait_sec for a turn, less than the
        # first resend). Without a memory node the wait is start_timeout_sec.
        if any(name == remember for name, _ in self.get_service_names_and_types()):
            listeners.append(memory)
        spin_until(self.executor_, lambda: self._topics.listeners_matched(listeners),
                   self.settings['start_timeout_sec'])

    def new_episode(self):
        """Start the next episode; turn ids restart at t1."""
        self.episode_id = new_episode_id()
        self._turns = 0

    def say(self, text, out):
        """Publish one operator turn, print what comes back; return the marker or None."""
        self._turns += 1
        key = (self.episode_id, f't{self._turns}')
        self._wait_for_turn_listeners()
        # Only this turn's results are read from here on: the list holds one
        # turn, not the whole session.
        self._results.clear()
        self._topics.say(*key, text)
        printed = 0
        deadline = time.monotonic() + self.settings['turn_timeout_sec']
        while True:
            mine = [message for message in self._results
                    if (message.episode_id, message.turn_id) == key]
            for message in mine[printed:]:
                if message.outcome == ToolResult.OUTCOME_TURN_COMPLETE:
                    _print_end_of_turn(message, out)
                    return message
                _print_tool_result(message, out)
            printed = len(mine)
            out.flush()
            if time.monotonic() >= deadline:
                print(f'(no end of turn {key[0]}/{key[1]} from cognition within '
                      f'{self.settings["turn_timeout_sec"]:g} s)', file=out)
                return None
            self._topics.send_again_if_due()
            self.executor_.spin_once(timeout_sec=SPIN_STEP_SEC)


def _indented(text):
    return '\n'.join(f'    {line}' for line in text.splitlines())


def _print_tool_result(message, out):
    tool = message.tool or '(unknown tool)'
    detail = f' ({message.reason})' if message.reason else ''
    print(visible(f'  tool {tool} -> {message.outcome}{detail}'), file=out)
    if message.text:
        print(visible_lines(_indented(message.text).split('\n')), file=out)


def _print_end_of_turn(message, out):
    if message.reply:
        print(visible_lines(f'mira: {message.reply}'.split('\n')), file=out)
    if message.reason:
        print(visible(f'  (turn ended: {message.reason})'), file=out)
    if message.text:
        print(visible(f'  runtime: {message.text}'), file=out)


def _console_command(chat, session, line, out, err):
    """Run one `memory ...` line through the console; return the (lazily made) session."""
    if session is None:
        settings = console.Settings(
            memory_node=chat.absolute(chat.settings['memory_node']),
            cognition_node=chat.absolute(chat.settings['cognition_node']))
        # The admin services are not the operator's: under SROS2 the console
        # runs in the admin enclave, the chat itself in operator_chat.
        enclave = chat.settings['console_enclave']
        session = console.Session(
            ['operator_chat', *(['--ros-args', '--enclave', enclave] if enclave else [])],
            settings)
    try:
        # The console's own line handling, so output matches memory_console.
        console.run_line(session, line, out, err)
    except KeyboardInterrupt:
        print('interrupted', file=err)
    return session


def _reader(stdin, out):
    if stdin is sys.stdin and stdin.isatty():
        import readline  # noqa: F401  (line editing for input())

        return lambda: input(PROMPT)

    def read():
        line = stdin.readline()
        if not line:
            raise EOFError
        # Piped input is not echoed by a terminal; the transcript shows it.
        print(f'{PROMPT}{line.rstrip()}', file=out)
        return line
    return read


def main(args=None, *, stdin=None, stdout=None, stderr=None):
    """Run the chat until /quit or end of input; return the exit code."""
    stdin, out, err = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    # Ctrl-C cancels a wait or leaves at the prompt; it must not kill the context.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    chat = session = None
    try:
        try:
            chat = OperatorChat()
        except node_runner.StartupError as error:
            print(f'error: {error}', file=err)
            return 1
        if not chat.wait_for_cognition():
            print(f'error: cognition node {chat.absolute(chat.settings["cognition_node"])} '
                  f'did not subscribe to {UTTERANCE_TOPIC}', file=err)
            return 1
        print(f'episode {chat.episode_id}; /help for commands', file=out)
        read = _reader(stdin, out)
        while True:
            out.flush()
            try:
                line = read().strip()
            except EOFError:
                break
            except KeyboardInterrupt:
                print(file=out)
                break
            if not line:
                continue
            if line in QUIT:
                break
            if line == '/help':
                print(HELP, file=out)
            elif line == NEW_EPISODE:
                chat.new_episode()
                print(f'episode {chat.episode_id}', file=out)
            elif line.split()[0] == 'memory':
                session = _console_command(chat, session, line, out, err)
            else:
                try:
                    chat.say(line, out)
                except KeyboardInterrupt:
                    print('(stopped waiting for this turn)', file=out)
        return 0
    finally:
        out.flush()
        if session is not None:
            session.close()
        if chat is not None:
            chat.executor_.shutdown()
            chat.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
