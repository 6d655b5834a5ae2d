# SPDX-License-Identifier: Apache-2.0
"""
The simulation end to end, as real processes started from mira_memory.simulation.nodes.

The nodes, names and parameters are the ones launch/simulation.launch.py
starts (both read simulation.simulation_nodes); only the namespace and the
database differ per test. Waits are deadlines against hangs, never timings.
"""

import dataclasses
import pathlib
import re
import subprocess

from helpers.rosutil import unique_namespace
from mira_memory.cognition import scenario
from mira_memory.cognition.runner import CALL_ATTEMPTS, REMEMBER_RESENT
from mira_memory.msg import MemoryLink, OperatorUtterance, ToolResult
from mira_memory.ros import node_runner
from mira_memory.ros.operator_topics import RepeatedTurn
from mira_memory.simulation import demo
from mira_memory.simulation import nodes as simulation
from mira_memory.simulation import processes
from mira_memory.srv import AdminAdd, AdminEntityAdd, AdminFind, AdminShow, AdminStatus
from mira_memory.srv import RecallMemory, Remember, WorkingMemoryClear, WorkingMemoryShow
from mira_memory.wire import ATTENTION_RESULTS_TOPIC, HISTORY_SUBSCRIBER_QOS
from mira_memory.wire import TOOL_RESULTS_TOPIC
import pytest
from rclpy.node import NodeNameNonExistentError

pytestmark = pytest.mark.ros

WAIT = 120.0
RECALL_TYPE = 'mira_memory/srv/RecallMemory'
REMEMBER_TYPE = 'mira_memory/srv/Remember'

# config/scenarios/demo.toml on a fresh database, by (episode name, turn id):
# the operator source publishes episode ids "<run id>-<name>".
EXPECTED_REMEMBERS = {
    ('e1', 't1'): ('applied/created', '', 'MEM1'),
    ('e1', 't2'): ('applied/created', '', 'MEM2'),
    ('e1', 't3'): ('applied/created', '', 'MEM3'),
    ('e1', 't5'): ('rejected', 'value_not_supported', ''),
    ('e2', 't2'): ('applied/duplicate', '', 'MEM1'),
    ('e2', 't3'): ('rejected', 'conflict', ''),
}
EXPECTED_ACKNOWLEDGEMENTS = {
    ('e1', 't1'): ('assistant: stored MEM1', 'MEM1'),
    ('e1', 't2'): ('assistant: stored MEM2', 'MEM2'),
    ('e1', 't3'): ('assistant: stored MEM3', 'MEM3'),
    ('e1', 't4'): ('', ''),
    ('e1', 't5'): ('assistant: I did not store that (value_not_supported)', ''),
    ('e1', 't6'): ('', ''),
    ('e2', 't1'): ('', ''),
    ('e2', 't2'): ('assistant: that was already stored as MEM1', 'MEM1'),
    ('e2', 't3'): ('assistant: I did not store that (conflict)', ''),
    ('e2', 't4'): ('', ''),
}
AUTONOMOUS_EPISODE = 'greet_ada-o1'

# Cognition's log line when a remember got no reply and is sent once more.
RESENT_REMEMBER = re.compile(
    r'remember got no reply in episode (\S+) turn (\S+); ' + re.escape(REMEMBER_RESENT))


def resent_remembers(log):
    """Return (episode name, turn id) of every remember that cognition's log says it resent."""
    return {(scenario.episode_name(episode_id), turn_id)
            for episode_id, turn_id in RESENT_REMEMBER.findall(log)}


ATTENTION_ONLY_SCENARIO = """
[[perception.observations]]
id = "o1"
source = "camera_front"
label = "person"
entity_name = "Ada Lovelace"
text = "person Ada Lovelace seen"

[[attention.triggers]]
id = "notice"
label = "person"
[[attention.triggers.calls]]
tool = "recall_memory"
arguments = '{"query": "Ada Lovelace"}'
[[attention.triggers.calls]]
tool = "remember"
arguments = '''{"kind": "fact", "subject": "Ada Lovelace", "predicate": "seen_in",
  "value": "the lab", "related_entity": null, "related_role": null,
  "evidence": "Ada Lovelace seen in the lab"}'''
"""


