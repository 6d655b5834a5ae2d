# SPDX-License-Identifier: Apache-2.0
"""
The SROS2 policy (config/security/mira.policy.xml) against what the nodes really wire.

The standalone Fast DDS is built without security, so nothing here can show
that a denied call is refused (README, "Trust"). What can be checked is the
policy itself: it parses in the SROS2 policy format, it has one enclave per
simulation process (plus the console), and each enclave allows exactly the
topics and services that process creates in the live ROS graph when the
simulation runs from mira_memory.simulation.nodes, the description the launch file
uses. Neither side is written down twice.
"""

import collections
import pathlib
import time
import xml.etree.ElementTree as ElementTree

from mira_memory.simulation import nodes as simulation
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
POLICY = ROOT / 'config' / 'security' / 'mira.policy.xml'
POLICY_NAMESPACE = '/mira'
CONSOLE_ENCLAVE = '/mira/console'
WAIT = 120.0
# (element, attribute) -> what the graph calls it.
RULES = {('topics', 'publish'): 'publish', ('topics', 'subscribe'): 'subscribe',
         ('services', 'reply'): 'serve', ('services', 'request'): 'call'}
SEED_SERVICES = {'entity_find', 'entity_add', 'alias_add'}


def resolve(name, namespace, node):
    """Expand a policy name (absolute, ~/private or relative) the way SROS2 does."""
    if name.startswith('/'):
        return name
    if name.startswith('~/'):
        return f'{namespace.rstrip("/")}/{node}/{name[2:]}'
    return f'{namespace.rstrip("/")}/{name}'


def load_policy(namespace=POLICY_NAMESPACE):
    """
    Return {enclave path: {'publish'|'subscribe'|'serve'|'call': {absolute names}}}.

    Profiles written for /mira are resolved in namespace, so the policy can be
    compared with a simulation running in a test namespace of its own.
    """
    root = ElementTree.parse(POLICY).getroot()
    assert (root.tag, root.get('version')) == ('policy', '0.2.0')
    [enclaves] = list(root)
    assert enclaves.tag == 'enclaves'
    policy = {}
    for enclave in enclaves:
        assert enclave.tag == 'enclave'
        rules = policy.setdefault(enclave.get('path'), collections.defaultdict(set))
        [profiles] = list(enclave)
        for profile in profiles:
            assert profile.tag == 'profile' and profile.get('ns') == POLICY_NAMESPACE
            for group in profile:
                granted = [RULES[group.tag, attribute] for attribute, value in group.items()
                           if value == 'ALLOW']
                assert granted and set(group.attrib.values()) == {'ALLOW'}, group.attrib
                for item in group:
                    assert item.tag == group.tag[:-1]
                    for rule in granted:
                        rules[rule].add(resolve(item.text, namespace, profile.get('node')))
    return policy


def specs(namespace=POLICY_NAMESPACE, directory='/tmp/mira_policy'):
    return simulation.simulation_nodes(
        database_path=f'{directory}/memory.sqlite3',
        scenario_file=simulation.default_scenario_file(), namespace=namespace,
        exit_when_done=False)


def holders(policy, rule, name):
    return {enclave for enclave, rules in policy.items() if name in rules[rule]}


# The policy alone ----------------------------------------------------------------------------


def test_one_enclave_per_simulation_process_and_the_console():
    assert set(load_policy()) == {spec.enclave for spec in specs()} | {CONSOLE_ENCLAVE}


def test_only_the_operator_source_publishes_operator_turns():
    policy = load_policy()
    assert holders(policy, 'publish', '/mira/operator/utterance') == {'/mira/operator_source'}
    assert holders(policy, 'subscribe', '/mira/operator/utterance') == {
        '/mira/memory', '/mira/cognition'}


def test_only_cognition_calls_remember_and_only_the_memory_node_serves_it():
    policy = load_policy()
    assert holders(policy, 'call', '/mira/memory/remember') == {'/mira/cognition'}
    assert holders(policy, 'serve', '/mira/memory/remember') == {'/mira/memory'}


def test_only_the_console_calls_admin_and_the_operator_source_only_seeds():
    policy = load_policy()
    admin = {name for rules in policy.values() for name in rules['serve']
             if name.startswith('/mira/memory/admin/')}
    callers = {name: holders(policy, 'call', name) for name in admin}
    assert {name.rpartition('/')[2] for name in admin} == {
        'status', 'entity_add', 'entity_find', 'alias_add', 'find', 'add', 'show', 'list',
        'retire', 'forget', 'backup', 'export', 'verify'}
    assert {name: enclaves - {'/mira/operator_source'} for name, enclaves in callers.items()} \
        == dict.fromkeys(admin, {CONSOLE_ENCLAVE})
    seeded = {name.rpartition('/')[2] for name, enclaves in callers.items()
              if '/mira/operator_source' in enclaves}
    assert seeded == SEED_SERVICES


def test_no_enclave_is_granted_a_wildcard_beyond_the_consoles_own_node():
    wildcards = {(enclave, name) for enclave, rules in load_policy().items()
                 for names in rules.values() for name in names if '*' in name}
    assert wildcards == {(CONSOLE_ENCLAVE, '/memory_console_*/get_type_description')}


# The policy against the live graph -------------------------------------------------------------


def graph_of(node, name, namespace):
    """Return what one node creates in the ROS graph, by rule."""
    calls = {
        'publish': node.get_publisher_names_and_types_by_node,
        'subscribe': node.get_subscriber_names_and_types_by_node,
        'serve': node.get_service_names_and_types_by_node,
        'call': node.get_client_names_and_types_by_node,
    }
    return {rule: {topic for topic, _ in call(name, namespace)} for rule, call in calls.items()}


@pytest.mark.ros
def test_every_enclave_allows_exactly_what_its_process_wires(ros, tmp_path):
    from rclpy.node import NodeNameNonExistentError
    from rosutil import unique_namespace
    namespace = unique_namespace('policy')
    running = specs(namespace, str(tmp_path))
    expected = load_policy(namespace)
    processes = simulation.start(running, tmp_path / 'logs')
    try:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                seen = {spec.enclave: graph_of(ros.node, spec.name, namespace)
                        for spec in running}
            except NodeNameNonExistentError:
                seen = None
            wanted = {spec.enclave: {rule: set(expected[spec.enclave][rule])
                                     for rule in RULES.values()} for spec in running}
            # The graph fills in as discovery proceeds: wait until it settles on
            # the policy, then compare once more for the assertion's diff.
            if seen == wanted or time.monotonic() > deadline:
                break
            failed = [process.name for process in processes if process.poll() is not None]
            assert not failed, '\n'.join(process.output() for process in processes)
            ros.spin_for(0.2)
    finally:
        for process in sorted(processes, key=lambda process: process.name == 'memory'):
            process.stop()
    differences = {
        (enclave, rule): {'not in the policy': sorted(seen[enclave][rule] - names),
                          'not in the graph': sorted(names - seen[enclave][rule])}
        for enclave, rules in wanted.items() for rule, names in rules.items()
        if seen is None or seen[enclave][rule] != names}
    assert differences == {}
    # The console calls exactly the admin services the memory node serves and
    # the working-memory services cognition serves.
    served = {name for rules in seen.values() for name in rules['serve']
              if '/memory/admin/' in name or '/cognition/working_memory/' in name}
    assert expected[CONSOLE_ENCLAVE]['call'] == served
