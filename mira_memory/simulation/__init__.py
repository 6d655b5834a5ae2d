# SPDX-License-Identifier: Apache-2.0
"""The simulation and demo: scripted operator, perception and attention nodes, the demo."""
