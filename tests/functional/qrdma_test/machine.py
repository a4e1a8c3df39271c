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

A migratable VM (its root disk a qcow2 overlay that QEMUs share, where
the others have snapshot=on) live-migrates to a new QEMU on this host
(migrate: the console and the command channel go on in the new QEMU,
whatever was on its way through them at the switch included) and takes
savevm and loadvm; its 9p shares are unmounted in the guest around each,
QEMU's 9p refusing both while the guest has one mounted.
"""

import atexit
import collections
import contextlib
import dataclasses
import logging
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
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

# A live migration of a test guest (a few hundred MiB of RAM touched)
# completes within this even under TCG with traffic running, over a unix
# socket at up to MIGRATE_BANDWIDTH bytes/s; query-migrate every
# MIGRATE_POLL_S.  What the source's sockets still hold once it quit is
# read within DRAIN_TIMEOUT.
MIGRATE_TIMEOUT = 300
MIGRATE_BANDWIDTH = 1 << 30
MIGRATE_POLL_S = 0.1
DRAIN_TIMEOUT = 30
# savevm and loadvm of such a guest, its RAM to and from a qcow2 file.
SNAPSHOT_TIMEOUT = 300
# The 9p shares qrdma-init mounts: tag, mount point, options.
SHARES = (('qrdma_src', '/qrdma/src', 'ro'), ('qrdma_run', '/qrdma/run', 'ro'),
          ('qrdma_out', '/qrdma/out', 'rw'))

_LIVE = set()
# Per VM name, the destinations of migrations launched so far.
_DESTINATIONS = collections.Counter()


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
    closes its end, unless a migration gave it the console of the QEMU the
    guest moved to (move_to): then it reads that one on, in the same log."""

    KEEP_LINES = 20000

    def __init__(self, sock, path):
        self.path = path
        self._sock = sock
        # The next QEMU's console (move_to), and whether the reading ends.
        self._next = None
        self._ending = False
        self._ended = False
        self._lines = collections.deque(maxlen=self.KEEP_LINES)
        self._seen = 0
        self._cond = threading.Condition()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(path, 'w', encoding='utf-8')
        self._thread = self._start()

    def _start(self):
        thread = threading.Thread(target=self._read, daemon=True,
                                  name=f'console {self.path.name}')
        thread.start()
        return thread

    def _read(self):
        buf = b''
        while True:
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b''
            if data:
                buf += data
                *lines, buf = buf.split(b'\n')
                for raw in lines:
                    self._add(raw.decode('utf-8', 'replace').rstrip('\r'))
                continue
            # This QEMU is gone.  If the guest moved on to another, its
            # console carries on from here: what the old one wrote came
            # first, and a line it cut short ends in the new one's.
            self._sock.close()
            with self._cond:
                nxt, note = self._next or (None, None)
                self._next = None
                self._ending = nxt is None
            if nxt is None:
                break
            self._sock = nxt
            self._log.write(f'{note}\n')
        if buf:
            self._add(buf.decode('utf-8', 'replace').rstrip('\r'))
        self._log.close()
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def _add(self, line):
        self._log.write(line + '\n')
        self._log.flush()
        with self._cond:
            self._lines.append(line)
            self._seen += 1
            self._cond.notify_all()

    def move_to(self, sock, note):
        """Once the current QEMU's end closes, read sock on (the console of
        the QEMU a migration moved the guest to); note goes in the log
        there.  If it has closed already, a new thread reads sock, the log
        appended to."""
        with self._cond:
            if not self._ending:
                self._next = (sock, note)
                return
        self._thread.join()
        self._sock = sock
        self._ending = self._ended = False
        self._log = open(self.path, 'a', encoding='utf-8')
        self._log.write(f'{note}\n')
        self._thread = self._start()

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
                if left <= 0 or self._ended:
                    return None
                self._cond.wait(left)

    def tail(self, count=40):
        with self._cond:
            return list(self._lines)[-count:]

    def join(self, timeout):
        self._thread.join(timeout)