class Simulation:
    """Simulation nodes as processes in a namespace of their own, plus a result watcher."""

    def __init__(self, ros, directory, scenario_file=None, names=None):
        self.ros = ros
        self.directory = pathlib.Path(directory)
        self.namespace = unique_namespace('sim')
        self.specs = {spec.name: spec for spec in simulation.simulation_nodes(
            database_path=str(self.directory / 'memory.sqlite3'),
            scenario_file=str(scenario_file or simulation.default_scenario_file()),
            namespace=self.namespace)}
        self.results = []
        # Cognition's results, and attention's on a topic of its own.
        self._subscriptions = [ros.node.create_subscription(
            ToolResult, f'{self.namespace}/{topic}', self.results.append,
            HISTORY_SUBSCRIBER_QOS) for topic in (TOOL_RESULTS_TOPIC, ATTENTION_RESULTS_TOPIC)]
        self.processes = {}
        try:
            for name in self.specs if names is None else names:
                self.start(name)
        except BaseException:
            # A start that failed (the seed did not finish, so the operator
            # source never started) must not leave the others running.
            self.close()
            raise

    def start(self, name):
        running = self.processes.get(name)
        assert running is None or running.poll() is not None, f'{name} is still running'
        # The operator source starts after the seed step, as in the launch file.
        simulation.await_prerequisite(self.specs[name], self.processes.values())
        self.processes[name] = simulation.Process(self.specs[name], self.directory / 'logs')
        return self.processes[name]

    def service(self, node, name):
        return f'{self.namespace}/{node}/{name}'

    def call(self, service_type, node, name, request=None):
        return self.ros.call(service_type, self.service(node, name), request, timeout=WAIT)

    def read(self, service_type, node, name, request=None):
        """Call a read-only service, repeating it if a reply is lost (RosClient.settle)."""
        return self.ros.settle(service_type, self.service(node, name), request, timeout=WAIT)

    def spin_until(self, condition, what, every_step=None):
        self.ros.spin_until(condition, what, timeout=WAIT, failure=self._failure, logs=self.logs,
                            every_step=every_step)

    def _failure(self):
        for process in self.processes.values():
            if process.poll() not in (None, 0):
                return f'{process.name} failed:\n{process.output()}'
        return None

    def marker(self, outcome, episode_id, turn_id=''):
        """Return the marker of an episode (by its published id or its scenario name)."""
        for message in self.results:
            if message.outcome == outcome and message.turn_id == turn_id and episode_id in (
                    message.episode_id, scenario.episode_name(message.episode_id)):
                return message
        return None

    def episode_id(self, name):
        """Return the episode id this run's operator source published for a scenario name."""
        def published():
            for message in self.results:
                if scenario.episode_name(message.episode_id) == name:
                    return message.episode_id
            return None
        # The operator source may have exited before this client took every
        # result it published: keep spinning until one of the episode arrives.
        self.spin_until(lambda: published() is not None, f'a result of episode {name}')
        return published()

    def wait_for_turn(self, episode_id, turn_id, turn=None):
        """Wait for a turn's marker; turn (a RepeatedTurn) goes again meanwhile."""
        self.spin_until(
            lambda: self.marker(ToolResult.OUTCOME_TURN_COMPLETE, episode_id, turn_id),
            f'the end of turn {episode_id}/{turn_id}',
            every_step=turn.send_again_if_due if turn else None)
        return self.marker(ToolResult.OUTCOME_TURN_COMPLETE, episode_id, turn_id)

    def tool_results(self, tool, kind=ToolResult.EPISODE_OPERATOR):
        return [message for message in self.results
                if message.tool == tool and message.episode_kind == kind]

    def clients_of(self, node_name, ready):
        """Return node_name's clients once ready(clients) holds (graph discovery)."""
        found = []

        def visible():
            try:
                clients = self.ros.node.get_client_names_and_types_by_node(
                    node_name, self.namespace)
            except NodeNameNonExistentError:
                return False
            found[:] = [service_type for _, types in clients for service_type in types]
            return ready(found)

        self.spin_until(visible, f'the clients of {node_name}')
        return found

    def stop(self, name):
        return self.processes[name].stop()

    def logs(self):
        return '\n'.join(f'--- {process.name}\n{process.output()}'
                         for process in self.processes.values())

    def close(self):
        # The memory node goes last, as in a launch shutdown.
        for name in sorted(self.processes, key=lambda name: name == 'memory'):
            self.processes[name].stop()
        for subscription in self._subscriptions:
            self.ros.node.destroy_subscription(subscription)


