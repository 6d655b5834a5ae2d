# SPDX-License-Identifier: Apache-2.0
"""
The generated SROS2 policy against what the simulation's processes really wire.

The standalone Fast DDS is built without security, so nothing here can show
that a denied call is refused (docs/trust.md). What can be checked is the
policy itself, in two namespaces (one of them nested): the simulation runs
from mira_memory.simulation.nodes, the description the launch file uses,
with the policy memory_policy generates for that namespace, and every node
must create in the live ROS graph exactly what its profile in its enclave
allows (a name left out would be denied under enforcement, a name too many
would be a permission nobody needs), and run in the enclave the graph
reports for it (--enclave is really passed). The seed step is seen while
it waits for the memory node, then the rest once it has seeded; then
operator_chat, whose console runs in the admin enclave. Neither side is
written down twice. The policy file alone: test/unit/test_security_policy_file.py.
"""

import dataclasses
import fnmatch
import subprocess
import time

from helpers.lifecycle_cli import prepare, set_state
from helpers.policy_rules import load
from helpers.rosutil import executable, NodeProcess, unique_namespace
from mira_memory.ros import security_policy
from mira_memory.simulation import nodes as simulation
import pytest

pytestmark = pytest.mark.ros

WAIT = 120.0
GRAPH_RULES = ('publish', 'subscribe', 'serve', 'call')
# What the console calls: the admin and working-memory services, and recall
# (memory recall, read-only).
ADMIN_PREFIXES = ('/memory/admin/', '/cognition/working_memory/', '/memory/recall_memory')


def graph_of(node, name, namespace):
    """Return what one node creates in the ROS graph, by rule."""
    calls = {
        'publish': node.get_publisher_names_and_types_by_node,
        'subscribe': node.get_subscriber_names_and_types_by_node,
        'serve': node.get_service_names_and_types_by_node,
        'call': node.get_client_names_and_types_by_node,
    }
    return {rule: {topic for topic, _ in call(name, namespace)} for rule, call in calls.items()}


def allowed(policy, spec, use_sim_time):
    """Return what spec's profile in its enclave allows, by rule; /clock only with sim time."""
    rules = policy[spec.enclave][(spec.namespace, spec.name)]
    wanted = {rule: set(rules[rule]) for rule in GRAPH_RULES}
    if not use_sim_time:
        # Granted to every node, used only by a node following /clock.
        wanted['subscribe'].discard('/clock')
    return wanted


def exited_early(process):
    """Return True when process exited and was not a one-shot that finished its work."""
    code = process.poll()
    return code is not None and not (process.spec.one_shot and code == 0)


def settle(ros, specs, wanted, processes):
    """Return the graph of specs once it equals wanted (or the deadline passed)."""
    from rclpy.node import NodeNameNonExistentError
    deadline = time.monotonic() + WAIT
    while True:
        try:
            seen = {spec.name: graph_of(ros.node, spec.name, spec.namespace) for spec in specs}
        except NodeNameNonExistentError:
            seen = None
        # The graph fills in as discovery proceeds: wait until it settles on
        # the policy, then compare once more for the assertion's diff.
        if seen == wanted or time.monotonic() > deadline:
            return seen
        failed = [process for process in processes if exited_early(process)]
        assert not failed, '\n'.join(process.output() for process in failed)
        ros.spin_for(0.2)


def differences(seen, wanted):
    return {(name, rule): {'not in the policy': sorted(seen[name][rule] - names),
                           'not in the graph': sorted(names - seen[name][rule])}
            for name, rules in wanted.items() for rule, names in rules.items()
            if seen is None or seen[name][rule] != names}


def enclaves_of(ros, specs):
    """Return {node name: the enclave the graph reports for it} of specs."""
    reported = {(namespace, name): enclave for name, namespace, enclave
                in ros.node.get_node_names_and_namespaces_with_enclaves()}
    return {spec.name: reported.get((spec.namespace, spec.name)) for spec in specs}


