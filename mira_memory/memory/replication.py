# SPDX-License-Identifier: Apache-2.0
"""
The memory node's side of replication: parameters, start-up checks, health.

With replica_url set, MemoryServing (memory/node.py) asks prepare() for a
core.replication Supervisor before it opens the store: the URL is checked
and the replica written once (a probe file), so a bad replica fails start-up
with one line and the database is not touched, not even created. The node
then starts Litestream (plain node: at once; managed node: on activate,
and stops it on deactivate) and closes it before the store.
"""

import dataclasses

from mira_memory.core.replication import status, supervisor, target
from mira_memory.core.store import health
from mira_memory.ros import node_runner, parameters

PARAMETERS = (
    ('replica_url', '',
     'Replicate the database off the robot with Litestream: file:///DIRECTORY, '
     'sftp://USER@HOST[:PORT]/DIRECTORY or s3://BUCKET/PREFIX[?endpoint=URL&region=NAME] '
     '(credentials from the environment; docs/storage.md#replication-and-restore). '
     'Empty: no replication.'),
    ('replica_key_path', '',
     'sftp replica: absolute path of the private key (key authentication only).'),
    ('replica_host_key', '',
     "sftp replica: the server's public host key, 'TYPE BASE64' (pinned)."),
    ('replica_lag_warn_sec', status.DEFAULT_LAG_WARN_SEC,
     'Replication lag (seconds) past which /diagnostics says WARN.'),
)
_LEVEL_RANK = {health.LEVEL_OK: 0, health.LEVEL_WARN: 1, health.LEVEL_ERROR: 2}


def declare_parameters(node):
    """Declare the replication parameters (read-only)."""
    parameters.declare_read_only(node, PARAMETERS)


def prepare(node, settings):
    """
    Return a checked, not yet started Supervisor, or None without replica_url.

    Raises StartupError (one line) when the URL is malformed, Litestream is
    missing or the replica cannot be written; nothing is left running.
    """
    url = node.get_parameter('replica_url').value
    if not url:
        return None
    if not settings.enabled:
        raise node_runner.StartupError('replica_url is set but persistent memory is disabled')
    lag_warn = node.get_parameter('replica_lag_warn_sec').value
    if not 0.0 < lag_warn <= 3600.0:
        raise node_runner.StartupError('replica_lag_warn_sec must be above 0 and at most 3600')
    try:
        replica = target.parse(url, node.get_parameter('replica_key_path').value,
                               node.get_parameter('replica_host_key').value)
        replicator = supervisor.Supervisor(replica, settings.database_path, node.get_logger())
    except (target.ReplicaConfigError, supervisor.ReplicationError) as error:
        raise node_runner.StartupError(str(error)) from None
    try:
        replicator.check_replica()
    except supervisor.ReplicationError as error:
        replicator.close()
        raise node_runner.StartupError(str(error)) from None
    replicator.lag_warn_sec = lag_warn
    return replicator


def status_lines(replicator):
    """Return admin/status's replication lines ("key: value"), none without replication."""
    if replicator is None:
        return []
    level, message, values = replicator.status.report(replicator.lag_warn_sec)
    return [f'{key}: {value}' for key, value in values] + [f'health: {level}'
                                                           + (f' ({message})' if message else '')]


def with_health(report, replicator):
    """Return the /diagnostics report with the replication values and the worse level."""
    if replicator is None:
        return report
    level, message, values = replicator.status.report(replicator.lag_warn_sec)
    worse = _LEVEL_RANK[level] > _LEVEL_RANK.get(report.level, 0)
    return dataclasses.replace(
        report, values=report.values + values,
        level=level if worse else report.level,
        message=message if worse else report.message)