def by_name(message):
    """Return (episode name, turn id) of an operator ToolResult."""
    return scenario.episode_name(message.episode_id), message.turn_id


def say(sim, episode_id, turn_id, text):
    """Publish one operator utterance to the running cognition and memory nodes; wait for it."""
    publisher = sim.ros.node.create_publisher(
        OperatorUtterance, f'{sim.namespace}/operator/utterance', 10)
    listeners = sum(1 for name in ('cognition', 'memory')
                    if name in sim.processes and sim.processes[name].poll() is None)
    try:
        sim.spin_until(lambda: publisher.get_subscription_count() >= listeners,
                       'cognition and memory to subscribe')
        turn = RepeatedTurn(publisher, OperatorUtterance(
            episode_id=episode_id, turn_id=turn_id, text=text))
        return sim.wait_for_turn(episode_id, turn_id, turn)
    finally:
        sim.ros.node.destroy_publisher(publisher)


@pytest.fixture(scope='module')
def demo_run(ros, tmp_path_factory):
    """Run the whole demo scenario once for this module's checks."""
    sim = Simulation(ros, tmp_path_factory.mktemp('demo_run'))
    try:
        sim.spin_until(
            lambda: (sim.processes['operator_source'].poll() == 0 and
                     sim.marker(ToolResult.OUTCOME_TURN_COMPLETE, 'e2', 't4') and
                     sim.marker(ToolResult.OUTCOME_EPISODE_COMPLETE, AUTONOMOUS_EPISODE)),
            'the scenario to finish')
        # One read reply from each node before the checks, some of which write.
        sim.read(AdminStatus, 'memory', 'admin/status')
        sim.read(WorkingMemoryShow, 'cognition', 'working_memory/show')
        yield sim
    finally:
        sim.close()


# The scenario, end to end ----------------------------------------------------

def test_remember_outcomes_end_to_end(demo_run):
    # A remember whose reply DDS lost while discovery settled is sent again
    # and answered as the first time: a lost reply changes no outcome.
    outcomes = {by_name(message): (message.outcome, message.reason, message.memory_id)
                for message in demo_run.tool_results('remember')}
    assert outcomes == EXPECTED_REMEMBERS, demo_run.logs()


def test_acknowledgement_comes_only_from_the_turns_remember_result(demo_run):
    markers = {by_name(message): (message.text, message.memory_id)
               for message in demo_run.results
               if message.outcome == ToolResult.OUTCOME_TURN_COMPLETE and
               scenario.episode_name(message.episode_id)}
    assert markers == EXPECTED_ACKNOWLEDGEMENTS, demo_run.logs()


def test_recall_outcomes_end_to_end(demo_run):
    recalls = [(*by_name(message), message.outcome, message.reason)
               for message in demo_run.tool_results('recall_memory')]
    assert recalls == [
        ('e1', 't4', 'found', 'exact_match'),
        ('e1', 't6', 'found', 'exact_match'),
        ('e1', 't6', 'refused', 'acquisition_budget_exhausted'),
        ('e2', 't4', 'found', 'exact_match'),
    ]


def test_recall_result_text_is_what_the_memory_node_rendered(demo_run):
    message = demo_run.tool_results('recall_memory')[0]
    response = demo_run.call(RecallMemory, 'memory', 'recall_memory',
                             RecallMemory.Request(query='Ada'))
    # The two renderings differ only in the current time they give.
    now = re.compile(r'^Current time: \S+ ', re.MULTILINE)
    assert now.sub('', message.text) == now.sub(
        '', f'recall_memory: found (exact_match)\n{response.text}')
    assert now.search(message.text)
    assert 'MEM1' in message.text and 'MEM3' in message.text


def test_database_holds_exactly_the_admitted_memories(demo_run):
    status = demo_run.call(AdminStatus, 'memory', 'admin/status')
    assert (status.entity_count, status.alias_count, status.memory_count) == (3, 2, 3)
    ada = demo_run.call(AdminFind, 'memory', 'admin/find', AdminFind.Request(name='Ada'))
    [entity] = ada.entities
    memories = [(memory.id, memory.kind, memory.summary, memory.predicate, memory.value,
                 memory.source_kind, memory.source_label) for memory in entity.memories]
    e1 = demo_run.episode_id('e1')
    assert memories == [
        ('MEM1', 'preference', 'Ada Lovelace prefers green tea', 'prefers_drink',
         'green tea', 'operator_statement', f'episode {e1} turn t1'),
        ('MEM3', 'relationship', "Ada is Charles's friend", 'friend_of', 'Charles',
         'operator_statement', f'episode {e1} turn t3'),
    ]


