# SPDX-License-Identifier: GPL-2.0-or-later
"""Many VMs on one hub, driven from the host: the scale test's fabric.

Each VM's wire is a QEMU dgram netdev on a unix socket whose other end is
a port of the relay (tests/tools/qrdma-relay.c), which gives every frame
to every other port, as a hub does, and impairs them as its options say.
Nothing leaves the machine.

Node K (1 to N) is 10.77.0.K/24 with MAC 52:54:00:4d:00:0K on the hub, of
one kind for the whole fabric, as in pair.py: "qrdma" (the qrdma device's
Ethernet function on the hub, eth0 on QEMU's user network) or "rxe"
(rdma_rxe on eth0, which is on the hub).  Each guest learns its part from
its kernel command line, as tests/vm/fabric.sh's fabric_args reads it:
qrdma.node=K, qrdma.nodes=N, qrdma.kind, qrdma.wire_ip, qrdma.fabric=NAME,
qrdma.mtu and qrdma.relay=1.

The guest side of a test is shell functions of tests/vm/lib-qrdma.sh,
lib-pair.sh and fabric.sh, run one at a time per VM through the agent.
What each node's fabric_device_info found out the host passes to every
later call on that node as PAIR_* variables (and the next node's as
PAIR_PEER_*), which lib-pair.sh's functions read.
"""

import os
import shlex
import shutil
import tempfile
import time
from pathlib import Path

from . import config
from .machine import BOOT_TIMEOUT, QrdmaVM
from .pair import KINDS, WIRE_NET, device_info, start_relay, stop_relay

GUEST_LIBS = ('tests/vm/lib-qrdma.sh', 'tests/vm/lib-pair.sh', 'tests/vm/fabric.sh')
# The relay's ports.
NODES_MAX = 8


class Fabric:
    """nodes VMs of kind on the relay's hub; name names the run (consoles
    build/vm-logs/NAME-nK.log, each guest's /qrdma/out in
    build/vm-out/NAME/nK/).  relay: the relay's impairments (options),
    '' for none; smp and mem each VM's, mtu its wire netdev's."""

    def __init__(self, name, kind, nodes, *, relay='', smp=1, mem='512M', mtu=1500):
        if kind not in KINDS:
            raise ValueError(f'a kind is one of {KINDS}, not {kind!r}')
        if not 2 <= nodes <= NODES_MAX:
            raise ValueError(f'from 2 to {NODES_MAX} nodes, not {nodes}')
        self.name, self.kind, self.nodes = name, kind, nodes
        self.relay_opts = shlex.split(relay)
        self.smp, self.mem, self.mtu = smp, mem, mtu
        self.out = config.VM_OUT / name
        shutil.rmtree(self.out, ignore_errors=True)
        self.out.mkdir(parents=True)
        # Unix socket paths must stay under 108 bytes: a short directory.
        self.dir = Path(tempfile.mkdtemp(prefix='qrdma-fabric.',
                                         dir=os.environ.get('TMPDIR', '/tmp')))
        self.vms = {}
        self.devices = {node: {} for node in self.node_list}
        self._relay = None

    @property
    def node_list(self):
        return range(1, self.nodes + 1)

    @staticmethod
    def ip(node):
        return f'{WIRE_NET}.{node}'

    @staticmethod
    def mac(node):
        return f'52:54:00:4d:00:{node:02x}'

    def _start_relay(self):
        self._relay = start_relay(self.dir, self.relay_opts,
                                  [f'{self.dir}/relay-{n}.sock={self.dir}/n{n}.sock'
                                   for n in self.node_list],
                                  24 * 3600, self.out / 'relay.txt')

    def _vm(self, node):
        netdev = (f'dgram,id=wire,local.type=unix,local.path={self.dir}/n{node}.sock,'
                  f'remote.type=unix,remote.path={self.dir}/relay-{node}.sock')
        append = [f'qrdma.node={node}', f'qrdma.nodes={self.nodes}',
                  f'qrdma.kind={self.kind}', f'qrdma.wire_ip={self.ip(node)}',
                  f'qrdma.fabric={self.name}', f'qrdma.mtu={self.mtu}']
        if self.relay_opts:
            append.append('qrdma.relay=1')
        (self.out / f'n{node}').mkdir()
        options = {'smp': self.smp, 'mem': self.mem, 'append': ' '.join(append),
                   'out_dir': self.out / f'n{node}',
                   'console_log': config.VM_LOGS / f'{self.name}-n{node}.log'}
        if self.kind == 'rxe':
            options['net'] = netdev.replace('id=wire', 'id=net0')
            options['ip'] = f'{self.ip(node)}/24'
            options['mac'] = self.mac(node)
        else:
            options['args'] = ['-device', 'pcie-root-port,id=rp0,bus=pcie.0,chassis=1',
                               '-netdev', netdev,
                               '-device', f'qrdma,id=rdma0,bus=rp0,netdev=wire,'
                               f'mac={self.mac(node)}']
        return QrdmaVM(f'{self.name}-n{node}', **options)

    def boot(self, timeout=BOOT_TIMEOUT):
        """The relay started, then every VM launched and booted (side by
        side); the seconds that took."""
        start = time.monotonic()
        self._start_relay()
        for node in self.node_list:
            self.vms[node] = self._vm(node)
            self.vms[node].launch()
        for node in self.node_list:
            self.vms[node].wait_booted(max(timeout - (time.monotonic() - start), 1))
        return time.monotonic() - start

    def close(self):
        """No VM and no relay left, whatever state they were in."""
        for vm in self.vms.values():
            vm.stop()
        stop_relay(self._relay)
        self._relay = None
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- the guest side ----------------------------------------------------------

    def env(self, node):
        """The variables of node's calls: its device's, and the next
        node's as its peer's."""
        peer = node % self.nodes + 1
        env = {f'PAIR_{var}': value for var, value in self.devices[node].items()}
        env.update({f'PAIR_PEER_{var}': value
                    for var, value in self.devices[peer].items()})
        return env

    @staticmethod
    def argv(func, *args):
        lines = ['set -uo pipefail']
        lines += [f'. "$QRDMA_SRC/{path}" || exit 125' for path in GUEST_LIBS]
        lines.append('fabric_args || exit 125')
        lines.append('"$@"')
        return ['bash', '-c', '\n'.join(lines), 'bash', func, *args]

    def spawn(self, node, func, *args, timeout, env=None):
        """A Job of func in node's guest."""
        return self.vms[node].spawn(self.argv(func, *args), timeout,
                                    env={**self.env(node), **(env or {})},
                                    what=f'n{node}: {shlex.join([func, *args])}')

    def record_device(self, node, result):
        """What node's fabric_device_info said, for the later calls; or
        why it says nothing."""
        device, why = device_info(f'n{node}', self.ip(node), result)
        if device:
            self.devices[node] = device
        return why
