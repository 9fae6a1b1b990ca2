#!/bin/sh
# CLI: `ggufq bench --imatrix` times quantization with the synthetic
# importance matrix: accepted (alone, it implies --quantize), the quantize
# table says it used one and how it is made, the types whose quantizers
# ignore an imatrix are listed as not timed instead of timed, ggml's column
# is there when the peer is, and the JSON says the same. No speed is
# asserted. Kept short (--seconds 0.01, cheap types).
# Run by ctest as: sh bench_imatrix.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin bench_imatrix
unset GGUFQ_ISA

# json_ok DESC PYTHON-EXPRESSION over doc: stdout is one JSON document meeting it
json_ok() {
    if ! command -v python3 >/dev/null 2>&1; then
        echo "skip: python3 not found; $1 not parsed"
        return 0
    fi
    python3 - "$TMP/out" "$2" <<'PY' || fail "$1: not valid JSON, or a check failed: $(cat "$TMP/out")"
import json, sys
doc = json.loads(open(sys.argv[1], encoding="utf-8").read())
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
# rows_after HEADING-REGEX: the table's type names after the heading line, to its end
rows_after() {
    sed -n "/$1/,/^\$/p" "$TMP/out" | sed -n 's/^\([a-z0-9_][a-z0-9_]*\)  .*/\1/p' | grep -v '^type$' | tr '\n' ' '
}

FAST="--isa scalar --seconds 0.01 --no-memset"

run bench --imatrix --type q4_0,q8_0 $FAST --no-peer
expect 0 "bench --imatrix"
out_line '^quantize with an imatrix \(synthetic: column i weighs 1 \+ \(i \* 2654435761 mod 1000\) / 250\),$' \
    "bench --imatrix: the quantize table says it used an imatrix, and which"
! grep -q '^quantize: ' "$TMP/out" || fail "bench --imatrix: a quantize table without an imatrix too"
[ "$(rows_after '^quantize with an imatrix')" = "q4_0 " ] ||
    fail "bench --imatrix: quantize rows '$(rows_after '^quantize with an imatrix')', want 'q4_0 ' (q8_0 ignores one)"
has_line "not timed with an imatrix (their quantizers ignore it): q8_0"

run bench --quantize --imatrix --type q4_K,tq1_0,iq4_nl $FAST --no-peer --json
expect 0 "bench --quantize --imatrix --json"
json_ok "bench --imatrix --json" \
    "doc['quantize_imatrix'] is True and doc['quantize_no_imatrix_path'] == ['tq1_0'] and \
     [r['type'] for r in doc['quantize']] == ['q4_K', 'iq4_nl'] and \
     all(r['impl'] == 'scalar' and r['mweights_per_s'] > 0 for r in doc['quantize'])"

run bench --quantize --type q4_0 $FAST --no-peer --json
expect 0 "bench --quantize --json"
json_ok "bench --quantize --json (no --imatrix)" \
    "doc['quantize_imatrix'] is False and 'quantize_no_imatrix_path' not in doc"
run bench --type q4_0 $FAST --no-peer --json
expect 0 "bench --json"
json_ok "bench --json (no --quantize)" "'quantize_imatrix' not in doc and 'quantize' not in doc"

run bench --mt --imatrix --type q4_0
expect 2 "bench --mt --imatrix"
err_has "--imatrix does not go with --mt" "bench --mt --imatrix"

# ggml's quantizers take the same imatrix, side by side (when the peer is here)
if [ -n "${GGUFQ_PEER_DIR:-}" ] && [ -f "$GGUFQ_PEER_DIR/libggml-base.so" ]; then
    run bench --imatrix --type q4_0,q8_0 $FAST
    expect 0 "bench --imatrix with the peer"
    sed -n '/^quantize with an imatrix/,/^geomean/p' "$TMP/out" | grep -q -E '^ +scalar +ggml' ||
        fail "bench --imatrix: no ggml column in the imatrix table: $(cat "$TMP/out")"
    out_line '^geometric mean of ours/ggml, quantize with an imatrix: scalar [0-9.]+x \(1 type\)$' \
        "bench --imatrix: geomean line"
    run bench --imatrix --type q5_1 $FAST --json
    expect 0 "bench --imatrix --json with the peer"
    json_ok "bench --imatrix --json with the peer" \
        "[r['impl'] for r in doc['quantize']] == ['scalar', 'ggml'] and doc['quantize_no_imatrix_path'] == []"
else
    echo "skip: GGUFQ_PEER_DIR has no libggml-base.so; ggml's imatrix column not checked"
fi

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
