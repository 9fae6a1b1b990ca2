#!/bin/sh
# CLI: `ggufq types` — the ggml types and llama.cpp's file types, exact lines
# for a few of each, their counts, and the JSON form.
# Run by ctest as: sh types.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
. "$(dirname "$0")/lib.sh"
cli_begin types

run types
[ "$rc" -eq 0 ] || fail "types: exit $rc"
[ ! -s "$TMP/err" ] || fail "types: stderr: $(cat "$TMP/err")"
has_line "type      id  block  bytes      bpw  imatrix  quantize"
has_line "f32        0      1      4       32  no       yes"
has_line "q4_K      12    256    144      4.5  no       yes"
has_line "q6_K      14    256    210   6.5625  no       yes"
has_line "iq2_xxs   16    256     66   2.0625  yes      yes"
has_line "i32       26      1      4       32  no       no"
has_line "q2_0      42     64     18     2.25  no       yes"
has_line "name      ftype  type    alias of    bpw  imatrix llama-quantize says"
has_line "Q4_K_M       15  q4_K    -             -  no      4.58G, +0.1754 ppl @ Llama-3-8B"
has_line "Q4_K         15  q4_K    Q4_K_M        -  no      alias for Q4_K_M"
has_line "IQ2_S        28  iq2_xs  -           2.5  yes     2.5  bpw quantization"
has_line "Q1_0         40  q1_0    -         1.125  no      1.125 bpw quantization"
has_line "COPY          0  (kept)  -             -  no      only copy tensors, no quantizing"
# 35 ggml types (ids 0-42 less the 8 removed), 39 names in llama-quantize's list
types=$(sed -n '/^type  /,/^$/p' "$TMP/out" | grep -c -E '^[A-Za-z0-9_]+ +[0-9]+ ')
[ "$types" -eq 35 ] || fail "types: $types type lines, expected 35"
recipes=$(sed -n '/^name  /,$p' "$TMP/out" | grep -c -E '^[A-Z0-9_]+ +[0-9]+ ')
[ "$recipes" -eq 39 ] || fail "types: $recipes file type lines, expected 39"

run types --json
[ "$rc" -eq 0 ] || fail "types --json: exit $rc"
[ "$(wc -l <"$TMP/out")" -eq 1 ] || fail "types --json: not one line"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$TMP/out" <<'PY' || fail "types --json: not valid JSON, or a check failed"
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
t = {x["name"]: x for x in doc["types"]}
r = {x["name"]: x for x in doc["recipes"]}
assert len(t) == 35 and len(doc["recipes"]) == 39
assert t["q4_K"] == {"name": "q4_K", "id": 12, "block_size": 256, "block_bytes": 144, "bpw": 4.5,
                     "needs_imatrix": False, "can_quantize": True}
assert t["iq1_s"]["needs_imatrix"] and not t["f64"]["can_quantize"]
assert r["Q4_K"] == {"name": "Q4_K", "file_type": 15, "default_type": "q4_K", "alias_of": "Q4_K_M",
                     "copy": False, "bpw": None, "needs_imatrix": False, "description": "alias for Q4_K_M"}
assert r["IQ2_XXS"]["bpw"] == 2.06 and r["IQ2_XXS"]["needs_imatrix"]
assert r["COPY"]["copy"] and r["COPY"]["default_type"] is None and r["COPY"]["file_type"] == 0
assert [x["name"] for x in doc["recipes"]][:3] == ["Q1_0", "Q2_0", "Q4_0"]
PY
    echo "ok: types --json"
fi

run types extra
[ "$rc" -eq 2 ] || fail "types extra: exit $rc, expected 2"
run types --bogus
[ "$rc" -eq 2 ] || fail "types --bogus: exit $rc, expected 2"
grep -q "unknown option '--bogus'" "$TMP/err" || fail "types --bogus: $(cat "$TMP/err")"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
