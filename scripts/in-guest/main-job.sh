#!/bin/bash
# Runs inside the guest for scripts/main-job: the qrdma device as the
# guest sees it.
set -u

echo "== qrdma in the guest's PCI tree (sysfs) =="
found=0
for d in /sys/bus/pci/devices/*; do
    if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x10f0 ]; then
        found=1
        printf '%s  vendor %s  device %s  class %s  revision %s\n' \
            "$(basename "$d")" "$(cat "$d/vendor")" "$(cat "$d/device")" \
            "$(cat "$d/class")" "$(cat "$d/revision")"
        lspci -nn -s "$(basename "$d")"
    fi
done
[ $found -eq 1 ] || { echo "no qrdma device found"; exit 1; }

echo
echo "== ibv_devinfo =="
ibv_devinfo 2>&1 || true
