#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The harness itself, on one VM: its console is read, the command
channel returns what a command printed and its status, a command past
its timeout is killed and said to be, a wait for a pattern returns when
the output has it, a reset's new boot is noticed, and a VM whose QEMU
dies takes its channel with it at once; and on a migratable VM, a
command started before a live migration is waited for after it, and
neither its output nor the console loses or repeats a line at the switch:

    scripts/run-functional test_harness.py
"""

import os
import re
import signal
import threading
import time

from qrdma_test import AgentLost, QrdmaTest, QrdmaVM, main

# What HarnessMigration's command prints, on its output and on the console.
LINES = 400


class Harness(QrdmaTest):
    """One VM for all the steps, booted by the first."""

    vm = None

    @classmethod
    def setUpClass(cls):
        cls.vm = QrdmaVM('functional-harness', smp=1)
        cls.addClassCleanup(cls.vm.stop)

    def test_01_boot(self):
        """the guest boots and its agent answers"""
        took = self.vm.boot()
        self.info(f'booted in {took:.0f} s')
        ready = self.vm.console.wait_for(r'^qrdma-init: ready at', 10)
        self.assertIsNotNone(ready)
        self.info(ready)

    def test_02_run(self):
        """a command's output, status and environment come back"""
        result = self.vm.sh('echo "out $1 $FOO"; echo err >&2; exit 3', 'x',
                            timeout=30, env={'FOO': 'bar'})
        self.assertEqual(result.rc, 3)
        self.assertIn('out x bar', result.output)
        self.assertIn('err', result.output)
        self.assertFalse(result.timed_out)
        # The checkout, read-only, and the guest's out directory.
        result = self.vm.sh('test -f "$QRDMA_SRC/meson.build" && '
                            '! touch "$QRDMA_SRC/x" 2>/dev/null && '
                            'touch "$QRDMA_OUT/x"', timeout=30)
        self.assertEqual(result.rc, 0, result.output)
        self.assertTrue((self.vm.out_dir / 'x').exists())

    def test_03_timeout(self):
        """a command past its timeout is killed, with what it had printed"""
        start = time.monotonic()
        result = self.vm.sh('echo started; sleep 600', timeout=3)
        self.assertTrue(result.timed_out)
        self.assertEqual(result.rc, 137)
        self.assertIn('started', result.output)
        self.assertLess(time.monotonic() - start, 30)

    def test_04_pattern(self):
        """a wait for a pattern returns once the output has it"""
        job = self.vm.spawn(['bash', '-c', 'sleep 1; echo "# ready"; sleep 600'],
                            timeout=120)
        result = job.wait(60, pattern=r'^# ready$')
        self.assertTrue(result.matched)
        self.assertFalse(result.done)
        job.signal(15)
        result = job.finish()
        self.assertEqual(result.rc, 128 + 15)

    def test_05_reset(self):
        """after a QMP system_reset, the guest boots again in the same QEMU,
        and says so on its console"""
        boot_id = self.vm.agent.boot_id
        since = self.vm.console.mark()
        self.vm.reset()
        self.vm.wait_booted()
        self.assertNotEqual(self.vm.agent.boot_id, boot_id)
        self.assertIsNotNone(self.vm.console.wait_for(r'^qrdma-init: ready at', 10, since))
        self.assertEqual(self.vm.sh('true', timeout=30).rc, 0)

    def test_06_qemu_dies(self):
        """a wait in progress fails at once when the VM's QEMU dies"""
        job = self.vm.spawn(['sleep', '600'], timeout=120)
        killer = threading.Timer(2, os.kill, (self.vm.get_pid(), signal.SIGKILL))
        killer.start()
        start = time.monotonic()
        with self.assertRaises(AgentLost):
            job.wait(60)
        killer.join()
        self.assertLess(time.monotonic() - start, 20)


class HarnessMigration(QrdmaTest):
    """A migratable VM, live-migrated twice."""

    vm = None

    @classmethod
    def setUpClass(cls):
        cls.vm = QrdmaVM('functional-harness-migration', smp=1, mem='512M', migratable=True)
        cls.addClassCleanup(cls._stop_vm)

    @classmethod
    def _stop_vm(cls):
        # The VM the guest runs in at the end: the last migration's.
        cls.vm.stop()

    def test_01_boot(self):
        """a migratable VM boots (its root disk a qcow2 overlay)"""
        self.info(f'booted in {self.vm.boot():.0f} s')

    def test_02_migrate(self):
        """a command printing numbered lines, on its output and the console,
        runs across two live migrations: it is waited for on the last QEMU,
        and each line is there once, in order, in both"""
        job = self.vm.spawn(['bash', '-c', 'for i in $(seq "$1"); do echo "line $i"; '
                             'echo "harness line $i" >/dev/console; sleep 0.02; done',
                             'bash', str(LINES)], timeout=300)
        self.assertTrue(job.wait(60, pattern=r'^line 20$').matched)
        for _ in range(2):
            migration = self.vm.migrate()
            type(self).vm = migration.dest
            self.info(f'{migration.dest.qemu_name}: {migration.describe()}')
        self.assertFalse(job.wait(0).done, 'the command ended before the migrations did')
        result = job.finish()
        self.assertEqual(result.rc, 0, result.output)
        self.assertEqual(result.output.split('\n'),
                         [f'line {i}' for i in range(1, LINES + 1)] + [''])
        self.assertIsNotNone(self.vm.console.wait_for(f'^harness line {LINES}$', 30))
        seen = [line for line in self.vm.console.tail(20000)
                if re.fullmatch(r'harness line \d+', line)]
        self.assertEqual(seen, [f'harness line {i}' for i in range(1, LINES + 1)])
        self.assertEqual(self.vm.sh('test -f "$QRDMA_SRC/meson.build"', timeout=30).rc, 0,
                         'the shares are mounted again')


if __name__ == '__main__':
    main()
