#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A VM with a qrdma device migrates while it talks RDMA to another VM over
the wire (issue 23), the other qrdma or rxe:

    scripts/run-functional test_wire_migration.py WireMigrationQrdmaQrdma
    scripts/run-functional test_wire_migration.py WireMigrationRxeQrdma
    scripts/run-functional test_wire_migration.py WireMigrationRelay

A serves, B (qrdma) is the client, and the host live-migrates B to a new
QEMU on this host (Pair.migrate) while

  1. ibv_rc_pingpong -c runs between B and A;
  2. fio writes and reads back, checked (verify=crc32c), a namespace A
     serves B over NVMe/RDMA;
  3. ibv_rc_pingpong -c runs, and B migrates twice in a row.

The wire's name for B (what A sends to) moves to the destination's socket
once the migration completes: A's packets of the downtime are lost, and
its RC retries bring them again.  Each must end well: the pingpong's QPs
never left RTS (a round trip that failed would end it), fio read every
block back right.  Each migration's downtime and total time, and the
retransmits of B's device (and A's, if qrdma), are reported as "INFO:"
comments.  WireMigrationRelay does the first through the impairing relay.
"""

import os
import re
import time

from qrdma_test import AgentError, MigrationError, PairTest, main

DEVICE = '/machine/peripheral/rdma0'
# Round trips of a migration's pingpong: under TCG two guests make a few
# hundred a second, so this lasts well past a migration.
PP_ITERS = int(os.environ.get('QRDMA_WIRE_MIG_ITERS', '20000'))
FIO_SIZE = os.environ.get('QRDMA_WIRE_MIG_FIO', '96M')
PP_PORT = 18700
UNDER_WAY = r'^# under way'
TRAFFIC_TIMEOUT = 900


class WireMigrationSteps:
    """The steps; a subclass with PairTest names the kinds."""

    NAME = 'wire-migration'
    SCRIPT = 'tests/vm/wire-migration.sh'
    MIGRATABLE = ('b',)

    def retransmits(self, role):
        if self.pair.kinds[role] != 'qrdma':
            return '-'
        return self.pair.vms[role].qom_get(DEVICE, 'retransmits')

    def migrate_b(self, number):
        before = (self.retransmits('a'), self.retransmits('b'))
        try:
            migration = self.pair.migrate('b')
        except (MigrationError, AgentError) as exc:
            self.fail(f'migration {number}: {exc}\n{self.pair.b.diagnosis()}')
        self.info(f'INFO: migration {number} of B: {migration.describe()}')
        self.info(f'INFO: migration {number}: retransmits before A {before[0]}, '
                  f'B {before[1]}; after A {self.retransmits("a")}, '
                  f'B {self.retransmits("b")}')
        return migration

    def start_b(self, func, *args):
        job = self.spawn('b', func, *args, timeout=TRAFFIC_TIMEOUT)
        under_way = job.wait(120, pattern=UNDER_WAY)
        if not under_way.matched:
            self.finish('b', job)
            self.fail(f'{func} did not get under way:\n{under_way.output}')
        said = re.search(UNDER_WAY + r'.*', under_way.output, re.M)[0]
        self.info(f'INFO: B: {said[2:]}')
        return job

    def still_running(self, job, what):
        if job.wait(0).done:
            self.fail(f'{what} ended before the migration completed: nothing '
                      'crossed it')

    def pingpong_across(self, port, migrations):
        server = self.spawn('a', 'pp_server', str(port), str(PP_ITERS),
                            timeout=TRAFFIC_TIMEOUT)
        self.check('a', 'pp_listens', str(port), timeout=60)
        client = self.start_b('pp_client', str(port), str(PP_ITERS))
        for number in range(1, migrations + 1):
            self.migrate_b(number)
            self.still_running(client, 'the pingpong')
        start = time.monotonic()
        self.finish('b', client)
        self.finish('a', server)
        self.info(f'INFO: the pingpong ended well {time.monotonic() - start:.0f} s '
                  'after the last migration')

    def test_01_setup(self):
        """each side's device up on the wire, GID index and address traded"""
        self.boot_and_trade()

    def test_02_pingpong_migrates(self):
        """B live-migrates while ibv_rc_pingpong -c runs between A and B;
        both ends finish, their data checked"""
        self.need_setup()
        self.pingpong_across(PP_PORT + 2, 1)

    def test_03_nvme_fio_migrates(self):
        """B live-migrates while fio writes and reads back, checked
        (verify=crc32c), the namespace A serves it over NVMe/RDMA"""
        self.need_setup()
        self.check('a', 'target_up', timeout=120)
        try:
            job = self.start_b('nvme_fio', FIO_SIZE)
            self.migrate_b(1)
            self.still_running(job, 'fio')
            self.finish('b', job)
        finally:
            self.call('a', 'target_down', timeout=120)

    def test_04_migrates_twice(self):
        """B migrates twice in a row while ibv_rc_pingpong -c runs; both
        ends finish, their data checked"""
        self.need_setup()
        self.pingpong_across(PP_PORT + 4, 2)

    def test_05_pair_dmesg_clean(self):
        """neither dmesg has a WARNING/BUG/Oops/lockdep report or qrdma
        error"""
        self.need_setup()
        self.check_both('t_pair_dmesg_clean', timeout=60)


class WireMigrationQrdmaQrdma(WireMigrationSteps, PairTest):
    """Both ends qrdma."""
    KINDS = ('qrdma', 'qrdma')


class WireMigrationRxeQrdma(WireMigrationSteps, PairTest):
    """A rxe, B qrdma."""
    KINDS = ('rxe', 'qrdma')


class WireMigrationRelay(WireMigrationSteps, PairTest):
    """Both ends qrdma, through the relay (drops 1%, duplicates 1%): the
    pingpong across one migration."""
    NAME = 'wire-migration-relay'
    KINDS = ('qrdma', 'qrdma')
    RELAY = '--drop 0.01 --dup 0.01 --seed 23'

    def test_03_nvme_fio_migrates(self):
        """(not through the relay: the pingpong is enough)"""
        self.skipTest('the pingpong runs through the relay')

    def test_04_migrates_twice(self):
        """(not through the relay)"""
        self.skipTest('the pingpong runs through the relay')


if __name__ == '__main__':
    main()
