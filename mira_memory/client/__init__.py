# SPDX-License-Identifier: Apache-2.0
"""
The Python client of the memory node (docs/client.md).

    from mira_memory.client import MemoryClient
    memory = MemoryClient(node)            # the memory node at /mira/memory
    print(memory.recall('Ada Lovelace').text)

names holds every service and action name of the memory node.
"""

from mira_memory.client.jobs import Job, JobError, JobResult
from mira_memory.client.memory_client import MemoryCallError, MemoryClient, NoReply
from mira_memory.client.memory_client import ServiceUnavailable

__all__ = ['Job', 'JobError', 'JobResult', 'MemoryCallError', 'MemoryClient', 'NoReply',
           'ServiceUnavailable']