def test_second_person_fact_is_linked_to_the_robot_entity(demo_run):
    shown = demo_run.call(AdminShow, 'memory', 'admin/show', AdminShow.Request(memory_id='MEM2'))
    links = [(link.entity_name, link.role) for link in shown.memory.links]
    assert links == [('Mira', 'subject')]
    assert [payload.text for payload in shown.payloads] == ['your favourite colour is teal']


def test_a_repeated_turn_id_is_not_run_again(demo_run):
    before = len(demo_run.tool_results('remember'))
    e1 = demo_run.episode_id('e1')
    repeated = ToolResult.OUTCOME_TURN_COMPLETE, e1, 't1'
    demo_run.results[:] = [message for message in demo_run.results
                           if (message.outcome, message.episode_id, message.turn_id) != repeated]
    # The same id with other words (the same turn again gets no marker:
    # test/node/test_cognition_turns.py).
    marker = say(demo_run, e1, 't1', 'Ada Lovelace prefers black tea.')
    assert (marker.reason, marker.text) == ('turn_id_reused', '')
    assert len(demo_run.tool_results('remember')) == before


def test_a_call_without_reply_is_bounded_and_never_blocks_the_node(ros, tmp_path):
    sim = Simulation(ros, tmp_path, names=[])
    # Fault injection: the memory node this cognition calls does not exist.
    spec = sim.specs['cognition']
    sim.specs['cognition'] = dataclasses.replace(spec, parameters={
        **spec.parameters, 'memory_node': 'absent_memory', 'call_timeout_sec': 5.0})
    # The read client exists before cognition does (announced with the test's participant).
    ros.client(WorkingMemoryShow, sim.service('cognition', 'working_memory/show'))
    sim.start('cognition')
    publisher = ros.node.create_publisher(
        OperatorUtterance, f'{sim.namespace}/operator/utterance', 10)
    try:
        sim.spin_until(lambda: publisher.get_subscription_count() > 0, 'cognition')
        e1 = scenario.operator_episode_id(scenario.new_run_id(), 'e1')
        turn = RepeatedTurn(publisher, OperatorUtterance(
            episode_id=e1, turn_id='t1', text='Ada Lovelace prefers green tea.'))
        # While the remember call (and its one retry) waits for its deadline,
        # the same single-threaded node still serves working memory.
        sim.spin_until(lambda: f'operator {e1}/t1: Ada Lovelace prefers green tea.' in sim.read(
            WorkingMemoryShow, 'cognition', 'working_memory/show').entries, 'the turn to start',
            every_step=turn.send_again_if_due)
        pending = sim.marker(ToolResult.OUTCOME_TURN_COMPLETE, e1, 't1')
        marker = sim.wait_for_turn(e1, 't1')
        output = sim.processes['cognition'].output()
    finally:
        ros.node.destroy_publisher(publisher)
        sim.close()
    assert pending is None
    [remember] = sim.tool_results('remember')
    assert (remember.outcome, remember.reason) == ('no_result', 'no_result')
    assert remember.text == (
        'remember: no result: no result was received; do not assume the memory was stored.')
    assert marker.text == 'assistant: I could not confirm whether that was stored (no result)'
    # Sent CALL_ATTEMPTS times in all, the identical request each time.
    assert output.count('sending the identical request once more') == CALL_ATTEMPTS - 1
    # What the demo and the scenario checks read from that log line.
    assert resent_remembers(output) == {('e1', 't1')}
    notes = demo.lost_reply_notes([sim.processes['cognition']])
    assert [note for note in notes if REMEMBER_RESENT in note] == [
        f'cognition: remember got no reply in episode {e1} turn t1; '
        f'sending the identical request once more (attempt {attempt} of {CALL_ATTEMPTS})'
        for attempt in range(2, CALL_ATTEMPTS + 1)]
    # Any other note is cognition's own reply to this test's first
    # working_memory/show, sent before cognition had discovered the test's
    # reply reader (a loaded machine); sim.read's resend got the answer.
    assert all(node_runner.UNSENT_REPLY_WARNING in note for note in notes
               if REMEMBER_RESENT not in note), notes


