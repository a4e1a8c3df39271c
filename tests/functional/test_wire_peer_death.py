#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A peer that dies, and one that is reset, in the middle of RDMA traffic
over the wire, A qrdma and B either kind:

    scripts/run-functional test_wire_peer_death.py PeerDeathQrdmaQrdma
    scripts/run-functional test_wire_peer_death.py PeerDeathQrdmaRxe

The host boots A and B (qrdma_test.Pair), runs the guest halves of
tests/vm/wire-peer-death.sh in them, and acts on B's VM itself, which
lives three times:

  1. it serves NVMe over RDMA (nvmet-rdma on a RAM disk) to A, and takes
     A's stream of SENDs (tests/vm/wire-faults.c rc-sink) until the host
     cuts its power (QMP quit);
  2. started again, a new QEMU, it serves NVMe again under the same name
     and address, and takes a stream again until the host resets it (QMP
     system_reset);
  3. after the reset, its device comes up again, and it serves an
     ibv_rc_pingpong to A.

A's checks: the stream's RC QP fails with IBV_WC_RETRY_EXC_ERR within the
time its timeout and retry_cnt give, and everything the stream had is
freed when the program exits; nvme-rdma reconnects to life 2 by itself
and fio checks its blocks; the reset fails a stream the same way; and
life 3 talks RDMA again.
"""

import signal
import time

from qrdma_test import BOOT_TIMEOUT, PairTest, main


class PeerDeathSteps:
    """The steps; a subclass with PairTest names the kinds."""

    NAME = 'wire-peer-death'
    SCRIPT = 'tests/vm/wire-peer-death.sh'
    # What the last stream_until did to B's VM.
    acted = None

    def test_01_setup(self):
        """each side's device up on the wire, GID index and address traded"""
        self.boot_and_trade()

    def test_02_ping(self):
        """ping across the wire both ways; each side's ARP entry has the
        other's MAC"""
        self.need_setup()
        self.check_both('t_ping', timeout=120)

    def test_03_nvme_connect(self):
        """nvme-rdma on A connects to B's target (reconnect delay 1 s) and fio
        checks its blocks (verify=crc32c)"""
        self.need_setup()
        self.check('b', 'target_up', timeout=120)
        self.check('a', 'nvme_connect', timeout=600)

    def stream_until(self, name, act):
        """A stream of SENDs from A to a sink in B, and once it is under
        way, act() on B's VM: the stream must fail as it should, and leave
        nothing behind once it has exited."""
        self.spawn('b', 'sink', name, timeout=3600)
        self.check('b', 'sink_listens', timeout=60)
        stream = self.spawn('a', 'stream', name, timeout=300)
        under_way = stream.wait(60, pattern=r'^# streaming')
        if not under_way.matched:
            stream.signal(signal.SIGKILL)
            self.fail(f'the stream did not get under way:\n{under_way.output}')
        act()
        type(self).acted = name
        self.info(f'B\'s VM: {name} while the stream ran')
        result = self.finish('a', stream)
        for line in result.output.splitlines():
            if line.startswith('# ') and ' SENDs of ' in line:
                self.info(f'A: {line[2:]}')
        self.check('a', 'stream_freed', timeout=60)

    def test_04_dead_peer(self):
        """B's VM killed (QMP quit) under a stream of SENDs: A's RC QP fails
        with RETRY_EXC_ERR within its timeout and retry_cnt, and all it had is
        freed when the program exits"""
        self.need_setup()
        self.stream_until('quit', self.pair.b.power_cut)
        # nvme-rdma saw it too: it is reconnecting.
        self.check('a', 'ctrl_goes_down', timeout=90)

    def test_05_nvme_reconnect(self):
        """B's VM started again serves the same target: A's nvme-rdma
        reconnects by itself, fio checks its blocks"""
        self.need_setup()
        # Whatever the last step did, B's first life ends here.
        self.pair.b.power_cut()
        start = time.monotonic()
        self.pair.launch('b').wait_booted(BOOT_TIMEOUT)
        self.device_up_again('b')
        self.check('b', 'target_up', timeout=120)
        self.check('a', 'ctrl_comes_back', timeout=600)
        self.info(f'A: live again {time.monotonic() - start:.0f} s after B\'s VM '
                  'was started again (it boots meanwhile)')

    def test_06_reset_peer(self):
        """B's VM reset (QMP system_reset) under a stream of SENDs: A's RC QP
        fails with RETRY_EXC_ERR in time, its resources freed"""
        self.need_setup()
        self.stream_until('system_reset', self.pair.b.reset)

    def test_07_reset_back(self):
        """B, rebooted by the reset, brings its device up again: ping and
        ibv_rc_pingpong -c with A"""
        self.need_setup()
        # Whatever the last step did, B's second life ends in a reset.
        if self.acted != 'system_reset':
            self.pair.b.reset()
        self.pair.b.wait_booted(BOOT_TIMEOUT)
        self.device_up_again('b')
        server = self.spawn('b', 'pingpong_server', timeout=90)
        self.check('b', 'pingpong_listens', timeout=60)
        self.check('a', 'pingpong_client', timeout=120)
        self.finish('b', server)

    def test_08_nvme_down(self):
        """A's controller, whose target went with the reset, is removed"""
        self.check('a', 't_nvme_down', timeout=180)

    def test_09_device_down(self):
        """A's device goes away (rmmod qrdma, rdma link delete rxe0)"""
        self.check('a', 't_device_down', timeout=120)

    def test_10_pair_dmesg_clean(self):
        """A's dmesg has no WARNING/BUG/Oops/lockdep report or qrdma error"""
        self.check('a', 't_pair_dmesg_clean', timeout=60)


class PeerDeathQrdmaQrdma(PeerDeathSteps, PairTest):
    """Both ends qrdma."""
    KINDS = ('qrdma', 'qrdma')


class PeerDeathQrdmaRxe(PeerDeathSteps, PairTest):
    """A qrdma, B rxe."""
    KINDS = ('qrdma', 'rxe')


if __name__ == '__main__':
    main()
