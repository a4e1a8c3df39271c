#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Eight VMs on one hub (the relay, impairing frames): Open MPI all-to-all
over RC between all of them and a UD multicast group across them, every
byte checked:

    scripts/run-functional test_fabric.py FabricQrdma
    QRDMA_FABRIC_NODES=4 scripts/run-functional test_fabric.py FabricQrdma
    QRDMA_FABRIC_RELAY= scripts/run-functional test_fabric.py FabricRxe

(QRDMA_FABRIC_RELAY: the hub's impairments instead of the class's; make
bench runs both classes with none.)

The host boots the VMs (qrdma_test.Fabric, 1 vCPU and 512 MiB each) and
runs each step's guest side, shell functions of tests/vm/fabric.sh, in
them.  The figures of each node (its device's packet counters) land in
build/vm-out/RUN/RUN.tsv.
"""

import os
import re
import signal
import time

from qrdma_test import AgentError, Fabric, QrdmaTest, config, main
from qrdma_test.testcase import SUMMARY, _close_harness_log, _harness_log

# What a multicast receiver says once it is attached, its receives posted.
JOINED = r'^# joined'
# Small impairments at every rate, as on a busy hub: RC must recover from
# each, UD multicast may lose a little, never take a corrupted datagram.
HUB_FAULTS = '--drop 0.001 --dup 0.001 --reorder 0.002 --corrupt 0.001 --seed 24'


class FabricSteps:
    """The steps of one scenario on a fabric, in the order of their names,
    for a QrdmaTest that says KIND (of every node), NAME and RELAY (the
    hub's impairments).  The wire netdevs are at MTU 9000 (RoCE's 4096):
    at 1500, 64 KiB all-to-all bursts through the hub, whose every frame
    each TCG guest takes, overran the guests, and RC's retransmissions of
    whole windows took the hub down with them."""

    KIND = None
    NAME = None
    RELAY = ''
    MTU = 9000

    fabric = None
    ready = False

    @classmethod
    def setUpClass(cls):
        cls.nodes = int(os.environ.get('QRDMA_FABRIC_NODES', '8'))
        cls.run_name = f'{cls.NAME}-{cls.KIND}' + os.environ.get('QRDMA_RUN_SUFFIX', '')
        cls.figures = []
        cls.started = time.monotonic()
        cls.log_path, handler = _harness_log(cls.run_name)
        cls.addClassCleanup(_close_harness_log, handler)
        relay = os.environ.get('QRDMA_FABRIC_RELAY', cls.RELAY)
        cls.fabric = Fabric(cls.run_name, cls.KIND, cls.nodes, relay=relay,
                            mtu=cls.MTU)
        cls.addClassCleanup(cls._close)
        cls.ready = False

    @classmethod
    def _close(cls):
        cls.fabric.close()
        SUMMARY.append(f'{cls.run_name}: {cls.nodes} VMs, '
                       f'{time.monotonic() - cls.started:.0f} s; in {config.VM_LOGS}: '
                       f'{cls.run_name}-n*.log, {cls.log_path.name}')
        if cls.figures:
            rows = ['\t'.join(('fabric', 'node', 'figure', 'value'))]
            rows += ['\t'.join((cls.KIND, *figure)) for figure in cls.figures]
            (cls.fabric.out / f'{cls.run_name}.tsv').write_text('\n'.join(rows) + '\n',
                                                               encoding='utf-8')
        stats = cls.fabric.out / 'relay.txt'
        if stats.exists():
            SUMMARY.extend(f'relay: {line}' for line in
                           stats.read_text(encoding='utf-8').splitlines())

    @staticmethod
    def info_prefix(result):
        return f'{result.what.split(":")[0]}: '

    def need_setup(self):
        if not self.ready:
            self.fail('setup failed')

    def _diagnose(self, node, exc):
        vm = self.fabric.vms.get(node)
        self.fail(f'n{node}: {exc}\n{vm.diagnosis() if vm else "no VM"}')

    def spawn(self, node, func, *args, timeout, env=None):
        try:
            return self.fabric.spawn(node, func, *args, timeout=timeout, env=env)
        except AgentError as exc:
            return self._diagnose(node, exc)

    def finish(self, node, job):
        try:
            return job.finish()
        except AgentError as exc:
            return self._diagnose(node, exc)

    def on_nodes(self, nodes, func, *args, timeout, env=None):
        """func run in each of nodes at once: their Results, each of which
        must exit 0 (the figures they give kept)."""
        jobs = [(n, self.spawn(n, func, *args, timeout=timeout, env=env)) for n in nodes]
        results = [self.finish(n, job) for n, job in jobs]
        for node, result in zip(nodes, results):
            self.figures.extend((f'n{node}', *figure) for figure in result.figures())
        self.verdict(*results)
        return results

    def test_01_setup(self):
        """every VM booted on the hub, each node's device up on the wire
        (10.77.0.K) and its remote shell serving"""
        took = self.fabric.boot()
        self.info(f'{self.nodes} VMs booted in {took:.0f} s')
        nodes = list(self.fabric.node_list)
        results = self.on_nodes(nodes, 'fabric_device_info', timeout=300)
        for node, result in zip(nodes, results):
            why = self.fabric.record_device(node, result)
            if why:
                self.fail(why)
        dev = self.fabric.devices[1]
        self.info(f'{dev["DEV"]} on {dev["NETDEV"]} in every node')
        type(self).ready = True

    def test_02_ping(self):
        """every node pings every other across the hub"""
        self.need_setup()
        self.on_nodes(list(self.fabric.node_list), 't_fabric_ping', timeout=300)

    def test_03_mpi(self):
        """Open MPI 5 over UCX rc_verbs, a rank on every node (started from
        node 1 through wire-rsh): pairs, MPI_Alltoall and nonblocking sends
        to all, Bcast and Allreduce, 8 B to 64 KiB, every byte checked"""
        self.need_setup()
        self.on_nodes([1], 't_fabric_mpi', timeout=1200)

    def test_04_multicast(self):
        """UD multicast: every node but 1 joins group 239.77.0.1 through
        rdma_cm; node 1 joins and sends it 1000 numbered, checksummed
        datagrams; each receiver must take at least 90% of them, none
        corrupted or twice"""
        self.need_setup()
        receivers = list(self.fabric.node_list)[1:]
        jobs = {n: self.spawn(n, 'fabric_mcast_recv', timeout=300) for n in receivers}
        for node, job in jobs.items():
            joined = job.wait(120, pattern=JOINED)
            if not joined.matched:
                if not joined.done:
                    job.signal(signal.SIGKILL)
                self.fail(f'n{node} did not join:\n{joined.output}')
        sender = self.finish(1, self.spawn(1, 'fabric_mcast_send', timeout=300))
        results = [self.finish(n, job) for n, job in jobs.items()]
        self.verdict(sender, *results)
        got = {}
        for node, result in zip(receivers, results):
            match = re.search(r'^# received (\d+) of (\d+)', result.output, re.M)
            if match:
                got[node] = int(match[1])
                self.figures.append((f'n{node}', 'multicast datagrams received', match[1]))
        if got:
            self.info(f'each of {len(got)} receivers took {min(got.values())} to '
                      f'{max(got.values())} datagrams of the group')

    def test_05_counters(self):
        """each node's device counted RoCE packets both ways"""
        self.need_setup()
        self.on_nodes(list(self.fabric.node_list), 't_wire_counters', timeout=120)

    def test_06_dmesg_clean(self):
        """no WARNING, BUG or device error in any node's kernel log"""
        self.need_setup()
        self.on_nodes(list(self.fabric.node_list), 't_pair_dmesg_clean', timeout=120)


class FabricQrdma(FabricSteps, QrdmaTest):
    KIND = 'qrdma'
    NAME = 'fabric'
    RELAY = HUB_FAULTS


class FabricRxe(FabricSteps, QrdmaTest):
    KIND = 'rxe'
    NAME = 'fabric'
    RELAY = HUB_FAULTS


if __name__ == '__main__':
    main()
