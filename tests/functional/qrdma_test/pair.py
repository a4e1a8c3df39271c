# SPDX-License-Identifier: GPL-2.0-or-later
"""Two VMs, A and B, joined by a wire, driven from the host.

The wire is a QEMU dgram netdev on a pair of unix sockets in a directory
of the run's under $TMPDIR: each end names its own socket and its peer's,
so neither VM starts first, and nothing leaves the machine.  With a relay
(tests/tools/qrdma-relay.c, build/qrdma-relay), each end talks to a
socket of the relay instead, which drops, duplicates, reorders, delays or
corrupts frames as its options say.

Each end is of a kind: "qrdma" (a qrdma device, id rdma0 behind a root
port, whose Ethernet function is on the wire, as netdev "wire"; eth0
stays on QEMU's user network) or "rxe" (rdma_rxe on eth0, whose netdev
net0 is the wire; no qrdma device).  A is 10.77.0.1/24 with MAC
52:54:00:4d:00:01, B 10.77.0.2/24 with 52:54:00:4d:00:02.  Each guest
learns its part from its kernel command line, as tests/vm/lib-pair.sh's
pair_args reads it: qrdma.role=a|b, qrdma.kind, qrdma.peer_kind,
qrdma.wire_ip, qrdma.peer_ip, qrdma.pair=NAME (and qrdma.relay=1 behind a
relay).

The guest side of a test is shell functions, run one at a time through
the agent (Pair.call): bash sources tests/vm/lib-qrdma.sh, lib-pair.sh
(then pair_args) and the test's own file, and calls the function.  What
one side's device_up found out (device, GID index, netdev, MAC) the host
passes to every later call on either side as PAIR_* and PAIR_PEER_*
variables, which lib-pair.sh's functions read.

With link=True (both ends qrdma) the two devices are also joined by the
same-host link: a socket chardev "rlink" on link.sock in the wire's
directory, A's QEMU its server, B's the client, which retries every
200 ms (so that either may start first, and a B started again finds A),
each device given link=rlink.  RoCE packets for a GID the peer announced
then go through the devices' shared-memory rings, the rest (and all of
them while the link is down) on the wire; ARP and IP stay on the wire.
Every life of a VM gets the same chardev.  The link does not migrate, so
such a pair does not either.  device_prop reads a property of a role's
device (id rdma0) through QMP, link_state the link's, and wait_link
waits for link-up to be true (or false) on the roles it names.

With share_ram=True as well, each VM's RAM is a memfd shared with QEMU's
peer (memory-backend-memfd, share=on, sealed, as its default is; the
machine's memory-backend, of the VM's size) and each device has
link-share-ram=on: the link's one-copy mode, in which the peer copies
large RC SEND and WRITE payloads straight from the sender's guest RAM
(link-one-copy, link-pkts-one-copy).
"""

import logging
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from . import config
from .machine import BOOT_TIMEOUT, QrdmaVM

LOG = logging.getLogger('qrdma_test.pair')

# The wire's subnet: private, and apart from QEMU's user network
# (10.0.2.0/24) and lib-qrdma.sh's default qrdma address (10.0.3.15).
WIRE_NET = '10.77.0'
ROLES = ('a', 'b')
KINDS = ('qrdma', 'rxe')
GUEST_LIBS = ('tests/vm/lib-qrdma.sh', 'tests/vm/lib-pair.sh')
# What device_up's last line gives, as "key=value ..." (lib-pair.sh's
# pair_device_info), and the variables the host makes of it.
DEVICE_INFO = {'dev': 'DEV', 'gid_index': 'GID_INDEX', 'netdev': 'NETDEV',
               'mac': 'MAC'}
# A qrdma end's device in QOM, and its link's chardev.
DEVICE_PATH = '/machine/peripheral/rdma0'
LINK_CHARDEV = 'rlink'
# The device's properties of the same-host link, and its packet counters
# (which count the link's packets too).
LINK_PROPS = ('link-up', 'link-ups', 'link-pkts-sent', 'link-pkts-rcvd',
              'link-tx-dropped', 'link-errors', 'link-one-copy', 'link-pkts-one-copy',
              'pkts-sent', 'pkts-rcvd')
# A VM's RAM with share_ram: the memory backend the link's peer maps.
SHARED_RAM = 'ram0'
# How often wait_link asks.
LINK_POLL_S = 0.1


def _number(role):
    return ROLES.index(role) + 1


def peer_of(role):
    return 'b' if role == 'a' else 'a'


