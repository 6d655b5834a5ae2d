# SPDX-License-Identifier: Apache-2.0
"""
The SROS2 access-control policy of mira_memory, generated for any namespace.

    memory_policy [--namespace /mira] [--lifecycle] [--simulation] > policy.xml

prints the whole policy (SROS2 policy format 0.2.0) for the nodes running in
one namespace; config/security/mira.policy.xml is its /mira output
(test/unit/test_security_policy_file.py checks it byte for byte, and
test/system/test_security_policy.py checks the policy against the live ROS
graph). One table, enclaves(), says which process may publish, subscribe,
serve and call what; NODE_COMMON and PARAMETER_SERVICES hold what every
node needs. docs/trust.md: the enclaves and the keystore steps.

ROS-free (the standard library and mira_memory.wire only), so the policy can
be generated on a machine without ROS.
"""

import argparse
import dataclasses
from dataclasses import dataclass
import re
import sys
import textwrap
from xml.sax.saxutils import escape, quoteattr

from mira_memory.wire import (
    ATTENTION_RESULTS_TOPIC, DIAGNOSTICS_TOPIC, OBSERVATIONS_TOPIC, TOOL_RESULTS_TOPIC,
    UTTERANCE_TOPIC)

POLICY_VERSION = '0.2.0'
DEFAULT_NAMESPACE = '/mira'

# The memory node's admin services (~/admin/<command>): the console's commands.
ADMIN_COMMANDS = (
    'status', 'entity_add', 'entity_find', 'alias_add', 'find', 'add', 'show', 'list',
    'retire', 'forget', 'jobs',
    # Supervised review (docs/review.md): the admin enclave only, like the rest.
    'pending', 'pending_show', 'accept', 'supersede', 'dismiss',
    # The dry run of remember's rules (memory check): writes nothing, but
    # explains the rules to a person, so it is no model's to call.
    'check')
# Its long jobs, actions of the same name (~/admin/<job>): sros2 turns an
# <actions> rule into the action's services (send_goal, cancel_goal,
# get_result) and topics (feedback, status) under <name>/_action/.
ADMIN_JOBS = ('backup', 'export', 'verify')
# What the simulation's seed step calls (entity administration is supervised).
SEED_COMMANDS = ('entity_find', 'entity_add', 'alias_add')
WORKING_MEMORY_SERVICES = ('working_memory/show', 'working_memory/clear')
# A node's parameter services (rclpy starts them unless told not to).
# rclpy's parameter client (ros2 param) creates a client for all six.
PARAMETER_SERVICES = (
    'describe_parameters', 'get_parameter_types', 'get_parameters', 'list_parameters',
    'set_parameters', 'set_parameters_atomically')
# The managed memory node's lifecycle services (rclpy's LifecycleNode; what
# ros2 lifecycle and nav2_lifecycle_manager call) and its transition topic.
LIFECYCLE_SERVICES = (
    'change_state', 'get_state', 'get_available_states', 'get_available_transitions',
    'get_transition_graph')
LIFECYCLE_TOPIC = '~/transition_event'
# Nodes that tools name <prefix><pid> in the root namespace: memory_console,
# and every ros2 command (ros2cli's DirectNode, '_ros2cli_<pid>'; run it with
# ROS_SECURITY_ENCLAVE_OVERRIDE and --no-daemon).
CONSOLE_NODE = 'memory_console_*'
ROS2CLI_NODE = '_ros2cli_*'

_NAMESPACE = re.compile(r'/|(/[A-Za-z_][A-Za-z0-9_]*)+')


@dataclass(frozen=True)
class Rules:
    """Names one node may publish, subscribe to, serve (reply), call (request), and actions."""

    publish: tuple = ()
    subscribe: tuple = ()
    reply: tuple = ()
    request: tuple = ()
    # Actions it serves (execute) and sends goals to (call).
    execute: tuple = ()
    call: tuple = ()

    def __add__(self, other):
        """Return both rule sets in one, each name once, in order."""
        return Rules(*(tuple(dict.fromkeys(mine + theirs)) for mine, theirs in zip(
            dataclasses.astuple(self), dataclasses.astuple(other))))


# Every node: logging, parameter events, its type description service (Jazzy
# and later), and /clock, which a node subscribes to with use_sim_time.
NODE_COMMON = Rules(
    publish=('/rosout', '/parameter_events'), subscribe=('/clock',),
    reply=('~/get_type_description',))
WITH_PARAMETERS = NODE_COMMON + Rules(reply=tuple(f'~/{name}' for name in PARAMETER_SERVICES))


@dataclass(frozen=True)
class Profile:
    """One node of an enclave: its name, whether in the namespace or the root, and its rules."""

    node: str
    rules: Rules
    common: Rules = WITH_PARAMETERS
    in_root: bool = False


