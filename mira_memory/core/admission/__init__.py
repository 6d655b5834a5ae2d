# SPDX-License-Identifier: Apache-2.0
"""
Admission: what remember may write, decided from the current operator turn.

- rules.py: the admission rules in order (admit, judge), the single authority;
- verdict.py: is the evidence a plain assertion, by the operator, about the subject
  (text.py splits the utterance, clauses.py finds its clauses, scope.py
  the triggers whose scope reaches the evidence, anchors.py its subject, value
  and polarity; language.py loads the words);
- normalize.py: when two strings are the same (identity keys, display forms);
- language/*.toml: the words the grounding rules read, one file per language;
- turns.py: the operator turns the node heard; turn_proposals.py: one proposal per turn.
"""
