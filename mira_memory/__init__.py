# SPDX-License-Identifier: Apache-2.0
"""mira_memory: durable, exact and operator-grounded long-term memory for Mira."""