@dataclass(frozen=True)
class Enclave:
    """One enclave, /<namespace>/<name>: who runs in it and why."""

    name: str
    purpose: str
    profiles: tuple


def enclaves(namespace, lifecycle=False, simulation=False):
    """
    Return the Enclaves of the nodes running in namespace (absolute names where needed).

    lifecycle: the memory node is the managed memory_lifecycle_node
    (bringup lifecycle:=true), which also serves the lifecycle services and
    publishes its transitions; the admin enclave's ros2 commands may then
    call them (ros2 lifecycle set/get).
    simulation: the simulation's perception, which paces its scripted
    observations by cognition's end-of-turn markers, may hear
    cognition/tool_results. Never in bringup: those results carry recalled
    memory, and perception has no memory access.
    """
    memory = f'{namespace.rstrip("/")}/memory'
    cognition = f'{namespace.rstrip("/")}/cognition'
    managed = LIFECYCLE_SERVICES if lifecycle else ()
    memory_rules = Rules(
        publish=(DIAGNOSTICS_TOPIC, *((LIFECYCLE_TOPIC,) if lifecycle else ())),
        subscribe=(UTTERANCE_TOPIC,),
        reply=('~/recall_memory', '~/remember',
               *(f'~/admin/{command}' for command in ADMIN_COMMANDS),
               *(f'~/{name}' for name in managed)),
        execute=tuple(f'~/admin/{job}' for job in ADMIN_JOBS))
    jobs = tuple(f'{memory}/admin/{job}' for job in ADMIN_JOBS)
    perception_purpose = 'Perception: observations only, no memory service or memory text at all.'
    if simulation:
        perception_purpose += " Simulation: hears cognition's results to pace its script."
    return (
        Enclave('memory', 'The memory node: serves recall, remember and admin; hears operator '
                'turns.' + (' Managed: lifecycle services too.' if lifecycle else ''),
                (Profile('memory', memory_rules),)),
        Enclave('cognition', 'Operator cognition: the only caller of remember.', (Profile(
            'cognition', Rules(
                publish=(TOOL_RESULTS_TOPIC,), subscribe=(UTTERANCE_TOPIC,),
                reply=tuple(f'~/{name}' for name in WORKING_MEMORY_SERVICES),
                request=('memory/recall_memory', 'memory/remember'))),)),
        Enclave('attention', 'Autonomous attention: recall only, never remember; its results '
                'on a topic of its own.', (Profile(
                    'attention', Rules(
                        publish=(ATTENTION_RESULTS_TOPIC,), subscribe=(OBSERVATIONS_TOPIC,),
                        request=('memory/recall_memory',))),)),
        Enclave('perception', perception_purpose, (Profile('perception', Rules(
            publish=(OBSERVATIONS_TOPIC,),
            subscribe=(TOOL_RESULTS_TOPIC,) if simulation else ())),)),
        Enclave('operator_source', "The simulation's operator: publishes operator turns, no "
                'admin service (the seed step seeds).', (Profile('operator_source', Rules(
                    publish=(UTTERANCE_TOPIC,), subscribe=(TOOL_RESULTS_TOPIC,))),)),
        Enclave('operator_chat', 'The operator chat: a person types operator turns. Its '
                '"memory ..." commands run in a console of their own, in the admin enclave '
                '(parameter console_enclave).', (Profile('operator_chat', Rules(
                    publish=(UTTERANCE_TOPIC,), subscribe=(TOOL_RESULTS_TOPIC,))),)),
        Enclave('admin', 'Administration: the console (memory_console, and the operator '
                "chat's memory commands), the simulation's seed step, and ros2 param and "
                'ros2 action on the memory node.', (
                    Profile(CONSOLE_NODE, Rules(request=(
                        *(f'{memory}/admin/{command}' for command in ADMIN_COMMANDS),
                        # memory recall: what cognition would get, read-only.
                        f'{memory}/recall_memory',
                        *(f'{cognition}/{name}' for name in WORKING_MEMORY_SERVICES)),
                        call=jobs), common=NODE_COMMON, in_root=True),
                    Profile('seed', Rules(request=tuple(
                        f'memory/admin/{command}' for command in SEED_COMMANDS))),
                    Profile(ROS2CLI_NODE, Rules(request=tuple(
                        f'{memory}/{name}' for name in (*PARAMETER_SERVICES, *managed)),
                        call=jobs), common=NODE_COMMON, in_root=True))),
        Enclave('monitor', 'Monitoring (ros2 topic echo, with ROS_SECURITY_ENCLAVE_OVERRIDE): '
                'reads /diagnostics and /rosout, nothing else.', (Profile(ROS2CLI_NODE, Rules(
                    subscribe=(DIAGNOSTICS_TOPIC, '/rosout')), common=NODE_COMMON,
                    in_root=True),)),
    )


