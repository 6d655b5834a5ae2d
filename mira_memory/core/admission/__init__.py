# SPDX-License-Identifier: Apache-2.0
"""
Admission: what remember may write, decided from the current operator turn.

- rules.py: the admission rules in order (admit, judge), the single authority;
  proposal_rules.py decides rules 1-13 from the request and the turn,
  store_rules.py rules 14-18 from the store; results.py holds the reasons,
  their error sentences and AdmissionResult;
- operator_turn.py: the operator turn, read once and handed down (its ids, its label);
- verdict.py: is the evidence a plain assertion, by the operator, about the subject
  (text.py splits the utterance, sentence_language.py tells its languages,
  clauses.py finds its clauses, evidence_shape.py whether the evidence is
  one of them, scope.py the triggers whose scope reaches the evidence,
  anchors.py its subject (subject_anchor.py), value (value_anchor.py) and
  polarity (polarity.py), where each is said in name_spans.py; language.py
  loads the words);
- normalize.py: when two strings are the same (identity keys, display forms);
- language/*.toml: the words the grounding rules read, one file per language;
- turns.py: the operator turns the node heard; turn_proposals.py: one proposal per turn.
"""
