#!/bin/bash
# The kernel's RDMA storage and file protocols as clients of qrdma, each
# beside the same on rxe in this one guest: NFS over RDMA (nfsd on port
# 20049, a proto=rdma mount), iSER (a LIO target made with targetcli-fb,
# open-iscsi logging in over the iser transport), SMB Direct (ksmbd and
# cifs) and NVMe over RDMA driven by fio with crc32c verification.  Server
# and client are both in this guest; each client reaches the server over
# the device's RoCE GID address: qrdma's $QRDMA_IP, rxe's eth0 address.
# Run inside the guest as root by
#   scripts/build-driver && scripts/install-guest
#   scripts/run-vm --script tests/vm/clients-storage.sh -- \
#       -device pcie-root-port,id=rp0,bus=pcie.0,chassis=1 -device qrdma,bus=rp0
# Prints TAP; exits nonzero if any test failed.  Outcomes and figures of
# both devices, side by side: $QRDMA_OUT/clients-storage.txt; command
# output in $QRDMA_OUT/clients-storage/.
set -uo pipefail

# run-vm copies the script to /qrdma/run: the library is in the checkout.
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/clients-storage
mkdir -p "$LOGDIR"
: >"$LOGDIR/results.tsv"
: >"$LOGDIR/results-known"
: >"$LOGDIR/results-skipped"

SMB_DIRECT_OFF="Debian's 6.12 kernel is built without CONFIG_SMB_SERVER_SMBDIRECT and CONFIG_CIFS_SMB_DIRECT"

describe() {
    case $1 in
        rxe_up) echo "rdma_rxe on eth0, the reference" ;;
        nfs_*) echo "NFS over RDMA on ${1#nfs_}: nfsd on port 20049, mount proto=rdma, files written, remounted, compared" ;;
        iser_*) echo "iSER on ${1#iser_}: LIO target (targetcli), open-iscsi over iser, ext4 on the LUN written, logged in again, checked" ;;
        smb_direct_*) echo "SMB Direct on ${1#smb_direct_}: ksmbd with RDMA, cifs mount with rdma" ;;
        nvme_fio_*) echo "NVMe over RDMA on ${1#nvme_fio_}: fio randwrite/write with verify=crc32c at several depths and sizes" ;;
        teardown) echo "servers stopped, targets and exports removed" ;;
    esac
}


# now: seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
# mib_s BYTES START END: MiB/s to one decimal.
mib_s() { awk -v b="$1" -v s="$2" -v e="$3" 'BEGIN {printf "%.1f", b / 1048576 / (e - s)}'; }

# --- NFS over RDMA ------------------------------------------------------------------

NFS_EXPORT=/srv/nfs
NFS_UP=0

# nfsd with an RDMA listener on port 20049 (NFSv4 only: no rpcbind, no
# statd), exporting $NFS_EXPORT as the v4 root.  The grace period is the
# shortest the kernel takes, or the first OPENs wait 90 s.
nfs_server_up() {
    [ "$NFS_UP" = 1 ] && return 0
    modprobe -a nfsd rpcrdma nfsv4 || return 1
    mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
    echo 10 >/proc/fs/nfsd/nfsv4gracetime
    echo 10 >/proc/fs/nfsd/nfsv4leasetime
    mkdir -p "$NFS_EXPORT" /var/lib/nfs
    echo "$NFS_EXPORT *(rw,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports
    exportfs -ra || return 1
    rpc.mountd -N 3 || return 1
    rpc.nfsd -N 3 4 || return 1
    echo "rdma 20049" >/proc/fs/nfsd/portlist || return 1
    cat /proc/fs/nfsd/portlist
    wait_listen_rdma 20049 || return 1
    NFS_UP=1
}

nfs_server_down() {
    [ "$NFS_UP" = 1 ] || return 0
    rpc.nfsd 0
    exportfs -ua
    pkill -x rpc.mountd
    NFS_UP=0
}

# make_tree DIR: a 32 MiB file and 64 small ones of random sizes, random
# bytes.
make_tree() {
    local i
    mkdir -p "$1/small" || return 1
    head -c 32M /dev/urandom >"$1/big" || return 1
    for i in $(seq 64); do
        head -c $((RANDOM % 65536 + 1)) /dev/urandom >"$1/small/f$i" || return 1
    done
}

