# tests/cli/lib.sh — what the CLI test scripts share (sourced, not run).
#
#   GGUFQ=$1
#   . "$(dirname "$0")/lib.sh"
#   cli_begin NAME          # $TMP (removed at exit), FAILS=0
#   run ARGS...             # ggufq ARGS: stdout in $TMP/out, stderr in $TMP/err, status in $rc
#   expect STATUS WHAT      # "ok: WHAT", or a failure with stderr shown; returns 1 on a mismatch
#   out_has / err_has TEXT WHAT, out_line / has_line ...
#
# A script may define its own variant of any of these after sourcing this file.

cli_begin() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/ggufq-cli-$1.XXXXXX") || exit 1
    trap 'rm -rf "$TMP"' EXIT
    trap 'exit 1' INT TERM HUP
    FAILS=0
}

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

run() { "$GGUFQ" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

expect() {
    if [ "$rc" -ne "$1" ]; then
        fail "$2: exit $rc, expected $1"
        sed 's/^/    stderr: /' "$TMP/err"
        return 1
    fi
    echo "ok: $2"
}

# TEXT (fixed string) somewhere in stdout / stderr.
out_has() { grep -q -F -e "$1" "$TMP/out" || fail "$2: stdout lacks '$1' (got: $(cat "$TMP/out"))"; }
err_has() { grep -q -F -e "$1" "$TMP/err" || fail "$2: stderr lacks '$1' (got: $(cat "$TMP/err"))"; }
# A line of stdout matching the extended regular expression.
out_line() { grep -q -E -e "$1" "$TMP/out" || fail "$2: no line matching '$1'"; }
# A whole line of stdout, exactly.
has_line() { grep -q -x -F -e "$1" "$TMP/out" && echo "ok: $1" || fail "no line '$1'"; }
