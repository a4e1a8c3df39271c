#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A peer that dies, and one that is reset, in the middle of RDMA traffic
over the wire, A qrdma and B either kind:

    scripts/run-functional test_wire_peer_death.py PeerDeathQrdmaQrdma
    scripts/run-functional test_wire_peer_death.py PeerDeathQrdmaRxe
    scripts/run-functional test_wire_peer_death.py PeerDeathLink

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

PeerDeathLink does the same between two qrdma devices joined by the
same-host link as well as the wire (qrdma_test.Pair's link, B's QEMU the
link's client): the link is up before the steps and the stream takes
it; B's power cut takes the link down on A at once, and the stream's
retries go on the wire, where nobody answers; B's second QEMU brings
the link up again, which nvme-rdma's reconnect and fio then take, as
life 3's pingpong does; and no side counted a link error.
"""

import signal
import time

from qrdma_test import BOOT_TIMEOUT, PairTest, main
from qrdma_test.pair import ROLES

# A's end of the link sees B's QEMU go as its socket closes: at once.
LINK_DOWN_TIMEOUT = 10


class PeerDeathSteps:
    """The steps; a subclass with PairTest names the kinds."""

    NAME = 'wire-peer-death'
    SCRIPT = 'tests/vm/wire-peer-death.sh'
    # What the last stream_until did to B's VM.
    acted = None

    def test_01_setup(self):
        """each side's device up on the wire, GID index and address traded
        (and the link up on both sides, with the link)"""
        self.boot_and_trade()
        if self.LINK:
            took = self.wait_link()
            self.info(f'the link is up on both sides ({took:.1f} s after asking)')

    def link_took(self, before, what):
        """With the link: A's packets over it moved since before (its
        link_state then), both ways: what the steps since did took it."""
        if not self.LINK:
            return
        after = self.pair.link_state('a')
        moved = {way: after[f'link-pkts-{way}'] - before[f'link-pkts-{way}']
                 for way in ('sent', 'rcvd')}
        self.info(f'A: {what} over the link: {moved["sent"]} packets sent, '
                  f'{moved["rcvd"]} received')
        if not all(moved.values()):
            self.fail(f'{what} did not take the link: {self.link_summary("a")[0]}')

    def link_down_on_a(self, what):
        """With the link: A's link down, B's QEMU being gone."""
        if not self.LINK:
            return
        took = self.wait_link(False, ('a',), LINK_DOWN_TIMEOUT)
        self.info(f'A: link-up false {took:.1f} s after {what}')

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
        freed when the program exits (with the link: the stream took it, and
        A's link is down once B's QEMU is gone)"""
        self.need_setup()
        before = self.pair.link_state('a') if self.LINK else None
        self.stream_until('quit', self.cut_b)
        self.link_took(before, 'the stream')
        # nvme-rdma saw it too: it is reconnecting.
        self.check('a', 'ctrl_goes_down', timeout=90)

    def cut_b(self):
        """B's power cut, and with the link, A's link down at once."""
        self.pair.b.power_cut()
        self.link_down_on_a('B\'s QEMU quit')

    def test_05_nvme_reconnect(self):
        """B's VM started again serves the same target: A's nvme-rdma
        reconnects by itself, fio checks its blocks (with the link: B's new
        QEMU brings it up again, and the reconnect and fio take it)"""
        self.need_setup()
        # Whatever the last step did, B's first life ends here.
        self.pair.b.power_cut()
        if self.LINK:
            self.link_down_on_a('B\'s first life ended')
            ups = self.pair.device_prop('a', 'link-ups')
        start = time.monotonic()
        self.pair.launch('b')
        if self.LINK:
            # The QEMUs link up, whatever their guests do: before B's boots.
            self.wait_link()
            self.info(f'the link is up again {time.monotonic() - start:.1f} s after '
                      'B\'s VM was started again')
            if self.pair.device_prop('a', 'link-ups') != ups + 1:
                self.fail(f'A\'s link came up {self.pair.device_prop("a", "link-ups")} '
                          f'times, not {ups + 1}')
        self.pair.b.wait_booted(BOOT_TIMEOUT)
        self.device_up_again('b')
        before = self.pair.link_state('a') if self.LINK else None
        self.check('b', 'target_up', timeout=120)
        self.check('a', 'ctrl_comes_back', timeout=600)
        self.info(f'A: live again {time.monotonic() - start:.0f} s after B\'s VM '
                  'was started again (it boots meanwhile)')
        self.link_took(before, 'the reconnect and fio')

    def test_06_reset_peer(self):
        """B's VM reset (QMP system_reset) under a stream of SENDs: A's RC QP
        fails with RETRY_EXC_ERR in time, its resources freed"""
        self.need_setup()
        self.stream_until('system_reset', self.pair.b.reset)

    def test_07_reset_back(self):
        """B, rebooted by the reset, brings its device up again: ping and
        ibv_rc_pingpong -c with A (with the link: over it)"""
        self.need_setup()
        # Whatever the last step did, B's second life ends in a reset.
        if self.acted != 'system_reset':
            self.pair.b.reset()
        self.pair.b.wait_booted(BOOT_TIMEOUT)
        self.device_up_again('b')
        before = None
        if self.LINK:
            self.wait_link()
            before = self.pair.link_state('a')
        server = self.spawn('b', 'pingpong_server', timeout=90)
        self.check('b', 'pingpong_listens', timeout=60)
        self.check('a', 'pingpong_client', timeout=120)
        self.finish('b', server)
        self.link_took(before, 'the pingpong')

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


class PeerDeathLink(PeerDeathSteps, PairTest):
    """Both ends qrdma, joined by the same-host link as well as the wire."""
    NAME = 'link-peer-death'
    KINDS = ('qrdma', 'qrdma')
    LINK = True

    def test_11_link_counters(self):
        """no link error on either side, A's link up twice (once per QEMU
        of B's), and up at the end"""
        self.need_setup()
        problems = []
        for role in ROLES:
            line, state = self.link_summary(role)
            self.info(line)
            if state['link-errors']:
                problems.append(f'{role.upper()}: link-errors {state["link-errors"]}')
            if not state['link-up']:
                problems.append(f'{role.upper()}: the link is down')
        ups = self.pair.device_prop('a', 'link-ups')
        if ups != 2:
            problems.append(f'A: link-ups {ups}, where B had two QEMUs')
        if problems:
            self.fail('\n'.join(problems))


if __name__ == '__main__':
    main()
