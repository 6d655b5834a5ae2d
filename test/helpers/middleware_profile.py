# SPDX-License-Identifier: Apache-2.0
"""
The Fast DDS profile of every process a test run starts.

It does three things.

Fast DDS's own log stays out of a program's output. Tests compare a
program's output line by line, and so do the documented transcripts. Fast
DDS prints its own errors on standard output now and then during discovery,
under load or by chance (a shared-memory port another process holds on
Jazzy, a remote type it could not register on Kilted), while the program's
answer is right. A profile without a log consumer drops them. (A
FileConsumer keeping them in a file was tried: a console then crashed with
SIGSEGV at its exit once in about 240 runs under load, which no run without
it showed.)

On Jazzy (Fast DDS 2) a participant announces itself every half second
instead of every 3 s (Fast DDS's default). Measured on both distros with a
console calling a running node: about one new process in five misses the
first exchange of discovery and finds the node only at the node's next
periodic announcement, up to 3 s later (1.8 s to 3.2 s seen). A test run
starts thousands of processes, most of them seconds apart: at 3 s those
waits made half of the console.md transcript's time (114 s, 56 s at half a
second), and on a loaded machine a second miss pushed a console past its
5 s deadline ("no memory node answered"), a failure of the run and not of
the program.

On Kilted (Fast DDS 3) participants keep Fast DDS's default. There each
periodic announcement takes the participant's discovery (PDP) mutex
(PDP::set_next_announcement_interval), and that timer is one side of a
deadlock of Fast DDS 3.2 (eProsima/Fast-DDS#6502): every native dump of a
participant that stopped hearing peers in these runs, a test process's
twice, had the event thread there, waiting for the mutex that a receive
thread removing a remote writer held while it waited for the event thread.
Six announcements where Fast DDS makes one is six times the exposure; the
Kilted run pays the 1-3 s misses instead. docs/operations.md says how a
robot chooses the period, and why Kilted keeps the default.

On Kilted every participant also sends no type information
(fastdds.type_propagation: disabled), so no participant asks another for a
type through Fast DDS's TypeLookup service. A process that asked could
crash at its exit: Fast DDS 3.2 destroys the TypeLookup histories before
it stops the thread that answers replies, and a reply that thread was still
handling then sent its next request through a writer already gone (the
core file of a console that died of SIGSEGV after its answer was printed,
docs/operations.md). Without type information endpoints
match by type name, which is what ROS 2 names a type by anyway. Fast DDS 2
(Jazzy) has no such service and no such property.
"""

import os

from mira_memory.ros import launching

# The default participant profile: rmw_fastrtps reads it before applying
# ROS_AUTOMATIC_DISCOVERY_RANGE, which leaves the announcement period alone.
ANNOUNCEMENT_PERIOD_NANOSEC = 500_000_000
_ANNOUNCEMENT = f"""
      <rtps>
        <builtin>
          <discovery_config>
            <leaseAnnouncement>
              <sec>0</sec>
              <nanosec>{ANNOUNCEMENT_PERIOD_NANOSEC}</nanosec>
            </leaseAnnouncement>
          </discovery_config>
        </builtin>
      </rtps>
    """
# Read by Fast DDS 3 only (Kilted): no TypeInformation in discovery, so no
# TypeLookup requests and no replies for its teardown to race with.
_NO_TYPE_PROPAGATION = """
      <rtps>
        <propertiesPolicy>
          <properties>
            <property>
              <name>fastdds.type_propagation</name>
              <value>disabled</value>
            </property>
          </properties>
        </propertiesPolicy>
      </rtps>
    """
_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <participant profile_name="mira_memory_tests" is_default_profile="true">{rtps}\
</participant>
  </profiles>
  <log>
    <use_default>FALSE</use_default>
  </log>
</dds>
"""


def profile_text(distro):
    """Return the tests' Fast DDS profile for distro (its participant settings: module doc)."""
    fast_dds_2 = distro in launching.FAST_DDS_2_DISTROS
    return _PROFILE.format(rtps=_ANNOUNCEMENT if fast_dds_2 else _NO_TYPE_PROPAGATION)


def use_for_every_process(directory):
    """
    Name the tests' Fast DDS profile for every process started from now on; return its path.

    A profile the environment already names (a developer's own) is left
    alone: then None.
    """
    if any(os.environ.get(name) for name in launching.DDS_PROFILE_VARIABLES):
        return None
    profile = directory / 'fastdds-tests.xml'
    profile.write_text(profile_text(os.environ.get('ROS_DISTRO', '')), encoding='utf-8')
    # The variable this distro's Fast DDS reads (Jazzy: FASTRTPS_..., Kilted:
    # FASTDDS_...); naming both would load the profile twice on Kilted.
    os.environ.update(launching.dds_profile_environment(str(profile)))
    return profile
