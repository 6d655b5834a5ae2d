# SPDX-License-Identifier: Apache-2.0
"""
`memory_restore`: a replicated memory database back onto a new robot, checked.

    memory_restore --from file:///mnt/replica/mira --to ~/.ros/mira_memory/memory.sqlite3
    memory_restore --from sftp://mira@backup:22/srv/mira --key-path ~/.ssh/id_mira
        --host-key "ssh-ed25519 AAAA..." --to NEW [--timestamp 2026-12-05T22:00:00Z]
    AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... memory_restore
        --from 's3://mira-replicas/robot-7?endpoint=https://minio.lan:9000' --to NEW

Litestream restores the replica (core/replication/restore.py: a new path
only, integrity_check before the name appears), then memory verify judges
every remembered memory again (console/offline_tools.py); only when both
pass does it say the database is ready. Exit codes, as the console's: 0
ready, 1 refused or failed, 2 bad usage.
"""

import pathlib

from mira_memory.console.offline_tools import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from mira_memory.console.offline_tools import offline_entry_point, ToolParser, verify_file
from mira_memory.core.errors import StoreError
from mira_memory.core.replication import restore, target


@offline_entry_point
def restore_main(argv, stdout, stderr):
    """Entry point of `ros2 run mira_memory memory_restore`."""
    parser = ToolParser(
        prog='memory_restore', stderr=stderr,
        description='Restore a memory database from its replica (the replica_url of the '
                    'memory node that wrote it) onto a new path, then check it '
                    '(integrity_check and memory verify). Never overwrites.',
        epilog='exit codes: 0 restored and verified, 1 refused or failed (nothing is left '
               'at the new path, or a restored database that failed verify is named), '
               '2 bad usage')
    parser.add_argument('--from', required=True, metavar='REPLICA', dest='replica',
                        help='file:///DIRECTORY, sftp://USER@HOST[:PORT]/DIRECTORY or '
                             's3://BUCKET/PREFIX[?endpoint=URL&region=NAME] (s3 credentials '
                             'from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)')
    parser.add_argument('--to', required=True, metavar='NEW_PATH',
                        help='the database file to create (must not exist)')
    parser.add_argument('--timestamp', default='', metavar='T',
                        help='restore the state at this time (RFC 3339, e.g. '
                             '2026-12-05T22:00:00Z; default: the latest)')
    parser.add_argument('--key-path', default='', help='sftp: the private key')
    parser.add_argument('--host-key', default='', help="sftp: the server's 'TYPE BASE64' key")
    args = parser.parse_args(argv)
    try:
        replica = target.parse(args.replica, args.key_path, args.host_key)
    except target.ReplicaConfigError as error:
        print(f'usage error: {error}', file=stderr)
        return EXIT_USAGE
    to_path = pathlib.Path(args.to).expanduser().absolute()
    try:
        integrity = restore.restore(replica, to_path, args.timestamp)
    except restore.RestoreError as error:
        print(f'error: {error}', file=stderr)
        return EXIT_FAILED
    print(f'restored {replica.display} to {to_path}', file=stdout)
    print(f'integrity_check: {integrity}', file=stdout)
    try:
        verified = verify_file(to_path, [], False, stdout)
    except StoreError as error:
        print(f'error: memory verify refused {to_path}: {error}', file=stderr)
        return EXIT_FAILED
    if verified != EXIT_OK:
        print(f'error: memory verify found problems in {to_path}; it is not ready', file=stderr)
        return EXIT_FAILED
    print(f'ready: {to_path} (start the memory node with database_path:={to_path})',
          file=stdout)
    return EXIT_OK
