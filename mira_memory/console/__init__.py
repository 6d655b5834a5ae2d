# SPDX-License-Identifier: Apache-2.0
"""The operator's tools: the memory console, operator_chat and the offline tools."""