t_nfs() {
    local dev=$1 ip mnt src=/tmp/nfs-src s e
    ip=$(dev_addr "$dev")
    mnt=/mnt/nfs-$dev
    nfs_server_up || return 1
    [ -d "$src" ] || make_tree "$src" || return 1
    mkdir -p "$mnt" "$NFS_EXPORT/$dev" || return 1
    mount -t nfs4 -o proto=rdma,port=20049,vers=4.2 "$ip:/$dev" "$mnt" || return 1
    grep " $mnt " /proc/mounts
    grep -q " $mnt .*proto=rdma" /proc/mounts || { umount "$mnt"; return 1; }
    # The first OPEN waits out the server's grace period: not timed.
    echo warm >"$mnt/.warm" && rm "$mnt/.warm" || { umount "$mnt"; return 1; }
    s=$(now)
    cp -r "$src/." "$mnt/" && sync || { umount "$mnt"; return 1; }
    e=$(now)
    result "write 32 MiB + 64 files" "$(mib_s $((32 << 20)) "$s" "$e") MiB/s"
    umount "$mnt" || return 1
    # A fresh mount: what is read comes from the server, not the cache.
    mount -t nfs4 -o proto=rdma,port=20049,vers=4.2 "$ip:/$dev" "$mnt" || return 1
    s=$(now)
    cat "$mnt/big" >/dev/null
    e=$(now)
    result "read 32 MiB" "$(mib_s $((32 << 20)) "$s" "$e") MiB/s"
    diff -r "$src" "$mnt" || { umount "$mnt"; return 1; }
    # And the server's own view of the files.
    diff -r "$src" "$NFS_EXPORT/$dev" || { umount "$mnt"; return 1; }
    umount "$mnt" || return 1
    rm -rf "${NFS_EXPORT:?}/$dev"
    echo "INFO: NFS over RDMA via $ip: 32 MiB and 64 files written, read back after a remount, equal on the server"
}
t_nfs_qrdma() { t_nfs qrdma; }
t_nfs_rxe() { t_nfs rxe; }

# --- iSER ---------------------------------------------------------------------------

IQN=iqn.2025-01.org.qrdma:clients
ISER_UP=0

# targetcli-fb asks the system bus for tcmu-runner's handlers and exits
# when there is no bus to ask: a bus (with nothing on it) is enough.
system_bus_up() {
    [ -S /run/dbus/system_bus_socket ] && return 0
    mkdir -p /run/dbus
    dbus-daemon --session --fork --nopidfile \
        --address=unix:path=/run/dbus/system_bus_socket
}

# tcli CMD...: one targetcli command (it has no batch mode), echoed.
tcli() {
    echo "targetcli $*"
    targetcli "$@"
}

# One target, a 64 MiB ramdisk LUN, a portal on each device's address with
# iSER enabled (TCP stays, for discovery), open to any initiator.
iser_target_up() {
    local dev ip
    [ "$ISER_UP" = 1 ] && return 0
    modprobe -a target_core_mod iscsi_target_mod ib_isert ib_iser sd_mod || return 1
    mkdir -p /etc/target
    system_bus_up || return 1
    tcli /backstores/ramdisk create name=clients size=64M &&
        tcli /iscsi create "$IQN" &&
        tcli "/iscsi/$IQN/tpg1/luns" create /backstores/ramdisk/clients &&
        tcli "/iscsi/$IQN/tpg1/portals" delete 0.0.0.0 3260 || return 1
    for dev in qrdma rxe; do
        ip=$(dev_addr "$dev")
        tcli "/iscsi/$IQN/tpg1/portals" create "$ip" 3260 &&
            tcli "/iscsi/$IQN/tpg1/portals/$ip:3260" enable_iser boolean=true || return 1
    done
    tcli "/iscsi/$IQN/tpg1" set attribute authentication=0 \
        demo_mode_write_protect=0 generate_node_acls=1 cache_dynamic_acls=1 || return 1
    tcli ls
    # /run is a fresh tmpfs: iscsiadm and iscsid lock in /run/lock/iscsi.
    mkdir -p /run/lock/iscsi
    pgrep -x iscsid >/dev/null || iscsid || return 1
    ISER_UP=1
}

iser_target_down() {
    [ "$ISER_UP" = 1 ] || return 0
    iscsiadm -m node --logoutall=all
    iscsiadm -m node -o delete
    targetcli clearconfig confirm=True
    pkill -x iscsid
    ISER_UP=0
}

