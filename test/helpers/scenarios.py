# SPDX-License-Identifier: Apache-2.0
"""Scenario files (cognition/scenario.py's TOML) that several system tests run."""

# Ada Lovelace seeded; one episode, one turn: a recall, then a remember the turn grounds.
ADA_PREFERS_GREEN_TEA = """
[[seed.entities]]
type = "person"
name = "Ada Lovelace"
aliases = []

[[episodes]]
name = "e1"

[[episodes.turns]]
id = "t1"
text = "Ada Lovelace prefers green tea."
[[episodes.turns.calls]]
tool = "recall_memory"
arguments = '{"query": "Ada Lovelace"}'
[[episodes.turns.calls]]
tool = "remember"
arguments = '''{"kind": "preference", "subject": "Ada Lovelace", "predicate": "prefers_drink",
  "value": "green tea", "related_entity": null, "related_role": null,
  "evidence": "Ada Lovelace prefers green tea"}'''
"""
