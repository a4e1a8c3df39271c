# SPDX-License-Identifier: GPL-2.0-or-later
"""Where things are: the checkout, and what scripts/run-functional found
through lib.sh (the QEMU binary, the guest image, the accelerator)."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
VM_LOGS = ROOT / 'build' / 'vm-logs'
VM_OUT = ROOT / 'build' / 'vm-out'
# The relay of the fault tests, as meson builds it.
RELAY_BIN = ROOT / 'build' / 'qrdma-relay'
RELAY_SRC = ROOT / 'tests' / 'tools' / 'qrdma-relay.c'


def _from_env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f'{name} is not set: run the test through '
                           'scripts/run-functional')
    return value


def qemu_binary():
    """The plain build's qemu-system-x86_64 of QRDMA_QEMU's version."""
    return _from_env('QRDMA_TEST_QEMU')


def guest_dir():
    """The image run-vm boots: vmlinuz, initrd.img, rootfs.ext4."""
    return Path(_from_env('QRDMA_TEST_GUEST'))


def accel():
    """("kvm" or "tcg", why): lib.sh's vm_accel."""
    return (_from_env('QRDMA_TEST_ACCEL'),
            os.environ.get('QRDMA_TEST_ACCEL_WHY', ''))
