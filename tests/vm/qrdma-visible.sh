#!/bin/bash
# The qrdma PCI function as the guest kernel sees it, booted with
# -device qrdma: identity, BARs and capabilities must match
# docs/specs/qrdma.rst.  Prints KTAP (lib-qrdma.sh); loads no driver.
set -u

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/qrdma-visible
# The function's sysfs directory, found by the first test.
dev=/nonexistent
lspci_out=

describe() {
    case $1 in
        present) echo "a PCI function 1af4:10f0 is present" ;;
        class) echo "its class is Ethernet controller (0x020000)" ;;
        revision) echo "its revision is 0x01" ;;
        bar0) echo "BAR0 (registers) is 4 KiB" ;;
        msix) echo "MSI-X capability with 4 vectors in BAR4" ;;
        pcie) echo "PCI Express endpoint capability" ;;
        dmesg) echo "dmesg holds no WARN, BUG, oops or lockdep report" ;;
    esac
}

# resource line N of sysfs: "start end flags"; prints the size.
bar_size() {
    local start end
    read -r start end _ < <(sed -n "$(($2 + 1))p" "$1/resource")
    echo $((end - start + 1))
}

t_present() {
    local d
    for d in /sys/bus/pci/devices/*; do
        if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x10f0 ]; then
            dev=$d
            lspci_out=$(lspci -vv -s "$(basename "$dev")" 2>/dev/null)
            # Shown under the first test whatever it says: not as a
            # failure's log, which the others' would repeat.
            echo "INFO: $(basename "$dev")"
            return 0
        fi
    done
    return 1
}

t_class() { test "$(cat "$dev/class" 2>/dev/null)" = 0x020000; }
t_revision() { test "$(cat "$dev/revision" 2>/dev/null)" = 0x01; }
t_bar0() { test "$(bar_size "$dev" 0 2>/dev/null)" = 4096; }
t_msix() {
    printf '%s\n' "$lspci_out"
    grep -qE 'MSI-X: Enable. Count=4 Masked.' <<<"$lspci_out"
}
t_pcie() {
    printf '%s\n' "$lspci_out"
    grep -q 'Express (v2) Endpoint' <<<"$lspci_out"
}
t_dmesg() {
    ! dmesg | grep -E 'WARNING:|BUG:|Oops|lockdep|possible recursive locking'
}

TESTS=(present class revision bar0 msix pcie dmesg)
run_tests
