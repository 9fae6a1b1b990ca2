#!/bin/sh
# CLI: llama-quantize's command language in `ggufq requant` — --tensor-type-file
# (white-space separated REGEX=TYPE rules, read in place among the
# --tensor-type options; '#' comments), --prune-layers, and the summary's
# target. Usage errors exit 2 and name the file and line. Parity of pruning
# with llama.cpp is tested in tests/test_requant_prune.c.
# Run by ctest as: sh requant_lang.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin requant-lang
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf

err_is() {
    [ "$(cat "$TMP/err")" = "$1" ] || fail "$2: stderr is '$(cat "$TMP/err")', expected '$1'"
}
err_first() {
    [ "$(head -n 1 "$TMP/err")" = "$1" ] || fail "$2: stderr starts '$(head -n 1 "$TMP/err")', expected '$1'"
}
same() { cmp -s "$1" "$2" || fail "$3: $1 and $2 differ"; }
type_of() { "$GGUFQ" info "$1" | awk -v t="$2" '$2 == t { print $3 }'; }

# ---- --tensor-type-file: the same bytes as the same rules given as options ------
# (the fixture's rows are 8 or 32 weights: only ffn_down (rows of 32) can take a 32-block type)
printf '%s\n' "# rules for the tiny model" "#ffn_down=q4_1 (commented out)" "" \
    "  attn_v=q8_0	ffn_down=q5_0   # two on a line" "" "output=q6_K" >"$TMP/rules.txt"
run requant "$FIXTURE" q4_K "$TMP/opts.gguf" -q --tensor-type attn_v=q8_0 --tensor-type ffn_down=q5_0 \
    --tensor-type output=q6_K
expect 0 "rules as --tensor-type"
run requant "$FIXTURE" q4_K "$TMP/file.gguf" -q --tensor-type-file "$TMP/rules.txt"
expect 0 "rules from a file (comments, blank lines, tabs)" && same "$TMP/opts.gguf" "$TMP/file.gguf" "file vs options"
[ "$(type_of "$TMP/file.gguf" blk.0.ffn_down.weight)" = q5_0 ] ||
    fail "ffn_down=q5_0 from the file not applied, or the comment before it was"
run requant "$FIXTURE" q4_K "$TMP/eq.gguf" -q --tensor-type-file="$TMP/rules.txt"
expect 0 "--tensor-type-file=FILE" && same "$TMP/opts.gguf" "$TMP/eq.gguf" "--tensor-type-file=FILE"

# In order among the --tensor-type options (the first matching rule wins).
printf 'ffn_down=q4_0\n' >"$TMP/v4.txt"
run requant "$FIXTURE" q4_K "$TMP/o1.gguf" -q --tensor-type ffn_down=q8_0 --tensor-type-file "$TMP/v4.txt"
expect 0 "option before file" && { [ "$(type_of "$TMP/o1.gguf" blk.0.ffn_down.weight)" = q8_0 ] ||
    fail "an option before the file should win"; }
run requant "$FIXTURE" q4_K "$TMP/o2.gguf" -q --tensor-type-file "$TMP/v4.txt" --tensor-type ffn_down=q8_0
expect 0 "file before option" && { [ "$(type_of "$TMP/o2.gguf" blk.0.ffn_down.weight)" = q4_0 ] ||
    fail "the file before an option should win"; }

# Only comments and blank lines: no rules at all.
printf '# nothing\n\n   \n' >"$TMP/empty.txt"
run requant "$FIXTURE" q4_K "$TMP/e.gguf" -q --tensor-type-file "$TMP/empty.txt"
expect 0 "a file of comments only"

# ---- --tensor-type-file: usage errors (exit 2), naming file and line ----------
printf 'attn_v=q8_0\n\nffn_down\n' >"$TMP/bad1.txt"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/bad1.txt"
expect 2 "a rule without =" && err_first "ggufq requant: $TMP/bad1.txt:3: --tensor-type 'ffn_down': expected REGEX=TYPE" "no ="
printf '# x\nattn_v=q9_X\n' >"$TMP/bad2.txt"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/bad2.txt"
expect 2 "an unknown type" &&
    err_first "ggufq requant: $TMP/bad2.txt:2: --tensor-type 'attn_v=q9_X': 'q9_X' is not a type to quantize to" "type"
