# SPDX-License-Identifier: GPL-2.0-or-later
"""QrdmaVM: the project's test guest on QEMU's QEMUMachine.

It boots the guest as scripts/run-vm does (the same kernel, initramfs and
root image, snapshot=on; the checkout read-only at /qrdma/src over 9p and
an output directory at /qrdma/out; q35, the accelerator lib.sh's vm_accel
chose, -no-reboot), but its script is the agent of guest_agent.py, and the
host drives the guest through it: run, spawn and wait, each bounded.  The
serial console goes to a log file line by line (build/vm-logs/NAME.log),
QEMU's own output beside it (NAME.qemu.log).

No QEMU outlives the harness: each runs under setpriv --pdeathsig KILL
(QEMU 10.0 has no -run-with exit-with-parent), so it dies with the
process that launched it, even one killed by SIGKILL; and every VM still
running when the harness exits is killed at exit.  VMs are launched from
the main thread: the death signal follows the thread that started QEMU.
"""

import atexit
import collections
import logging
import os
import re
import shlex
import socket
import threading
import time
from pathlib import Path

from qemu.machine import QEMUMachine
from qemu.machine.machine import AbnormalShutdown

from . import config
from .agent import Agent, AgentError, AgentLost, Result

LOG = logging.getLogger('qrdma_test.machine')

# A VM of a pair boots in well under this under TCG, even two at once on
# two cores.
BOOT_TIMEOUT = 300
# A QMP command answers in well under this; a QEMU that does not is hung.
QMP_TIMEOUT = 60
# The guest's end of the channel (guest_agent.py's PORT_NAME).
AGENT_PORT = 'org.qrdma.agent'
# The script qrdma-init runs: the agent, from the checkout's share; exec,
# so that the agent's exit is the script's (and powers the guest off).
AGENT_SCRIPT = '''\
modprobe virtio_console || exit 125
exec python3 "$QRDMA_SRC/tests/functional/qrdma_test/guest_agent.py"
'''

_LIVE = set()


@atexit.register
def _kill_live_vms():
    for vm in list(_LIVE):
        try:
            vm.kill()
        except Exception:   # pylint: disable=broad-except
            LOG.exception('killing %s at exit', vm.name)


def _qesc(value):
    """A value inside a QEMU option, where ',' separates: doubled."""
    return str(value).replace(',', ',,')


def _share(tag, path, readonly):
    return ['-fsdev', f'local,id=fs_{tag},path={_qesc(path)},security_model=none,'
            f'multidevs=remap{",readonly=on" if readonly else ""}',
            '-device', f'virtio-9p-pci,fsdev=fs_{tag},mount_tag={tag}']


