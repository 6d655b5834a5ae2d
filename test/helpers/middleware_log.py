# SPDX-License-Identifier: Apache-2.0
"""
Fast DDS's own log, for every process a test run starts, goes to a file of the run.

Tests compare a program's output line by line, and so do the documented
transcripts. Fast DDS prints its own errors on standard output now and then
during discovery, under load or by chance (a shared-memory port another
process holds on Jazzy, a remote type it could not register on Kilted),
while the program's answer is right. Routed to a file, those lines are
still there to read after a failure, and a program's output is what the
program printed.
"""

import os
from xml.sax.saxutils import escape

from mira_memory.ros import launching

LOG_NAME = 'fastdds.log'

_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com">
  <log>
    <use_default>FALSE</use_default>
    <consumer>
      <class>FileConsumer</class>
      <property>
        <name>filename</name>
        <value>{log}</value>
      </property>
      <property>
        <name>append</name>
        <value>TRUE</value>
      </property>
    </consumer>
  </log>
</dds>
"""


def route_to(directory):
    """
    Send Fast DDS's log of every process started from now on to directory/fastdds.log.

    Return that path. A profile the environment already names (a developer's
    own) is left alone: then None.
    """
    if any(os.environ.get(name) for name in launching.DDS_PROFILE_VARIABLES):
        return None
    log = directory / LOG_NAME
    profile = directory / 'fastdds-log-to-file.xml'
    profile.write_text(_PROFILE.format(log=escape(str(log))), encoding='utf-8')
    # The variable this distro's Fast DDS reads (Jazzy: FASTRTPS_..., Kilted:
    # FASTDDS_...); naming both would load the profile twice on Kilted.
    os.environ.update(launching.dds_profile_environment(str(profile)))
    return log
