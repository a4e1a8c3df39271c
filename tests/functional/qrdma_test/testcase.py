# SPDX-License-Identifier: GPL-2.0-or-later
"""The test classes of the host-driven VM tests, and their main().

A VMTest is one scenario on one VM, as a PairTest is on two.

A PairTest is one two-VM scenario: its test methods are its steps, run in
the order of their names (test_01_..., test_02_...) on one Pair that the
class keeps from the first step to the last, as B's VM is killed, started
again or reset between them.  A step whose set-up failed fails at once,
saying so, as the shell tests' steps did.  Each step's TAP line is its
unittest id; the first comment under it is the step's docstring, then the
"INFO: " lines of the guest halves it ran ("# A: ...").  A failed step's
output (every half it ran, and a VM's console if one died) goes to stderr,
which meson shows.
"""

import logging
import os
import re
import shlex
import signal
import sys
import time
import unittest
from pathlib import Path

import pycotap

from . import config
from .agent import AgentError
from .machine import QrdmaVM
from .pair import ROLES, Pair

# Lines main() prints after the plan: how each scenario's VMs ended, and
# where their logs are (a class's tearDown prints into nothing: pycotap
# shows a test's output under the test's line).
SUMMARY = []
# The guest's "skip this test" status, as lib-qrdma.sh's run_test has it.
SKIP = 77
# What A's half of a server and client says once its server listens, and
# B's when its client came before an rdma_cm listener, which perftest's
# client does not retry (lib-pair.sh's pair_server_client); and how often
# a test runs then, server and client.
PAIR_SERVING = r'^# serving:'
PAIR_AGAIN = r'^# again:'
SERVER_TRIES = 3
# Both ends' QEMUs connect their link within a second of each other's
# start; this is plenty, under load too.
LINK_TIMEOUT = 30


def _harness_log(name):
    """Every command to a guest and what came back, every QMP command and
    event: build/vm-logs/NAME.harness.log."""
    config.VM_LOGS.mkdir(parents=True, exist_ok=True)
    path = config.VM_LOGS / f'{name}.harness.log'
    handler = logging.FileHandler(path, mode='w', encoding='utf-8')
    handler.setFormatter(logging.Formatter('%(asctime)s %(name)s: %(message)s'))
    for logger in ('qrdma_test', 'qemu.machine', 'qemu.qmp'):
        logging.getLogger(logger).setLevel(logging.DEBUG)
        logging.getLogger(logger).addHandler(handler)
    return path, handler


def _close_harness_log(handler):
    for logger in ('qrdma_test', 'qemu.machine', 'qemu.qmp'):
        logging.getLogger(logger).removeHandler(handler)
    handler.close()


class QrdmaTest(unittest.TestCase):
    """A test of VMs of the project's guest: the first comment under each
    step's TAP line is its docstring."""

    def setUp(self):
        # The whole docstring, where shortDescription has its first line.
        print(' '.join((self._testMethodDoc or self.id()).split()))

    @staticmethod
    def info(text):
        """A TAP comment under the step's line."""
        print(text)

    @staticmethod
    def info_prefix(result):
        """What the TAP comment of one of result's "INFO: " lines starts
        with: the role its what names ("A: ...")."""
        return f'{result.what.split(":")[0]}: '

    def verdict(self, *results):
        """Passes (the "INFO: " lines of each result shown), skips (a result
        said 77 and none failed) or fails with the output of every one."""
        if all(r.rc == 0 for r in results):
            for r in results:
                for line in r.info_lines():
                    self.info(f'{self.info_prefix(r)}{line}')
            return
        if all(r.rc in (0, SKIP) for r in results):
            skipped = next(r for r in results if r.rc == SKIP)
            self.skipTest((skipped.output.strip().splitlines() or ['skipped'])[-1])
        self.fail('\n'.join(f'--- {r.describe()}\n{r.output.rstrip()}'
                            for r in results))


