# SPDX-License-Identifier: GPL-2.0-or-later
"""The harness of qrdma's host-driven VM tests, on QEMU's own Python
library (qemu.machine, qemu.qmp) as QEMU's tests/functional use it, with
TAP through pycotap.

A test boots the project's guest (QrdmaVM), or two joined by a wire
(Pair), or many on a hub (Fabric), drives each through the command channel to an agent in it (the
guest runs commands; it asks the host for nothing), and kills, starts
and resets them itself through QMP.  Run a test by hand through
scripts/run-functional, which gives it lib.sh's QEMU and guest image:

    scripts/run-functional test_wire_peer_death.py
    scripts/run-functional test_wire_peer_death.py PeerDeathQrdmaRxe
"""

from .agent import AgentError, AgentLost, Job, Result
from .fabric import Fabric
from .machine import BOOT_TIMEOUT, Migration, MigrationError, QrdmaVM
from .pair import Pair, Wire
from .testcase import PairTest, QrdmaTest, VMTest, main

__all__ = ['AgentError', 'AgentLost', 'BOOT_TIMEOUT', 'Fabric', 'Job', 'Migration',
           'MigrationError', 'Pair', 'PairTest', 'QrdmaTest', 'QrdmaVM', 'Result',
           'VMTest', 'Wire', 'main']