# iser_login IP: log in to $IQN through IP's portal over iser; prints the
# disk.
iser_login() {
    local ip=$1 sid disk
    iscsiadm -m node -T "$IQN" -p "$ip:3260" -I iser --login >&2 || return 1
    sid=$(iscsiadm -m session | awk -v p="$ip:3260," '$1 == "iser:" && index($3, p) == 1 {gsub(/[][]/, "", $2); print $2}')
    [ -n "$sid" ] || { iscsiadm -m session >&2; echo "no iser session to $ip" >&2; return 1; }
    for _ in $(seq 100); do
        disk=$(iscsiadm -m session -r "$sid" -P 3 | awk '/Attached scsi disk/ {print $4; exit}')
        [ -n "$disk" ] && [ -b "/dev/$disk" ] && break
        sleep 0.1
    done
    [ -n "$disk" ] && [ -b "/dev/$disk" ] || { echo "no disk on session $sid" >&2; return 1; }
    echo "/dev/$disk"
}

iser_logout() {
    iscsiadm -m node -T "$IQN" -p "$1:3260" -I iser --logout
}

t_iser() {
    local dev=$1 ip disk mnt=/mnt/iser src=/tmp/iser-src s e
    ip=$(dev_addr "$dev")
    iser_target_up || return 1
    [ -d "$src" ] || make_tree "$src" || return 1
    if ! iscsiadm -m discovery -t sendtargets -p "$ip:3260" -I iser; then
        # What the CM and the device saw (issue 25 item 11): the CM IDs
        # left, and the port's counters (dropped and duplicate packets).
        rdma res show cm_id
        rdma statistic show link "$(dev_name "$dev")/1"
        return 1
    fi
    disk=$(iser_login "$ip") || return 1
    iscsiadm -m session
    echo "INFO: $IQN over iser via $ip: $disk"
    mkdir -p "$mnt"
    mkfs.ext4 -q -F "$disk" && mount "$disk" "$mnt" || { iser_logout "$ip"; return 1; }
    s=$(now)
    cp -r "$src/." "$mnt/" && sync || { umount "$mnt"; iser_logout "$ip"; return 1; }
    e=$(now)
    result "write 32 MiB + 64 files" "$(mib_s $((32 << 20)) "$s" "$e") MiB/s"
    umount "$mnt" && iser_logout "$ip" || return 1
    # A new session, a new disk: nothing of it is in the page cache.
    disk=$(iser_login "$ip") || return 1
    e2fsck -fn "$disk" && mount "$disk" "$mnt" || { iser_logout "$ip"; return 1; }
    s=$(now)
    cat "$mnt/big" >/dev/null
    e=$(now)
    result "read 32 MiB" "$(mib_s $((32 << 20)) "$s" "$e") MiB/s"
    diff -r "$src" "$mnt" -x lost+found || { umount "$mnt"; iser_logout "$ip"; return 1; }
    umount "$mnt" && iser_logout "$ip"
}
t_iser_qrdma() { t_iser qrdma; }
t_iser_rxe() { t_iser rxe; }

# --- SMB Direct -------------------------------------------------------------------

# ksmbd's RDMA transport is its smb_direct_* functions, cifs's its smbd_*
# ones: without them in the kernel there is nothing to test.
t_smb_direct() {
    modprobe -a ksmbd cifs || return 1
    if ! grep -qE ' (smb_direct_|smbd_)' /proc/kallsyms; then
        echo "$SMB_DIRECT_OFF"
        return 77
    fi
    echo "this kernel has SMB Direct: the test wants ksmbd-tools and cifs-utils in the image"
    return 1
}
t_smb_direct_qrdma() { t_smb_direct; }
t_smb_direct_rxe() { t_smb_direct; }

# --- NVMe over RDMA with fio ------------------------------------------------------

NVMET=/sys/kernel/config/nvmet
NQN=qrdma-clients
NVME_UP=0

