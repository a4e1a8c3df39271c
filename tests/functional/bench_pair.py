#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""perftest between two VMs, for scripts/bench (make bench), a class per
pairing, lossless and through 1% loss:

    scripts/run-functional bench_pair.py BenchPairQrdmaQrdma
    QRDMA_BENCH_TESTS=write_bw_64k scripts/run-functional bench_pair.py BenchLossRxeRxe

ib_write_bw and ib_send_bw at 4 KiB and 64 KiB, ib_send_lat and
ib_read_lat at 8 B, and ib_write_bw over a sweep of message sizes, each
run with its server in A and its client in B (tests/vm/bench-pair.sh's
bench_run).  Each measurement is the median of TRIES runs
(QRDMA_BENCH_TRIES).  The figures, in build/vm-out/RUN/RUN.tsv and .txt:
per measurement, test (write_bw_4k, ..., sweep) and figure "PROG SIZE B
UNIT" with the median as its value, "PROG SIZE B runs" with every run's,
and "PROG SIZE B recovery ROLE" with the recovery counters of each side's
device that moved meanwhile (retransmits, sequence errors, duplicates: RC
recovering from frames lost on the wire; a qrdma side's from its guest's
statistics and its device's own, DEVICE_RECOVERY); bandwidth is perftest's "BW
average" in its default MiB/sec, latency its t_typical in usec.
QRDMA_BENCH_TESTS (comma-separated) runs those tests only, QRDMA_BW_ITERS
and QRDMA_LAT_ITERS set the iterations of the fixed-size runs, and
QRDMA_BENCH_SWEEP (comma-separated bytes) the sizes of the sweep.

BenchPairQrdmaLink measures two qrdma devices joined by the same-host
link as well as the wire (qrdma_test.Pair's link; its run is
bench-link-qrdma-qrdma): the link must be up before the runs (link_up),
and each measurement has a figure "PROG SIZE B link", "ok" if both
sides' link stayed up with no error and each sent over it meanwhile,
"failed" and why otherwise, with the packets each sent over the link and
on the wire; a measurement whose traffic did not take the link fails
its step, whatever its figure.

BenchPairQrdmaLinkOneCopy measures the same over the link in its
one-copy mode (qrdma_test.Pair's share_ram; its run is
bench-link1c-qrdma-qrdma): its "PROG SIZE B link" has the packets each
side sent by reference too, and is "failed" also where a side's peer has
not mapped its RAM (link-one-copy false) or where B, the client, sent
RC SENDs or WRITEs of ONE_COPY_MIN bytes or more and none by reference
(link-pkts-one-copy did not move).
"""

import os
import re
import statistics

from qrdma_test import PairTest, main
from qrdma_test.pair import ROLES

ALL_TESTS = ('write_bw_4k', 'write_bw_64k', 'send_bw_4k', 'send_bw_64k', 'send_lat',
             'read_lat', 'sweep')
TRIES = int(os.environ.get('QRDMA_BENCH_TRIES', '3'))
# Two TCG guests of one vCPU on two cores: iterations that keep one run of
# rxe's to a few seconds.
BW_ITERS = int(os.environ.get('QRDMA_BW_ITERS', '1000'))
LAT_ITERS = int(os.environ.get('QRDMA_LAT_ITERS', '1000'))
# The sweep: powers of 4 from 64 B to 1 MiB, each run moving about
# SWEEP_BYTES (within SWEEP_ITERS messages), so that the large sizes take
# no longer than the small ones.
SWEEP_SIZES = tuple(int(s) for s in os.environ.get(
    'QRDMA_BENCH_SWEEP', '64,256,1024,4096,16384,65536,262144,1048576').split(','))
SWEEP_BYTES = 16 << 20
SWEEP_ITERS = (16, 1000)
# Each run's TCP port: this and the run's number in the class, so that no
# server ever meets a client of an earlier run.
PORT_BASE = 19000
# A half of one run: its programs are bounded by 90 s each.
RUN_TIMEOUT = 240
SERVING_TIMEOUT = 60


def describe(name):
    if name.endswith('_4k') or name.endswith('_64k'):
        prog, size = name.rsplit('_', 1)
        return f'ib_{prog} -s {4096 if size == "4k" else 65536}, median of {TRIES} runs'
    if name.endswith('_lat'):
        return f'ib_{name} -s 8, t_typical, median of {TRIES} runs'
    return (f'ib_write_bw at {" ".join(map(str, SWEEP_SIZES))} B, median of {TRIES} '
            'runs each')


# The counters of a side's link_state that keep_link compares.
LINK_COUNTERS = ('link-pkts-sent', 'link-tx-dropped', 'link-errors', 'link-pkts-one-copy',
                 'pkts-sent')
# In the link's one-copy mode, the least payload of an RC SEND or WRITE
# that crosses by reference (docs/specs/qrdma.rst, "The one-copy mode"),
# and the programs whose client sends such requests: ib_read_bw's READ
# responses, and smaller payloads, cross the ring in that mode too.
ONE_COPY_MIN = 4096
ONE_COPY_PROGS = ('ib_write_bw', 'ib_send_bw')


# A qrdma side's recovery counters that only its device has (QOM): the
# sequence NAKs it sent, its requester's early retries (a timeout's is
# the guest's completer_retry_err), and RNR NAKs: what a loss cost.
DEVICE_RECOVERY = ('seq-naks-sent', 'early-retries', 'rnr-naks-sent', 'rnr-naks-rcvd')


def _counters(text):
    return dict(w.split('=', 1) for w in text.split() if '=' in w)


class BenchSteps:
    """setup and ping, TESTS, dmesg checked on both sides.  A subclass with
    PairTest names the kinds (and RELAY, TESTS, ITERS if it wants other
    than these)."""

    SCRIPT = 'tests/vm/bench-pair.sh'
    # The wire netdev's MTU, which gives RoCE path MTU 4096: frames cost
    # per frame, and a 1500 MTU (path MTU 1024) measures the frame rate
    # of two QEMUs rather than RDMA.  QRDMA_BENCH_MTU measures another.
    APPEND = f'qrdma.mtu={os.environ.get("QRDMA_BENCH_MTU", "9000")}'
    TESTS = ALL_TESTS
    BW_ITERS = BW_ITERS
    runs = 0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        wanted = os.environ.get('QRDMA_BENCH_TESTS')
        tests = list(cls.TESTS) if wanted is None else [t for t in wanted.split(',') if t]
        steps = ['setup', *(['link_up'] if cls.LINK else []), 'ping', *tests,
                 'pair_dmesg_clean']
        for number, name in enumerate(steps, 1):
            if name not in ('setup', 'link_up', 'ping', 'pair_dmesg_clean', *ALL_TESTS):
                raise ValueError(f'no such bench test: {name}')
            setattr(cls, f'test_{number:02d}_{name}', cls._step(name))

    @staticmethod
    def _step(name):
        def step(self):
            self.run_step(name)
        step.__doc__ = {'setup': 'each side\'s device up on the wire, GID index and '
                                 'address traded',
                        'link_up': 'the same-host link is up on both sides (QOM link-up)',
                        'ping': 'ping across the wire both ways',
                        'pair_dmesg_clean': 'dmesg on both sides has no WARNING/BUG/Oops/'
                                            'lockdep report or qrdma error'
                        }.get(name) or describe(name)
        return step

    def run_step(self, name):
        if name == 'setup':
            self.boot_and_trade()
            return
        if name == 'pair_dmesg_clean':
            self.check_both('t_pair_dmesg_clean', timeout=60)
            return
        self.need_setup()
        if name == 'link_up':
            took = self.wait_link()
            self.info(f'the link is up on both sides ({took:.1f} s after asking)')
        elif name == 'ping':
            self.check_both('t_ping', timeout=120)
        elif name == 'sweep':
            failed = []
            for size in SWEEP_SIZES:
                iters = min(max(SWEEP_BYTES // size, SWEEP_ITERS[0]), SWEEP_ITERS[1])
                failed += self.bench('ib_write_bw', size, iters)
            if failed:
                self.fail('\n'.join(failed))
        else:
            prog, size = name.rsplit('_', 1)
            size, iters = {'4k': (4096, self.BW_ITERS), '64k': (65536, self.BW_ITERS),
                           'lat': (8, LAT_ITERS)}[size]
            if size == 8:
                prog = name
            failed = self.bench(f'ib_{prog}', size, iters)
            if failed:
                self.fail('\n'.join(failed))

    def recovery(self):
        counts = {role: _counters(self.check(role, 'recovery_counters', timeout=30).output)
                  for role in ROLES}
        for role in ROLES:
            if self.pair.kinds[role] == 'qrdma':
                counts[role].update((c, self.pair.device_prop(role, c))
                                    for c in DEVICE_RECOVERY)
        return counts

    def bench(self, prog, size, iters):
        """TRIES runs of prog at size: the median of those that gave a
        figure, every figure, and the recovery counters that moved, kept;
        what each failed run printed."""
        before = self.recovery()
        link_before = self.link_states()
        values, unit, failed = [], '', []
        for _ in range(TRIES):
            type(self).runs += 1
            self.port = PORT_BASE + self.runs
            server, client = self.server_client_halves(
                'bench_run', prog, str(size), str(iters), timeout=RUN_TIMEOUT,
                serving_timeout=SERVING_TIMEOUT)
            figure = re.search(r'^# figure: (\S+) (\S+)$', client.output, re.M)
            if server.rc == 0 and client.rc == 0 and figure:
                values.append(figure[1])
                unit = figure[2]
            else:
                failed.append(f'--- {server.describe()}\n{server.output}\n'
                              f'--- {client.describe()}\n{client.output}')
        self.keep_recovery(f'{prog} {size} B', before, self.recovery())
        if self.LINK:
            failed += self.keep_link(prog, size, link_before, self.link_states())
        if values:
            median = statistics.median(float(v) for v in values)
            self.figures.append((self.step_name, f'{prog} {size} B {unit}', f'{median:g}'))
            self.figures.append((self.step_name, f'{prog} {size} B runs', ' '.join(values)))
            self.info(f'{prog} -s {size} -n {iters}: {" ".join(values)} {unit}')
        else:
            failed.append(f'{prog} -s {size}: no run gave a figure')
        return failed

    def keep_recovery(self, what, before, after):
        """The recovery counters of each side that moved from before to
        after, as figures "WHAT recovery ROLE"."""
        for role in ROLES:
            moved = ' '.join(f'{k}+{int(after[role][k]) - int(v)}'
                             for k, v in before[role].items()
                             if after[role].get(k) != v) or 'none'
            self.figures.append((self.step_name, f'{what} recovery {role}', moved))
            self.info(f'{role.upper()}: recovery: {moved}')

    def link_states(self):
        """Each side's link_state, with the link; else None."""
        return {role: self.pair.link_state(role) for role in ROLES} if self.LINK else None

    def keep_link(self, prog, size, before, after):
        """Whether the link carried prog's runs at size between before and
        after (each side's link_state), in its one-copy mode with
        SHARE_RAM, as the figure "PROG SIZE B link": "ok" or "failed",
        why, and the packets each side sent over the link (by reference
        among them) and on the wire; why not, if it did not."""
        what = f'{prog} {size} B'
        moved, why = [], []
        for role in ROLES:
            delta = {k: after[role][k] - before[role][k] for k in LINK_COUNTERS}
            wire = delta['pkts-sent'] - delta['link-pkts-sent'] - delta['link-tx-dropped']
            moved.append(f'{role}: link {delta["link-pkts-sent"]}' +
                         (f' one-copy {delta["link-pkts-one-copy"]}' if self.SHARE_RAM else '') +
                         f' wire {wire}')
            if not after[role]['link-up']:
                why.append(f'{role.upper()}\'s link down')
            if delta['link-errors']:
                why.append(f'{role.upper()} link-errors +{delta["link-errors"]}')
            if not delta['link-pkts-sent']:
                why.append(f'{role.upper()} sent nothing over the link')
            if self.SHARE_RAM and not after[role]['link-one-copy']:
                why.append(f'{role.upper()}\'s RAM not mapped by its peer')
            if (self.SHARE_RAM and role == 'b' and prog in ONE_COPY_PROGS and
                    size >= ONE_COPY_MIN and not delta['link-pkts-one-copy']):
                why.append('B sent nothing by reference')
        value = ' '.join(['failed: ' + ', '.join(why) + ';' if why else 'ok', *moved])
        self.figures.append((self.step_name, f'{what} link', value))
        self.info(f'link: {value}')
        return [f'{what}: the traffic did not take the link: {", ".join(why)}'] if why else []

    port = None

    def guest_env(self):
        env = {'PAIR_TEST': self.step_name}
        if self.port:
            env['PAIR_PORT'] = str(self.port)
        return env


# Under 1% loss: ib_write_bw and ib_send_bw at 64 KiB, with fewer messages
# than the lossless runs (rxe's goodput through loss is about 1 MiB/s under
# TCG).
LOSS = '--drop 0.01 --seed 1'
LOSS_TESTS = ('write_bw_64k', 'send_bw_64k')
LOSS_ITERS = 200


class BenchPairQrdmaQrdma(BenchSteps, PairTest):
    """Both ends qrdma."""
    NAME = 'bench-pair'
    KINDS = ('qrdma', 'qrdma')


class BenchPairQrdmaRxe(BenchSteps, PairTest):
    """A qrdma server, an rxe client: what qrdma gains over a peer of rxe's."""
    NAME = 'bench-pair'
    KINDS = ('qrdma', 'rxe')


class BenchPairQrdmaLink(BenchSteps, PairTest):
    """Both ends qrdma, joined by the same-host link as well as the wire."""
    NAME = 'bench-link'
    KINDS = ('qrdma', 'qrdma')
    LINK = True


class BenchPairQrdmaLinkOneCopy(BenchSteps, PairTest):
    """Both ends qrdma, joined by the same-host link in its one-copy mode:
    each guest's RAM a shared memfd its peer's QEMU maps."""
    NAME = 'bench-link1c'
    KINDS = ('qrdma', 'qrdma')
    LINK = True
    SHARE_RAM = True


class BenchPairRxeRxe(BenchSteps, PairTest):
    """Both ends rxe."""
    NAME = 'bench-pair'
    KINDS = ('rxe', 'rxe')


class BenchLossQrdmaQrdma(BenchSteps, PairTest):
    """Both ends qrdma, 1% of the frames lost."""
    NAME = 'bench-loss'
    KINDS = ('qrdma', 'qrdma')
    RELAY = LOSS
    TESTS = LOSS_TESTS
    BW_ITERS = LOSS_ITERS


class BenchLossRxeRxe(BenchSteps, PairTest):
    """Both ends rxe, 1% of the frames lost."""
    NAME = 'bench-loss'
    KINDS = ('rxe', 'rxe')
    RELAY = LOSS
    TESTS = LOSS_TESTS
    BW_ITERS = LOSS_ITERS


if __name__ == '__main__':
    main()
