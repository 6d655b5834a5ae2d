# SPDX-License-Identifier: Apache-2.0
"""The operator turns the review tests say, each with its proposal: (utterance, Proposal)."""

from mira_memory.core.admission.proposal_rules import Proposal

# Refused by the grounding (a hedge): kept for review.
HEDGED = ('Maybe Ada Lovelace prefers green tea.',
          Proposal('preference', 'Ada Lovelace', 'prefers_drink', 'green tea', None, None,
                   'Ada Lovelace prefers green tea'))
# Refused: subject_not_found (no entity Lou Arden yet).
UNKNOWN = ('Lou Arden is allergic to latex.',
           Proposal('fact', 'Lou Arden', 'allergic_to', 'latex', None, None,
                    'Lou Arden is allergic to latex'))
# Refused: related_entity_not_found (no entity Bram Tull).
UNKNOWN_RELATED = ('Ada Lovelace is the cousin of Bram Tull.',
                   Proposal('relationship', 'Ada Lovelace', 'cousin_of', 'Bram Tull',
                            'Bram Tull', 'cousin', 'Ada Lovelace is the cousin of Bram Tull'))
# Admitted, then GHENT conflicts with it.
LEUVEN = ('Zoe Quist lives in Leuven.',
          Proposal('fact', 'Zoe Quist', 'lives_in', 'Leuven', None, None,
                   'Zoe Quist lives in Leuven'))
GHENT = ('Zoe Quist lives in Ghent.',
         Proposal('fact', 'Zoe Quist', 'lives_in', 'Ghent', None, None,
                  'Zoe Quist lives in Ghent'))