printf 'a=q8_0 (=q8_0\n' >"$TMP/bad3.txt"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/bad3.txt"
expect 2 "a bad regular expression" &&
    err_first "ggufq requant: $TMP/bad3.txt:1: --tensor-type '(=q8_0': bad regular expression" "regex"
printf 'a=q8_0\n=q8_0\n' >"$TMP/bad4.txt"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/bad4.txt"
expect 2 "no regex" && err_first "ggufq requant: $TMP/bad4.txt:2: --tensor-type '=q8_0': expected REGEX=TYPE" "no regex"
printf 'a=q8_0\n\0b=q8_0\n' >"$TMP/nul.txt"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/nul.txt"
expect 2 "a NUL byte" && err_first "ggufq requant: $TMP/nul.txt:2: a NUL byte: not a list of tensor types" "NUL"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/missing.txt"
expect 2 "a missing file" &&
    err_first "ggufq requant: --tensor-type-file $TMP/missing.txt: No such file or directory" "missing"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP"
expect 2 "a directory" && err_first "ggufq requant: --tensor-type-file $TMP: not a regular file" "directory"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file /dev/zero
expect 2 "/dev/zero (never read)" && err_first "ggufq requant: --tensor-type-file /dev/zero: not a regular file" "dev"
if mkfifo "$TMP/fifo" 2>/dev/null; then   # no writer: opening it must not wait
    run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/fifo"
    expect 2 "a FIFO" && err_first "ggufq requant: --tensor-type-file $TMP/fifo: not a regular file" "fifo"
fi
: >"$TMP/big.txt" && truncate -s 17M "$TMP/big.txt" 2>/dev/null && {
    run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file "$TMP/big.txt"
    expect 2 "a file over 16 MiB" &&
        err_first "ggufq requant: --tensor-type-file $TMP/big.txt: larger than 16 MiB: not a list of tensor types" "big"
}
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --tensor-type-file
expect 2 "--tensor-type-file without a value"
[ -e "$TMP/x.gguf" ] && fail "a usage error wrote $TMP/x.gguf"

# ---- the summary names the target as given and what it became ------------------
run requant "$FIXTURE" 15 "$TMP/s1.gguf"
expect 0 "TYPE 15" && out_has "wrote $TMP/s1.gguf (Q4_K_M from '15', file type 15)" "summary of 15"
run requant "$FIXTURE" Q4_K_M "$TMP/s2.gguf"
expect 0 "TYPE Q4_K_M" && out_has "wrote $TMP/s2.gguf (Q4_K_M, file type 15)" "summary of Q4_K_M"
run requant "$FIXTURE" q8_0 "$TMP/s3.gguf" --pure
expect 0 "TYPE q8_0 --pure" && out_has "wrote $TMP/s3.gguf (Q8_0 from 'q8_0', pure, file type 7)" "summary of q8_0"

# ---- --prune-layers ----------------------------------------------------------------
# A 3-block llama model (f32, embedding 32), written by a small script.
if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: python3 not found; --prune-layers runs not tested"
else
    python3 - "$TMP/m3.gguf" <<'EOF'
import struct, sys
E, F, V, L = 32, 64, 16, 3
kv = [("general.architecture", "llama"), ("llama.block_count", L), ("llama.context_length", 64),
      ("llama.embedding_length", E), ("llama.feed_forward_length", F), ("llama.attention.head_count", 4),
      ("llama.attention.head_count_kv", [4, 2, 1]), ("llama.rope.dimension_count", 8)]
ts = [("token_embd.weight", (E, V))]
for l in range(L):
    ts += [("blk.%d.attn_norm.weight" % l, (E,)), ("blk.%d.attn_q.weight" % l, (E, E)),
           ("blk.%d.attn_k.weight" % l, (E, E)), ("blk.%d.attn_v.weight" % l, (E, E)),
           ("blk.%d.attn_output.weight" % l, (E, E)), ("blk.%d.ffn_norm.weight" % l, (E,)),
           ("blk.%d.ffn_gate.weight" % l, (E, F)), ("blk.%d.ffn_up.weight" % l, (E, F)),
           ("blk.%d.ffn_down.weight" % l, (F, E))]