def not_allowed(names, patterns):
    """Return the names no policy name (with sros2's * wildcard) allows."""
    return {name for name in names
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)}


@pytest.mark.parametrize('nested, use_sim_time', [(False, True), (True, None)],
                         ids=['namespace-sim-time', 'nested-namespace'])
def test_every_process_wires_exactly_what_its_enclave_allows(ros, tmp_path, nested,
                                                             use_sim_time):
    namespace = unique_namespace('policy') + ('/robot2' if nested else '')
    # The simulation's policy: its perception hears cognition's results (paced by turns).
    policy = load(security_policy.policy_xml(namespace, simulation=True))
    specs = simulation.simulation_nodes(
        database_path=str(tmp_path / 'memory.sqlite3'),
        scenario_file=simulation.default_scenario_file(), namespace=namespace,
        exit_when_done=False, use_sim_time=use_sim_time)
    # The seed step first, alone: it waits for the memory node with its
    # clients in the graph (then seeds and exits 0 once the memory node runs).
    # Its wait outlasts this test's own deadline.
    [seed] = [dataclasses.replace(
        spec, parameters={**spec.parameters, 'call_timeout_sec': 2 * WAIT})
        for spec in specs if spec.one_shot]
    others = [spec for spec in specs if not spec.one_shot]
    processes = simulation.start([seed], tmp_path / 'logs')
    chat = None
    try:
        wanted_seed = {seed.name: allowed(policy, seed, use_sim_time)}
        seen_seed = settle(ros, [seed], wanted_seed, processes)
        assert differences(seen_seed, wanted_seed) == {}
        assert enclaves_of(ros, [seed]) == {'seed': f'{namespace}/admin'}
        processes += simulation.start(others, tmp_path / 'logs', started=processes)
        wanted = {spec.name: allowed(policy, spec, use_sim_time) for spec in others}
        seen = settle(ros, others, wanted, processes)
        assert differences(seen, wanted) == {}
        assert enclaves_of(ros, others) == {spec.name: spec.enclave for spec in others}
        chat, chat_seen, console_seen = run_operator_chat(ros, namespace, policy, tmp_path)
    finally:
        if chat is not None:
            chat.stdin.close()
            chat.wait(timeout=WAIT)
        for process in sorted(processes, key=lambda process: process.name == 'memory'):
            process.stop()
    assert {spec.enclave for spec in specs} == {
        f'{namespace}/{name}' for name in (
            'memory', 'cognition', 'attention', 'perception', 'admin', 'operator_source')}
    # The operator source calls nothing: no admin service, not even entity_find.
    assert seen['operator_source']['call'] == set()
    # The admin enclave's console calls exactly the admin and working-memory
    # services the nodes serve (the actions' among them) and recall; its ros2 param
    # profile exactly the memory node's parameter services, and
    admin = policy[f'{namespace}/admin']
    served = {name for rules in seen.values() for name in rules['serve']}
    assert admin[('/', security_policy.CONSOLE_NODE)]['call'] == {
        name for name in served if name.startswith(tuple(
            f'{namespace}{prefix}' for prefix in ADMIN_PREFIXES))}
    # its ros2 action profile exactly the services of the memory node's actions.
    actions = {name for name in seen['memory']['serve'] if '/_action/' in name}
    assert len(actions) == 3 * len(security_policy.ADMIN_JOBS)
    assert admin[('/', security_policy.ROS2CLI_NODE)]['call'] == {
        f'{namespace}/memory/{name}' for name in security_policy.PARAMETER_SERVICES} | actions
    assert {f'{namespace}/memory/{name}' for name in security_policy.PARAMETER_SERVICES} == {
        name for name in seen['memory']['serve']
        if name.rpartition('/')[2] in security_policy.PARAMETER_SERVICES}
    # operator_chat: exactly its profile; its console: only what the admin
    # enclave's console profile allows, among it the admin/status it called.
    assert chat.returncode == 0
    assert chat_seen['call'] == set()
    console_rules = admin[('/', security_policy.CONSOLE_NODE)]
    assert {rule: not_allowed(names, console_rules[rule])
            for rule, names in console_seen.items()} == dict.fromkeys(GRAPH_RULES, set())
    assert f'{namespace}/memory/admin/status' in console_seen['call']