class PairTest(QrdmaTest):
    """The steps of one scenario on two VMs.  A subclass says KINDS (A's
    and B's: qrdma or rxe), NAME (the run's is NAME-KA-KB, and
    QRDMA_RUN_SUFFIX's end if the environment has one) and SCRIPT (its
    guest side's shell functions, a file of the checkout); RELAY (the
    relay's options), APPEND (both kernel command lines' end), LINK (the
    two qrdma devices joined by the same-host link too) and SHARE_RAM
    (the link in its one-copy mode) if it wants them.

    The figures its guest halves give (pair_result) it keeps, under the
    name of the step that ran them, and writes, once the scenario is over,
    to build/vm-out/RUN/RUN.tsv (pair, test, figure, value) and, as a
    table for people, RUN.txt, which ends the TAP too."""

    KINDS = None
    NAME = None
    SCRIPT = None
    RELAY = None
    APPEND = ''
    LINK = False
    SHARE_RAM = False
    # The roles whose VMs a step migrates.
    MIGRATABLE = ()

    pair = None
    pair_ready = False

    @classmethod
    def setUpClass(cls):
        kind_a, kind_b = tuple(cls.KINDS)
        cls.run_name = f'{cls.NAME}-{kind_a}-{kind_b}' + os.environ.get('QRDMA_RUN_SUFFIX', '')
        cls.figures = []
        cls.started = time.monotonic()
        cls.log_path, handler = _harness_log(cls.run_name)
        cls.addClassCleanup(_close_harness_log, handler)
        cls.pair = Pair(cls.run_name, kind_a, kind_b, relay=cls.RELAY,
                        append=cls.APPEND, migratable=cls.MIGRATABLE, link=cls.LINK,
                        share_ram=cls.SHARE_RAM)
        cls.addClassCleanup(cls._close_pair)
        cls.pair_ready = False

    @classmethod
    def _close_pair(cls):
        cls.pair.close()
        logs = ', '.join(sorted(p.name for p in config.VM_LOGS.glob(f'{cls.run_name}-*.log')
                                if not p.name.endswith('.qemu.log')))
        SUMMARY.append(f'{cls.run_name}: {time.monotonic() - cls.started:.0f} s; '
                       f'in {config.VM_LOGS}: {logs}, {cls.log_path.name}')
        cls._write_figures()
        stats = cls.pair.out / 'relay.txt'
        if cls.RELAY and stats.exists():
            SUMMARY.extend(f'relay: {line}' for line in
                           stats.read_text(encoding='utf-8').splitlines())

    @classmethod
    def _write_figures(cls):
        if not cls.figures:
            return
        pairing = '-'.join(cls.KINDS)
        tsv = cls.pair.out / f'{cls.run_name}.tsv'
        rows = ['\t'.join(('pair', 'test', 'figure', 'value'))]
        rows += ['\t'.join((pairing, *figure)) for figure in cls.figures]
        tsv.write_text('\n'.join(rows) + '\n', encoding='utf-8')
        width = max(len(f'{test} {figure}') for test, figure, _ in cls.figures)
        lines = [f'Two VMs over the wire, {cls.pair.label}']
        lines += [f'{test + " " + figure:<{width}}  {value}'
                  for test, figure, value in cls.figures]
        (cls.pair.out / f'{cls.run_name}.txt').write_text('\n'.join(lines) + '\n',
                                                          encoding='utf-8')
        SUMMARY.extend(lines)

    # --- what a step says and checks ----------------------------------------------

    @property
    def step_name(self):
        """The step's name: its method's without test_NN_."""
        return self._testMethodName.split('_', 2)[-1]

    def guest_env(self):
        """More variables for the guest halves of this step (the step's own
        settings)."""
        return {}

    def need_setup(self):
        """A step's first line: it fails at once after a failed set-up."""
        if not self.pair_ready:
            self.fail('setup failed')

    def _diagnose(self, role, exc):
        vm = self.pair.vms.get(role)
        where = vm.diagnosis() if vm else f'{role.upper()} has no VM'
        self.fail(f'{role.upper()}: {exc}\n{where}')

    def _verdict(self, *results):
        """Passes, skips (a half said 77 and none failed) or fails with the
        output of every half; the figures of each kept, whichever."""
        for r in results:
            self.figures.extend((self.step_name, *figure) for figure in r.figures())
        self.verdict(*results)

    def call(self, role, func, *args, timeout):
        """The guest function func run in role's VM: its Result, unchecked."""
        try:
            return self.pair.call(role, func, *args, timeout=timeout,
                                  script=self.SCRIPT, env=self.guest_env())
        except AgentError as exc:
            return self._diagnose(role, exc)

    def check(self, role, func, *args, timeout):
        """func run in role's VM, which must exit 0: its Result."""
        result = self.call(role, func, *args, timeout=timeout)
        self._verdict(result)
        return result

    def spawn(self, role, func, *args, timeout):
        """func started in role's VM: its Job (agent.py)."""
        try:
            return self.pair.spawn(role, func, *args, timeout=timeout,
                                   script=self.SCRIPT, env=self.guest_env())
        except AgentError as exc:
            return self._diagnose(role, exc)

    def finish(self, role, job, check=True):
        """A job of role's VM waited for to its end (and checked): its
        Result."""
        try:
            result = job.finish()
        except AgentError as exc:
            return self._diagnose(role, exc)
        if check:
            self._verdict(result)
        return result

    def check_both(self, func, *args, timeout):
        """func run in both VMs at once, each of which must exit 0."""
        jobs = [(role, self.spawn(role, func, *args, timeout=timeout))
                for role in ROLES]
        results = []
        for role, job in jobs:
            try:
                results.append(job.finish())
            except AgentError as exc:
                self._diagnose(role, exc)
        self._verdict(*results)
        return results

    # --- the same-host link ---------------------------------------------------------

    def wait_link(self, want_up=True, roles=ROLES, timeout=LINK_TIMEOUT):
        """link-up want_up on each of roles within timeout seconds
        (Pair.wait_link), or the step fails: the seconds it took."""
        try:
            return self.pair.wait_link(want_up, roles, timeout)
        except TimeoutError as exc:
            return self.fail(str(exc))

    def link_summary(self, role):
        """role's link as a line of its QOM properties, and its
        link_state."""
        state = self.pair.link_state(role)
        line = (f'{role.upper()}: link-up {str(state["link-up"]).lower()}, '
                f'link-ups {state["link-ups"]}, '
                f'link-pkts-sent {state["link-pkts-sent"]} of pkts-sent {state["pkts-sent"]}, '
                f'link-pkts-rcvd {state["link-pkts-rcvd"]} of pkts-rcvd {state["pkts-rcvd"]}, '
                f'link-tx-dropped {state["link-tx-dropped"]}, '
                f'link-errors {state["link-errors"]}, '
                f'link-one-copy {str(state["link-one-copy"]).lower()}, '
                f'link-pkts-one-copy {state["link-pkts-one-copy"]}')
        return line, state

    # --- a server in A and its client in B ---------------------------------------

    def server_client_halves(self, func, *args, timeout, serving_timeout):
        """func's server half in A and, once that says its server listens
        (lib-pair.sh's pair_server_client), its client half in B: their
        Results, A's and B's, unchecked.  A half that fails or skips before
        its server listens ends the step.  Run again, up to SERVER_TRIES
        times in all, when the client came before an rdma_cm listener."""
        for attempt in range(1, SERVER_TRIES + 1):
            server = self.spawn('a', func, *args, timeout=timeout)
            serving = server.wait(serving_timeout, pattern=PAIR_SERVING)
            if not serving.matched:
                # Ended (a skip, or a failure), or stuck before it listens.
                if not serving.done:
                    server.signal(signal.SIGKILL)
                self.finish('a', server)
                self.fail(f'A\'s half did not serve:\n{serving.output}')
            client = self.call('b', func, *args, timeout=timeout)
            if client.rc != 0 and not server.wait(2).done:
                # A server whose client failed may wait for it until its
                # own timeout: its last words, then stopped.
                self.call('a', 'pair_server_stop', timeout=30)
            result = self.finish('a', server, check=False)
            if (client.rc == 0 or attempt == SERVER_TRIES or
                    not re.search(PAIR_AGAIN, client.output, re.M)):
                return result, client
            self.info(f'B: try {attempt}: the client came before the server\'s '
                      'rdma_cm listener; again')
        raise AssertionError('not reached')

    # --- the set-up most scenarios start with -------------------------------------------

    def boot_and_trade(self):
        """Both VMs booted, each side's device up on the wire (lib-pair.sh's
        pair_device_info), and what each found out kept for the later
        calls: the pair is ready."""
        took = self.pair.boot()
        self.info(f'both VMs booted in {took:.0f} s')
        results = self.check_both('pair_device_info', timeout=300)
        for role, result in zip(ROLES, results):
            why = self.pair.record_device(role, result)
            if why:
                self.fail(why)
        dev = {r: self.pair.devices[r] for r in ROLES}
        for role in ROLES:
            self.info(f'{role.upper()}: {dev[role]["DEV"]} on {dev[role]["NETDEV"]} '
                      f'({dev[role]["MAC"]}), {self.pair.wire.ip(role)}, '
                      f'RoCE v2 GID index {dev[role]["GID_INDEX"]}')
        type(self).pair_ready = True

    def device_up_again(self, role):
        """role's device up again in a new boot of its VM, its new
        particulars kept."""
        result = self.call(role, 'pair_device_info', timeout=300)
        why = self.pair.record_device(role, result)
        if why:
            self.fail(f'{why}\n{result.output}')