ts += [("output_norm.weight", (E,)), ("output.weight", (E, V))]
def s(x): b = x.encode(); return struct.pack("<Q", len(b)) + b
out = b"GGUF" + struct.pack("<IQQ", 3, len(ts), len(kv))
for k, v in kv:
    out += s(k)
    if isinstance(v, str): out += struct.pack("<I", 8) + s(v)
    elif isinstance(v, list): out += struct.pack("<IIQ", 9, 5, len(v)) + b"".join(struct.pack("<i", x) for x in v)
    else: out += struct.pack("<II", 4, v)
off = 0
for n, d in ts:
    out += s(n) + struct.pack("<I", len(d)) + b"".join(struct.pack("<Q", x) for x in d) + struct.pack("<IQ", 0, off)
    size = 4
    for x in d: size *= x
    off += (size + 31) // 32 * 32
out += b"\0" * (-len(out) % 32)
data = bytearray()
for i, (n, d) in enumerate(ts):
    size = 1
    for x in d: size *= x
    data += b"".join(struct.pack("<f", ((i * 7919 + j * 104729) % 2001 - 1000) / 20000.0) for j in range(size))
    data += b"\0" * (-len(data) % 32)
open(sys.argv[1], "wb").write(out + bytes(data))
EOF
    M3=$TMP/m3.gguf
    run requant "$M3" q8_0 "$TMP/p1.gguf" --prune-layers 1 -q
    expect 0 "--prune-layers 1" && {
        "$GGUFQ" info "$TMP/p1.gguf" >"$TMP/info"
        grep -q "llama.block_count *uint32 *2" "$TMP/info" || fail "block_count 2"
        grep -q "llama.attention.head_count_kv *array\[int32\] *(2): 4, 1" "$TMP/info" ||
            fail "per-layer head_count_kv not shortened: $(grep head_count_kv "$TMP/info")"
        grep -q "blk\.2\." "$TMP/info" && fail "a blk.2 tensor is left after pruning one of 3 blocks"
        grep -q "blk\.1\.attn_q" "$TMP/info" || fail "blk.2 not renumbered to blk.1"
    }
    # llama-quantize's list: sorted, repeats dropped, repeated options add up
    run requant "$M3" q8_0 "$TMP/p02.gguf" --prune-layers 0,2 -q
    expect 0 "--prune-layers 0,2"
    run requant "$M3" q8_0 "$TMP/p20.gguf" --prune-layers '2, 0,0' -q
    expect 0 "--prune-layers '2, 0,0'" && same "$TMP/p02.gguf" "$TMP/p20.gguf" "unsorted list with a repeat"
    run requant "$M3" q8_0 "$TMP/p2x0.gguf" --prune-layers 2 --prune-layers=0 -q
    expect 0 "--prune-layers twice" && same "$TMP/p02.gguf" "$TMP/p2x0.gguf" "two --prune-layers options"
    run requant "$M3" q8_0 --dry-run --prune-layers 0,2
    expect 0 "--prune-layers --dry-run" && out_has "blk.0.attn_q.weight" "dry run names" &&
        { grep -q "blk\.[12]\." "$TMP/out" && fail "dry run lists pruned or old block numbers"; }
    # the file decides: exit 1, nothing written
    run requant "$M3" q8_0 "$TMP/x.gguf" --prune-layers 3
    expect 1 "a layer the model lacks" &&
        err_is "ggufq: --prune-layers: $M3 has 3 layers (0 to 2), there is no layer 3" "out of range"
    run requant "$M3" q8_0 "$TMP/x.gguf" --prune-layers 0,1,2
    expect 1 "every layer" &&
        err_is "ggufq: --prune-layers: that is every layer of $M3 (3); at least one must stay" "all layers"
    [ -e "$TMP/x.gguf" ] && fail "a refused prune wrote $TMP/x.gguf"
fi

# the list's syntax: usage errors (exit 2)
for bad in "1,,2" "x" "-1" "" "1," "3abc" "99999999999"; do
    run requant "$FIXTURE" q8_0 "$TMP/x.gguf" --prune-layers "$bad"
    expect 2 "--prune-layers '$bad'" || continue
    grep -q "is not a layer number (expected L0,L1,... such as 3,7,11)" "$TMP/err" ||
        fail "--prune-layers '$bad': $(cat "$TMP/err")"
done
[ -e "$TMP/x.gguf" ] && fail "a usage error wrote $TMP/x.gguf"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
