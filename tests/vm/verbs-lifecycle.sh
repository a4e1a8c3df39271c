#!/bin/bash
# The lifecycle rules S1-S7, S10-S16, S20-S22 and S30-S38 through libibverbs
# on qrdma: tests/vm/verbs-lifecycle.c,
# built on the host by scripts/build-provider.  Prints TAP.
set -uo pipefail
. "${QRDMA_SRC:-/qrdma/src}/tests/vm/lib-qrdma.sh"

LOGDIR=${QRDMA_OUT:-/tmp}/verbs-lifecycle
mkdir -p "$LOGDIR"
if ! qrdma_setup >"$LOGDIR/setup.log" 2>&1; then
    echo "1..1"
    echo "not ok 1 - qrdma setup (provider, driver, address, GID)"
    diag "$LOGDIR/setup.log"
    exit 1
fi
timeout 120 "$QRDMA_PROVIDER_DIR/verbs-lifecycle" "$QRDMA_DEV" "$QRDMA_GID_INDEX"