def run_operator_chat(ros, namespace, policy, directory):
    """
    Start operator_chat in its enclave, its console in the admin enclave; run one command.

    Return (the chat process, still running, its graph, its console's graph).
    The chat reads stdin; closing it ends the chat with exit 0.
    """
    from rclpy.node import NodeNameNonExistentError
    chat_spec = simulation.NodeSpec('operator_chat', 'operator_chat', namespace)
    log = open(directory / 'operator_chat.log', 'w')
    chat = subprocess.Popen(
        [executable('operator_chat'), '--ros-args', '-r', f'__ns:={namespace}',
         '--enclave', chat_spec.enclave, '-p', f'console_enclave:={namespace}/admin'],
        stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    log.close()
    chat.stdin.write('memory persistent\n')
    chat.stdin.flush()
    console = simulation.NodeSpec('operator_chat', f'memory_console_{chat.pid}', '/')
    wanted = allowed(policy, chat_spec, use_sim_time=False)
    seen = {}

    def settled():
        assert chat.poll() is None, (directory / 'operator_chat.log').read_text()
        try:
            seen['chat'] = graph_of(ros.node, chat_spec.name, namespace)
            seen['console'] = graph_of(ros.node, console.name, '/')
        except NodeNameNonExistentError:
            return False
        status = f'{namespace}/memory/admin/status'
        return (seen['chat'] == wanted and status in seen['console']['call']
                and enclaves_of(ros, [chat_spec, console]) == {
                    chat_spec.name: chat_spec.enclave, console.name: f'{namespace}/admin'})

    ros.spin_until(settled, 'operator_chat and its console in their enclaves', timeout=WAIT,
                   logs=lambda: (directory / 'operator_chat.log').read_text())
    return chat, seen['chat'], seen['console']


def test_the_managed_memory_node_wires_exactly_its_lifecycle_profile(ros, tmp_path):
    """memory_policy --lifecycle against memory_lifecycle_node, configured and active."""
    namespace = unique_namespace('policy_lc')
    policy = load(security_policy.policy_xml(namespace, lifecycle=True))
    rules = policy[f'{namespace}/memory'][(namespace, 'memory')]
    wanted = {rule: set(rules[rule]) for rule in GRAPH_RULES}
    wanted['subscribe'].discard('/clock')  # granted, used only with use_sim_time
    node = NodeProcess('memory_lifecycle_node', namespace=namespace, directory=tmp_path,
                       parameters={'enabled': True,
                                   'database_path': str(tmp_path / 'memory.sqlite3')})
    try:
        prepare(ros, f'{namespace}/memory')
        for transition in ('configure', 'activate'):
            assert set_state(ros, f'{namespace}/memory', transition), node.output()
        deadline = time.monotonic() + WAIT
        while True:
            seen = graph_of(ros.node, 'memory', namespace)
            if seen == wanted or time.monotonic() > deadline:
                break
            assert node.running(), node.describe('exited')
            ros.spin_for(0.2)
    finally:
        node.stop()
    assert differences({'memory': seen}, {'memory': wanted}) == {}
    # The default policy (memory_node) grants none of it; ros2 lifecycle in
    # the admin enclave may call exactly the lifecycle services.
    plain = load(security_policy.policy_xml(namespace))[f'{namespace}/memory']
    lifecycle_services = {f'{namespace}/memory/{name}'
                          for name in security_policy.LIFECYCLE_SERVICES}
    assert rules['serve'] - plain[(namespace, 'memory')]['serve'] == lifecycle_services
    admin = policy[f'{namespace}/admin'][('/', security_policy.ROS2CLI_NODE)]
    assert lifecycle_services <= admin['call']
