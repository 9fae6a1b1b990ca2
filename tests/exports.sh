#!/bin/sh
# The shared library's exports: the public API (ggufq_*) only. No internal
# gq_* function is reachable by programs (the writer's failure-injection
# hooks among them), and the library reads no test variables
# (GGUFQ_FAULT_WRITE_AT, GGUFQ_TEST_PAUSE_BEFORE_DATA live in the test build
# of the CLI, tests/cli_testhooks.c).
# Run by ctest as: sh exports.sh <path-to-libggufq.so>
set -u
LIB=$1
command -v nm >/dev/null 2>&1 || { echo "skip: nm not found"; exit 0; }
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

syms=$(nm -D --defined-only "$LIB" | awk '{ print $NF }') || { echo "FAIL: nm $LIB"; exit 1; }
[ -n "$syms" ] || fail "no exported symbols in $LIB"
other=$(printf '%s\n' "$syms" | grep -v -e '^ggufq_' | tr '\n' ' ')
[ -z "$other" ] && echo "ok: only ggufq_* symbols exported" || fail "exports other than ggufq_*: $other"
printf '%s\n' "$syms" | grep -q '^ggufq_requant$' || fail "ggufq_requant is not exported"
for v in GGUFQ_FAULT_WRITE_AT GGUFQ_TEST_PAUSE_BEFORE_DATA; do
    if grep -a -q "$v" "$LIB"; then fail "$LIB mentions $v"; else echo "ok: no $v in the library"; fi
done

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