class MigrationError(Exception):
    """A migration, savevm or loadvm that did not happen; the guest runs on
    where it was, if its QEMU still runs."""


class RootDisk:    # pylint: disable=too-few-public-methods
    """The root disk of a migratable VM: a qcow2 overlay of the guest's
    image (instead of snapshot=on, whose overlay is a temporary file of
    each QEMU's own), in a directory of its own under $TMPDIR, which every
    QEMU the guest migrates through opens in turn, as migration with shared
    storage has it.  Being qcow2, it also takes savevm's snapshots.  The
    QEMU the guest last ran in removes it when it shuts down."""

    def __init__(self, name):
        qemu_img = shutil.which('qemu-img')
        if not qemu_img:
            raise RuntimeError('no qemu-img (Debian\'s qemu-utils, which '
                               'scripts/setup-host installs)')
        self.dir = Path(tempfile.mkdtemp(prefix=f'qrdma-{name}.',
                                         dir=os.environ.get('TMPDIR', '/tmp')))
        self.path = self.dir / 'root.qcow2'
        subprocess.run([qemu_img, 'create', '-q', '-f', 'qcow2', '-F', 'raw',
                        '-b', str(config.guest_dir() / 'rootfs.ext4'), str(self.path)],
                       check=True, stdin=subprocess.DEVNULL)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclasses.dataclass
class Migration:
    """A live migration that completed: the VM the guest runs in now, the
    source's query-migrate at the end (downtime and total-time in ms, ram:
    transferred, total, mbps, dirty-sync-count...), and what at_switch
    found on the stopped source before it quit."""
    dest: 'QrdmaVM'
    info: dict
    at_switch: object = None

    @property
    def downtime_ms(self):
        return self.info.get('downtime')

    @property
    def total_ms(self):
        return self.info.get('total-time')

    def describe(self):
        ram = self.info.get('ram', {})
        return (f'downtime {self.downtime_ms} ms, total {self.total_ms} ms '
                f'(setup {self.info.get("setup-time")} ms), '
                f'{ram.get("transferred", 0) / 2**20:.0f} MiB sent in '
                f'{ram.get("dirty-sync-count", "?")} passes')