# nvmet-rdma serving a memory-backed null_blk, with a port on each
# device's address (1 qrdma, 2 rxe).
nvme_target_up() {
    local port=0 dev
    [ "$NVME_UP" = 1 ] && return 0
    modprobe null_blk nr_devices=1 memory_backed=1 gb=1 &&
        modprobe -a nvmet-rdma nvme-rdma || return 1
    mkdir -p "$NVMET/subsystems/$NQN/namespaces/1" &&
        echo 1 >"$NVMET/subsystems/$NQN/attr_allow_any_host" &&
        echo -n /dev/nullb0 >"$NVMET/subsystems/$NQN/namespaces/1/device_path" &&
        echo 1 >"$NVMET/subsystems/$NQN/namespaces/1/enable" || return 1
    for dev in qrdma rxe; do
        port=$((port + 1))
        mkdir -p "$NVMET/ports/$port" &&
            echo rdma >"$NVMET/ports/$port/addr_trtype" &&
            echo ipv4 >"$NVMET/ports/$port/addr_adrfam" &&
            dev_addr "$dev" >"$NVMET/ports/$port/addr_traddr" &&
            echo 4420 >"$NVMET/ports/$port/addr_trsvcid" &&
            ln -s "$NVMET/subsystems/$NQN" "$NVMET/ports/$port/subsystems/$NQN" || return 1
    done
    NVME_UP=1
}

nvme_target_down() {
    local port
    [ "$NVME_UP" = 1 ] || return 0
    nvme disconnect -n "$NQN" 2>/dev/null
    for port in 1 2; do
        rm -f "$NVMET/ports/$port/subsystems/$NQN"
        rmdir "$NVMET/ports/$port"
    done
    echo 0 >"$NVMET/subsystems/$NQN/namespaces/1/enable"
    rmdir "$NVMET/subsystems/$NQN/namespaces/1" "$NVMET/subsystems/$NQN"
    modprobe -r nvme-rdma nvmet-rdma null_blk
    NVME_UP=0
}

# fio_figures JSON: "W write IOPS, W MiB/s; R verify-read IOPS, R MiB/s" of
# fio's JSON output.
fio_figures() {
    python3 - "$1" <<'EOF'
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
w, r = job["write"], job["read"]
print("write %d IOPS %.1f MiB/s, verify-read %d IOPS %.1f MiB/s" % (
    w["iops"], w["bw"] / 1024, r["iops"], r["bw"] / 1024))
EOF
}

# (name bs iodepth size rw) of the fio jobs, each a write with verify.
FIO_JOBS=(
    "4k-qd1 4k 1 8m randwrite"
    "4k-qd32 4k 32 16m randwrite"
    "128k-qd8 128k 8 64m write"
    "1m-qd2 1m 2 64m randwrite"
)

t_nvme_fio() {
    local dev=$1 ip ns job name bs qd size rw out rc=0
    ip=$(dev_addr "$dev")
    nvme_target_up || return 1
    nvme connect -t rdma -a "$ip" -s 4420 -n "$NQN" -i 2 || return 1
    wait_for 10 nvme_namespace || { echo "no namespace"; nvme disconnect -n "$NQN"; return 1; }
    ns=$(nvme_namespace)
    nvme list-subsys
    echo "INFO: $NQN over $ip: $ns"
    for job in "${FIO_JOBS[@]}"; do
        read -r name bs qd size rw <<<"$job"
        out=$LOGDIR/fio-$name-$dev.json
        echo "--- fio $name: $rw bs=$bs iodepth=$qd size=$size verify=crc32c"
        if ! fio --name="$name" --filename="$ns" --direct=1 --ioengine=libaio \
                --rw="$rw" --bs="$bs" --iodepth="$qd" --size="$size" \
                --verify=crc32c --verify_fatal=1 --randrepeat=0 \
                --output-format=json --output="$out"; then
            cat "$out"
            rc=1
            result "fio $name" "FAILED"
            continue
        fi
        result "fio $name" "$(fio_figures "$out")"
        echo "$name: $(fio_figures "$out")"
    done
    nvme disconnect -n "$NQN" || rc=1
    return "$rc"
}
t_nvme_fio_qrdma() { t_nvme_fio qrdma; }
t_nvme_fio_rxe() { t_nvme_fio rxe; }

t_teardown() {
    local rc=0
    nfs_server_down || rc=1
    iser_target_down || rc=1
    nvme_target_down || rc=1
    rdma res show cm_id
    return "$rc"
}

run_test qrdma_setup
run_test rxe_up
for client in nfs iser smb_direct nvme_fio; do
    run_test "${client}_qrdma"
    run_test "${client}_rxe"
done
run_test teardown
run_test qrdma_unload
run_test dmesg_clean
results_table "$LOGDIR/../clients-storage.txt" \
    "Kernel storage and file clients over RDMA, one VM, server and client in it"
tap_end