class VMTest(QrdmaTest):
    """The steps of one scenario on one VM, which the class keeps from the
    first step to the last (the VM a migration moved the guest to, after
    one).  A subclass says NAME (the VM's, and QRDMA_RUN_SUFFIX's end if
    the environment has one), SCRIPT (its guest side's shell functions, a
    file of the checkout, which bash sources after lib-qrdma.sh) and VM
    (QrdmaVM's options)."""

    NAME = None
    SCRIPT = None
    VM = {}

    vm = None
    vm_ready = False

    @classmethod
    def setUpClass(cls):
        cls.run_name = cls.NAME + os.environ.get('QRDMA_RUN_SUFFIX', '')
        cls.started = time.monotonic()
        cls.log_path, handler = _harness_log(cls.run_name)
        cls.addClassCleanup(_close_harness_log, handler)
        cls.vm = QrdmaVM(cls.run_name, **cls.VM)
        cls.addClassCleanup(cls._close_vm)
        cls.vm_ready = False

    @classmethod
    def _close_vm(cls):
        # The VM the guest runs in at the end (a migration's destination).
        cls.vm.stop()
        logs = ', '.join(sorted(p.name for p in config.VM_LOGS.glob(f'{cls.run_name}.*log')))
        SUMMARY.append(f'{cls.run_name}: {time.monotonic() - cls.started:.0f} s; '
                       f'in {config.VM_LOGS}: {logs}')

    def need_setup(self):
        """A step's first line: it fails at once after a failed set-up."""
        if not self.vm_ready:
            self.fail('setup failed')

    def argv(self, func, *args):
        """bash running the guest function func (of lib-qrdma.sh or SCRIPT)
        with args."""
        lines = ['set -uo pipefail',
                 '. "$QRDMA_SRC/tests/vm/lib-qrdma.sh" || exit 125',
                 f'. "$QRDMA_SRC/{self.SCRIPT}" || exit 125',
                 '"$@"']
        return ['bash', '-c', '\n'.join(lines), 'bash', func, *args]

    @staticmethod
    def info_prefix(result):
        return 'INFO: '

    def _diagnose(self, exc):
        self.fail(f'{exc}\n{self.vm.diagnosis()}')

    def spawn(self, func, *args, timeout, env=None):
        """func started in the VM: its Job (agent.py)."""
        try:
            return self.vm.spawn(self.argv(func, *args), timeout, env=env,
                                 what=shlex.join([func, *args]))
        except AgentError as exc:
            return self._diagnose(exc)

    def finish(self, job, check=True):
        """A job waited for to its end (and checked): its Result."""
        try:
            result = job.finish()
        except AgentError as exc:
            return self._diagnose(exc)
        if check:
            self.verdict(result)
        return result

    def call(self, func, *args, timeout, env=None):
        """func run to its end in the VM: its Result, unchecked."""
        return self.finish(self.spawn(func, *args, timeout=timeout, env=env), check=False)

    def check(self, func, *args, timeout, env=None):
        """func run in the VM, which must exit 0: its Result."""
        result = self.call(func, *args, timeout=timeout, env=env)
        self.verdict(result)
        return result


def _interrupted(signum, _frame):
    # A KeyboardInterrupt goes through unittest (which would count a
    # SystemExit as a test's error and go on), so that the exit kills the
    # VMs (machine.py's atexit).
    raise KeyboardInterrupt(f'signal {signum}')


def main():
    """Run the test classes of the calling module (or those the command
    line names: a class, or Class.test_method), TAP on stdout."""
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGHUP, _interrupted)
    module = Path(sys.argv[0]).stem
    names = [name if name.startswith('-') else f'{module}.{name}'
             for name in sys.argv[1:]] or [module]
    runner = pycotap.TAPTestRunner(message_log=pycotap.LogMode.LogToError,
                                   test_output_log=pycotap.LogMode.LogToDiagnostics)
    try:
        prog = unittest.main(module=None, argv=[sys.argv[0], *names],
                             testRunner=runner, exit=False)
    except KeyboardInterrupt as exc:
        # pycotap has sys.stdout; the VMs go at exit.
        sys.__stdout__.write(f'Bail out! interrupted ({exc or "SIGINT"})\n')
        sys.exit(130)
    for line in SUMMARY:
        print(f'# {line}')
    sys.exit(not prog.result.wasSuccessful())
