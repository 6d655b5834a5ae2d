# SPDX-License-Identifier: Apache-2.0
"""
The simulation demo: the whole scenario against a real memory node and database.

    simulation_demo [--workdir DIR] [--keep] [--scenario FILE] [--timeout SEC]

It starts the simulation's processes exactly as mira_memory.simulation.nodes
describes them (the launch file's nodes and parameters), prints a transcript
as the run happens (operator utterances, the model's tool calls with their
arguments, the results, the acknowledgement, observations and autonomous
episodes), then what recall_memory returns for every seeded name, and stops
every node with SIGINT. It exits 0 only when the scenario ran to its end,
every call got a result and every node exited 0.

The database is DIR/memory.sqlite3. By default every run starts fresh (the
previous demo database is removed), so the transcript is the same each time;
--keep reuses it, which shows persistence: the seed is skipped and repeated
statements come back as duplicates (every run publishes new episode ids, so
no turn of a later run is mistaken for one that already wrote a memory).
The demo only removes a database in a directory it created itself (marked
by a .mira_memory_demo file).
"""

import argparse
import json
import os
import pathlib
import sys
import time

from mira_memory.client import MemoryCallError, MemoryClient
from mira_memory.client import names
from mira_memory.cognition import scenario as scenario_file
from mira_memory.cognition.runner import REMEMBER_RESENT
from mira_memory.core import recall
from mira_memory.msg import Observation, ToolResult
from mira_memory.ros import node_runner
from mira_memory.simulation import nodes as simulation
from mira_memory.wire import ATTENTION_RESULTS_TOPIC, HISTORY_SUBSCRIBER_QOS
from mira_memory.wire import OBSERVATIONS_TOPIC, TOOL_RESULTS_TOPIC
import rclpy
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

MARKER_FILE = '.mira_memory_demo'
DEFAULT_WORKDIR = pathlib.Path.home() / '.cache' / 'mira_memory' / 'demo'
SPIN_STEP_SEC = 0.05
CALL_TIMEOUT_SEC = 10.0
# Every service the demo calls: the seed's entities while the run starts,
# recall, status and the pending items once the episodes are over.
CALLED_SERVICES = (names.ADMIN_ENTITY_FIND, names.RECALL_MEMORY, names.ADMIN_STATUS,
                   names.ADMIN_PENDING)
INDENT = ' ' * 11


class DemoFailed(RuntimeError):
    """The demo could not show the whole scenario."""


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog='simulation_demo',
        description='Run the simulated operator episode against a real memory node and '
                    'database and print the transcript.')
    parser.add_argument(
        '--workdir', type=pathlib.Path, default=DEFAULT_WORKDIR,
        help='directory of the demo database (memory.sqlite3) and node logs '
             f'(default: {DEFAULT_WORKDIR})')
    parser.add_argument(
        '--keep', action='store_true',
        help='reuse the database of the previous run instead of starting fresh')
    parser.add_argument(
        '--scenario', type=pathlib.Path, default=None,
        help='scenario TOML file (default: the installed demo.toml)')
    parser.add_argument(
        '--robot-profile', default=simulation.DEFAULT_ROBOT_PROFILE,
        help='robot profile name (default: %(default)s)')
    parser.add_argument(
        '--namespace', default=simulation.DEFAULT_NAMESPACE,
        help='namespace of the nodes (default: %(default)s)')
    parser.add_argument(
        '--node-command', default=None,
        help='the command that runs one console command against a memory node on the '
             "demo's database, shown as the next step for each proposal kept for review "
             "(tools/demo gives tools/node's)")
    parser.add_argument(
        '--timeout', type=float, default=60.0,
        help='give up when the scenario has not finished after this many seconds '
             '(default: %(default)s)')
    return parser.parse_args(argv)


def prepare_database(workdir, keep):
    """Return (database path, what happened to it); remove a previous demo database unless keep."""
    workdir.mkdir(parents=True, exist_ok=True)
    database = workdir / 'memory.sqlite3'
    marker = workdir / MARKER_FILE
    existing = [path for path in (
        database, *(database.with_name(database.name + suffix)
                    for suffix in ('-wal', '-shm', '-journal'))) if path.exists()]
    if not existing:
        marker.touch()
        return database, 'new'
    if keep:
        return database, 'kept from the previous run (--keep)'
    if not marker.exists():
        raise DemoFailed(
            f'{workdir} holds a database the demo did not create; not removing it '
            '(use another --workdir, or --keep to use it)')
    for path in existing:
        path.unlink()
    return database, 'fresh (the previous demo database was removed)'