def test_third_acquisition_of_an_episode_is_refused_without_a_service_call(demo_run):
    e1 = [message for message in demo_run.tool_results('recall_memory')
          if by_name(message)[0] == 'e1']
    assert [message.outcome for message in e1] == ['found', 'found', 'refused']
    assert e1[2].text.startswith('recall_memory: refused (acquisition_budget_exhausted)')
    assert 'memory was not searched' in e1[2].text


def test_a_new_episode_gets_a_new_budget(demo_run):
    e2 = [message.outcome for message in demo_run.tool_results('recall_memory')
          if by_name(message)[0] == 'e2']
    assert e2 == ['found']


# Perception and attention ---------------------------------------------------------

def test_autonomous_episode_recalls_but_cannot_remember(demo_run):
    results = [(message.tool, message.outcome, message.reason)
               for message in demo_run.results
               if message.episode_kind == ToolResult.EPISODE_AUTONOMOUS]
    assert results == [
        ('recall_memory', 'found', 'exact_match'),
        ('remember', 'refused', 'tool_unavailable'),
        ('', 'episode_complete', ''),
    ]


def test_the_demo_makes_every_memory_client_before_the_nodes_start():
    # A new client is matched with the node's service by discovery before its
    # first call can go; made with the observer, before the nodes start, it
    # has the whole run for that (a pending client made after the episodes
    # was once not matched within its call's 10 s on a loaded machine).
    observer = demo.Observer(unique_namespace('observer'))
    try:
        made = sorted(client.srv_name for client in observer.node.clients)
    finally:
        observer.close()
    # Relative names: the memory node of the observer's namespace.
    assert made == [f'memory/{service}' for service in (
        'admin/entity_find', 'admin/pending', 'admin/status', 'recall_memory')]


def test_cognition_has_recall_and_remember_clients(demo_run):
    clients = demo_run.clients_of(
        'cognition', lambda types: REMEMBER_TYPE in types and RECALL_TYPE in types)
    assert {RECALL_TYPE, REMEMBER_TYPE} <= set(clients)


def test_attention_has_a_recall_client_and_no_remember_client(demo_run):
    clients = demo_run.clients_of('attention', lambda types: RECALL_TYPE in types)
    assert REMEMBER_TYPE not in clients


def test_perception_has_no_memory_client_at_all(demo_run):
    # perception's observations publisher shows the graph already knows the node.
    def known():
        try:
            publishers = demo_run.ros.node.get_publisher_names_and_types_by_node(
                'perception', demo_run.namespace)
        except NodeNameNonExistentError:
            return False
        return any(name.endswith('/perception/observations') for name, _ in publishers)

    demo_run.spin_until(known, 'perception in the graph')
    clients = demo_run.clients_of('perception', lambda types: True)
    assert [client for client in clients if client.startswith('mira_memory/')] == []


ROGUE_CALLS = {
    # Attention's own autonomous episode and the observation's words.
    'autonomous-episode': (AUTONOMOUS_EPISODE, 'o1', 'person Ada Lovelace seen'),
    # A perception string passed off as an utterance.
    'perception-string': (AUTONOMOUS_EPISODE, '', 'camera_front: person Ada Lovelace seen'),
}


@pytest.mark.parametrize('episode_id,turn_id,text', ROGUE_CALLS.values(), ids=ROGUE_CALLS)
def test_an_autonomous_episode_cannot_write_even_by_calling_remember_itself(
        demo_run, episode_id, turn_id, text):
    # Attention has no remember client; a process that calls remember anyway
    # with an observation's text names no operator turn the memory node heard.
    before = demo_run.call(AdminStatus, 'memory', 'admin/status')
    response = demo_run.call(Remember, 'memory', 'remember', Remember.Request(
        episode_id=episode_id, turn_id=turn_id, utterance=text, kind='fact',
        subject='Ada Lovelace', predicate='last_seen', value='seen',
        evidence='person Ada Lovelace seen'))
    after = demo_run.call(AdminStatus, 'memory', 'admin/status')
    assert (response.status, response.reason) == ('rejected', 'evidence_not_in_utterance')
    assert response.error.startswith('No operator turn with this episode and turn id')
    assert after.memory_count == before.memory_count