def device_info(who, ip, result):
    """(the variables of DEVICE_INFO, None) from what who's
    pair_device_info said on its last line, which must name ip; or (None,
    why not)."""
    last = result.output.strip().splitlines()[-1:] or ['']
    words = dict(w.split('=', 1) for w in last[0].split() if '=' in w)
    if result.rc != 0 or not all(k in words for k in DEVICE_INFO):
        return None, f'{who}: no device info from {result.describe()}'
    if words.get('ip') != ip:
        return None, f'{who} says it is {words.get("ip")}, not {ip}'
    return {var: words[key] for key, var in DEVICE_INFO.items()}, None


def start_relay(run_dir, opts, ports, duration, stats=None):
    """The relay (its Popen) with options opts between ports (each
    "RELAY_SOCKET=VM_SOCKET"), for duration seconds at most, its counts
    written to stats: meson's build/qrdma-relay, or, before meson built it
    or with a newer source, one built into run_dir."""
    binary = config.RELAY_BIN
    if (not binary.exists() or
            binary.stat().st_mtime < config.RELAY_SRC.stat().st_mtime):
        binary = Path(run_dir) / 'qrdma-relay'
        subprocess.run(['cc', '-O2', '-Wall', '-o', str(binary),
                        str(config.RELAY_SRC)], check=True)
    argv = ['setpriv', '--pdeathsig', 'KILL', str(binary), *opts,
            '--duration', str(int(duration))]
    if stats:
        argv += ['--stats', str(stats)]
    argv += ports
    LOG.info('relay: %s', shlex.join(argv))
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def stop_relay(relay):
    """The relay of start_relay (if any) stopped, its counts written."""
    if not relay:
        return
    relay.send_signal(signal.SIGTERM)
    try:
        relay.wait(10)
    except subprocess.TimeoutExpired:
        relay.kill()
        relay.wait()


