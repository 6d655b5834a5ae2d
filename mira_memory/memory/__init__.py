# SPDX-License-Identifier: Apache-2.0
"""The memory node: sole owner of the SQLite store, serving recall, remember and admin."""
