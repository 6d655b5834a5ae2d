# SPDX-License-Identifier: Apache-2.0
"""
The ROS-free core of mira_memory: store, normalization, admission, recall.

Nothing in this package imports rclpy or the generated interfaces; the nodes
wrap it. test/unit/test_core_boundary.py keeps that true.
"""
