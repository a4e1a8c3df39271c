#!/bin/bash
# Runs inside the guest for scripts/main-job: the qrdma device as the
# guest sees it, then the whole verbs stack on it (qrdma.ko, libqrdma) and
# a verbs program: ibv_rc_pingpong, server and client in this VM.
set -u
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

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
echo "== driver and provider =="
qrdma_setup || exit 1
rdma link show "$QRDMA_DEV/1"

echo
echo "== ibv_devinfo =="
ibv_devinfo -d "$QRDMA_DEV" || exit 1

echo
echo "== ibv_rc_pingpong over $QRDMA_DEV (GID index $QRDMA_GID_INDEX) =="
ibv_rc_pingpong -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" -n 1000 &
server=$!
wait_listen 18515 || exit 1
ibv_rc_pingpong -d "$QRDMA_DEV" -g "$QRDMA_GID_INDEX" -n 1000 127.0.0.1 || exit 1
wait "$server" || exit 1
echo "main-job: first pingpong done"
echo
echo "qrdma works: $(qrdma_counter guest_errors) guest errors"