class QrdmaVM(QEMUMachine):
    """One boot of the test guest (a VM that quit and starts again is a new
    QrdmaVM).  The arguments are those of scripts/run-vm: name (the VM's
    name and hostname, its console log build/vm-logs/NAME.log unless
    console_log says otherwise), smp, mem, net (a -netdev spec, id net0,
    for eth0; default user), ip and mac (eth0's; the MAC defaults to
    52:54:00 and the address's last three bytes), append (the kernel
    command line's end), out_dir (/qrdma/out) and args (more QEMU
    arguments, run-vm's after --); migratable for a VM that migrates or
    takes savevm's snapshots (its root disk a RootDisk).  After a
    migration the guest runs in the Migration's dest, a QrdmaVM of the same
    name, console and agent."""

    def __init__(self, name, *, smp=2, mem='2G', net=None,
                 ip='10.0.2.15/24', mac=None, append='', out_dir=None,
                 args=(), console_log=None, migratable=False, _source=None,
                 _dest_args=None):
        # _source: the VM whose guest this one receives (migrate makes
        # such a destination: the source's name, console, disk and QEMU
        # arguments, but its own QEMU log, NAME.migN.qemu.log).
        if _source:
            name, console_log, out_dir = _source.name, _source.console_path, _source.out_dir
        self.name = name
        self.accel, self.accel_why = config.accel()
        self.console_path = Path(console_log or config.VM_LOGS / f'{name}.log')
        self.out_dir = Path(out_dir or config.VM_OUT / name)
        self.console = None
        self.agent = None
        self._console_pair = None
        self._agent_pair = None
        self._rebooting = False
        # How many migrations brought the guest here; a destination's
        # migration URI; a migratable VM's root disk (RootDisk), which the
        # QEMU the guest runs in removes when it shuts down.
        self.migrations = _source.migrations + 1 if _source else 0
        self.incoming = None
        self._disk = None
        self._owns_disk = False
        config.VM_LOGS.mkdir(parents=True, exist_ok=True)
        qemu_name = f'{name}.qemu'
        if _source:
            # Every destination's log its own, a failed one's too.
            _DESTINATIONS[name] += 1
            qemu_name = f'{name}.mig{_DESTINATIONS[name]}.qemu'
        # setpriv: see the head of this file.
        super().__init__(config.qemu_binary(), name=qemu_name,
                         wrapper=['setpriv', '--pdeathsig', 'KILL'],
                         base_temp_dir=os.environ.get('TMPDIR', '/tmp'),
                         log_dir=str(config.VM_LOGS))
        self.set_machine('q35')
        if _source:
            self._disk = _source._disk
            self.incoming = f'unix:{Path(_source.temp_dir) / f"migrate{_DESTINATIONS[name]}.sock"}'
            # _dest_args: what the destination changes of the source's
            # arguments (a socket of its own on a wire, Pair.migrate).
            source_args = list(_source.args)
            self.add_args(*(_dest_args(source_args) if _dest_args else source_args))
            return
        if migratable:
            self._disk = RootDisk(name)
            self._owns_disk = True
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
                '-drive', (f'if=none,id=root,format=qcow2,file={_qesc(self._disk.path)}'
                           if self._disk else
                           'if=none,id=root,format=raw,snapshot=on,'
                           f'file={_qesc(guest / "rootfs.ext4")}'),
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
        args += self._trace_args()
        if self.incoming:
            args += ['-incoming', self.incoming]
        return args

    def _trace_args(self):
        """QRDMA_TRACE's trace events (patterns, comma-separated, as
        -trace enable= takes them), each line stamped with the host's time,
        into QEMU's own log (build/vm-logs/QEMU_NAME.log): both sides of a
        pair on one clock."""
        patterns = [p for p in os.environ.get('QRDMA_TRACE', '').split(',') if p]
        if not patterns:
            return []
        args = ['-msg', 'timestamp=on']
        for pattern in patterns:
            args += ['-trace', f'enable={pattern}']
        return args

    @property
    def qemu_name(self):
        """The QEMU's name, that of its own log (build/vm-logs/QEMU_NAME.log):
        NAME.qemu, and NAME.migN.qemu after N migrations."""
        return self._name

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
        # A migration's destination: the source's Console and Agent carry
        # on over its ends once the guest runs there (_hand_over).
        if not self.incoming:
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
            if self._owns_disk:
                self._disk.remove()
                self._owns_disk = False

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
        lines.append(f'--- {self.name}: QEMU {self._name} ' +
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

    # --- migration, savevm and loadvm ------------------------------------------------

    def unmount_shares(self):
        """The 9p shares unmounted in the guest.  QEMU's virtio-9p refuses
        migration and savevm while the guest has one mounted (a migration
        blocker from the attach to the unmount), so they are unmounted
        around both; meanwhile the guest runs only what its image has, and
        writes nothing to /qrdma/out.  Nothing may hold a file there: a
        job's shell has read the files it sourced, and its cwd is /root."""
        result = self.sh('sync; rc=0; for d; do\n'
                         '  mountpoint -q "$d" || continue\n'
                         '  umount "$d" && continue\n'
                         '  rc=1; echo "$d is busy:"\n'
                         '  ls -l /proc/[0-9]*/cwd /proc/[0-9]*/fd 2>/dev/null | grep -F " $d"\n'
                         'done; exit $rc', *(d for _, d, _ in SHARES),
                         timeout=60, what='unmount the 9p shares')
        if result.rc != 0:
            raise MigrationError(f'{self.name}: the 9p shares would not unmount:\n'
                                 f'{result.output}')

    def mount_shares(self):
        """The 9p shares mounted again in the guest, as qrdma-init mounts
        them."""
        result = self.sh('for spec; do\n'
                         '  IFS=: read -r tag dir mode <<<"$spec"\n'
                         '  mountpoint -q "$dir" || mount -t 9p -o '
                         '"trans=virtio,version=9p2000.L,msize=512000,$mode" "$tag" "$dir" ||'
                         ' exit 1\n'
                         'done', *(':'.join(share) for share in SHARES),
                         timeout=60, what='mount the 9p shares')
        if result.rc != 0:
            raise MigrationError(f'{self.name}: the 9p shares would not mount again:\n'
                                 f'{result.output}')

    @contextlib.contextmanager
    def shares_unmounted(self):
        """The 9p shares unmounted in the guest for the while, mounted again
        after."""
        self.unmount_shares()
        try:
            yield
        finally:
            self.mount_shares()

    def migrate(self, timeout=MIGRATE_TIMEOUT, at_switch=None, dest_args=None):
        """The running guest live-migrated to a new QEMU on this host, as
        QEMU's tests/functional/migration.py does: the destination launched
        with this one's arguments and -incoming on a unix socket, QMP
        migrate here, until query-migrate says completed (MigrationError
        after timeout seconds: the migration is cancelled, the guest runs on
        here).  dest_args, if given, makes the destination's arguments of
        this one's (a list of them).  Then at_switch(self), if given, on the
        stopped source; the
        console and the command channel carry on in the destination (jobs
        started before stay waitable), and this QEMU quits.  Returns a
        Migration, whose dest the caller uses from then on.

        The 9p shares are unmounted in the guest meanwhile (unmount_shares).
        Call it between requests to the agent, never during one: then no
        request is in flight towards the guest, whose port state the source
        saved after the agent had read all it was sent; and what the guest
        wrote to the port, if the source had not passed it on, it saved too
        and the destination passes it on after what the source did (Agent
        and Console move_to).  A migratable VM only (its root disk shared
        by both QEMUs)."""
        if not self._disk:
            raise MigrationError(f'{self.name}: not migratable (QrdmaVM(migratable=True))')
        dest = QrdmaVM(self.name, _source=self, _dest_args=dest_args)
        LOG.info('%s: migrating to %s over %s', self.name, dest.qemu_name, dest.incoming)
        try:
            self.unmount_shares()
            dest.launch()
            info = self._migrate_to(dest, timeout)
        except BaseException:
            dest.kill()
            self._resume_after_failure()
            raise
        probe = None
        if at_switch:
            try:
                probe = at_switch(self)
            except Exception as exc:    # pylint: disable=broad-except
                probe = exc
        self._hand_over(dest)
        dest.mount_shares()
        migration = Migration(dest, info, probe)
        LOG.info('%s: migrated to %s: %s', self.name, dest.qemu_name, migration.describe())
        return migration

    def _migrate_to(self, dest, timeout):
        """QMP migrate to dest, until it completed and dest runs: the
        source's query-migrate at the end."""
        self.cmd('migrate-set-parameters', max_bandwidth=MIGRATE_BANDWIDTH)
        try:
            self.cmd('migrate', uri=dest.incoming)
        except Exception as exc:
            raise MigrationError(f'{self.name}: QMP migrate refused: {exc}') from exc
        deadline = time.monotonic() + timeout
        while True:
            info = self.cmd('query-migrate')
            status = info.get('status')
            if status == 'completed':
                break
            if status in ('failed', 'cancelled'):
                raise MigrationError(f'{self.name}: migration {status}: '
                                     f'{info.get("error-desc", "")}\n{dest.diagnosis()}')
            if not dest.is_running():
                raise MigrationError(f'{self.name}: the destination exited '
                                     f'({status})\n{dest.diagnosis()}')
            if time.monotonic() > deadline:
                self.cmd('migrate_cancel')
                raise MigrationError(f'{self.name}: migration not completed in {timeout} s '
                                     f'({status}): {info}')
            time.sleep(MIGRATE_POLL_S)
        deadline = time.monotonic() + QMP_TIMEOUT
        while True:
            try:
                if dest.cmd('query-status')['status'] == 'running':
                    return info
                state = dest.cmd('query-migrate')
            except Exception as exc:    # pylint: disable=broad-except
                try:
                    dest.wait(10)
                except Exception:   # pylint: disable=broad-except
                    pass
                raise MigrationError(f'{self.name}: the destination failed once the '
                                     f'source completed ({exc!r})\n{dest.diagnosis()}') from exc
            if state.get('status') == 'failed' or time.monotonic() > deadline:
                raise MigrationError(f'{self.name}: the destination does not run after the '
                                     f'source completed: {state}\n{dest.diagnosis()}')
            time.sleep(MIGRATE_POLL_S)

    def _resume_after_failure(self):
        """After a migration that failed: the guest runs here again, its
        shares mounted.  A failed or cancelled migration resumes the source
        itself; one that failed after the switch may not."""
        if not self.is_running():
            return
        try:
            if self.cmd('query-status')['status'] != 'running':
                self.cmd('cont')
            self.mount_shares()
        except Exception:   # pylint: disable=broad-except
            LOG.exception('%s: the guest does not run on after the failed migration',
                          self.name)

    def _hand_over(self, dest):
        """The guest runs in dest: dest takes the console, the command
        channel and the root disk, and this QEMU, stopped since the switch,
        quits.  Its sockets are read to their ends first: its console's by
        the console's thread, which then reads dest's; its channel's by
        Agent.move_to, once it has exited."""
        agent, console = self.agent, self.console
        dest.take_console(console)
        self.agent = self.console = None
        self._agent_pair = self._console_pair = None
        dest._owns_disk, self._owns_disk = True, False
        try:
            self.shutdown(timeout=30)
        except AbnormalShutdown:
            LOG.warning('%s: the migration\'s source did not quit; killed', self.qemu_name)
        dest.take_agent(agent)

    def take_console(self, console):
        """A migration's destination (migrate calls it): the guest's
        Console reads on from this QEMU's console once the source's ends."""
        console.move_to(self._console_pair[1],
                        f'--- qrdma_test: migrated; the console goes on in {self.qemu_name}')
        self.console = console

    def take_agent(self, agent):
        """A migration's destination, once the source has exited: the
        guest's Agent carries on over this QEMU's channel."""
        self.agent = agent
        agent.move_to(self._agent_pair[1], DRAIN_TIMEOUT)

    def hmp(self, command, timeout=QMP_TIMEOUT):
        """An HMP command through QMP's human-monitor-command: its output;
        MigrationError if it says Error."""
        self._qmp.settimeout(timeout)
        try:
            out = self.cmd('human-monitor-command', command_line=command)
        finally:
            self._qmp.settimeout(QMP_TIMEOUT)
        if re.search(r'^Error', out, re.M):
            raise MigrationError(f'{self.name}: {command}: {out.strip()}')
        return out

    def savevm(self, tag):
        """HMP savevm tag (the snapshot in the root disk, which a
        migratable VM has as qcow2), its 9p shares unmounted meanwhile: the
        seconds it took.  The guest runs on."""
        with self.shares_unmounted():
            start = time.monotonic()
            self.hmp(f'savevm {tag}', timeout=SNAPSHOT_TIMEOUT)
            took = time.monotonic() - start
        return took

    def loadvm(self, tag):
        """HMP loadvm tag: the guest goes back to where savevm left it,
        and runs on from there; the seconds it took.  Its shares are
        unmounted first, as they were at the savevm (the guest is back to
        that), and mounted again after.  What the agent was asked between
        the savevm and now the guest forgets: a job started meanwhile is
        gone, and one started before runs again from where it was."""
        with self.shares_unmounted():
            start = time.monotonic()
            self.hmp(f'loadvm {tag}', timeout=SNAPSHOT_TIMEOUT)
            took = time.monotonic() - start
        return took

    def qom_get(self, path, prop):
        return self.cmd('qom-get', path=path, property=prop)

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


__all__ = ['QrdmaVM', 'Console', 'Migration', 'MigrationError', 'Result',
           'AgentError', 'AgentLost', 'BOOT_TIMEOUT']
