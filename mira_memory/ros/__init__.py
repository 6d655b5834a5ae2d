# SPDX-License-Identifier: Apache-2.0
"""The shared ROS layer: running nodes, parameters, clients, launch helpers, diagnostics."""
