#!/bin/sh
# CLI: `ggufq cpu --kernels` — which ISA's code runs each (type, operation):
# all scalar under GGUFQ_ISA=scalar, the AVX2 rows under GGUFQ_ISA=avx2 (when
# this CPU has it), the JSON form agreeing with the text.
# Run by ctest as: sh cpu.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
. "$(dirname "$0")/lib.sh"
cli_begin cpu

# run any command (env GGUFQ_ISA=... "$GGUFQ" ...), not only ggufq
run() { "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

run env GGUFQ_ISA=scalar "$GGUFQ" cpu --kernels
[ "$rc" -eq 0 ] || fail "cpu --kernels: exit $rc"
has_line "kernels (under scalar; '-': not available):"
has_line "  type     dequantize quantize   quantize+imatrix to_f16         to_bf16"
has_line "  q4_K     scalar     scalar     scalar           scalar+convert scalar+convert"
has_line "  iq2_xxs  scalar     scalar     scalar           scalar+convert scalar+convert"
has_line "  i32      scalar     -          -                scalar+convert scalar+convert"
rows=$(sed -n '/^kernels/,$p' "$TMP/out" | grep -c '^  [a-z]')
[ "$rows" -eq 36 ] && echo "ok: 35 types and a header" || fail "$rows rows, not 36"
sed -n '/^kernels/,$p' "$TMP/out" | grep -q 'avx\|neon' && fail "GGUFQ_ISA=scalar: a SIMD kernel is listed"

run "$GGUFQ" cpu
grep -q "^kernels" "$TMP/out" && fail "cpu without --kernels prints the table"

if "$GGUFQ" cpu | grep -q '^  avx2     yes$'; then
    run env GGUFQ_ISA=avx2 "$GGUFQ" cpu --kernels
    grep -q '^  q4_K     avx2       avx2       avx2             avx2' "$TMP/out" \
        && echo "ok: q4_K on avx2" || fail "q4_K's row under avx2"
    has_line "  f32      scalar     scalar     scalar           scalar+convert scalar+convert"
    run env GGUFQ_ISA=avx2 "$GGUFQ" cpu --kernels --json
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
k = d["kernels"]
assert len(k) == 35, len(k)
assert {o: k["q4_K"][o] for o in ("dequantize", "quantize", "quantize_imatrix")} == \
    {"dequantize": "avx2", "quantize": "avx2", "quantize_imatrix": "avx2"}, k["q4_K"]
assert k["q4_K"]["dequantize_f16"] in ("avx2", "avx2+convert"), k["q4_K"]
assert k["i8"]["dequantize_bf16"] == "avx2+convert", k["i8"]
assert k["i8"]["quantize"] is None
assert d["selected"] == "avx2"
' "$TMP/out" && echo "ok: --json kernels" || fail "--json kernels: $(head -c 300 "$TMP/out")"
else
    echo "skip: no AVX2 here: its rows not checked"
fi

run "$GGUFQ" cpu --kernel
[ "$rc" -eq 2 ] || fail "cpu --kernel: exit $rc, not 2"

[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all cpu checks passed"