def normalize_namespace(namespace):
    """Return namespace as an absolute ROS namespace; raise ValueError when it is not one."""
    stripped = namespace.strip()
    normalized = '/' + stripped.strip('/')
    if not _NAMESPACE.fullmatch(normalized) or '//' in stripped:
        raise ValueError(
            f'{namespace!r} is not a ROS namespace (such as /mira or /site/robot2: '
            'letters, digits and _, no part starting with a digit)')
    return normalized


def enclave_path(namespace, name):
    """Return the path of enclave name for nodes in namespace (/mira, memory -> /mira/memory)."""
    return f'{normalize_namespace(namespace).rstrip("/")}/{name}'


def _group(indent, tag, attribute, names):
    item = tag[:-1]
    lines = [f'{indent}<{tag} {attribute}="ALLOW">']
    lines += [f'{indent}  <{item}>{escape(name)}</{item}>' for name in names]
    return lines + [f'{indent}</{tag}>']


def _rules_xml(indent, rules):
    lines = []
    for tag, attribute, names in (
            ('topics', 'publish', rules.publish), ('topics', 'subscribe', rules.subscribe),
            ('services', 'reply', rules.reply), ('services', 'request', rules.request),
            ('actions', 'execute', rules.execute), ('actions', 'call', rules.call)):
        if names:
            lines += _group(indent, tag, attribute, names)
    return lines


def policy_xml(namespace=DEFAULT_NAMESPACE, lifecycle=False, simulation=False):
    """Return the whole policy for the nodes in namespace, as the text of an XML file."""
    namespace = normalize_namespace(namespace)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<!--',
        f'  SROS2 access control for mira_memory in namespace {namespace} '
        f'(policy format {POLICY_VERSION}).',
        *(['  With the managed memory node (the lifecycle option of memory_policy).']
          if lifecycle else []),
        *(['  For the simulation (the simulation option of memory_policy), not for bringup.']
          if simulation else []),
        # (No double hyphen in an XML comment, so the command is not quoted.)
        '  Generated by the memory_policy command for this namespace',
        '  (mira_memory/ros/security_policy.py); edit the table there, not this file.',
        '  One enclave per process; names are relative to the profile ns, and ~/',
        '  stands for the node name. Under ROS_SECURITY_STRATEGY=Enforce everything',
        '  not allowed here is denied.',
        '  Keystore steps and the enclave of each process: docs/trust.md.',
        '-->',
        f'<policy version="{POLICY_VERSION}">',
        '  <enclaves>',
    ]
    for enclave in enclaves(namespace, lifecycle, simulation):
        purpose = textwrap.wrap(escape(enclave.purpose), 80)
        lines += [f'    <!-- {purpose[0]}', *(f'         {line}' for line in purpose[1:])]
        lines[-1] += ' -->'
        lines.append(f'    <enclave path={quoteattr(enclave_path(namespace, enclave.name))}>')
        lines.append('      <profiles>')
        for profile in enclave.profiles:
            ns = '/' if profile.in_root else namespace
            lines.append(f'        <profile ns={quoteattr(ns)} node={quoteattr(profile.node)}>')
            lines += _rules_xml('          ', profile.rules)
            lines.append('          <!-- Every node: logging, parameters, type description, '
                         '/clock. -->')
            lines += _rules_xml('          ', profile.common)
            lines.append('        </profile>')
        lines.append('      </profiles>')
        lines.append('    </enclave>')
    lines += ['  </enclaves>', '</policy>']
    return '\n'.join(lines) + '\n'


def main(argv=None):
    """Print the policy for --namespace; return the exit code."""
    parser = argparse.ArgumentParser(
        prog='memory_policy',
        description='Print the SROS2 policy of mira_memory for the nodes in one namespace.')
    parser.add_argument(
        '--namespace', default=DEFAULT_NAMESPACE,
        help='namespace of the nodes, as given to the launch files (default: %(default)s)')
    parser.add_argument(
        '--lifecycle', action='store_true',
        help='the memory node runs as the managed memory_lifecycle_node (bringup '
             'lifecycle:=true): add its lifecycle services')
    parser.add_argument(
        '--simulation', action='store_true',
        help="for simulation.launch.py: the simulation's perception may hear cognition's "
             'results (never in bringup: they carry recalled memory)')
    args = parser.parse_args(argv)
    try:
        text = policy_xml(args.namespace, args.lifecycle, args.simulation)
    except ValueError as error:
        print(f'memory_policy: {error}', file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
