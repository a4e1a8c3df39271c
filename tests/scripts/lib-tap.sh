# shellcheck shell=bash
# TAP for the tests of the scripts, sourced: check DESCRIPTION CMD... runs
# CMD and prints "ok N DESCRIPTION" or "not ok N DESCRIPTION" (then, if
# TAP_DETAILS names a file, its last lines as "# " lines); tap_end prints
# the plan and fails if any check did.

TAP_N=0
TAP_FAILED=0

check() {
    local what=$1
    shift
    TAP_N=$((TAP_N + 1))
    if "$@"; then
        echo "ok $TAP_N $what"
    else
        echo "not ok $TAP_N $what"
        TAP_FAILED=$((TAP_FAILED + 1))
        [ -z "${TAP_DETAILS:-}" ] || tail -n 20 "$TAP_DETAILS" | sed 's/^/# /'
        return 1
    fi
}

tap_end() {
    echo "1..$TAP_N"
    [ "$TAP_FAILED" -eq 0 ]
}

# tap_counts FILE: "N passed, N skipped, N failed" of a TAP stream, a
# skipped test (ok ... # SKIP) counted as skipped only.
tap_counts() {
    local ok skip notok
    ok=$(grep -c '^ok ' "$1")
    skip=$(grep -c '^ok .*# SKIP' "$1")
    notok=$(grep -c '^not ok ' "$1")
    printf '%s passed, %s skipped, %s failed' "$((ok - skip))" "$skip" "$notok"
}