class Wire:
    """The wire's sockets, and the relay in it if there is one."""

    def __init__(self, relay=None, stats=None):
        # Unix socket paths must stay under 108 bytes: a short directory.
        self.dir = Path(tempfile.mkdtemp(prefix='qrdma-pair.',
                                         dir=os.environ.get('TMPDIR', '/tmp')))
        self.relay_opts = shlex.split(relay) if relay else None
        self.stats = stats
        self._relay = None
        # Per role, how many sockets its QEMUs have had.
        self._sockets = {}

    @staticmethod
    def ip(role):
        return f'{WIRE_NET}.{_number(role)}'

    @staticmethod
    def mac(role):
        # As run-vm derives eth0's from its address: 52:54:00 and the
        # address's last three bytes.
        octets = [int(x) for x in Wire.ip(role).split('.')[1:]]
        return '52:54:00:' + ':'.join(f'{x:02x}' for x in octets)

    def netdev(self, role, netdev_id, point=True):
        """role's end of the wire, as a -netdev spec: a socket of its own
        for each QEMU of role's.  The name the other end sends to,
        ROLE.sock, is a link to one of them: to this one at once, or, for
        the destination of a migration (point=False), once point() says.
        QEMU's dgram netdev and the relay send with sendto() to the name,
        which the kernel resolves at every send."""
        self._sockets[role] = self._sockets.get(role, 0) + 1
        local = self.dir / f'{role}.{self._sockets[role]}.sock'
        local.unlink(missing_ok=True)
        if point:
            self.point(role, local)
        remote = self.dir / (f'relay-{role}.sock' if self.relay_opts
                             else f'{peer_of(role)}.sock')
        return (f'dgram,id={netdev_id},local.type=unix,local.path={local},'
                f'remote.type=unix,remote.path={remote}')

    def point(self, role, local=None):
        """ROLE.sock names local (default: role's last socket) from now
        on, replaced at once: no send finds no name."""
        local = local or self.dir / f'{role}.{self._sockets[role]}.sock'
        link = self.dir / f'{role}.sock'
        new = self.dir / f'{role}.sock.new'
        new.unlink(missing_ok=True)
        os.symlink(local.name, new)
        os.replace(new, link)

    def start_relay(self, duration):
        """The relay between the two ends, for duration seconds at most."""
        if not self.relay_opts:
            return
        self._relay = start_relay(self.dir, self.relay_opts,
                                  [f'{self.dir}/relay-{r}.sock={self.dir}/{r}.sock'
                                   for r in ROLES], duration, self.stats)

    def link_chardev(self, role):
        """role's end of the same-host link, as a -chardev spec: A listens
        on link.sock, B connects to it.  A's QEMU does not wait for B
        (wait=off), and B's tries again every 200 ms until A listens, and
        again after A's end closed: neither has to start first, and a B
        started again finds A."""
        path = self.dir / 'link.sock'
        if role == 'a':
            return f'socket,id={LINK_CHARDEV},path={path},server=on,wait=off'
        return f'socket,id={LINK_CHARDEV},path={path},reconnect-ms=200'

    def close(self):
        """The relay stopped (its counts written), the sockets gone."""
        stop_relay(self._relay)
        self._relay = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Pair:
    """VMs A and B of kinds kind_a and kind_b on a wire.  name names the
    run: consoles build/vm-logs/NAME-a.log and NAME-b.log (a VM started
    again: NAME-b.life2.log), each guest's /qrdma/out in
    build/vm-out/NAME/a/ and b/.  smp, mem and append (the end of both
    kernel command lines) as run-vm's; relay: the relay's options, or
    None for a plain wire; link: the two qrdma devices joined by the
    same-host link too, and share_ram: in its one-copy mode (see the
    head of this file)."""

    def __init__(self, name, kind_a, kind_b, *, relay=None, smp=1,
                 mem='2G', append='', args=(), migratable=(), link=False,
                 share_ram=False):
        for kind in (kind_a, kind_b):
            if kind not in KINDS:
                raise ValueError(f'a kind is one of {KINDS}, not {kind!r}')
        if link and (kind_a, kind_b) != ('qrdma', 'qrdma'):
            raise ValueError(f'the link joins two qrdma devices, not {kind_a} and {kind_b}')
        if share_ram and not link:
            raise ValueError('share_ram is the link\'s one-copy mode: it needs link=True')
        self.link = link
        self.share_ram = share_ram
        self.name = name
        self.kinds = {'a': kind_a, 'b': kind_b}
        self.label = f'A={kind_a} B={kind_b}'
        self.out = config.VM_OUT / name
        for role in ROLES:
            shutil.rmtree(self.out / role, ignore_errors=True)
            (self.out / role).mkdir(parents=True)
        self.wire = Wire(relay, stats=self.out / 'relay.txt')
        self.relay = relay is not None
        self.smp, self.mem, self.append, self.args = smp, mem, append, list(args)
        # The roles whose VMs can migrate (their root disks shared).
        self.migratable = tuple(migratable)
        self.vms = {}
        self.lives = {role: 0 for role in ROLES}
        # Per role, what its device_up said (DEVICE_INFO's variables).
        self.devices = {role: {} for role in ROLES}

    @property
    def a(self):
        return self.vms['a']

    @property
    def b(self):
        return self.vms['b']

    def _vm(self, role):
        """A new QrdmaVM of role's next life."""
        self.lives[role] += 1
        life = self.lives[role]
        kind, peer = self.kinds[role], self.kinds[peer_of(role)]
        tag = '' if life == 1 else f'.life{life}'
        append = [f'qrdma.role={role}', f'qrdma.kind={kind}',
                  f'qrdma.peer_kind={peer}', f'qrdma.wire_ip={self.wire.ip(role)}',
                  f'qrdma.peer_ip={self.wire.ip(peer_of(role))}',
                  f'qrdma.pair={self.name}']
        if self.relay:
            append.append('qrdma.relay=1')
        if self.append:
            append.append(self.append)
        options = {'smp': self.smp, 'mem': self.mem, 'append': ' '.join(append),
                   'migratable': role in self.migratable,
                   'out_dir': self.out / role,
                   'console_log': config.VM_LOGS / f'{self.name}-{role}{tag}.log'}
        if kind == 'rxe':
            options['net'] = self.wire.netdev(role, 'net0')
            options['ip'] = f'{self.wire.ip(role)}/24'
            args = []
        else:
            device = f'qrdma,id=rdma0,bus=rp0,netdev=wire,mac={self.wire.mac(role)}'
            args = ['-device', 'pcie-root-port,id=rp0,bus=pcie.0,chassis=1',
                    '-netdev', self.wire.netdev(role, 'wire')]
            if self.link:
                args += ['-chardev', self.wire.link_chardev(role)]
                device += f',link={LINK_CHARDEV}'
            if self.share_ram:
                # The device offers its peer only RAM that is a sealed
                # memfd (as memory-backend-memfd's is by default), and
                # QEMU wants the machine's backend of -m's size.
                args += ['-object', f'memory-backend-memfd,id={SHARED_RAM},size={self.mem},'
                         'share=on',
                         '-machine', f'memory-backend={SHARED_RAM}']
                device += ',link-share-ram=on'
            args += ['-device', device]
        options['args'] = args + self.args
        return QrdmaVM(f'{self.name}-{role}{tag}', **options)

    def launch(self, role):
        """role's VM launched (its next life if one ran before; that one
        must have stopped); wait_booted waits for its guest."""
        if role in self.vms and self.vms[role].is_running():
            raise RuntimeError(f'{role}\'s VM still runs')
        self.devices[role] = {}
        self.vms[role] = self._vm(role)
        self.vms[role].launch()
        return self.vms[role]

    def migrate(self, role, **kwargs):
        """role's VM live-migrated to a new QEMU on this host
        (QrdmaVM.migrate, whose arguments kwargs are): the destination binds
        a socket of its own on the wire, and the wire's name for role moves
        to it once the migration has completed, the source stopped; what
        the peer sent meanwhile is lost, as on a real wire.  role's VM is
        the destination from then on.  The Migration."""
        if self.link:
            # The destination would be a second end on link.sock, which
            # this harness does not arrange.
            raise RuntimeError(f'{self.name}: a pair with the link does not migrate')
        netdev_id = 'net0' if self.kinds[role] == 'rxe' else 'wire'
        spec = self.wire.netdev(role, netdev_id, point=False)

        def dest_args(args):
            return [spec if arg.startswith(f'dgram,id={netdev_id},') else arg
                    for arg in args]

        migration = self.vms[role].migrate(
            dest_args=dest_args, at_switch=lambda _source: self.wire.point(role),
            **kwargs)
        self.vms[role] = migration.dest
        return migration

    def boot(self, timeout=BOOT_TIMEOUT):
        """Both VMs launched and booted (at once: the guests boot side by
        side); the seconds that took."""
        start = time.monotonic()
        if not any(vm.is_running() for vm in self.vms.values()):
            self.wire.start_relay(duration=24 * 3600)
        for role in ROLES:
            self.launch(role)
        for role in ROLES:
            self.vms[role].wait_booted(max(timeout - (time.monotonic() - start), 1))
        return time.monotonic() - start

    # --- the devices, through QMP ---------------------------------------------

    def device_prop(self, role, prop):
        """A QOM property of role's qrdma device (rdma0), read through its
        QEMU's QMP."""
        if self.kinds[role] != 'qrdma':
            raise ValueError(f'{role.upper()} is {self.kinds[role]}: it has no qrdma device')
        return self.vms[role].qom_get(DEVICE_PATH, prop)

    def link_state(self, role):
        """role's device's link properties and packet counters (LINK_PROPS),
        by name."""
        return {prop: self.device_prop(role, prop) for prop in LINK_PROPS}

    def wait_link(self, want_up=True, roles=ROLES, timeout=30):
        """Until link-up is want_up on each of roles: the seconds that took;
        TimeoutError, with each side's link_state, if it is not within
        timeout seconds."""
        start = time.monotonic()
        while True:
            if all(self.device_prop(role, 'link-up') == want_up for role in roles):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                states = '; '.join(f'{role.upper()}: {self.link_state(role)}'
                                   for role in roles)
                raise TimeoutError(f'link-up not {str(want_up).lower()} after {timeout} s: '
                                   f'{states}')
            time.sleep(LINK_POLL_S)

    def wait_link_up(self, timeout=30):
        """Until the link is up on both sides (wait_link)."""
        return self.wait_link(True, ROLES, timeout)

    def close(self):
        """No VM and no relay left, whatever state they were in."""
        for vm in self.vms.values():
            vm.stop()
        self.wire.close()

    # --- the guest side ----------------------------------------------------------

    def env(self, role):
        """The variables of role's calls: its device's and its peer's."""
        env = {}
        for var, value in self.devices[role].items():
            env[f'PAIR_{var}'] = value
        for var, value in self.devices[peer_of(role)].items():
            env[f'PAIR_PEER_{var}'] = value
        return env

    def argv(self, func, *args, script=None):
        """bash running the guest function func (of lib-qrdma.sh,
        lib-pair.sh or script, a file of the checkout) with args."""
        lines = ['set -uo pipefail']
        lines += [f'. "$QRDMA_SRC/{path}" || exit 125' for path in GUEST_LIBS]
        lines.append('pair_args || exit 125')
        if script:
            lines.append(f'. "$QRDMA_SRC/{script}" || exit 125')
        lines.append('"$@"')
        return ['bash', '-c', '\n'.join(lines), 'bash', func, *args]

    def spawn(self, role, func, *args, timeout, script=None, env=None):
        """A Job of func in role's guest (argv's), with env's variables
        beside env()'s."""
        return self.vms[role].spawn(self.argv(func, *args, script=script),
                                    timeout, env={**self.env(role), **(env or {})},
                                    what=f'{role.upper()}: {shlex.join([func, *args])}')

    def call(self, role, func, *args, timeout, script=None, env=None):
        """func run to its end in role's guest: its Result."""
        job = self.spawn(role, func, *args, timeout=timeout, script=script, env=env)
        result = job.finish()
        LOG.debug('%s\n%s', result.describe(), result.output)
        return result

    def record_device(self, role, result):
        """What role's pair_device_info said, for the later calls; or why
        it says nothing."""
        device, why = device_info(role.upper(), self.wire.ip(role), result)
        if device:
            self.devices[role] = device
        return why
