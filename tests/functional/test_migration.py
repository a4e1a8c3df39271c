#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A VM with a qrdma device migrates while it talks RDMA (issue 23):

    scripts/run-functional test_migration.py
    QRDMA_MIG_SECONDS=60 scripts/run-functional test_migration.py

One VM, its qrdma device (id rdma0) carrying RDMA between programs of
the guest on its own loopback; the guest side is tests/vm/migration.sh.
The host live-migrates the VM to a new QEMU on this host
(QrdmaVM.migrate) while

  1. ibv_rc_pingpong -c runs between a server and a client in the guest;
  2. fio writes and reads back, checked (verify=crc32c), a namespace of
     NVMe over RDMA that the guest serves itself (nvmet-rdma, nvme-rdma);
  3. ibv_rc_pingpong -c runs, twice in a row, the destination of the
     first migration the source of the second;

and then saves it (HMP savevm) while a pingpong runs, and loads that
snapshot (loadvm): the guest goes back to the savevm, the old pingpong
finishes and a new one passes.  Each must end well where the guest runs
then, its data checked; a pingpong or fio that ended before the migration
completed fails its step, which then tested nothing.  Each migration's
downtime and total time (query-migrate) and the device's retransmits
counter (qom-get) are reported as "INFO:" comments.

A pingpong is sized to last QRDMA_MIG_SECONDS (20 s) at the rate the
first one measured, and 20000 round trips at least; fio runs that long.
A migration itself takes 0.3-2 s under TCG.
"""

import os
import re
import time

from qrdma_test import AgentError, MigrationError, VMTest, main

DEVICE = '/machine/peripheral/rdma0'
# What the traffic of a migration's step lasts, in the guest's time.
SECONDS = float(os.environ.get('QRDMA_MIG_SECONDS', '20'))
# Round trips of a pingpong that must last SECONDS: at least this many,
# and at most that many; of the one that measures the rate (warm: the
# first thousands run slower, while TCG translates the code they run).
# Some 15000 a second under TCG, each end on a vCPU of its own.
PP_MIN_ITERS = 20000
PP_MAX_ITERS = 2000000
PP_PROBE_ITERS = 20000
# Each step's pingpong on a TCP port of its own.
PP_PORT = 18600
# What a function takes to say its traffic runs; what a pingpong or fio
# may take in all (they slow down while the VM migrates).
UNDER_WAY = r'^# under way'
UNDER_WAY_TIMEOUT = 120
TRAFFIC_TIMEOUT = 900


class VMMigration(VMTest):
    """One VM of two vCPUs and 1 GiB, its root disk shareable."""

    NAME = 'migration'
    SCRIPT = 'tests/vm/migration.sh'
    VM = {'mem': '1G', 'migratable': True,
          'args': ['-device', 'pcie-root-port,id=rp0,bus=pcie.0,chassis=1',
                   '-device', 'qrdma,id=rdma0,bus=rp0']}
    # Round trips a second of the first pingpong.
    rate = None

    # --- what the steps share ---------------------------------------------------

    @staticmethod
    def counters(vm):
        """The device's retransmits and pkts-sent counters in vm."""
        return {c: vm.qom_get(DEVICE, c) for c in ('retransmits', 'pkts-sent')}

    def retransmits(self):
        return self.vm.qom_get(DEVICE, 'retransmits')

    def migrate(self):
        """The VM live-migrated (its traffic running): the Migration, whose
        figures it reports.  The class's VM is the destination from then on."""
        number = self.vm.migrations + 1
        before = self.counters(self.vm)
        try:
            migration = self.vm.migrate(at_switch=self.counters)
        except (MigrationError, AgentError) as exc:
            self.fail(f'migration {number}: {exc}\n{self.vm.diagnosis()}')
        type(self).vm = migration.dest
        at_switch, after = migration.at_switch, self.counters(self.vm)
        self.info(f'INFO: migration {number}: {migration.describe()}')
        self.info(f'INFO: migration {number}: retransmits {before["retransmits"]} on the '
                  f'source before it, {at_switch["retransmits"]} at the switch, '
                  f'{after["retransmits"]} on the destination once it runs; packets sent '
                  f'{before["pkts-sent"]}, {at_switch["pkts-sent"]}, {after["pkts-sent"]}')
        return migration

    def iters(self, seconds):
        """Round trips of a pingpong that lasts seconds."""
        return max(PP_MIN_ITERS, min(PP_MAX_ITERS, int(self.rate * seconds)))

    def start(self, func, *args):
        """func started, and under way (it said so): its Job."""
        job = self.spawn(func, *args, timeout=TRAFFIC_TIMEOUT)
        under_way = job.wait(UNDER_WAY_TIMEOUT, pattern=UNDER_WAY)
        if not under_way.matched:
            self.finish(job)
            self.fail(f'{func} did not get under way:\n{under_way.output}')
        said = re.search(UNDER_WAY + r'.*', under_way.output, re.M)[0]
        self.info(f'INFO: {said[2:]}')
        return job

    def still_running(self, job, what):
        """The job, which the migration (or savevm) must have found running,
        still runs: its traffic crossed the switch."""
        result = job.wait(0)
        if result.done:
            self.fail(f'{what} ended before the migration or savevm completed: nothing '
                      f'crossed it (QRDMA_MIG_SECONDS={SECONDS:g} too short?)\n{result.output}')

    def end_traffic(self, job, what):
        """The job's traffic finished well where the guest runs now."""
        start = time.monotonic()
        self.finish(job)
        now = self.counters(self.vm)
        self.info(f'INFO: {what} ended well {time.monotonic() - start:.0f} s later; '
                  f'the device the guest runs on: retransmits {now["retransmits"]}, '
                  f'packets sent {now["pkts-sent"]}')

    # --- the steps ----------------------------------------------------------------

    def test_01_setup(self):
        """the VM boots; qrdma0 comes up on its netdev, its RoCE v2 GID found"""
        took = self.vm.boot()
        self.info(f'booted in {took:.0f} s (accelerator {self.vm.accel})')
        self.check('t_setup', timeout=300)
        type(self).vm_ready = True

    def test_02_pingpong(self):
        """ibv_rc_pingpong -c between a server and a client of the guest on
        qrdma0, before any migration: how many round trips a second"""
        self.need_setup()
        result = self.check('pingpong', str(PP_PORT + 2), str(PP_PROBE_ITERS), timeout=300)
        found = re.search(r'^(\d+) iters in ([\d.]+) seconds', result.output, re.M)
        self.assertIsNotNone(found, result.output)
        type(self).rate = int(found[1]) / max(float(found[2]), 0.001)
        self.info(f'INFO: {self.rate:.0f} round trips/s: a pingpong of {SECONDS:g} s '
                  f'makes {self.iters(SECONDS)}')

    def test_03_pingpong_migrates(self):
        """the VM live-migrates while ibv_rc_pingpong -c runs in it; the
        pingpong finishes on the destination, its data checked"""
        self.need_setup()
        job = self.start('pingpong', str(PP_PORT + 3), str(self.iters(SECONDS)))
        self.migrate()
        self.still_running(job, 'the pingpong')
        self.end_traffic(job, 'the pingpong')

    def test_04_nvme_fio_migrates(self):
        """the VM live-migrates while fio writes and reads back, checked
        (verify=crc32c), the namespace it serves itself over NVMe/RDMA; fio
        passes on the destination"""
        self.need_setup()
        self.check('nvme_up', timeout=300)
        try:
            job = self.start('nvme_fio', str(int(SECONDS)))
            self.migrate()
            self.still_running(job, 'fio')
            self.end_traffic(job, 'fio')
        finally:
            down = self.call('nvme_down', timeout=120)
        self.verdict(down)

    def test_05_migrates_twice(self):
        """the VM migrates twice in a row while ibv_rc_pingpong -c runs, the
        first migration's destination the second's source; the pingpong
        finishes on the last, its data checked"""
        self.need_setup()
        job = self.start('pingpong', str(PP_PORT + 5), str(self.iters(2 * SECONDS)))
        self.migrate()
        self.still_running(job, 'the pingpong')
        self.migrate()
        self.still_running(job, 'the pingpong')
        self.end_traffic(job, 'the pingpong')

    def test_06_savevm_loadvm(self):
        """savevm while ibv_rc_pingpong -c runs, loadvm of it: the guest is
        back where the savevm found it and runs on; the pingpong started
        before the savevm finishes, and a new one passes"""
        self.need_setup()
        job = self.start('pingpong', str(PP_PORT + 6), str(self.iters(SECONDS)))
        before = self.retransmits()
        try:
            saved = self.vm.savevm('migration-test')
            self.still_running(job, 'the pingpong')
            # What the guest does after the savevm, the loadvm undoes.
            self.check('mark_file', 'after-savevm', timeout=60)
            loaded = self.vm.loadvm('migration-test')
        except MigrationError as exc:
            self.fail(f'{exc}\n{self.vm.diagnosis()}')
        self.info(f'INFO: savevm {saved:.1f} s, loadvm {loaded:.1f} s; retransmits '
                  f'{before} before the savevm, {self.retransmits()} after the loadvm')
        self.check('not_marked', 'after-savevm', timeout=60)
        self.end_traffic(job, 'the pingpong started before the savevm')
        self.check('pingpong', str(PP_PORT + 7), str(PP_PROBE_ITERS), timeout=300)

    def test_07_device_down(self):
        """rmmod qrdma leaves nothing behind in the guest the migrations and
        the loadvm moved; the device counted no guest error; dmesg is clean"""
        self.need_setup()
        self.info(f'INFO: the device the guest ends on: retransmits {self.retransmits()}, '
                  f'guest-errors {self.vm.qom_get(DEVICE, "guest-errors")}')
        self.check('t_device_down', timeout=120)


if __name__ == '__main__':
    main()
