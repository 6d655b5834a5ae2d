# SPDX-License-Identifier: Apache-2.0
"""
Fast DDS's own log stays out of the output of every process a test run starts.

Tests compare a program's output line by line, and so do the documented
transcripts. Fast DDS prints its own errors on standard output now and then
during discovery, under load or by chance (a shared-memory port another
process holds on Jazzy, a remote type it could not register on Kilted),
while the program's answer is right. A profile without a log consumer drops
them, so a program's output is what the program printed. (A FileConsumer
keeping them in a file was tried: a console then crashed with SIGSEGV at its
exit once in about 240 runs under load, which no run without it showed.)
"""

import os

from mira_memory.ros import launching

_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com">
  <log>
    <use_default>FALSE</use_default>
  </log>
</dds>
"""


def leave_out_of_the_output(directory):
    """
    Give every process started from now on a Fast DDS profile without a log consumer.

    Return the profile's path. A profile the environment already names (a
    developer's own) is left alone: then None.
    """
    if any(os.environ.get(name) for name in launching.DDS_PROFILE_VARIABLES):
        return None
    profile = directory / 'fastdds-without-log.xml'
    profile.write_text(_PROFILE, encoding='utf-8')
    # The variable this distro's Fast DDS reads (Jazzy: FASTRTPS_..., Kilted:
    # FASTDDS_...); naming both would load the profile twice on Kilted.
    os.environ.update(launching.dds_profile_environment(str(profile)))
    return profile
