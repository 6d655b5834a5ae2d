# SPDX-License-Identifier: Apache-2.0
"""
The SROS2 policy the generator writes, for any namespace, and the file shipped for /mira.

ROS-free: the shipped config/security/mira.policy.xml must be the generator's
/mira output byte for byte (so it cannot drift); the XML is read back the way
sros2's permissions.xsl reads it (test/helpers/policy_rules.py) and must grant the
restrictions docs/trust.md states, in every namespace. Where sros2 is
installed (a ROS install) it also validates against sros2's policy.xsd.
What each process really creates in the ROS graph:
test/system/test_security_policy.py.
"""

import pathlib

from helpers.policy_rules import by_enclave, load
from mira_memory.ros import security_policy
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHIPPED = ROOT / 'config' / 'security' / 'mira.policy.xml'
NAMESPACES = ['/mira', '/site/robot2', '/']
ENCLAVES = {'memory', 'cognition', 'attention', 'perception', 'operator_source',
            'operator_chat', 'admin', 'monitor'}
ADMIN = {'status', 'entity_add', 'entity_find', 'alias_add', 'find', 'add', 'show', 'list',
         'retire', 'forget', 'jobs',
         'pending', 'pending_show', 'accept', 'supersede', 'dismiss', 'check'}
JOBS = ('backup', 'export', 'verify')
PARAMETER_SERVICES = {'describe_parameters', 'get_parameter_types', 'get_parameters',
                      'list_parameters', 'set_parameters', 'set_parameters_atomically'}
NO_SCHEMA = ('sros2 is not installed (no ROS install); on a ROS install this validates '
             'against sros2/policy/schemas/policy.xsd')


def prefix(namespace):
    return namespace.rstrip('/')


def policy(namespace):
    return load(security_policy.policy_xml(namespace))


def enclaves(namespace):
    return by_enclave(policy(namespace))


def holders(merged, rule, name):
    return {path.rpartition('/')[2] for path, rules in merged.items() if name in rules[rule]}


def test_the_shipped_policy_is_the_generators_mira_output():
    assert SHIPPED.read_bytes() == security_policy.policy_xml('/mira').encode()


def test_the_command_prints_the_policy_of_the_namespace_given(capsys):
    assert security_policy.main(['--namespace', 'site/robot2/']) == 0
    assert capsys.readouterr().out == security_policy.policy_xml('/site/robot2')


