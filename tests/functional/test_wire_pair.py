#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""RDMA between two VMs over RoCEv2 on a wire, each end qrdma or rxe: the
verbs examples with their buffers checked, perftest (connected over TCP
and over rdma_cm), the rdma_cm examples, UD and RNR, NVMe over RDMA, and
the same through the impairing relay:

    scripts/run-functional test_wire_pair.py WireQrdmaRxe
    QRDMA_WIRE_TESTS=rc_pingpong,rping scripts/run-functional test_wire_pair.py WireQrdmaRxe

The host boots A and B (qrdma_test.Pair) and runs each test's guest
halves, shell functions of tests/vm/wire-pair.sh, in them: the server's
in A, and once A's half says its server listens, the client's in B.  A
test passes only if both halves do.  The figures of each pairing
(perftest's bandwidth and latency, NVMe's write rate, the packet
counters) land in build/vm-out/RUN/RUN.tsv and .txt.

LinkQrdmaQrdma runs the same tests between two qrdma devices joined by
the same-host link as well as the wire (qrdma_test.Pair's link): the
link must be up on both sides before the tests, and after them each
side's device must have sent and received over it, with no link error,
and have sent and received next to nothing on the wire:

    scripts/run-functional test_wire_pair.py LinkQrdmaQrdma

LinkOneCopyQrdmaQrdma runs the tests that move large data by SEND,
WRITE and READ, checked, over the link in its one-copy mode (each
guest's RAM a shared memfd, link-share-ram=on): the same checks, and at
the end each side's peer must have mapped its RAM (link-one-copy) and
copied payloads straight from there (link-pkts-one-copy):

    scripts/run-functional test_wire_pair.py LinkOneCopyQrdmaQrdma

A class's TESTS are the tests between the setup and the final checks;
QRDMA_WIRE_TESTS (comma-separated) runs those instead, and QRDMA_PP_ITERS,
QRDMA_BW_ITERS, QRDMA_LAT_ITERS and QRDMA_FIO_SIZE set the iterations of
the pingpongs and perftests and what nvme_fio writes and reads back.
"""

import os
import unittest

from qrdma_test import PairTest, main
from qrdma_test.pair import ROLES

ALL_TESTS = (
    'rc_pingpong', 'uc_pingpong', 'ud_pingpong', 'srq_pingpong', 'rc_pingpong_ipv6',
    'rc_pingpong_mtu4096',
    'send_bw', 'write_bw', 'read_bw', 'atomic_bw', 'send_lat', 'write_lat', 'read_lat',
    'send_bw_cm', 'write_bw_cm', 'read_bw_cm', 'atomic_bw_cm',
    'send_lat_cm', 'write_lat_cm', 'read_lat_cm',
    'rping', 'rping_vlan', 'ud_vlan', 'ucmatose', 'udaddy', 'ud_datagrams',
    'rnr_forever', 'rnr_finite', 'rmw', 'nvme', 'nvme_fio',
)

# Over the link, the share of a side's RoCE packets that may still take
# the wire: those sent to a GID before the peer announced it (a VLAN's,
# made a moment before).
LINK_WIRE_SHARE = 0.01

DESCRIPTIONS = {
    'setup': 'each side\'s device up on the wire (10.77.0.1 and 10.77.0.2), '
             'GID index and address traded',
    'ping': 'ping across the wire both ways; each side\'s ARP entry has the other\'s MAC',
    'rc_pingpong_ipv6': 'ibv_rc_pingpong -c on each side\'s IPv6 link-local RoCE v2 GID: '
                        'RoCEv2 over IPv6',
    'rc_pingpong_mtu4096': 'ibv_rc_pingpong -c -m 4096 with both netdevs at MTU 9000: the '
                           'port\'s active MTU follows (qrdma-qrdma only)',
    'rping': 'rping -V (data checked), server on A, client on B',
    'rping_vlan': 'rping -V over VLAN 100 on each side\'s RoCE netdev: the CM\'s MADs carry '
                  'the VLAN, and the receiver\'s completion must say so',
    'ud_vlan': 'UD datagrams from B to A over VLAN 100, each of A\'s completions naming that '
               'VLAN (ibv_wc_read_cvlan; a qrdma A only)',
    'ucmatose': 'ucmatose: rdma_cm RC connections, sends both ways',
    'udaddy': 'udaddy: rdma_cm UD, sends both ways',
    'ud_datagrams': 'UD: 2000 numbered, checksummed datagrams from B to A; some may be lost, '
                    'none may arrive corrupted or twice',
    'rnr_forever': 'RNR: A posts its receive 500 ms late; B\'s SEND with rnr_retry 7 waits '
                   'through RNR NAKs and succeeds, the bytes checked',
    'rnr_finite': 'RNR: A posts no receive; B\'s SEND with rnr_retry 3 fails with '
                  'RNR_RETRY_EXC_ERR after its retries',
    'rmw': 'IBA 1.5: 200 ATOMIC_WRITEs from B to A\'s memory, each followed by a FLUSH '
           'between the same kinds, every one completed, the last value found there',
    'nvme': 'NVMe over RDMA: nvmet-rdma on A serving a RAM disk, nvme-rdma on B: ext4 '
            'written, reconnected, checksums compared',
    'nvme_fio': 'NVMe over RDMA: fio on B writes A\'s namespace with verify=crc32c and reads '
                'every block back checked',
    'wire_counters': 'each side\'s device counted RoCE packets sent and received (rdma '
                     'statistic); qrdma dropped none for its headers or ICRC',
    'link_up': 'the same-host link is up on both sides (QOM link-up)',
    'link_counters': 'the tests\' RDMA took the link: each side sent and received over it '
                     '(link-pkts-sent, link-pkts-rcvd), still up, no link error, and at most '
                     f'{LINK_WIRE_SHARE:.0%} of its RoCE packets on the wire',
    'link_one_copy': 'the link\'s one-copy mode carried large payloads both ways: each '
                     'side\'s peer has its RAM mapped (link-one-copy) and copied packets '
                     'straight from it (link-pkts-one-copy)',
    'faults_met': 'behind the impairing relay: the transports met its faults (duplicates, '
                  'out-of-sequence requests, NAKs, retransmits or ICRC drops counted)',
    'device_down': 'each side\'s device goes away (rmmod qrdma, rdma link delete rxe0)',
    'pair_dmesg_clean': 'dmesg on both sides has no WARNING/BUG/Oops/lockdep report or '
                        'qrdma error',
}

# Steps that run both halves at once, each on its own; the others are a
# server in A and its client in B, but for NVMe's.
BOTH = ('ping', 'wire_counters', 'faults_met', 'device_down', 'pair_dmesg_clean')
NVME = ('nvme', 'nvme_fio')
# Steps that run even after the fuse blew, and do not count towards it.
ALWAYS = ('setup', 'link_up', 'ping', 'wire_counters', 'link_counters', 'link_one_copy',
          'device_down', 'pair_dmesg_clean')
# Each test's TCP or rdma_cm port: this and its step's number.
PORT_BASE = 18000
# What A's half may take to say its server listens (an IPv6 neighbour
# found first, 60 s at most; the listener, 20 s) and what each half may
# take in all (its programs are bounded by 60 s each).
SERVING_TIMEOUT = 150
HALF_TIMEOUT = 300
# B's half of an NVMe test: fio's 600 s, the connects and the checks.
NVME_TIMEOUT = 900
# What a class's SETTINGS may set, the guest halves' defaults otherwise.
SETTINGS = ('PP_ITERS', 'BW_ITERS', 'LAT_ITERS', 'FIO_SIZE')


def describe(name):
    """What the test of that name does (the first comment under its TAP
    line)."""
    if name in DESCRIPTIONS:
        return DESCRIPTIONS[name]
    if name.endswith('_pingpong'):
        return f'ibv_{name} -c (buffers checked), server on A, client on B'
    if name.endswith('_cm'):
        return f'ib_{name[:-3]} -R (rdma_cm), server on A, client on B'
    return f'ib_{name} (QPs traded over TCP), server on A, client on B'


class WireSteps:
    """The steps of a pairing: setup and ping, TESTS, then the final
    checks.  A subclass with PairTest names the kinds; RELAY for a run
    behind the relay, which adds faults_met; SETTINGS, variables of the
    guest halves (PP_ITERS, BW_ITERS, LAT_ITERS, FIO_SIZE), each of which
    QRDMA_NAME in the environment overrides; LINK for a pair joined by the
    same-host link too, which adds link_up and link_counters, and
    SHARE_RAM for the link's one-copy mode, which adds link_one_copy."""

    NAME = 'wire'
    SCRIPT = 'tests/vm/wire-pair.sh'
    TESTS = ALL_TESTS
    SETTINGS = {}
    # After this many failures in a row (QRDMA_FUSE, 0 for never), no more
    # tests run but ALWAYS's, the others failing unrun: a wire that carries
    # no RDMA would have each wait out its timeouts, and the run the whole
    # time meson gives it.
    FUSE = int(os.environ.get('QRDMA_FUSE', '3'))
    failed_in_a_row = 0
    port = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        wanted = os.environ.get('QRDMA_WIRE_TESTS')
        tests = list(cls.TESTS) if wanted is None else [t for t in wanted.split(',') if t]
        unknown = [t for t in tests if t not in ALL_TESTS]
        if unknown:
            raise ValueError(f'no such wire test: {", ".join(unknown)}')
        steps = ['setup', *(['link_up'] if cls.LINK else []), 'ping', *tests]
        # The counters move only if some RDMA test ran, and the relay's
        # faults are met only then.
        if tests:
            steps.append('wire_counters')
            if cls.LINK:
                steps.append('link_counters')
            if cls.SHARE_RAM:
                steps.append('link_one_copy')
            if cls.RELAY:
                steps.append('faults_met')
        steps += ['device_down', 'pair_dmesg_clean']
        for number, name in enumerate(steps, 1):
            setattr(cls, f'test_{number:02d}_{name}', cls._step(name, number))

    @staticmethod
    def _step(name, number):
        def step(self):
            self.run_step(name, PORT_BASE + number)
        step.__doc__ = describe(name)
        return step

    def guest_env(self):
        env = {}
        for key in SETTINGS:
            value = os.environ.get(f'QRDMA_{key}', self.SETTINGS.get(key))
            if value is not None:
                env[key] = str(value)
        env['PAIR_TEST'] = self.step_name
        if self.port:
            env['PAIR_PORT'] = str(self.port)
        return env

    def run_step(self, name, port):
        """The step, counted towards the fuse."""
        self.port = port
        cls = type(self)
        if name not in ALWAYS and 0 < self.FUSE <= cls.failed_in_a_row:
            self.fail(f'not run: {self.FUSE} tests in a row had failed before it '
                      '(QRDMA_FUSE=0 runs every test)')
        try:
            if name == 'setup':
                self.boot_and_trade()
            elif name == 'link_up':
                self.need_setup()
                self.link_up()
            elif name == 'link_counters':
                self.need_setup()
                self.link_counters()
            elif name == 'link_one_copy':
                self.need_setup()
                self.link_one_copy()
            elif name in BOTH:
                if name not in ('device_down', 'pair_dmesg_clean'):
                    self.need_setup()
                self.check_both(f't_{name}', timeout=HALF_TIMEOUT)
            elif name in NVME:
                self.need_setup()
                self.nvme(name)
            else:
                self.need_setup()
                self.server_client(name)
        except unittest.SkipTest:
            raise
        except Exception:
            if name not in ALWAYS:
                cls.failed_in_a_row += 1
            raise
        cls.failed_in_a_row = 0

    def server_client(self, name):
        """t_NAME's server half in A, its client half in B; both must
        pass."""
        self._verdict(*self.server_client_halves(f't_{name}', timeout=HALF_TIMEOUT,
                                                 serving_timeout=SERVING_TIMEOUT))

    def link_up(self):
        """The link up on both sides, as it should be once both QEMUs run."""
        took = self.wait_link()
        self.info(f'the link is up on both sides ({took:.1f} s after asking)')
        for role in ROLES:
            self.info(self.link_summary(role)[0])

    def link_counters(self):
        """Each side's link carried its RDMA, and the wire next to none."""
        problems = []
        for role in ROLES:
            line, state = self.link_summary(role)
            self.info(line)
            # pkts-sent counts what the link could not take too.
            wire = {'sent': (state['pkts-sent'] - state['link-pkts-sent'] -
                             state['link-tx-dropped']),
                    'rcvd': state['pkts-rcvd'] - state['link-pkts-rcvd']}
            for way, count in wire.items():
                self.figures.append((self.step_name, f'{role} link-pkts-{way}',
                                     str(state[f'link-pkts-{way}'])))
                self.figures.append((self.step_name, f'{role} wire pkts-{way}', str(count)))
                if state[f'link-pkts-{way}'] == 0:
                    problems.append(f'{role.upper()}: link-pkts-{way} 0: nothing took the link')
                if count > LINK_WIRE_SHARE * state[f'pkts-{way}']:
                    problems.append(f'{role.upper()}: {count} of pkts-{way} '
                                    f'{state[f"pkts-{way}"]} took the wire')
            self.info(f'{role.upper()}: on the wire: {wire["sent"]} RoCE packets sent, '
                      f'{wire["rcvd"]} received')
            if not state['link-up']:
                problems.append(f'{role.upper()}: the link is down')
            if state['link-errors']:
                problems.append(f'{role.upper()}: link-errors {state["link-errors"]}')
        if problems:
            self.fail('\n'.join(problems))

    def link_one_copy(self):
        """Each side's peer has its RAM mapped, and copied packets from it:
        each side sends large payloads (the pingpongs both ways, perftest
        from B, nvme_fio's reads from A)."""
        problems = []
        for role in ROLES:
            state = self.pair.link_state(role)
            one_copy, sent = state['link-one-copy'], state['link-pkts-one-copy']
            self.figures.append((self.step_name, f'{role} link-pkts-one-copy', str(sent)))
            self.info(f'{role.upper()}: link-one-copy {str(one_copy).lower()}, '
                      f'{sent} of link-pkts-sent {state["link-pkts-sent"]} copied by the '
                      'peer from its RAM')
            if not one_copy:
                problems.append(f'{role.upper()}: link-one-copy false: the peer has not '
                                'mapped its RAM')
            if not sent:
                problems.append(f'{role.upper()}: link-pkts-one-copy 0: nothing crossed '
                                'by reference')
            if state['link-errors']:
                problems.append(f'{role.upper()}: link-errors {state["link-errors"]}')
        if problems:
            self.fail('\n'.join(problems))

    def nvme(self, name):
        """NVMe over RDMA: A's target up, t_NAME in B, A's target down."""
        target = self.call('a', 'nvme_target_up', timeout=120)
        if target.rc != 0:
            self.call('a', 'nvme_target_down', timeout=120)
            self._verdict(target)
        host = self.call('b', f't_{name}', timeout=NVME_TIMEOUT)
        down = self.call('a', 'nvme_target_down', timeout=120)
        self._verdict(target, host, down)


class WireQrdmaQrdma(WireSteps, PairTest):
    """Both ends qrdma."""
    KINDS = ('qrdma', 'qrdma')


class WireQrdmaRxe(WireSteps, PairTest):
    """A qrdma, B rxe."""
    KINDS = ('qrdma', 'rxe')


class WireRxeQrdma(WireSteps, PairTest):
    """A rxe, B qrdma."""
    KINDS = ('rxe', 'qrdma')


class LinkQrdmaQrdma(WireSteps, PairTest):
    """Both ends qrdma, joined by the same-host link as well as the wire."""
    NAME = 'link'
    KINDS = ('qrdma', 'qrdma')
    LINK = True


# Over the link's one-copy mode, what moves payloads of 4 KiB and more
# (what crosses by reference), most of it checked: SENDs both ways (the
# pingpongs at 4, 8 and 64 KiB, ib_send_bw from B), WRITEs (ib_write_bw
# from B, A's target answering nvme_fio's reads) and READs (ib_read_bw,
# rping -V, A's target taking nvme_fio's writes), which cross the ring.
ONE_COPY_TESTS = ('rc_pingpong', 'rc_pingpong_ipv6', 'rc_pingpong_mtu4096', 'send_bw',
                  'write_bw', 'read_bw', 'rping', 'nvme_fio')


class LinkOneCopyQrdmaQrdma(WireSteps, PairTest):
    """Both ends qrdma, joined by the same-host link in its one-copy mode:
    each guest's RAM a shared memfd its peer's QEMU maps."""
    NAME = 'link-one-copy'
    KINDS = ('qrdma', 'qrdma')
    LINK = True
    SHARE_RAM = True
    TESTS = ONE_COPY_TESTS


class WireRxeRxe(WireSteps, PairTest):
    """Both ends rxe: the baseline of the wire and of the tests."""
    KINDS = ('rxe', 'rxe')


# RC through the impairing relay: 2% of the frames lost, 1% twice, 1% late
# behind 4 others, 0.1% with a bit flipped, in both directions; the data
# of every test checked, the faults counted.
FAULTS = '--drop 0.02 --dup 0.01 --reorder 0.01 --window 4 --corrupt 0.001 --seed 1'
# RC by SEND, WRITE and READ with its data checked (the pingpongs, rping
# -V, NVMe-oF with fio's verify=crc32c), perftest for the rates, UD
# datagrams numbered and checksummed, and RNR with rnr_retry 7 and 3.
FAULTS_TESTS = ('rc_pingpong', 'rc_pingpong_ipv6', 'write_bw', 'read_bw', 'send_bw_cm',
                'rping', 'ud_datagrams', 'rnr_forever', 'rnr_finite', 'nvme_fio')


class WireFaultsQrdmaQrdma(WireSteps, PairTest):
    """Both ends qrdma behind the relay.  The first neighbour solicitation
    is lost for certain: rc_pingpong_ipv6's, which ib_core waits only a
    second for at the modify to RTR."""
    NAME = 'wire-faults'
    KINDS = ('qrdma', 'qrdma')
    RELAY = FAULTS + ' --drop-nd 1'
    TESTS = FAULTS_TESTS
    SETTINGS = {'BW_ITERS': 200}


class WireFaultsQrdmaRxe(WireSteps, PairTest):
    """The same with rxe as the client end (NVMe-oF: a qrdma target, an rxe
    host).  fio moves 8 MiB each way: every loss costs both ends a go-back-N
    of up to 128 packets, and through these faults under TCG a target does
    about 100 KiB/s (docs/devel/qrdma-testing.rst)."""
    NAME = 'wire-faults'
    KINDS = ('qrdma', 'rxe')
    RELAY = FAULTS
    TESTS = FAULTS_TESTS
    SETTINGS = {'BW_ITERS': 200, 'FIO_SIZE': '8M'}


class WireFaultsRxeQrdma(WireSteps, PairTest):
    """NVMe-oF and rping the other way round (an rxe target, a qrdma host),
    without reordering: rxe's completer fails a READ (a WARNING, and the QP
    to ERR) when an ACK older than the READ response it is in the middle of
    comes late, which a reordering wire does to any responder's ACKs (rxe's
    own too; docs/specs/qrdma.rst, interoperation with rxe).  The first
    connection's RTU is lost for certain: rnr_finite's, whose client is
    done and disconnects before the REP's retry."""
    NAME = 'wire-faults'
    KINDS = ('rxe', 'qrdma')
    RELAY = FAULTS.replace('--reorder 0.01 --window 4 ', '') + ' --drop-cm rtu'
    TESTS = ('rnr_finite', 'rping', 'nvme_fio')
    SETTINGS = {'FIO_SIZE': '8M'}


if __name__ == '__main__':
    main()
