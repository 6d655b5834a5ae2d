# SPDX-License-Identifier: Apache-2.0
"""
Copies and checks of a whole memory database, each a long job over every row.

- copies.py: online backup, JSON Lines export, and import;
- export_layout.py: what an export holds (format name, record types, fields);
- export_format.py: the export's line shapes, which import checks first;
- verify.py: `memory verify`, every stored statement judged again, writing nothing;
- verify_process.py: the node's verify in a child process.
"""
