#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Drive a running memory node from a plain script with MemoryClient (docs/client.md).

It starts no memory node: it talks to the one at <namespace>/memory (run
tools/node, or `ros2 launch mira_memory bringup.launch.py`, first, with the
same ROS_DOMAIN_ID). It makes sure the entity "Ada Lovelace" exists with
the alias "Ada", recalls her, lists what waits for review and, with
--backup-dir, backs the database up with a progress line per phase.
Exit 0 when every step got the answer it expects, 1 otherwise.
"""

import argparse
import pathlib
import sys
import time

from mira_memory.client import MemoryCallError, MemoryClient
import rclpy


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--namespace', default='/mira',
                        help='namespace of the memory node (default: %(default)s)')
    parser.add_argument('--backup-dir', type=pathlib.Path,
                        help='back the database up into this directory (absolute)')
    args = parser.parse_args(argv)

    rclpy.init()
    node = rclpy.create_node('client_example')
    memory = MemoryClient(node, namespace=args.namespace, timeout=10.0)
    try:
        return run(memory, args.backup_dir)
    except MemoryCallError as error:
        print(f'error: {error}', file=sys.stderr)
        return 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def run(memory, backup_dir):
    status = memory.status()
    print(f'memory node {memory.memory_node}: enabled={status.enabled}, '
          f'{status.entity_count} entities, {status.memory_count} memories')
    if not status.enabled:
        print('error: persistent memory is disabled on this node', file=sys.stderr)
        return 1

    # Entity administration is supervised: the admin services, never remember.
    found = memory.entity_find('Ada Lovelace')
    if found.entities:
        ada = found.entities[0]
    else:
        added = memory.entity_add('person', 'Ada Lovelace')
        if not added.success:
            print(f'error: {added.error_code}: {added.message}', file=sys.stderr)
            return 1
        ada = added.entity
    if 'Ada' not in ada.aliases:
        memory.alias_add(ada.id, 'Ada')
    print(f'entity {ada.id} {ada.canonical_name!r}')

    # What cognition's recall_memory tool gets: exact, bounded, read-only.
    # recalled.text is what a model reads; entities is the same, structured.
    recalled = memory.recall('Ada', include_entities=True)
    print(f'recall("Ada") -> {recalled.status} ({recalled.reason})')
    for entity in recalled.entities:
        print(f'  {entity.id} {entity.entity_type} {entity.canonical_name!r}: '
              f'{len(entity.memories)} active memories')
    if recalled.status != 'found':
        return 1

    pending = memory.pending()
    print(f'{len(pending.items)} proposal(s) waiting for review')

    if backup_dir is not None:
        target = backup_dir.resolve() / f'memory-{time.strftime("%Y%m%d-%H%M%S")}.sqlite3'

        def progress(feedback):
            print(f'  backup: {feedback.phase} {feedback.items_done}/{feedback.items_total}')

        job = memory.backup(str(target), on_progress=progress)
        print(f'backup {job.status}: {job.result.message}')
        if not job.succeeded:
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