def test_an_operator_turn_with_an_observation_as_utterance_is_rejected(demo_run):
    # A real operator turn's ids, but the text is the observation's.
    response = demo_run.call(Remember, 'memory', 'remember', Remember.Request(
        episode_id=demo_run.episode_id('e2'), turn_id='t4',
        utterance='person Ada Lovelace seen', kind='fact', subject='Ada Lovelace',
        predicate='last_seen', value='seen', evidence='person Ada Lovelace seen'))
    assert (response.status, response.reason) == ('rejected', 'evidence_not_in_utterance')
    assert response.error.startswith('The utterance differs from the operator turn')


def test_autonomous_activity_leaves_memory_unchanged(ros, tmp_path):
    scenario = tmp_path / 'attention_only.toml'
    scenario.write_text(ATTENTION_ONLY_SCENARIO)
    sim = Simulation(ros, tmp_path, scenario_file=scenario, names=['memory'])
    try:
        # One read first: a write's reply must not be the one a fresh node drops.
        sim.read(AdminStatus, 'memory', 'admin/status')
        ada = sim.call(AdminEntityAdd, 'memory', 'admin/entity_add', AdminEntityAdd.Request(
            entity_type='person', canonical_name='Ada Lovelace')).entity
        sim.call(AdminAdd, 'memory', 'admin/add', AdminAdd.Request(
            kind='fact', summary='Ada Lovelace wrote the first program',
            links=[MemoryLink(entity_id=ada.id, role='subject')]))
        before = sim.call(AdminStatus, 'memory', 'admin/status')
        sim.start('attention')
        sim.start('perception')
        sim.spin_until(lambda: sim.marker(ToolResult.OUTCOME_EPISODE_COMPLETE, 'notice-o1'),
                       'the autonomous episode')
        after = sim.call(AdminStatus, 'memory', 'admin/status')
        attempts = [(message.outcome, message.reason) for message in sim.tool_results(
            'remember', ToolResult.EPISODE_AUTONOMOUS)]
    finally:
        sim.close()
    assert attempts == [('refused', 'tool_unavailable')]
    counts = ('entity_count', 'alias_count', 'memory_count', 'link_count', 'payload_count')
    assert [getattr(after, name) for name in counts] == [getattr(before, name) for name in counts]


# Working memory --------------------------------------------------------------------

def test_working_memory_show_and_clear(demo_run):
    say(demo_run, 'wm', 't1', 'Hello Mira, just saying hello.')
    shown = demo_run.call(WorkingMemoryShow, 'cognition', 'working_memory/show')
    assert shown.entries[-1] == 'operator wm/t1: Hello Mira, just saying hello.'
    assert shown.capacity == 50
    assert shown.max_characters == 48000
    assert shown.characters == sum(len(entry) for entry in shown.entries)
    cleared = demo_run.call(WorkingMemoryClear, 'cognition', 'working_memory/clear')
    assert cleared.cleared == len(shown.entries)
    assert demo_run.call(WorkingMemoryShow, 'cognition', 'working_memory/show').entries == []


def test_working_memory_keeps_an_overlong_utterance_cut_to_its_characters(demo_run):
    # The entries are the model's prompt: one long utterance must not blow it up.
    say(demo_run, 'wm-long', 't1', 'x' * 60_000)
    shown = demo_run.call(WorkingMemoryShow, 'cognition', 'working_memory/show')
    assert shown.characters == sum(len(entry) for entry in shown.entries) <= 48000
    assert shown.entries[-1].startswith('operator wm-long/t1: xxxx')
    assert shown.entries[-1].endswith('more characters not kept in working memory]')


def test_clearing_working_memory_leaves_persistent_memory(demo_run):
    say(demo_run, 'wm2', 't1', 'Another hello.')
    before = demo_run.call(AdminStatus, 'memory', 'admin/status')
    demo_run.call(WorkingMemoryClear, 'cognition', 'working_memory/clear')
    after = demo_run.call(AdminStatus, 'memory', 'admin/status')
    assert (after.memory_count, after.entity_count) == (before.memory_count, before.entity_count)


def test_console_memory_and_memory_clear(demo_run):
    say(demo_run, 'console', 't1', 'Hello from the console test.')
    command = [simulation.executable_path('memory_console'),
               '--cognition-node', f'{demo_run.namespace}/cognition', '--timeout', '60']
    shown = subprocess.run([*command, 'memory'], capture_output=True, text=True, timeout=WAIT)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert 'operator console/t1: Hello from the console test.' in shown.stdout
    cleared = subprocess.run(
        [*command, 'memory', 'clear'], capture_output=True, text=True, timeout=WAIT)
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    shown = subprocess.run([*command, 'memory'], capture_output=True, text=True, timeout=WAIT)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert 'Hello from the console test.' not in shown.stdout


