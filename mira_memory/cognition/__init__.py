# SPDX-License-Identifier: Apache-2.0
"""
Cognition: episodes, tool schemas, the chat backend, the runner, the node, scenarios.

episodes, tools, chat and scenario import no ROS (test_core_boundary.py
keeps that true); runner and node are the ROS side.
"""
