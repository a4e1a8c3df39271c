# Shared helpers for the qrdma scripts: paths, pinned versions, stage timing.
# Sourced, never run.

QRDMA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything expensive (downloads, QEMU builds, guest images) lives outside
# the clone so that a fresh clone in CI reuses it; entries are keyed by
# version so a bump never reuses a stale artefact.
QRDMA_CACHE=${QRDMA_CACHE:-$HOME/.cache/qrdma}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}

QEMU_VERSION=10.0.2
QEMU_DEB_VERSION=1:10.0.2+ds-2+deb13u1~bpo12+1
QEMU_ORIG=qemu_10.0.2+ds.orig.tar.xz
QEMU_ORIG_SHA256=0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1
QEMU_SRC=$QRDMA_CACHE/qemu-$QEMU_VERSION/src
# Plain build (TCG) boots the guest VMs; the sanitizer build (no TCG, which
# qtests do not need) runs the qtests under ASan and UBSan.
QEMU_BUILD=$QRDMA_CACHE/qemu-$QEMU_VERSION/build
QEMU_BUILD_SAN=$QRDMA_CACHE/qemu-$QEMU_VERSION/build-san
# The libFuzzer build (clang), for scripts/fuzz-qrdma, from a tree of its
# own that also has hw-rdma/qemu-10.0-fuzz.patch.
QEMU_SRC_FUZZ=$QRDMA_CACHE/qemu-$QEMU_VERSION/src-fuzz
QEMU_BUILD_FUZZ=$QRDMA_CACHE/qemu-$QEMU_VERSION/build-fuzz

RDMA_CORE_VERSION=56.1
RDMA_CORE_ORIG=rdma-core_56.1.orig.tar.gz
RDMA_CORE_ORIG_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8

DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

qrdma_log() {
    printf '%s\n' "$*" >&2
}

qrdma_die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# stage NAME DESCRIPTION CMD...: run one step, saying what it does and how
# long it took, so a slow CI run shows where its time went.  With
# QRDMA_STAGE_LOG set (main-job and test-all set it), each stage, nested ones
# too, is also recorded there for stage_summary.
stage() {
    local name=$1 what=$2 start rc depth=${QRDMA_STAGE_DEPTH:-0} t0=$EPOCHREALTIME
    shift 2
    printf '==> [%s] %s\n' "$name" "$what" >&2
    start=$(date +%s)
    export QRDMA_STAGE_DEPTH=$((depth + 1))
    "$@"
    rc=$?
    QRDMA_STAGE_DEPTH=$depth
    printf '<== [%s] %s in %ss\n' "$name" \
        "$([ $rc -eq 0 ] && echo done || echo "FAILED ($rc)")" \
        "$(( $(date +%s) - start ))" >&2
    [ -z "${QRDMA_STAGE_LOG:-}" ] ||
        printf '%s %s %s %s %s\n' "$t0" "$depth" "$name" \
            "$(( $(date +%s) - start ))" "$rc" >>"$QRDMA_STAGE_LOG"
    return $rc
}

# stage_summary FILE: the stages recorded in FILE, in the order they
# started, nested ones indented under the stage that ran them.
stage_summary() {
    [ -s "$1" ] || return 0
    printf 'time by stage:\n' >&2
    sort -s -k1,1g "$1" |
        awk '{printf "  %*s%-*s %6ds%s\n", 2 * $2, "", 24 - 2 * $2, $3, $4,
              ($5 == 0 ? "" : "  FAILED (" $5 ")")}' >&2
}

# The newest Debian 12 build of Linux 6.12 LTS that apt knows, e.g.
# "6.12.48+deb12-amd64" (resolved, never pinned, so security updates flow in).
guest_kernel_release() {
    apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' |
        awk '{print $1}' | sed 's/^linux-image-//' | sort -V | tail -n 1
}

# guest_kernel_headers KVER: the kbuild directory for building modules
# against the guest kernel KVER, unpacked once into the cache from Debian's
# linux-headers and linux-kbuild packages.  Installing linux-headers would
# pull in the matching linux-image and change what the host boots; unpacked
# here, the host keeps only the tools kbuild runs (setup-host's gcc-12 and
# dwarves).  Prints the directory.
guest_kernel_headers() {
    local kver=$1 base root dl pkg
    base=${kver%-amd64}
    root=$QRDMA_CACHE/kernel-headers/$kver
    if [ ! -f "$root/.done" ]; then
        mkdir -p "$QRDMA_CACHE/kernel-headers"
        rm -rf "$root"
        dl=$(mktemp -d "$QRDMA_CACHE/kernel-headers/dl.XXXXXX")
        # apt drops privileges to _apt for downloads; let it write there.
        [ "$(id -u)" -ne 0 ] || chown _apt "$dl" 2>/dev/null || true
        (cd "$dl" && apt-get download -q "linux-headers-$kver" \
            "linux-headers-$base-common" "linux-kbuild-$base") >/dev/null 2>&1 || {
            rm -rf "$dl"
            qrdma_die "apt-get download of the headers of $kver failed; run scripts/setup-host"
        }
        for pkg in "$dl"/*.deb; do
            dpkg-deb -x "$pkg" "$root" || { rm -rf "$dl" "$root"; qrdma_die "cannot unpack $pkg"; }
        done
        rm -rf "$dl"
        # The flavour's Makefile includes the common one by its absolute
        # installed path; point it at the copy beside it.
        sed -i "s|^include /usr/src/|include $root/usr/src/|" \
            "$root/usr/src/linux-headers-$kver/Makefile"
        touch "$root/.done"
        # Only the headers of the kernel in use are kept.
        find "$QRDMA_CACHE/kernel-headers" -mindepth 1 -maxdepth 1 \
            ! -name "$kver" -exec rm -rf {} +
    fi
    printf '%s\n' "$root/usr/src/linux-headers-$kver"
}

# fetch_verified URL DEST SHA256: download once into the cache, checked.
fetch_verified() {
    local url=$1 dest=$2 sum=$3
    if [ -f "$dest" ] && echo "$sum  $dest" | sha256sum -c --status; then
        return 0
    fi
    mkdir -p "$(dirname "$dest")"
    rm -f "$dest.part"
    curl -fsSL --retry 3 -o "$dest.part" "$url" ||
        qrdma_die "download failed: $url"
    echo "$sum  $dest.part" | sha256sum -c --status ||
        qrdma_die "sha256 mismatch for $url"
    mv "$dest.part" "$dest"
}

# guest_image_dir [KVER]: where scripts/build-guest puts (and scripts/run-vm
# finds) the guest for this kernel release; the key hashes the builder and
# the guest-side files it installs, so editing either selects a new image.
guest_image_dir() {
    local kver=${1:-$(guest_kernel_release)} hash
    [ -n "$kver" ] || qrdma_die "no guest kernel release known to apt; run scripts/setup-host"
    hash=$(cat "$QRDMA_ROOT/scripts/build-guest" "$QRDMA_ROOT"/scripts/guest/* |
           sha256sum | cut -c1-12)
    printf '%s\n' "$QRDMA_CACHE/guest/$kver-$hash"
}