def test_working_memory_is_lost_on_restart_while_persistent_memory_survives(ros, tmp_path):
    sim = Simulation(ros, tmp_path, names=['memory', 'cognition', 'seed', 'operator_source'])
    try:
        sim.spin_until(lambda: sim.processes['operator_source'].poll() == 0,
                       'the operator scenario')
        before = sim.read(WorkingMemoryShow, 'cognition', 'working_memory/show').entries
        assert f'operator {sim.episode_id("e1")}/t1: Ada Lovelace prefers green tea.' in before
        assert sim.stop('cognition') == 0
        assert sim.stop('memory') == 0
        sim.start('memory')
        sim.start('cognition')
        # Restarted nodes must discover this client again: read with settle.
        after = sim.read(WorkingMemoryShow, 'cognition', 'working_memory/show').entries
        recalled = sim.read(RecallMemory, 'memory', 'recall_memory',
                            RecallMemory.Request(query='Ada', include_entities=True))
    finally:
        sim.close()
    assert after == []
    assert recalled.status == 'found'
    [entity] = recalled.entities
    assert [(memory.id, memory.summary) for memory in entity.memories] == [
        ('MEM1', 'Ada Lovelace prefers green tea'), ('MEM3', "Ada is Charles's friend")]


def test_the_seed_waits_for_a_memory_node_that_starts_after_a_call_deadline(ros, tmp_path):
    # Under load the memory node started alongside the seed did not answer
    # within one call's deadline (call_timeout_sec, 5 s in the simulation).
    sim = Simulation(ros, tmp_path, names=['seed'])
    try:
        call_timeout = sim.specs['seed'].parameters['call_timeout_sec']
        ros.spin_for(call_timeout + 2.0)
        assert sim.processes['seed'].poll() is None, sim.logs()
        sim.start('memory')
        assert sim.processes['seed'].wait(WAIT) == 0, sim.logs()
    finally:
        sim.close()
    assert 'seed complete' in sim.processes['seed'].output()


def test_a_simulation_that_fails_to_start_stops_every_node_it_started(ros, tmp_path):
    before = processes.still_running()
    # The operator source starts after the seed, which is not started here:
    # its start fails once the memory node and cognition already run.
    with pytest.raises(simulation.PrerequisiteFailed):
        Simulation(ros, tmp_path, names=['memory', 'cognition', 'operator_source'])
    assert set(processes.still_running()) <= set(before)


# The demo command --------------------------------------------------------------------

def demo_report(result, workdir):
    """Return the demo's output and its node logs, for a failed assertion."""
    logs = ''.join(f'--- {path.name}\n{path.read_text(errors="replace")}'
                   for path in sorted((workdir / 'logs').glob('*.log')))
    return f'{result.stdout}{result.stderr}{logs}'


def test_demo_command_runs_the_scenario_and_exits_zero(tmp_path):
    node = f'tools/node --database {tmp_path / "memory.sqlite3"}'
    result = subprocess.run(
        [simulation.executable_path('simulation_demo'), '--workdir', str(tmp_path),
         '--node-command', node], capture_output=True, text=True, timeout=300)
    report = demo_report(result, tmp_path)
    assert result.returncode == 0, report
    lines = result.stdout.splitlines()
    first_turn = 'operator [e1/t1] Ada Lovelace prefers green tea.'
    assert first_turn in lines, report
    stored = ['  result   remember: applied (created): stored as new durable memory MEM1.',
              '  assistant: stored MEM1']
    if ('e1', 't1') in resent_remembers(result.stdout):
        # The lost-reply note quotes cognition's resend; the answer is the same.
        assert 'lost replies (' in result.stdout, report
    start = lines.index(first_turn)
    assert lines[start + 2:start + 4] == stored, report
    expected = [
        f'  database   {tmp_path / "memory.sqlite3"}  [new]',
        "  ENT2 person 'Ada Lovelace' (aliases: Ada)",
        '  assistant: I did not store that (value_not_supported)',
        '  assistant: that was already stored as MEM1',
        "  result   recall_memory: refused (acquisition_budget_exhausted): this episode's "
        'memory acquisition attempts are used up; memory was not searched.',
        '  result   remember: refused (tool_unavailable): this tool is not available in '
        'this episode; nothing was done.',
        'recall_memory("Ada Lovelace") -> found',
        'persistent memory: 3 entities, 2 aliases, 3 memories, 3 payloads',
        'node exit codes: cognition 0, attention 0, perception 0, seed 0, operator_source 0, '
        'memory 0',
    ]
    missing = [line for line in expected if line not in lines]
    assert not missing, report
    # Then the next step: the command that shows each proposal kept for review.
    end = lines.index(f'demo complete; the database stays at {tmp_path / "memory.sqlite3"}')
    assert lines[end + 1:end + 3] == [
        '', 'Next step: 1 proposal was kept for a person to review (nothing of it is stored). '
        'Look at it with the console, on this database:'], report
    assert lines[end + 3:end + 5] == [
        f'  {node} memory pending',
        f'  {node} memory pending show P1    # conflict: "Ada" prefers_drink "coffee"'], report
    assert lines[end + 5].startswith('then decide'), report
    assert len(lines) == end + 6, report


