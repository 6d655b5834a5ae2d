# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The one main loop every long-running node of the package uses.

rclpy.init, build the node, spin until SIGINT/SIGTERM (rclpy's handlers end
the spin after the callback in flight), then destroy the node and shut down.
A node that cannot start raises StartupError: one clear log line, exit 1.
"""

import signal

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.impl.implementation_singleton import rclpy_implementation


class StartupError(RuntimeError):
    """The node cannot serve (bad parameters, unusable database, bad scenario)."""


def run(node_class, logger_name, args=None):
    """Spin node_class() until SIGINT/SIGTERM; return the process exit code."""
    rclpy.init(args=args)
    node = None
    try:
        node = node_class()
        rclpy.spin(node)
    except StartupError as error:
        rclpy.logging.get_logger(logger_name).error(str(error))
        return 1
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except rclpy_implementation.RCLError:
        # A SIGINT/SIGTERM that shuts the context down while the executor is
        # between waits surfaces as "failed to initialize wait set: the given
        # context is not valid" (seen on Jazzy in CI: exit 1 on SIGTERM).
        # After shutdown that is the ordinary end of the spin; while the
        # context is still ok it is a real failure.
        if rclpy.ok():
            raise
    finally:
        # A second Ctrl-C, or launch forwarding SIGINT to a process that already
        # got it from the terminal, must not interrupt the cleanup below (the
        # memory node closes its store there).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
