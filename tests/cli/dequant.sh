#!/bin/sh
# CLI: `ggufq dequant` — ggml's exact floats on every golden file, f16/bf16
# targets, metadata and alignment kept, and failures that leave nothing behind.
# Run by ctest as: sh dequant.sh <path-to-ggufq> <tests-dir>
# Tensor bytes are extracted with the offsets `ggufq info --json` prints.
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin dequant

# has_tensor FILE NAME: the file has a tensor of that name
has_tensor() { "$GGUFQ" info --json "$1" | grep -q -F "{\"name\":\"$2\","; }
# json_has FILE STRING: `info --json FILE` contains STRING
json_has() { "$GGUFQ" info --json "$1" | grep -q -F -e "$2"; }
# extract FILE NAME DEST: copy tensor NAME's bytes to DEST; false if absent. Where they
# are: "file_offset" of `info --json`, which must be the data offset (of the text
# listing) plus "offset".
extract() {
    data=$("$GGUFQ" info "$1" | sed -n 's/^data offset: *//p')
    loc=$("$GGUFQ" info --json "$1" | sed -n \
        "s/.*{\"name\":\"$2\",\"type\":\"[^\"]*\",\"shape\":\[[^]]*\],\"offset\":\([0-9]*\),\"size\":\([0-9]*\),\"file_offset\":\([0-9]*\)}.*/\1 \2 \3/p")
    [ -n "$data" ] && [ -n "$loc" ] || return 1
    set -- "$1" "$2" "$3" $loc
    [ "$6" -eq $((data + $4)) ] || { echo "FAIL: $1: tensor $2: file_offset $6 is not $data + $4"; return 1; }
    tail -c +$(($6 + 1)) "$1" | head -c "$5" >"$3"
    [ "$(wc -c <"$3")" -eq "$5" ]
}
# same_tensor FILE_A NAME_A FILE_B NAME_B DESC: the two tensors' bytes are identical
same_tensor() {
    if ! extract "$1" "$2" "$TMP/a.bin"; then fail "$5: no tensor $2 in $1"; return 1; fi
    if ! extract "$3" "$4" "$TMP/b.bin"; then fail "$5: no tensor $4 in $3"; return 1; fi
    if ! cmp -s "$TMP/a.bin" "$TMP/b.bin"; then
        fail "$5: $2 differs from $4 ($(cmp "$TMP/a.bin" "$TMP/b.bin" 2>&1 | head -n 1))"
        return 1
    fi
}

FIXTURE=$TESTS/data/llama-2-tiny-random.gguf
GOLDEN=$TESTS/golden