SECOND_RUN_SCENARIO = """
[[seed.entities]]
type = "person"
name = "Ada Lovelace"
aliases = ["Ada"]

[[episodes]]
name = "e1"
[[episodes.turns]]
id = "t1"
text = "Ada Lovelace plays the harp."
[[episodes.turns.calls]]
tool = "remember"
arguments = '''{"kind": "fact", "subject": "Ada Lovelace", "predicate": "plays",
  "value": "the harp", "related_entity": null, "related_role": null,
  "evidence": "Ada Lovelace plays the harp"}'''
[[episodes.turns]]
id = "t2"
text = "Ada Lovelace prefers green tea."
[[episodes.turns.calls]]
tool = "remember"
arguments = '''{"kind": "preference", "subject": "Ada Lovelace", "predicate": "prefers_drink",
  "value": "green tea", "related_entity": null, "related_role": null,
  "evidence": "Ada Lovelace prefers green tea"}'''
"""


def test_a_later_run_on_the_kept_database_writes_new_turns_and_finds_duplicates(tmp_path):
    # The same episode name and turn id (e1/t1) as the first run's stored
    # memory: with per-run episode ids it is a new turn, not one that
    # "already wrote a memory".
    demo_command = [simulation.executable_path('simulation_demo'), '--workdir', str(tmp_path)]
    first = subprocess.run(demo_command, capture_output=True, text=True, timeout=300)
    scenario_path = tmp_path / 'second.toml'
    scenario_path.write_text(SECOND_RUN_SCENARIO)
    second = subprocess.run([*demo_command, '--keep', '--scenario', str(scenario_path)],
                            capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    lines = second.stdout.splitlines()
    assert '  assistant: stored MEM4' in lines, second.stdout
    assert '  assistant: that was already stored as MEM1' in lines, second.stdout
    assert 'already wrote' not in second.stdout


def test_demo_does_not_remove_a_database_it_did_not_create(tmp_path):
    database = tmp_path / 'memory.sqlite3'
    database.write_bytes(b'precious')
    with pytest.raises(demo.DemoFailed, match='did not create'):
        demo.prepare_database(tmp_path, keep=False)
    assert database.read_bytes() == b'precious'


def test_demo_starts_fresh_in_its_own_directory(tmp_path):
    database, state = demo.prepare_database(tmp_path, keep=False)
    database.write_bytes(b'previous run')
    database, state = demo.prepare_database(tmp_path, keep=False)
    assert not database.exists() and state.startswith('fresh')


def test_an_operator_source_with_no_listener_names_what_it_never_saw(tmp_path):
    # The one line of a start that timed out says which listener was never
    # seen subscribing and how many subscriptions were matched: a node not
    # started is told apart from one whose subscription is seen but never matched.
    namespace = unique_namespace('nolisteners')
    scenario_path = tmp_path / 'scenario.toml'
    scenario_path.write_text(SECOND_RUN_SCENARIO)
    result = subprocess.run(
        [simulation.executable_path('operator_source'), '--ros-args', '-r', f'__ns:={namespace}',
         '-p', f'scenario_file:={scenario_path}', '-p', 'start_timeout_sec:=1.0'],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path, timeout=90)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert f'{namespace}/cognition and {namespace}/memory did not both subscribe to ' \
        f'{namespace}/operator/utterance within 1 s (not seen subscribing: ' \
        f'{namespace}/cognition, {namespace}/memory; 0 of the 0 subscriptions seen are ' \
        'matched)' in output, output
