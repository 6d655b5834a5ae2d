# SPDX-License-Identifier: Apache-2.0
"""
Read an SROS2 policy file the way SROS2 turns it into permissions, for the policy tests.

Independent of the generator's table (mira_memory/ros/security_policy.py):
the tests judge the XML it writes, as sros2's permissions.xsl reads it.
"""

import collections
import xml.etree.ElementTree as ElementTree

# (element, attribute) -> what the ROS graph calls it.
RULES = {('topics', 'publish'): 'publish', ('topics', 'subscribe'): 'subscribe',
         ('services', 'reply'): 'serve', ('services', 'request'): 'call'}
# An action rule, as permissions.xsl expands it: (rule, names under <action>/_action/).
ACTION_SERVICES = ('send_goal', 'cancel_goal', 'get_result')
ACTION_TOPICS = ('feedback', 'status')
ACTIONS = {'execute': (('serve', ACTION_SERVICES), ('publish', ACTION_TOPICS)),
           'call': (('call', ACTION_SERVICES), ('subscribe', ACTION_TOPICS))}


def resolve(name, namespace, node):
    """Expand a policy name (absolute, ~/private or relative) as sros2's permissions.xsl does."""
    if name.startswith('/'):
        return name
    if name.startswith('~'):
        return f'{namespace.rstrip("/")}/{node}{name[1:]}'
    return f'{namespace.rstrip("/")}/{name}'


def load(text):
    """
    Return {enclave path: {(profile ns, node): {rule: {absolute names}}}} of a policy.

    Asserts the structure policy.xsd prescribes, as far as xml.etree can:
    version 0.2.0, <enclaves> of <enclave path> each with <profiles> of
    <profile ns node>, whose children are <topics> or <services> groups
    with ALLOW rules of their own kind only; <actions> (execute, call) are
    expanded into their services and topics, as permissions.xsl does.
    """
    root = ElementTree.fromstring(text.encode())
    assert (root.tag, root.attrib) == ('policy', {'version': '0.2.0'})
    [enclaves] = list(root)
    assert enclaves.tag == 'enclaves' and len(enclaves)
    policy = {}
    for enclave in enclaves:
        assert enclave.tag == 'enclave' and set(enclave.attrib) == {'path'}
        assert enclave.get('path') not in policy, enclave.get('path')
        profiles = policy[enclave.get('path')] = {}
        [group_of_profiles] = list(enclave)
        assert group_of_profiles.tag == 'profiles' and len(group_of_profiles)
        for profile in group_of_profiles:
            assert profile.tag == 'profile' and set(profile.attrib) == {'ns', 'node'}
            key = (profile.get('ns'), profile.get('node'))
            assert key not in profiles and key[0].startswith('/') and key[1], key
            rules = profiles[key] = collections.defaultdict(set)
            for group in profile:
                assert group.attrib and set(group.attrib.values()) == {'ALLOW'}, group.attrib
                for item in group:
                    assert item.tag == group.tag[:-1] and item.text, item.tag
                    name = resolve(item.text, *key)
                    for attribute in group.attrib:
                        if group.tag == 'actions':
                            for rule, parts in ACTIONS[attribute]:
                                rules[rule] |= {f'{name}/_action/{part}' for part in parts}
                        else:
                            rules[RULES[group.tag, attribute]].add(name)
    return policy


def by_enclave(policy):
    """Return {enclave path: {rule: names}}: every profile of an enclave merged (one grant)."""
    merged = {}
    for path, profiles in policy.items():
        rules = merged[path] = collections.defaultdict(set)
        for profile_rules in profiles.values():
            for rule, names in profile_rules.items():
                rules[rule] |= names
    return merged
