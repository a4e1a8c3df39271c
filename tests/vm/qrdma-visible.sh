#!/bin/bash
# The qrdma PCI function as the guest kernel sees it, booted with
# -device qrdma: identity, BARs and capabilities must match
# docs/specs/qrdma.rst.  Prints TAP.
set -u

n=0
failed=0
check() {
    local desc=$1
    shift
    n=$((n + 1))
    if "$@"; then
        echo "ok $n - $desc"
    else
        echo "not ok $n - $desc"
        failed=$((failed + 1))
    fi
}

find_qrdma() {
    local d
    for d in /sys/bus/pci/devices/*; do
        if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x10f0 ]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

# resource line N of sysfs: "start end flags"; prints the size.
bar_size() {
    local start end
    read -r start end _ < <(sed -n "$(($2 + 1))p" "$1/resource")
    echo $((end - start + 1))
}

echo "1..7"
dev=$(find_qrdma) || dev=''
check "a PCI function 1af4:10f0 is present" test -n "$dev"
[ -n "$dev" ] || dev=/nonexistent
check "its class is Ethernet controller (0x020000)" \
    test "$(cat "$dev/class" 2>/dev/null)" = 0x020000
check "its revision is 0x01" test "$(cat "$dev/revision" 2>/dev/null)" = 0x01
check "BAR0 (registers) is 4 KiB" test "$(bar_size "$dev" 0 2>/dev/null)" = 4096
lspci_out=$(lspci -vv -s "$(basename "$dev")" 2>/dev/null)
printf '%s\n' "$lspci_out" | sed 's/^/# /'
check "MSI-X capability with 4 vectors in BAR4" \
    grep -qE 'MSI-X: Enable. Count=4 Masked.' <<<"$lspci_out"
check "PCI Express endpoint capability" grep -q 'Express (v2) Endpoint' <<<"$lspci_out"
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|lockdep|possible recursive locking' || true)
[ -z "$bad" ] || printf '%s\n' "$bad" | sed 's/^/# /'
check "dmesg holds no WARN, BUG, oops or lockdep report" test -z "$bad"

[ "$failed" -eq 0 ]
