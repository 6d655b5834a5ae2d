# SPDX-License-Identifier: Apache-2.0
"""The tools' strict parameters as cognition/tools.py wrote them by hand, before pydantic."""

# The tools' pydantic models derive these schemas now;
# test_cognition_core.py checks that the derived ones are exactly these.
RECALL_MEMORY = {
    'type': 'object',
    'properties': {
        'query': {
            'type': 'string',
            'description': (
                'One canonical name or alias of an entity, exact match only, '
                'at most 256 characters.'),
        },
    },
    'required': ['query'],
    'additionalProperties': False,
}

REMEMBER = {
    'type': 'object',
    'properties': {
        'kind': {
            'type': 'string',
            'enum': ['fact', 'preference', 'relationship'],
            'description': 'fact, preference or relationship.',
        },
        'subject': {
            'type': 'string',
            'description': (
                'Canonical name or alias of the existing entity the memory is about, '
                'copied exactly as the operator said it; it must occur in evidence and '
                'be what the clause is about (not a possessor: in "Ada\'s brother '
                'sings", Ada is not the subject). '
                'Use you, your, yours or yourself, as the operator said it, for the '
                'robot itself. I, me, my, mine and myself are not resolved to anyone.'),
        },
        'predicate': {
            'type': 'string',
            'description': (
                'A concise stable identifier for the property or relation, such as '
                'favorite_drink or works_with: a letter, then letters, digits or '
                'underscores. A negated statement needs a negated predicate: '
                '"Ada doesn\'t eat meat" is does_not_eat.'),
        },
        'value': {
            'type': 'string',
            'description': (
                'The value, copied from the current operator utterance; it must occur '
                'in evidence as a whole phrase: numbers whole, with any approximation '
                '("roughly 40"), and never what a contrast sets aside ("tea, not '
                'coffee" gives tea). For a relationship, the same text as '
                'related_entity.'),
        },
        'related_entity': {
            'type': ['string', 'null'],
            'description': (
                "Relationship only: the related existing entity's canonical name or "
                'alias, copied from the current operator utterance. null for a fact or '
                'a preference.'),
        },
        'related_role': {
            'type': ['string', 'null'],
            'description': (
                'Relationship only: a simple role identifier for the related entity, '
                'such as friend or manager (not subject, which the runtime assigns). '
                'null for a fact or a preference.'),
        },
        'evidence': {
            'type': 'string',
            'description': (
                'The shortest complete clause of the current operator utterance that '
                'states this, copied verbatim, negation included. Never propose a '
                'question, plan, guess, report of what others say, joke, or '
                'something true only now (today, this week).'),
        },
    },
    'required': [
        'kind', 'subject', 'predicate', 'value', 'related_entity', 'related_role',
        'evidence'],
    'additionalProperties': False,
}
