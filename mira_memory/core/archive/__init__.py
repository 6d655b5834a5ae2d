# SPDX-License-Identifier: Apache-2.0
"""
Copies and checks of a whole memory database, each a long job over every row.

- copies.py: online backup and JSON Lines export;
- output_files.py: where a copy may be written, and its temporary file;
- importing.py: import, a new database built from an export;
- export_layout.py: what an export holds (format name, record types, fields);
- export_format.py: the export's line shapes, which import checks first;
- verify.py: `memory verify`, every stored statement judged again, writing nothing;
- verify_process.py: the node's verify in a child process.
"""
