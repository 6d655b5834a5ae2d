# SPDX-License-Identifier: Apache-2.0
"""
The memory node's service and action names, and their types: the one table.

A name here is relative to the memory node (`recall_memory`,
`admin/status`, `admin/backup`); service_name() joins it to the node's name
(`/mira/memory` + `admin/status`). Every client of the memory node -
MemoryClient, and through it the console, cognition, the simulation, the
bench and the tests - takes its names from here, so a renamed service is
renamed in one place.
"""

from mira_memory.action import Backup, Export, Verify
from mira_memory.srv import AdminAccept, AdminAdd, AdminAliasAdd, AdminCheck, AdminDismiss
from mira_memory.srv import AdminEntityAdd, AdminEntityFind, AdminFind, AdminForget
from mira_memory.srv import AdminJobs, AdminList, AdminPending, AdminPendingShow
from mira_memory.srv import AdminRetire, AdminShow, AdminStatus, AdminSupersede
from mira_memory.srv import RecallMemory, Remember

DEFAULT_NAMESPACE = '/mira'
# The memory node's name inside its namespace (bringup.launch.py, simulation.launch.py).
MEMORY_NODE_NAME = 'memory'

RECALL_MEMORY = 'recall_memory'
REMEMBER = 'remember'
ADMIN_STATUS = 'admin/status'
ADMIN_ENTITY_ADD = 'admin/entity_add'
ADMIN_ENTITY_FIND = 'admin/entity_find'
ADMIN_ALIAS_ADD = 'admin/alias_add'
ADMIN_FIND = 'admin/find'
ADMIN_ADD = 'admin/add'
ADMIN_SHOW = 'admin/show'
ADMIN_LIST = 'admin/list'
ADMIN_RETIRE = 'admin/retire'
ADMIN_FORGET = 'admin/forget'
ADMIN_JOBS = 'admin/jobs'
ADMIN_PENDING = 'admin/pending'
ADMIN_PENDING_SHOW = 'admin/pending_show'
ADMIN_ACCEPT = 'admin/accept'
ADMIN_SUPERSEDE = 'admin/supersede'
ADMIN_DISMISS = 'admin/dismiss'
ADMIN_CHECK = 'admin/check'

SERVICE_TYPES = {
    RECALL_MEMORY: RecallMemory,
    REMEMBER: Remember,
    ADMIN_STATUS: AdminStatus,
    ADMIN_ENTITY_ADD: AdminEntityAdd,
    ADMIN_ENTITY_FIND: AdminEntityFind,
    ADMIN_ALIAS_ADD: AdminAliasAdd,
    ADMIN_FIND: AdminFind,
    ADMIN_ADD: AdminAdd,
    ADMIN_SHOW: AdminShow,
    ADMIN_LIST: AdminList,
    ADMIN_RETIRE: AdminRetire,
    ADMIN_FORGET: AdminForget,
    ADMIN_JOBS: AdminJobs,
    ADMIN_PENDING: AdminPending,
    ADMIN_PENDING_SHOW: AdminPendingShow,
    ADMIN_ACCEPT: AdminAccept,
    ADMIN_SUPERSEDE: AdminSupersede,
    ADMIN_DISMISS: AdminDismiss,
    ADMIN_CHECK: AdminCheck,
}

# The long jobs, by the console's word for them.
BACKUP = 'backup'
EXPORT = 'export'
VERIFY = 'verify'
ACTION_TYPES = {BACKUP: Backup, EXPORT: Export, VERIFY: Verify}


def memory_node_name(namespace=DEFAULT_NAMESPACE):
    """Return the memory node's name in namespace ('/mira' -> '/mira/memory')."""
    return f'{namespace.rstrip("/")}/{MEMORY_NODE_NAME}'


def service_name(memory_node, service):
    """
    Return the full name of one of the memory node's services.

    memory_node is absolute (/mira/memory) or relative to the calling
    node's namespace (memory); service is a key of SERVICE_TYPES.
    """
    if service not in SERVICE_TYPES:
        raise KeyError(f'the memory node has no service {service!r}')
    return f'{memory_node.rstrip("/")}/{service}'


def action_name(memory_node, job):
    """Return the full name of the memory node's action for job (backup, export, verify)."""
    if job not in ACTION_TYPES:
        raise KeyError(f'the memory node has no {job!r} action')
    return f'{memory_node.rstrip("/")}/admin/{job}'
