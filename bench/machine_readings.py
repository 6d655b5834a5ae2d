# SPDX-License-Identifier: Apache-2.0
"""
What the machine and its processes report: memory, CPU, file sizes, the disk's commit floor.

Read from /proc and the file system, never through ROS, so a reading
costs the measured node nothing.
"""

import importlib.metadata
import os
import pathlib
import platform
import sqlite3
import time

import rclpy
import report


def proc_status(pid):
    """Return VmRSS and VmHWM of a process in bytes."""
    values = {}
    with open('/proc/%d/status' % pid) as handle:
        for line in handle:
            name, _, rest = line.partition(':')
            if name in ('VmRSS', 'VmHWM'):
                values[name] = int(rest.split()[0]) * 1024
    return values


def process_cpu_seconds(pid):
    """Return the user + system CPU seconds a process has used (/proc/<pid>/stat)."""
    with open('/proc/%d/stat' % pid) as handle:
        # The command name (field 2) may hold spaces: split after its ')'.
        fields = handle.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def cpu_times():
    """Return (busy, total) jiffies of the whole machine from /proc/stat."""
    with open('/proc/stat') as handle:
        fields = [int(value) for value in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return total - idle, total


def busy_fraction(before, after):
    """Return the share of all CPUs that was busy between two cpu_times() readings."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total else 0.0


def file_size(path):
    """Return a file's size in bytes, 0 when it does not exist."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def fsync_file(path):
    """Flush a file's data to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def machine_info():
    """Describe the machine and software the run used."""
    model = 'unknown'
    with open('/proc/cpuinfo') as handle:
        for line in handle:
            if line.startswith('model name'):
                model = line.split(':', 1)[1].strip()
                break
    with open('/proc/meminfo') as handle:
        memory_total = int(handle.readline().split()[1]) * 1024
    rclpy_version = 'unknown'
    for distribution in ('ros-rclpy', 'ros-jazzy-rclpy', 'ros-kilted-rclpy'):
        try:
            rclpy_version = '%s %s' % (distribution, importlib.metadata.version(distribution))
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        'cpu_model': model,
        'cpu_count': os.cpu_count(),
        'cpus_usable': len(os.sched_getaffinity(0)),
        'memory_total_bytes': memory_total,
        'kernel': platform.release(),
        'python': platform.python_version(),
        'ros_distro': os.environ.get('MIRA_ROS_DISTRO') or os.environ.get('ROS_DISTRO') or '?',
        'rclpy_version': rclpy_version,
        'rmw_implementation': rclpy.get_rmw_implementation_identifier(),
        'sqlite_version': sqlite3.sqlite_version,
        'load_average_start': list(os.getloadavg()),
    }


def durable_commit_floor(directory, samples):
    """
    Time a one-row durable commit (WAL, synchronous=FULL) on the working copy's disk.

    This is what a created memory cannot avoid however fast the node is:
    the fsync that makes an acknowledged write survive power loss.
    """
    path = directory / 'commit_floor.sqlite3'
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute('PRAGMA journal_mode = WAL').fetchall()
        conn.execute('PRAGMA synchronous = FULL')
        conn.execute('CREATE TABLE t (x TEXT)')
        times = []
        for n in range(samples):
            started = time.perf_counter_ns()
            conn.execute('BEGIN IMMEDIATE')
            conn.execute('INSERT INTO t VALUES (?)', ('row %d' % n,))
            conn.execute('COMMIT')
            times.append(time.perf_counter_ns() - started)
    finally:
        conn.close()
    for suffix in ('', '-wal', '-shm'):
        pathlib.Path(str(path) + suffix).unlink(missing_ok=True)
    return report.latency_summary(times)