# ---- golden files: the output's F32 `quant` equals ggml's `dequant` ----------
for f in "$GOLDEN"/*.gguf; do
    t=$(basename "$f" .gguf)
    out=$TMP/$t-f32.gguf
    run dequant "$f" "$out"
    expect 0 "dequant $t" || continue
    grep -q -F "$out" "$TMP/out" || fail "dequant $t: no summary on stdout"
    json_has "$out" '"general.file_type":0' || fail "dequant $t: general.file_type is not 0"
    json_has "$out" '"golden.type":"'"$t"'"' || fail "dequant $t: metadata not copied"
    types=$("$GGUFQ" info --json "$out" | grep -o -E '"type":"[^"]*"' | sort -u)
    [ "$types" = '"type":"f32"' ] || fail "dequant $t: tensor types are $types"
    n=0
    m=0
    for pair in quant:dequant quant_imatrix:dequant_imatrix raw:raw_dequant; do
        has_tensor "$f" "${pair#*:}" || continue
        m=$((m + 1))
        same_tensor "$out" "${pair%:*}" "$f" "${pair#*:}" "dequant $t" && n=$((n + 1))
    done
    same_tensor "$out" input "$f" input "dequant $t (f32 copied)"
    [ "$n" -eq "$m" ] && echo "ok: dequant $t: $n tensor(s) bit-identical to ggml's dequantization"
    rm -f "$out"
done

# ---- f16 and bf16 targets: F32 weights encoded as ggml does ----------------
for t in f16 bf16; do
    f=$GOLDEN/$t.gguf
    out=$TMP/$t-$t.gguf
    run dequant "$f" "$out" --to "$t"
    expect 0 "dequant $t --to $t" || continue
    same_tensor "$out" input "$f" quant "--to $t: input encoded"
    same_tensor "$out" quant "$f" quant "--to $t: $t tensor copied"
    same_tensor "$out" raw "$f" raw "--to $t: $t tensor with NaN/Inf copied"
    same_tensor "$out" dequant "$f" quant "--to $t: decoded-then-encoded"
    types=$("$GGUFQ" info --json "$out" | grep -o -E '"type":"[^"]*"' | sort -u)
    [ "$types" = "\"type\":\"$t\"" ] || fail "--to $t: tensor types are $types"
done
run dequant "$GOLDEN/q4_K.gguf" "$TMP/q4k-f16.gguf" --to=f16
expect 0 "dequant q4_K --to=f16"
json_has "$TMP/q4k-f16.gguf" '"general.file_type":1' || fail "--to f16: general.file_type is not 1"
run dequant "$GOLDEN/q4_K.gguf" "$TMP/q4k-bf16.gguf" --to BF16
expect 0 "dequant q4_K --to BF16"
json_has "$TMP/q4k-bf16.gguf" '"general.file_type":32' || fail "--to bf16: general.file_type is not 32"
# f16 of the F32 decoding: decode with --to f32, then encode that file with --to f16
run dequant "$TMP/q4k-f16.gguf" "$TMP/q4k-f16-f32.gguf"
expect 0 "dequant of a dequant output"
run dequant "$GOLDEN/q4_K.gguf" "$TMP/q4k-f32.gguf"
run dequant "$TMP/q4k-f32.gguf" "$TMP/q4k-f32-f16.gguf" --to f16
expect 0 "f32 output encoded as f16"
cmp -s "$TMP/q4k-f32-f16.gguf" "$TMP/q4k-f16.gguf" ||
    fail "q4_K -> f16 and q4_K -> f32 -> f16 are not the same file"
rm -f "$TMP"/q4k-*

# ---- the fixture: metadata and order kept, threads give the same bytes -----
run dequant "$FIXTURE" "$TMP/fix1.gguf" --threads 1
expect 0 "dequant fixture --threads 1"
run dequant --threads 2 "$FIXTURE" "$TMP/fix2.gguf"
expect 0 "dequant fixture --threads 2"
cmp -s "$TMP/fix1.gguf" "$TMP/fix2.gguf" || fail "--threads 2 output differs from --threads 1"
# the default and --threads 0: all cores, like requant; the same bytes
run dequant "$FIXTURE" "$TMP/fix0.gguf" --threads 0
expect 0 "dequant fixture --threads 0"
cmp -s "$TMP/fix1.gguf" "$TMP/fix0.gguf" || fail "--threads 0 output differs from --threads 1"
run dequant "$FIXTURE" "$TMP/fixd.gguf"
expect 0 "dequant fixture, default threads"
cmp -s "$TMP/fix1.gguf" "$TMP/fixd.gguf" || fail "default-thread output differs from --threads 1"
same_tensor "$TMP/fix1.gguf" blk.0.attn_norm.weight "$FIXTURE" blk.0.attn_norm.weight "fixture f32 tensor"
"$GGUFQ" info --json "$FIXTURE" | sed 's/"general.file_type":1,/"general.file_type":0,/; s/"tensors":.*//' >"$TMP/a.json"
"$GGUFQ" info --json "$TMP/fix1.gguf" | sed 's/"tensors":.*//' >"$TMP/b.json"
cmp -s "$TMP/a.json" "$TMP/b.json" || fail "fixture: metadata not copied exactly, in order"
json_has "$TMP/fix1.gguf" '{"name":"token_embd.weight","type":"f32","shape":[8,32000],"offset":0,"size":1024000,' ||
    fail "fixture: token_embd.weight not f32 [8,32000]"
