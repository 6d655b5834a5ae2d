# SPDX-License-Identifier: Apache-2.0
"""
What `memory verify` costs on the 1,000,000-memory store: time and peak memory.

The bench store (bench/generate.py) is written row by row, not through
remember, so its memories have no receipts. This copies the cached store to
a private working file and gives every operator_statement memory the
receipt remember would have written for an operator who said exactly its
summary ("<subject> <verb> <value>."): the proposal's fields from the row,
the ids from its source label, the entity ids from its links, the running
rules. Then it runs, each in a process of its own, measured by its own
peak resident set size (VmHWM of /proc/self/status as it exits: that of
the program itself, which a fork's inherited pages or wait4's ru_maxrss
would overstate):

- the offline `memory_verify --database WORK` (what the console's verify
  runs inside the node, on the same read path);
- a backup of the same file (core.archive.copies.backup), the figure verify must
  not exceed.

    . .work/jazzy/env.sh
    python bench/verify_cost.py             # 1M memories; --memories 10000 for a quick run
"""

import argparse
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import generate
from mira_memory.core.admission import language

BENCH_DIR = pathlib.Path(__file__).resolve().parent
RECEIPT_COLUMNS = (
    'memory_id, utterance, episode_id, turn_id, kind, subject, predicate, value,'
    ' related_entity, related_role, evidence, robot_profile, rules_version, rules_digest,'
    ' rules_ran, subject_entity_id, related_entity_id, created_at')


def add_receipts(path):
    """Write the receipt of every operator_statement memory; return how many."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute('PRAGMA foreign_keys = ON')
        related = {}
        for memory_id, entity_id, role in conn.execute(
                'SELECT l.memory_id, l.entity_id, l.role FROM memory_links AS l'
                ' JOIN memories AS m ON m.id = l.memory_id'
                " WHERE m.kind = 'relationship' AND l.role NOT IN ('subject', 'mentioned')"):
            related[memory_id] = (entity_id, role)
        rows = conn.execute(
            'SELECT m.id, m.kind, m.summary, m.predicate, m.value, m.source_label,'
            ' m.created_at, l.entity_id, e.canonical_name'
            ' FROM memories AS m JOIN memory_links AS l'
            "  ON l.memory_id = m.id AND l.role = 'subject'"
            ' JOIN entities AS e ON e.id = l.entity_id'
            " WHERE m.source_kind = 'operator_statement' ORDER BY m.id").fetchall()
        version, digest = language.RULES_VERSION, language.rules_digest()
        receipts = []
        for memory_id, kind, summary, predicate, value, label, created, subject_id, name in rows:
            _, episode, _, turn = label.split(' ')
            related_id, role = related.get(memory_id, (None, None))
            receipts.append((
                memory_id, summary + '.', episode, turn, kind, name, predicate, value,
                value if related_id else None, role, summary, generate.ROBOT_PROFILE,
                version, digest, '1-19', subject_id, related_id, created))
        conn.execute('BEGIN')
        conn.executemany('INSERT INTO receipts (%s) VALUES (%s)' % (
            RECEIPT_COLUMNS, ', '.join('?' * 18)), receipts)
        conn.execute('COMMIT')
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall()
        return len(receipts)
    finally:
        conn.close()


# Prepended to each measured program: report VmHWM on exit (sys.exit included).
PEAK = ('import atexit, sys\n'
        'def _peak():\n'
        '    for line in open("/proc/self/status"):\n'
        '        if line.startswith("VmHWM:"):\n'
        '            sys.stderr.write("PEAK_KB %s\\n" % line.split()[1])\n'
        'atexit.register(_peak)\n')


def run_measured(code, args, stdout):
    """Run python -c PEAK+code args; return (exit code, seconds, peak RSS MB, stderr)."""
    started = time.monotonic()
    process = subprocess.run([sys.executable, '-c', PEAK + code, *args], stdout=stdout,
                             stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    peaks = [int(line.split()[1]) for line in process.stderr.splitlines()
             if line.startswith('PEAK_KB ')]
    return process.returncode, seconds, (peaks[-1] / 1024.0 if peaks else None), process.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--memories', type=int, default=1_000_000)
    parser.add_argument('--entities', type=int, default=100_000)
    parser.add_argument('--seed', type=int, default=20260)
    parser.add_argument('--cache-dir', default=str(BENCH_DIR / 'cache'))
    args = parser.parse_args()
    cached, _ = generate.cached_store(args.cache_dir, args.memories, args.entities, args.seed)
    with tempfile.TemporaryDirectory(prefix='verify_cost_', dir=args.cache_dir) as directory:
        work = pathlib.Path(directory) / 'memory.sqlite3'
        shutil.copyfile(cached, work)
        started = time.monotonic()
        receipts = add_receipts(work)
        setup_s = time.monotonic() - started
        verify = ('from mira_memory.console.offline_tools import verify_main\n'
                  'sys.exit(verify_main())')
        report = pathlib.Path(directory) / 'verify.txt'
        with open(report, 'w') as out:
            code, verify_s, verify_mb, err = run_measured(
                verify, ['--database', str(work)], out)
        if code not in (0, 1):
            raise SystemExit(f'memory_verify failed ({code}): {err}')
        lines = report.read_text().splitlines()
        findings = {}
        for line in lines[:-1]:
            kind = ' '.join(line.split()[1:3]) if 'WOULD REJECT' in line else line.split()[1]
            key = line.split(' ', 1)[1].rsplit(' (', 1)[0] if 'WOULD' in line else kind
            findings[key] = findings.get(key, 0) + 1
        summary = lines[-1]
        backup = ('from mira_memory.core.archive import copies\n'
                  'copies.backup(sys.argv[1], sys.argv[2])')
        code, backup_s, backup_mb, err = run_measured(
            backup, [str(work), str(pathlib.Path(directory) / 'backup.sqlite3')],
            subprocess.DEVNULL)
        if code != 0:
            raise SystemExit(f'backup failed: {err}')
        print(json.dumps({
            'memories': args.memories, 'receipts': receipts,
            'store_mb': round(work.stat().st_size / 1e6, 1),
            'receipts_setup_s': round(setup_s, 1),
            'verify_s': round(verify_s, 1), 'verify_peak_rss_mb': verify_mb,
            'backup_s': round(backup_s, 1), 'backup_peak_rss_mb': backup_mb,
            'verify_summary': summary, 'findings': findings,
            'load_average': [round(load, 2) for load in os.getloadavg()],
        }, indent=1))


if __name__ == '__main__':
    main()
