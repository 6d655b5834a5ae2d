# SPDX-License-Identifier: Apache-2.0
"""The suite's shared helpers: harnesses, case tables and helper processes."""