class Console:
    """The serial console, read by a thread of its own: each line to the
    log file as it comes, and kept for wait_for.  The thread ends when QEMU
    closes its end."""

    KEEP_LINES = 20000

    def __init__(self, sock, path):
        self.path = path
        self._sock = sock
        self._lines = collections.deque(maxlen=self.KEEP_LINES)
        self._seen = 0
        self._cond = threading.Condition()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(path, 'w', encoding='utf-8')
        self._thread = threading.Thread(target=self._read, daemon=True,
                                        name=f'console {path.name}')
        self._thread.start()

    def _read(self):
        buf = b''
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b''
            if not data:
                break
            buf += data
            *lines, buf = buf.split(b'\n')
            for raw in lines:
                self._add(raw.decode('utf-8', 'replace').rstrip('\r'))
        if buf:
            self._add(buf.decode('utf-8', 'replace').rstrip('\r'))
        self._log.close()
        self._sock.close()
        with self._cond:
            self._cond.notify_all()

    def _add(self, line):
        self._log.write(line + '\n')
        self._log.flush()
        with self._cond:
            self._lines.append(line)
            self._seen += 1
            self._cond.notify_all()

    def mark(self):
        """A point to wait_for from: the number of lines so far."""
        with self._cond:
            return self._seen

    def wait_for(self, pattern, timeout, since=0):
        """The first line from line number since on that matches the
        regular expression pattern, or None after timeout seconds or once
        the console has ended."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                first = self._seen - len(self._lines)
                for i in range(max(since, first), self._seen):
                    if regex.search(self._lines[i - first]):
                        return self._lines[i - first]
                since = self._seen
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return None
                self._cond.wait(left)

    def tail(self, count=40):
        with self._cond:
            return list(self._lines)[-count:]

    def join(self, timeout):
        self._thread.join(timeout)


class QrdmaVM(QEMUMachine):
    """One boot of the test guest (a VM that quit and starts again is a new
    QrdmaVM).  The arguments are those of scripts/run-vm: name (the VM's
    name and hostname, its console log build/vm-logs/NAME.log unless
    console_log says otherwise), smp, mem, net (a -netdev spec, id net0,
    for eth0; default user), ip and mac (eth0's; the MAC defaults to
    52:54:00 and the address's last three bytes), append (the kernel
    command line's end), out_dir (/qrdma/out) and args (more QEMU
    arguments, run-vm's after --)."""

    def __init__(self, name, *, smp=2, mem='2G', net=None,
                 ip='10.0.2.15/24', mac=None, append='', out_dir=None,
                 args=(), console_log=None):
        self.name = name
        self.accel, self.accel_why = config.accel()
        self.console_path = Path(console_log or config.VM_LOGS / f'{name}.log')
        self.out_dir = Path(out_dir or config.VM_OUT / name)
        self.console = None
        self.agent = None
        self._console_pair = None
        self._agent_pair = None
        self._rebooting = False
        config.VM_LOGS.mkdir(parents=True, exist_ok=True)
        # setpriv: see the head of this file.
        super().__init__(config.qemu_binary(), name=f'{name}.qemu',
                         wrapper=['setpriv', '--pdeathsig', 'KILL'],
                         base_temp_dir=os.environ.get('TMPDIR', '/tmp'),
                         log_dir=str(config.VM_LOGS))
        self.set_machine('q35')
        self.add_args(*self._guest_args(smp, mem, net, ip, mac, append))
        self.add_args(*args)

    def _guest_args(self, smp, mem, net, ip, mac, append):
        guest = config.guest_dir()
        octets = re.fullmatch(r'(\d+)\.(\d+)\.(\d+)\.(\d+)/\d+', ip)
        if not octets:
            raise ValueError(f'ip wants A.B.C.D/LEN, not {ip!r}')
        if mac is None:
            mac = '52:54:00:' + ':'.join(f'{int(octets[i]):02x}' for i in (2, 3, 4))
        netdev = net or 'user'
        if 'id=' not in netdev:
            netdev += ',id=net0'
        cmdline = ['console=ttyS0', 'panic=-1', 'loglevel=4', '8250.nr_uarts=1',
                   f'qrdma.ip={ip}', f'qrdma.hostname={self.name}', 'qrdma.script=1']
        if net is None:
            # slirp's gateway, only meaningful on the user network.
            cmdline.append('qrdma.gw=10.0.2.2')
        if append:
            cmdline.append(append)
        accel = ['-accel', 'kvm'] if self.accel == 'kvm' else ['-accel', 'tcg,thread=multi']
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return ['-name', f'qrdma-{self.name}', '-smp', str(smp), '-m', mem,
                '-nodefaults', '-no-reboot',
                '-L', '/usr/share/qemu', '-L', '/usr/share/seabios',
                *accel, '-cpu', 'max',
                '-kernel', str(guest / 'vmlinuz'), '-initrd', str(guest / 'initrd.img'),
                '-append', ' '.join(cmdline),
                '-drive', 'if=none,id=root,format=raw,snapshot=on,'
                f'file={_qesc(guest / "rootfs.ext4")}',
                '-device', 'virtio-blk-pci,drive=root',
                '-netdev', netdev,
                '-device', f'virtio-net-pci,netdev=net0,mac={mac},romfile=',
                '-device', 'virtio-rng-pci',
                *_share('qrdma_src', config.ROOT, True),
                *_share('qrdma_out', self.out_dir, False)]

    # --- QEMUMachine's launch and shutdown ------------------------------------

    @property
    def _base_args(self):
        args = super()._base_args
        # The console and the channel on sockets whose other end is ours:
        # no path to clean up, no connection to wait for.
        args += ['-chardev', f'socket,id=console,fd={self._console_pair[0].fileno()}',
                 '-serial', 'chardev:console',
                 '-chardev', f'socket,id=agent,fd={self._agent_pair[0].fileno()}',
                 '-device', 'virtio-serial-pci,id=agent-serial',
                 '-device', f'virtserialport,bus=agent-serial.0,chardev=agent,'
                 f'name={AGENT_PORT}']
        args += _share('qrdma_run', self._run_dir(), True)
        return args

    def _run_dir(self):
        """The directory of the guest's script (/qrdma/run)."""
        run = Path(self.temp_dir) / 'run'
        if not run.exists():
            run.mkdir()
            (run / 'script').write_text(AGENT_SCRIPT, encoding='utf-8')
        return run

    def _pre_launch(self):
        self._console_pair = socket.socketpair()
        self._agent_pair = socket.socketpair()
        for pair in (self._console_pair, self._agent_pair):
            os.set_inheritable(pair[0].fileno(), True)
        super()._pre_launch()

    def _launch(self):
        LOG.info('%s: launching (accelerator %s: %s)', self.name, self.accel,
                 self.accel_why)
        _LIVE.add(self)
        super()._launch()

    def _post_launch(self):
        # QEMU's ends were for QEMU.
        self._console_pair[0].close()
        self._agent_pair[0].close()
        self.console = Console(self._console_pair[1], self.console_path)
        self.agent = Agent(self._agent_pair[1], self.name)
        super()._post_launch()
        self._qmp.settimeout(QMP_TIMEOUT)

    def _post_shutdown(self):
        try:
            super()._post_shutdown()
        finally:
            _LIVE.discard(self)
            for pair in (self._console_pair, self._agent_pair):
                if pair:
                    pair[0].close()
            if self.agent:
                self.agent.close()
            elif self._agent_pair:
                self._agent_pair[1].close()
            if self.console:
                self.console.join(10)
            elif self._console_pair:
                self._console_pair[1].close()
            self._console_pair = self._agent_pair = None

    # --- booting, stopping, resetting -------------------------------------------

    def boot(self, timeout=BOOT_TIMEOUT):
        """Launched, and its agent up: the seconds that took."""
        start = time.monotonic()
        self.launch()
        self.wait_booted(timeout)
        return time.monotonic() - start

    def wait_booted(self, timeout=BOOT_TIMEOUT):
        """Until the agent of a new boot says hello (after launch, or
        reset); raises AgentError, with the console's last lines, if it
        does not within timeout seconds."""
        try:
            self.agent.wait_hello(timeout)
        except AgentError as exc:
            raise AgentError(f'{exc}\n{self.diagnosis()}') from exc
        if self._rebooting:
            # A reboot the guest asks for itself (a panic) stops the VM
            # again, as run-vm's -no-reboot has it.
            self.cmd('set-action', reboot='shutdown')
            self._rebooting = False
        LOG.info('%s: booted', self.name)

    def diagnosis(self):
        """Why a VM may have failed: whether QEMU still runs, the console's
        last lines, QEMU's own output."""
        lines = []
        code = self.exitcode()
        lines.append(f'--- {self.name}: QEMU ' +
                     ('runs' if code is None else f'exited {code}'))
        if self.console:
            lines.append(f'--- the console\'s last lines ({self.console.path})')
            lines += self.console.tail()
        qemu_log = config.VM_LOGS / f'{self._name}.log'
        if qemu_log.exists():
            text = qemu_log.read_text(encoding='utf-8', errors='replace').strip()
            if text:
                lines.append(f'--- QEMU ({qemu_log})')
                lines += text.splitlines()[-20:]
            if 'KVM internal error' in text:
                lines.append('KVM cannot run the guest here: QRDMA_ACCEL=tcg '
                             'forces TCG; scripts/probe-accel --force probes again')
        return '\n'.join(lines)

    def power_cut(self):
        """The VM dies at once, as a machine that loses power (QMP quit)."""
        LOG.info('%s: QMP quit', self.name)
        try:
            self.shutdown(timeout=30)
        except AbnormalShutdown:
            LOG.warning('%s: QEMU did not quit; killed', self.name)

    def reset(self):
        """A system reset (QMP system_reset): the guest boots again in the
        same QEMU; wait_booted waits for its agent.  -no-reboot would make
        it a shutdown: resets are allowed until the guest is up again, as
        SeaBIOS, finding itself run before, resets the machine once more."""
        LOG.info('%s: QMP system_reset', self.name)
        self.cmd('set-action', reboot='reset')
        self.cmd('system_reset')
        self._rebooting = True

    def stop(self):
        """Whatever state it is in, no QEMU left (a test's cleanup)."""
        try:
            self.shutdown(timeout=10)
        except AbnormalShutdown:
            pass

    # --- commands in the guest ------------------------------------------------------

    def spawn(self, argv, timeout, env=None, what=None):
        """A Job (agent.py) running argv in the guest, which the agent
        kills after timeout seconds."""
        return self.agent.spawn(argv, timeout, env=env, what=what)

    def run(self, argv, timeout, env=None, what=None):
        """argv run to its end in the guest: its Result.  After timeout
        seconds the agent kills it (Result.timed_out)."""
        job = self.spawn(argv, timeout, env=env, what=what)
        result = job.finish()
        LOG.debug('%s: %s\n%s', self.name, result.describe(), result.output)
        return result

    def sh(self, script, *args, timeout, env=None, what=None):
        """bash -c script, with args as $1...: its Result."""
        return self.run(['bash', '-c', script, 'bash', *args], timeout,
                        env=env, what=what or shlex.join([script[:60], *args]))


__all__ = ['QrdmaVM', 'Console', 'Result', 'AgentError', 'AgentLost',
           'BOOT_TIMEOUT']