def summarize_call(call):
    """Return tool(arguments) for the transcript; null related fields are left out."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return f'{call.tool}(<malformed arguments>)'
    if not isinstance(arguments, dict):
        return f'{call.tool}(<malformed arguments>)'
    parts = []
    for name, value in arguments.items():
        if value is None:
            continue
        shown = value if name in ('kind', 'predicate', 'related_role') and isinstance(
            value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f'{name}={shown}')
    return f'{call.tool}({", ".join(parts)})'


def indented(text):
    """Indent the continuation lines of a multi-line text for the transcript."""
    return text.replace('\n', '\n' + INDENT)


def compact(text):
    """Drop recall's fixed header lines and blank lines (the full text is shown at the end)."""
    boilerplate = {recall.HEADER_LINE, recall.FRAMING_LINE, recall.READING_LINE,
                   recall.SUPERVISED_LINE, ''}
    now = recall.TIME_LINE.split('%s')[0]
    return '\n'.join(line for line in text.splitlines()
                     if line.strip() not in boilerplate and not line.startswith(now))


class Observer:
    """The demo's own rclpy node: listens to the run and calls services, never in a callback."""

    def __init__(self, namespace):
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(
            'simulation_demo', namespace=namespace, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.results = []
        self.observations = []
        # History QoS: whatever cognition, attention and perception published
        # before this node matched them is still seen. (The operator source may
        # have finished and exited before that, so the transcript takes each
        # utterance from the scenario it plays, when cognition's marker says the
        # turn is over.)
        self._results = [self.node.create_subscription(
            ToolResult, topic, self.results.append, HISTORY_SUBSCRIBER_QOS)
            for topic in (TOOL_RESULTS_TOPIC, ATTENTION_RESULTS_TOPIC)]
        self._observations = self.node.create_subscription(
            Observation, OBSERVATIONS_TOPIC, self.observations.append, HISTORY_SUBSCRIBER_QOS)
        # The memory node of the demo's namespace, by its relative name.
        self.memory = MemoryClient(self.node, memory_node=names.MEMORY_NODE_NAME,
                                   timeout=CALL_TIMEOUT_SEC, executor=self.executor)
        # Every client made now, before the nodes start: a new client is
        # matched with the node's service by discovery, which then has the
        # whole run instead of one call's 10 s (on a loaded machine a pending
        # client made after the episodes was once not matched within them).
        for service in CALLED_SERVICES:
            self.memory.client(service)

    def wait_for_publishers(self, timeout):
        """Wait until cognition and attention (results) and perception are matched."""
        deadline = time.monotonic() + timeout
        while (any(results.get_publisher_count() < 1 for results in self._results) or
               self._observations.get_publisher_count() < 1):
            if time.monotonic() >= deadline:
                raise DemoFailed('cognition, attention and perception did not come up')
            self.spin_once()

    def spin_once(self):
        self.executor.spin_once(timeout_sec=SPIN_STEP_SEC)

    def call(self, send):
        """Return send(self.memory)'s response; raise DemoFailed without a reply."""
        try:
            return send(self.memory)
        except MemoryCallError as error:
            raise DemoFailed(str(error)) from None

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class Transcript:
    """Turns what the observer collected into transcript lines, in scenario order."""

    def __init__(self, scenario, out):
        self.scenario = scenario
        self.out = out
        # Operator episodes by their scenario name; the operator source
        # publishes them as "<run id>-<name>" (episode_ids keeps what it used).
        self.turns = [(episode.name, turn) for episode in scenario.episodes
                      for turn in episode.turns]
        self.episode_ids = {}
        self.triggers = {}
        self.observation_of = {}
        self.after_turn = {}
        for observation in scenario.observations:
            self.after_turn[observation.id] = observation.after_turn
            for trigger in scenario.triggers_for(observation.label, observation.entity_name):
                episode_id = scenario_file.autonomous_episode_id(trigger.id, observation.id)
                self.triggers[episode_id] = trigger
                self.observation_of[episode_id] = observation.id
        self.printed_turns = set()
        self.printed_observations = set()
        self._autonomous_ready = {}
        self.next_turn = 0
        self.seen_results = 0
        self.seen_observations = 0
        self.autonomous_done = set()
        self.problems = []
        self._pending = {}

    def say(self, line=''):
        print(line, file=self.out, flush=True)

    @property
    def conversation_done(self):
        return self.next_turn == len(self.turns)

    @property
    def done(self):
        return (self.conversation_done and
                self.autonomous_done >= set(self.scenario.autonomous_episode_ids()) and
                self.seen_observations >= len(self.scenario.observations))

    def update(self, observer):
        """
        Print everything that became printable since the last call.

        The order is the story's, whatever order the topics delivered it in:
        operator turns in scenario order; an observation after the turn it
        waits for; an autonomous episode after its observation.
        """
        while self.seen_results < len(observer.results):
            message = observer.results[self.seen_results]
            self.seen_results += 1
            episode = message.episode_id
            if message.episode_kind == ToolResult.EPISODE_OPERATOR:
                name = scenario_file.episode_name(message.episode_id)
                if name is not None:
                    self.episode_ids.setdefault(name, message.episode_id)
                    episode = name
            key = (message.episode_kind, episode, message.turn_id)
            self._pending.setdefault(key, []).append(message)
            if message.outcome == ToolResult.OUTCOME_EPISODE_COMPLETE:
                self._autonomous_ready[message.episode_id] = self._pending.pop(key)
        while (self._print_next_turn() or self._print_next_observation(observer) or
               self._print_ready_autonomous()):
            pass

    def _print_next_turn(self):
        if self.conversation_done:
            return False
        episode_id, turn = self.turns[self.next_turn]
        key = (ToolResult.EPISODE_OPERATOR, episode_id, turn.id)
        messages = self._pending.get(key, [])
        if not (messages and messages[-1].outcome == ToolResult.OUTCOME_TURN_COMPLETE):
            return False
        self._print_turn(episode_id, turn, self._pending.pop(key))
        self.printed_turns.add((episode_id, turn.id))
        self.next_turn += 1
        return True

    def _print_next_observation(self, observer):
        if self.seen_observations >= len(observer.observations):
            return False
        observation = observer.observations[self.seen_observations]
        after_turn = self.after_turn.get(observation.observation_id)
        if after_turn and after_turn not in self.printed_turns:
            return False
        self.seen_observations += 1
        self.printed_observations.add(observation.observation_id)
        matched = self.scenario.triggers_for(observation.label, observation.entity_name)
        note = '' if matched else '   (no attention trigger matches)'
        self.say(f'perception [{observation.observation_id}] {observation.source}: '
                 f'{observation.text}{note}')
        return True

    def _print_ready_autonomous(self):
        for episode_id in list(self._autonomous_ready):
            if self.observation_of.get(episode_id) in self.printed_observations:
                self._print_autonomous(episode_id, self._autonomous_ready.pop(episode_id))
                return True
        return False

    def _print_turn(self, episode_id, turn, messages):
        marker = messages.pop()
        if turn is self.scenario_episode_first_turn(episode_id):
            self.say(f'episode {episode_id}: published as episode id '
                     f'{self.episode_ids.get(episode_id, "?")} (new every run)')
        self.say(f'operator [{episode_id}/{turn.id}] {turn.text}')
        if not turn.calls:
            self.say('  model    (no tool call)')
        self._print_calls(turn.calls, messages, f'{episode_id}/{turn.id}')
        if marker.reason:
            self.problems.append(f'turn {episode_id}/{turn.id} did not run: {marker.reason}')
        if marker.text:
            self.say(f'  {marker.text}')
        self.say()

    def scenario_episode_first_turn(self, name):
        """Return the first turn of the scenario episode called name."""
        for episode in self.scenario.episodes:
            if episode.name == name:
                return episode.turns[0]
        return None

    def _print_autonomous(self, episode_id, messages):
        marker = messages.pop()
        self.autonomous_done.add(episode_id)
        trigger = self.triggers.get(episode_id)
        self.say(f'autonomous [{episode_id}] attention episode ({marker.text}); '
                 'tools offered: recall_memory only')
        self._print_calls(trigger.calls if trigger else (), messages, episode_id)
        if marker.reason:
            self.problems.append(f'autonomous episode {episode_id} failed: {marker.reason}')
        self.say()

    def _print_calls(self, calls, messages, where):
        if len(calls) != len(messages):
            self.problems.append(
                f'{where}: {len(calls)} scripted call(s) but {len(messages)} result(s)')
        for call, message in zip(calls, messages):
            self.say(f'  model    {summarize_call(call)}')
            self.say(f'  result   {indented(compact(message.text))}')
            if message.outcome == ToolResult.OUTCOME_NO_RESULT:
                self.problems.append(f'{where}: {call.tool} got no result')


def run(args, out):
    """Run the demo; return the exit code."""
    # Loopback only, whatever the caller's environment says; the nodes inherit it.
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    scenario_path = args.scenario or simulation.default_scenario_file()
    scenario = scenario_file.load(scenario_path)
    workdir = args.workdir.expanduser().resolve()
    database, state = prepare_database(workdir, args.keep)
    namespace = simulation.normalize_namespace(args.namespace)
    specs = simulation.simulation_nodes(
        database_path=str(database), scenario_file=str(scenario_path),
        robot_profile=args.robot_profile, namespace=namespace)
    print('Mira memory: simulated operator episode against a real memory node', file=out)
    print(f'  database   {database}  [{state}]', file=out)
    print(f'  scenario   {scenario_path}', file=out)
    print(f'  nodes      {", ".join(spec.fully_qualified_name for spec in specs)}', file=out)
    print(f'  ROS        ROS_DOMAIN_ID={os.environ.get("ROS_DOMAIN_ID", "0")}, discovery '
          f'LOCALHOST; node logs in {workdir / "logs"}', file=out)
    print(file=out, flush=True)

    observer = Observer(namespace)
    processes = []
    kept = []
    transcript = Transcript(scenario, out)
    try:
        # The operator source starts last, once this observer hears cognition,
        # attention and perception, so the transcript is printed as it happens.
        # (start() waits for the seed step before the operator source.)
        first = [spec for spec in specs if spec.name != 'operator_source']
        processes = simulation.start(first, workdir / 'logs')
        observer.wait_for_publishers(args.timeout)
        processes += simulation.start(
            [spec for spec in specs if spec not in first], workdir / 'logs', started=processes)
        by_name = {process.name: process for process in processes}
        _play(observer, transcript, by_name, scenario, args.timeout)
        _print_recall(observer, transcript, scenario)
        kept = _kept_for_review(observer, transcript)
    except (DemoFailed, simulation.PrerequisiteFailed) as error:
        transcript.problems.append(str(error))
    except (KeyboardInterrupt, ExternalShutdownException):
        transcript.problems.append('interrupted')
    finally:
        codes = _stop(processes)
        observer.close()
    notes = lost_reply_notes(processes)
    if notes:
        print('lost replies (a call resent after no reply is answered as the first time; '
              'see docs/simulation.md):', file=out)
        for note in notes:
            print(f'  {note}', file=out)
    failed = {name: code for name, code in codes.items() if code != 0}
    print('node exit codes: ' + ', '.join(
        f'{name} {"killed" if code is None else code}' for name, code in codes.items()),
        file=out)
    for name in failed:
        transcript.problems.append(f'{name} exited with {failed[name]}')
    if transcript.problems:
        for problem in transcript.problems:
            print(f'FAILED: {problem}', file=out)
        for process in processes:
            if process.name in failed:
                print(f'--- {process.name} log ({process.log_path}) ---\n{process.output()}',
                      file=out)
        return 1
    print(f'demo complete; the database stays at {database}', file=out, flush=True)
    _print_next_step(kept, database, args.node_command, out)
    return 0


def _kept_for_review(observer, transcript):
    """Return the pending review items this run's operator turns left (PendingRecords)."""
    response = observer.call(lambda memory: memory.pending())
    episodes = set(transcript.episode_ids.values())
    return [item for item in response.items if item.episode_id in episodes]


def _print_next_step(kept, database, node_command, out):
    """Say how to look at each proposal kept for review: the exact commands."""
    if not kept:
        return
    if len(kept) == 1:
        what, stored, look = 'proposal was', 'nothing of it is stored', 'it'
    else:
        what, stored, look = 'proposals were', 'none of them is stored', 'them'
    print(f'\nNext step: {len(kept)} {what} kept for a person to review ({stored}). '
          f'Look at {look} with the console, on this database:', file=out)
    if node_command is None:
        # Without tools/node: a memory node on the database, then the console.
        print(f'  (start a memory node on {database} in /mira: docs/console.md)', file=out)
        node_command = 'ros2 run mira_memory memory_console'
    print(f'  {node_command} memory pending', file=out)
    for item in kept:
        print(f'  {node_command} memory pending show {item.id}    '
              f'# {item.reason}: {json.dumps(item.subject)} {item.predicate} '
              f'{json.dumps(item.value)}', file=out)
    print('then decide, the same way: memory accept, supersede or dismiss P<n> '
          '(docs/review.md)', file=out, flush=True)


def lost_reply_notes(processes):
    """
    Return "<node>: <message>" for each lost service reply the node logs report.

    A call whose reply was lost is sent again, the identical request, and
    answered as the first time (a remember writes no second row); these
    lines say that it happened. Read once the nodes have stopped (logs complete).
    """
    notes = []
    for process in processes:
        for line in process.output().splitlines():
            if REMEMBER_RESENT in line or node_runner.UNSENT_REPLY_WARNING in line:
                # "[WARN] [<time>] [<logger>]: <message>": keep the message.
                notes.append(f'{process.name}: {line.partition("]: ")[2] or line}')
    return notes


def _play(observer, transcript, processes, scenario, timeout):
    operator = processes['operator_source']
    deadline = time.monotonic() + timeout
    seed_shown = False
    while not (transcript.done and operator.poll() is not None):
        if time.monotonic() >= deadline:
            raise DemoFailed(f'the scenario did not finish within {timeout:g} s')
        observer.spin_once()
        for name, process in processes.items():
            code = process.poll()
            # The seed step and the operator source exit 0 when done.
            finishes = process.spec.one_shot or name == 'operator_source'
            if code is not None and (not finishes or code != 0):
                raise DemoFailed(f'{name} exited early with code {code}:\n{process.output()}')
        if not seed_shown and observer.results:
            # The seed step had finished before the operator source started.
            seed_shown = True
            transcript.say('seed (supervised admin services, run by the seed step):')
            for entity in scenario.seed:
                response = observer.call(lambda memory: memory.entity_find(entity.name))
                for record in response.entities:
                    aliases = f' (aliases: {", ".join(record.aliases)})' if record.aliases else ''
                    transcript.say(f'  {record.id} {record.entity_type} '
                                   f'{record.canonical_name!r}{aliases}')
            transcript.say()
        if seed_shown:
            transcript.update(observer)


def _print_recall(observer, transcript, scenario):
    transcript.say()
    transcript.say('What recall_memory returns now for the seeded names (full text, '
                   'as the model reads it):')
    for entity in scenario.seed:
        response = observer.call(lambda memory: memory.recall(entity.name))
        transcript.say(f'recall_memory({json.dumps(entity.name)}) -> {response.status}')
        transcript.say(f'  {response.text}'.replace('\n', '\n  '))
        transcript.say()
    status = observer.call(lambda memory: memory.status())
    transcript.say(
        f'persistent memory: {status.entity_count} entities, {status.alias_count} aliases, '
        f'{status.memory_count} memories, {status.payload_count} payloads')


def _stop(processes):
    codes = {}
    # The memory node goes last: nothing may be left calling it when it closes the store.
    for process in sorted(processes, key=lambda process: process.name == 'memory'):
        codes[process.name] = process.stop()
    return codes


def main(argv=None):
    """Run the demo from the command line; return the exit code."""
    args = parse_arguments(argv)
    try:
        return run(args, sys.stdout)
    except (DemoFailed, scenario_file.ScenarioError, FileNotFoundError) as error:
        print(f'simulation_demo: {error}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