# an existing output (not the input) is replaced
printf 'junk' >"$TMP/existing.gguf"
run dequant "$FIXTURE" "$TMP/existing.gguf"
expect 0 "dequant over an existing output file"
cmp -s "$TMP/existing.gguf" "$TMP/fix1.gguf" || fail "existing output not replaced by the right bytes"
rm -f "$TMP/fix1.gguf" "$TMP/fix2.gguf" "$TMP/existing.gguf" "$TMP"/*.json "$TMP"/*.bin

# ---- alignment kept ---------------------------------------------------------
if command -v python3 >/dev/null 2>&1; then
    cat >"$TMP/make_aligned.py" <<'EOF'
# A GGUF v3 file with general.alignment = 64 and two F16 tensors.
import struct, sys
P = struct.pack
def s(b): return P("<Q", len(b)) + b
kv = s(b"general.alignment") + P("<II", 4, 64)
infos = s(b"a") + P("<IqIQ", 1, 8, 1, 0) + s(b"b") + P("<IqIQ", 1, 40, 1, 64)
head = b"GGUF" + P("<IQQ", 3, 2, 1) + kv + infos
data = P("<8H", *range(0x3c00, 0x3c08)) + b"\0" * 48 + P("<40H", *range(0x4000, 0x4028))
open(sys.argv[1], "wb").write(head + b"\0" * (-len(head) % 64) + data)
EOF
    python3 "$TMP/make_aligned.py" "$TMP/al64.gguf"
    run dequant "$TMP/al64.gguf" "$TMP/al64-f32.gguf"
    expect 0 "dequant alignment-64 file"
    json_has "$TMP/al64-f32.gguf" '{"version":3,"alignment":64,' || fail "alignment 64 not kept"
    json_has "$TMP/al64-f32.gguf" '"general.alignment":64,' || fail "general.alignment not copied"
    json_has "$TMP/al64-f32.gguf" '{"name":"b","type":"f32","shape":[40],"offset":64,"size":160,' ||
        fail "alignment 64: tensor b not at offset 64"
else
    echo "skip: python3 not found; alignment not tested"
fi

# ---- alignment 1: tensors at odd offsets (F32, F16, BF16, F64, I32, blocks) --
# Every ISA this CPU runs decodes them to the same bytes, the F32 tensor kept
# exactly; under make test-asan, UBSan stops at any misaligned load.
A1=$TESTS/data/align1_misaligned_f32.gguf
run_isa() { isa=$1; shift; GGUFQ_ISA=$isa "$GGUFQ" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }
for t in f32 f16 bf16; do
    run_isa scalar dequant "$A1" "$TMP/a1-scalar.gguf" --to "$t"
    expect 0 "alignment-1 file --to $t, scalar" || continue
    [ "$t" = f32 ] && same_tensor "$TMP/a1-scalar.gguf" blk.0.attn_q.weight "$A1" blk.0.attn_q.weight \
        "alignment-1 F32 tensor, scalar"
    for isa in avx2 avx512 neon; do
        GGUFQ_ISA=$isa "$GGUFQ" cpu >/dev/null 2>&1 || continue   # not runnable here
        run_isa "$isa" dequant "$A1" "$TMP/a1-$isa.gguf" --to "$t"
        expect 0 "alignment-1 file --to $t, $isa" || continue
        cmp -s "$TMP/a1-$isa.gguf" "$TMP/a1-scalar.gguf" ||
            fail "alignment-1 file --to $t: $isa output differs from scalar's"
    done
    rm -f "$TMP"/a1-*.gguf
done

# ---- refusing to overwrite the input; failures leave nothing behind ---------
mkdir "$TMP/work"
cp "$FIXTURE" "$TMP/work/in.gguf"
ln -s in.gguf "$TMP/work/link.gguf"
for target in "$TMP/work/in.gguf" "$TMP/work/./in.gguf" "$TMP/work/link.gguf"; do
    run dequant "$TMP/work/in.gguf" "$target"
    expect 1 "dequant refuses to overwrite its input ($target)"
    err_has "in.gguf" "overwrite input"
    cmp -s "$TMP/work/in.gguf" "$FIXTURE" || fail "the input was modified"
done
[ "$(ls -A "$TMP/work" | tr '\n' ' ')" = "in.gguf link.gguf " ] ||
    fail "files left behind: $(ls -A "$TMP/work" | tr '\n' ' ')"

run dequant "$FIXTURE" "$TMP/no-such-dir/out.gguf"
expect 1 "dequant into a missing directory"
err_has "no-such-dir" "missing directory"
[ ! -e "$TMP/no-such-dir" ] || fail "missing directory: something was created"

head -c 5000 "$FIXTURE" >"$TMP/work/truncated.gguf"
run dequant "$TMP/work/truncated.gguf" "$TMP/work/out.gguf"
expect 1 "dequant of a truncated file"
err_has "truncated.gguf" "truncated input"
err_has "offset" "truncated input"

run dequant "$TMP/work/missing.gguf" "$TMP/work/out.gguf"
expect 1 "dequant of a missing file"
err_has "missing.gguf" "missing input"
[ "$(ls -A "$TMP/work" | tr '\n' ' ')" = "in.gguf link.gguf truncated.gguf " ] ||
    fail "files left behind: $(ls -A "$TMP/work" | tr '\n' ' ')"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