@pytest.mark.parametrize('namespace', ['/2robot', '/a b', '/a//b', '/mira-2'])
def test_a_namespace_that_is_not_one_is_one_line_and_exit_2(capsys, namespace):
    assert security_policy.main(['--namespace', namespace]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert captured.err.startswith(f'memory_policy: {namespace!r} is not a ROS namespace')
    assert captured.err.count('\n') == 1


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_one_enclave_per_process_in_the_namespace(namespace):
    assert set(policy(namespace)) == {f'{prefix(namespace)}/{name}' for name in ENCLAVES}


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_every_node_may_log_publish_parameter_events_follow_clock_and_describe_its_types(
        namespace):
    for path, profiles in policy(namespace).items():
        for (ns, node), rules in profiles.items():
            own = f'{prefix(ns)}/{node}'
            assert {'/rosout', '/parameter_events'} <= rules['publish'], (path, node)
            assert '/clock' in rules['subscribe'], (path, node)
            assert f'{own}/get_type_description' in rules['serve'], (path, node)


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_only_the_operator_enclaves_publish_operator_turns(namespace):
    merged = enclaves(namespace)
    topic = f'{prefix(namespace)}/operator/utterance'
    assert holders(merged, 'publish', topic) == {'operator_source', 'operator_chat'}
    assert holders(merged, 'subscribe', topic) == {'memory', 'cognition'}


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_only_cognition_calls_remember_and_only_the_memory_node_serves_it(namespace):
    merged = enclaves(namespace)
    remember = f'{prefix(namespace)}/memory/remember'
    assert holders(merged, 'call', remember) == {'cognition'}
    assert holders(merged, 'serve', remember) == {'memory'}
    # The admin enclave's console recalls too (memory recall); no other enclave does.
    assert holders(merged, 'call', f'{prefix(namespace)}/memory/recall_memory') == {
        'cognition', 'attention', 'admin'}
    console = policy(namespace)[f'{prefix(namespace)}/admin'][
        ('/', security_policy.CONSOLE_NODE)]
    assert f'{prefix(namespace)}/memory/recall_memory' in console['call']


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_only_the_admin_enclave_calls_admin_and_the_memory_nodes_parameter_services(namespace):
    merged = enclaves(namespace)
    memory = f'{prefix(namespace)}/memory'
    admin = {f'{memory}/admin/{command}' for command in ADMIN}
    assert {name for name in merged[f'{prefix(namespace)}/memory']['serve']
            if name.startswith(f'{memory}/admin/') and '/_action/' not in name} == admin
    parameters = {f'{memory}/{name}' for name in PARAMETER_SERVICES}
    for name in admin | parameters:
        assert holders(merged, 'call', name) == {'admin'}, name
    seed = policy(namespace)[f'{prefix(namespace)}/admin'][(namespace, 'seed')]
    assert seed['call'] == {f'{memory}/admin/{command}'
                            for command in ('entity_find', 'entity_add', 'alias_add')}


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_only_the_admin_enclave_sends_goals_to_and_watches_the_jobs(namespace):
    merged = enclaves(namespace)
    memory = f'{prefix(namespace)}/memory'
    for job in JOBS:
        action = f'{memory}/admin/{job}/_action'
        for service in ('send_goal', 'cancel_goal', 'get_result'):
            assert holders(merged, 'serve', f'{action}/{service}') == {'memory'}
            assert holders(merged, 'call', f'{action}/{service}') == {'admin'}
        for topic in ('feedback', 'status'):
            assert holders(merged, 'publish', f'{action}/{topic}') == {'memory'}
            assert holders(merged, 'subscribe', f'{action}/{topic}') == {'admin'}
    # The console and ros2 action (ros2cli) may; the seed step may not.
    admin = policy(namespace)[f'{prefix(namespace)}/admin']
    callers = {node for (_, node), rules in admin.items()
               if f'{memory}/admin/backup/_action/send_goal' in rules['call']}
    assert callers == {security_policy.CONSOLE_NODE, security_policy.ROS2CLI_NODE}


def test_the_shipped_policy_grants_actions_with_sros2s_actions_element():
    text = SHIPPED.read_text()
    assert text.count('<actions execute="ALLOW">') == 1
    assert text.count('<actions call="ALLOW">') == 2
    assert '<action>~/admin/backup</action>' in text
    assert '<action>/mira/memory/admin/verify</action>' in text


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_the_operator_enclaves_call_no_service_at_all(namespace):
    merged = enclaves(namespace)
    for name in ('operator_source', 'operator_chat'):
        assert merged[f'{prefix(namespace)}/{name}']['call'] == set(), name
    # Both speak through mira_memory.ros.operator_topics: the same rules.
    assert merged[f'{prefix(namespace)}/operator_source'] == {
        rule: {name.replace('/operator_chat/', '/operator_source/') for name in names}
        for rule, names in merged[f'{prefix(namespace)}/operator_chat'].items()}


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_the_monitor_reads_diagnostics_and_rosout_and_nothing_else(namespace):
    monitor = enclaves(namespace)[f'{prefix(namespace)}/monitor']
    assert monitor['subscribe'] == {'/diagnostics', '/rosout', '/clock'}
    assert monitor['call'] == set()
    assert monitor['publish'] == {'/rosout', '/parameter_events'}


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_wildcards_only_name_the_tools_nodes_of_pid_in_the_root_namespace(namespace):
    wildcards = {(path.rpartition('/')[2], name) for path, rules in enclaves(namespace).items()
                 for names in rules.values() for name in names if '*' in name}
    assert wildcards == {('admin', '/memory_console_*/get_type_description'),
                         ('admin', '/_ros2cli_*/get_type_description'),
                         ('monitor', '/_ros2cli_*/get_type_description')}


@pytest.mark.parametrize('namespace', NAMESPACES)
def test_the_policy_is_valid_against_sros2s_schema(tmp_path, namespace):
    sros2_policy = pytest.importorskip('sros2.policy', reason=NO_SCHEMA)
    path = tmp_path / 'policy.xml'
    path.write_text(security_policy.policy_xml(namespace))
    # sros2's own loader: parses, resolves includes, asserts policy.xsd.
    sros2_policy.load_policy(path)


def test_the_lifecycle_option_adds_only_the_managed_nodes_lifecycle_names(capsys):
    assert security_policy.main(['--namespace', '/site/robot2', '--lifecycle']) == 0
    text = capsys.readouterr().out
    assert text == security_policy.policy_xml('/site/robot2', lifecycle=True)
    managed, plain = load(text), policy('/site/robot2')
    memory = ('/site/robot2', 'memory')
    lifecycle = {f'/site/robot2/memory/{name}' for name in security_policy.LIFECYCLE_SERVICES}
    assert managed.keys() == plain.keys()
    added = {(enclave, key, rule): names - plain[enclave][key][rule]
             for enclave, profiles in managed.items() for key, rules in profiles.items()
             for rule, names in rules.items() if names - plain[enclave][key][rule]}
    assert added == {
        ('/site/robot2/memory', memory, 'serve'): lifecycle,
        ('/site/robot2/memory', memory, 'publish'): {'/site/robot2/memory/transition_event'},
        ('/site/robot2/admin', ('/', security_policy.ROS2CLI_NODE), 'call'): lifecycle}


# Perception, attention and cognition's results ------------------------------------------

@pytest.mark.parametrize('namespace', NAMESPACES)
def test_in_bringup_perception_hears_no_memory_text_and_attention_has_a_topic_of_its_own(
        namespace):
    merged = enclaves(namespace)
    results = f'{prefix(namespace)}/cognition/tool_results'
    perception = merged[f'{prefix(namespace)}/perception']
    # Cognition's results carry recalled memory: perception gets no grant on them.
    assert not any(results in names for names in perception.values())
    assert perception['call'] == set() and perception['serve'] == {
        name for name in perception['serve'] if name.startswith(
            f'{prefix(namespace)}/perception/')}
    # Only cognition speaks on its topic (end-of-turn and acknowledgement markers).
    assert holders(merged, 'publish', results) == {'cognition'}
    assert holders(merged, 'subscribe', results) == {'operator_source', 'operator_chat'}
    attention = f'{prefix(namespace)}/attention/tool_results'
    assert holders(merged, 'publish', attention) == {'attention'}
    assert holders(merged, 'subscribe', attention) == set()


def test_the_simulation_option_lets_only_perception_hear_cognitions_results(capsys):
    assert security_policy.main(['--namespace', '/mira', '--simulation']) == 0
    text = capsys.readouterr().out
    assert text == security_policy.policy_xml('/mira', simulation=True)
    simulated, plain = load(text), policy('/mira')
    added = {(enclave, key, rule): names - plain[enclave][key][rule]
             for enclave, profiles in simulated.items() for key, rules in profiles.items()
             for rule, names in rules.items() if names - plain[enclave][key][rule]}
    assert added == {('/mira/perception', ('/mira', 'perception'), 'subscribe'): {
        '/mira/cognition/tool_results'}}


# docs/trust.md's table of grants -----------------------------------------------------------

TRUST = ROOT / 'docs' / 'trust.md'
TABLE_HEADER = '| enclave | publish | subscribe | serve | call | actions |'
TOOL_NODES = (security_policy.CONSOLE_NODE, security_policy.ROS2CLI_NODE)


def _every_node(ns, node):
    """Return what every profile is granted besides its own row (docs/trust.md says it once)."""
    own = f'{prefix(ns)}/{node}'
    serve = {f'{own}/get_type_description'}
    if node not in TOOL_NODES:
        serve |= {f'{own}/{name}' for name in PARAMETER_SERVICES}
    return {'publish': {'/rosout', '/parameter_events'}, 'subscribe': {'/clock'},
            'serve': serve}


def _relative(name, namespace='/mira'):
    return name[len(namespace) + 1:] if name.startswith(namespace + '/') else name


def grants_table(namespace='/mira', **options):
    """Return {enclave: {column: {names}}} of the generated policy, as docs/trust.md lists it."""
    table = {}
    for path, profiles in load(security_policy.policy_xml(namespace, **options)).items():
        row = table[path.rpartition('/')[2]] = {
            column: set() for column in ('publish', 'subscribe', 'serve', 'call', 'actions')}
        for (ns, node), rules in profiles.items():
            common = _every_node(ns, node)
            for rule, names in rules.items():
                for name in names - common.get(rule, set()):
                    action, _, part = name.partition('/_action/')
                    if part == 'send_goal':
                        row['actions'].add(('execute ' if rule == 'serve' else 'call ')
                                           + _relative(action, namespace))
                    elif not part:
                        row[rule].add(_relative(name, namespace))
    return table


def documented_table():
    lines = TRUST.read_text().splitlines()
    start = lines.index(TABLE_HEADER) + 2
    table = {}
    for line in lines[start:]:
        if not line.startswith('|'):
            break
        enclave, *cells = [cell.strip() for cell in line.strip('|').split('|')]
        table[enclave.strip('`')] = {
            column: {name.strip().strip('`') for name in cell.split(', ') if cell != '-'}
            for column, cell in zip(('publish', 'subscribe', 'serve', 'call', 'actions'),
                                    cells)}
    return table


def test_docs_trust_lists_every_grant_of_every_enclave():
    assert documented_table() == grants_table()
