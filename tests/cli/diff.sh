#!/bin/sh
# CLI: `ggufq diff` and `ggufq stats` — usage errors, identical files, what
# requant changed, JSON with exactly the documented fields, stats predicting
# diff after requant --pure to the last bit, thread counts changing nothing,
# and bounded memory on a model larger than the address-space limit
# (`ulimit -v`) leaves room for once decoded.
# Run by ctest as: sh diff.sh <path-to-ggufq> <tests-dir> <ggufq-testhooks>
set -u
GGUFQ=$1
TESTS=$2
HOOKS=${3:-}
. "$(dirname "$0")/lib.sh"
cli_begin diff
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf

# ---- help and usage errors ---------------------------------------------------
run help diff
expect 0 "help diff" && out_has "usage: ggufq diff A.gguf B.gguf" "help diff"
run stats --help
expect 0 "stats --help" && out_has "--stats-cache FILE" "stats --help"
run help
out_has "diff      Compare two GGUF files" "help lists diff"
run diff "$FIXTURE"
expect 2 "diff without B" && err_has "ggufq diff: B is required" "diff without B"
run diff "$FIXTURE" "$FIXTURE" --bogus
expect 2 "diff --bogus" && err_has "unknown option '--bogus'" "diff --bogus"
run diff "$FIXTURE" "$FIXTURE" --threads x
expect 2 "diff --threads x" && err_has "--threads must be a number" "diff --threads x"
run stats "$FIXTURE"
expect 2 "stats without --types" && err_has "ggufq stats: --types is required" "stats without --types"
run stats "$FIXTURE" --types q4_K,q9_X
expect 2 "stats unknown type" && err_has "--types: unknown type 'q9_X'" "stats unknown type"
run stats "$FIXTURE" --types q4_K,q4_K
expect 2 "stats type twice" && err_has "'q4_K' given twice" "stats type twice"
run diff "$FIXTURE" "$TMP/missing.gguf"
expect 1 "diff of a missing file" && err_has "$TMP/missing.gguf" "diff of a missing file"
mkfifo "$TMP/fifo" && {
    run stats "$FIXTURE" --types q4_K --stats-cache "$TMP/fifo"
    expect 1 "stats cache on a FIFO: refused, no hang" && err_has "$TMP/fifo: the stats cache must be a regular file" "stats cache on a FIFO"
}
run diff "$FIXTURE" "$FIXTURE" --imatrix "$TMP/missing.dat"
expect 1 "diff with a missing imatrix" && err_has "$TMP/missing.dat" "diff with a missing imatrix"

# ---- identical files ----------------------------------------------------------
run diff "$FIXTURE" "$FIXTURE"
expect 0 "diff of a file with itself"
out_has "metadata: no differences" "diff with itself"
out_has "summary: 12 tensors compared, 12 identical; overall nmse 0" "diff with itself"

# ---- what requant changed -----------------------------------------------------
"$GGUFQ" requant --pure "$FIXTURE" q8_0 "$TMP/q8.gguf" -q || fail "requant to q8_0"
run diff "$FIXTURE" "$TMP/q8.gguf"
expect 0 "diff after requant"
out_has "changed  general.file_type: uint32 1 -> uint32 7" "diff metadata"
out_has "added    general.quantization_version: uint32 2" "diff metadata"
grep -q "blk.0.ffn_down.weight  *f16  *q8_0 .*<< worst" "$TMP/out" || fail "diff: ffn_down not marked worst"
out_has "12 tensors compared, 11 identical" "diff after requant"
out_has "worst: blk.0.ffn_down.weight (f16 to q8_0, nmse 2.424e-05)" "diff after requant"
run diff "$FIXTURE" "$TMP/q8.gguf" --json
expect 0 "diff --json"
cp "$TMP/out" "$TMP/diff-default.json"
run diff "$FIXTURE" "$TMP/q8.gguf" --json --threads 1
cmp -s "$TMP/out" "$TMP/diff-default.json" || fail "diff --threads 1 prints other numbers"
# B truncated while mapped (the test build pauses once both files are open): an
# error naming it, never numbers made of the zeros that replaced the lost pages
if [ -n "$HOOKS" ]; then
    cp "$TMP/q8.gguf" "$TMP/shrinks.gguf"
    : >"$TMP/err"
    GGUFQ_TEST_PAUSE_BEFORE_DATA=10000 "$HOOKS" diff "$FIXTURE" "$TMP/shrinks.gguf" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    i=0
    while [ $i -lt 200 ] && ! grep -q -F "ggufq: test pause" "$TMP/err"; do sleep 0.05; i=$((i + 1)); done
    truncate -s 600000 "$TMP/shrinks.gguf"
    wait "$pid"
    rc=$?
    expect 1 "diff: B truncated while read" &&
        err_has "shrinks.gguf: offset " "diff: B truncated while read" &&
        err_has "the file changed size while being read (SIGBUS)" "diff: B truncated while read"
    [ -s "$TMP/out" ] && fail "diff: B truncated while read: printed $(head -c 200 "$TMP/out")"
fi
run stats "$FIXTURE" --types q8_0,q4_K,iq4_nl
expect 0 "stats" && out_has "blk.0.ffn_down.weight  [32, 8]  f16" "stats table"
out_has "nmse (weighted)" "stats totals"

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: python3 not found; JSON and memory not checked"
    [ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
    exit 0
fi

# ---- JSON fields, and stats == requant --pure + diff --------------------------
cat >"$TMP/check.py" <<'PY'
import json, sys
mode = sys.argv[1]
def load(p):
    with open(p) as f:
        return json.load(f)
def keys(obj, want, what):
    if list(obj.keys()) != want:
        sys.exit("%s: keys %s, expected %s" % (what, list(obj.keys()), want))
if mode == "diff":
    d = load(sys.argv[2])
    keys(d, ["a", "b", "tensors", "only_in_a", "only_in_b", "shape_mismatch", "metadata", "summary"], "diff")
    for t in d["tensors"]:
        want = ["name", "type_a", "type_b", "n", "rmse", "max_abs", "nmse", "cosine", "identical"]
        keys(t, want + (["wmse"] if sys.argv[3] == "wmse" else []), "diff tensor " + t["name"])
    keys(d["summary"], ["compared", "identical", "nmse", "size_a", "size_b"], "diff summary")
    for m in d["metadata"]:
        if m["change"] not in ("added", "removed", "changed"):
            sys.exit("metadata change " + m["change"])
elif mode == "stats":
    s = load(sys.argv[2])
    types = sys.argv[3].split(",")
    keys(s, ["tensors", "totals"], "stats")
    for t in s["tensors"]:
        keys(t, ["name", "shape", "n", "in_type", "candidates"], "stats tensor")
        keys(t["candidates"], types, "candidates")
        for ty, c in t["candidates"].items():
            want = ["bytes", "bpw", "rmse", "nmse", "max_abs", "cosine"]
            if sys.argv[4] == "wmse":
                want.append("wmse")
            if "fallback" in c:
                want.append("fallback")
            keys(c, want, "candidate " + ty)
    keys(s["totals"], types, "totals")
elif mode == "predict":
    # stats' numbers for type T equal diff's after requant --pure to T, exactly
    s, d, ty = load(sys.argv[2]), load(sys.argv[3]), sys.argv[4]
    by_name = {t["name"]: t for t in d["tensors"]}
    n = 0
    for t in s["tensors"]:
        c, x = t["candidates"][ty], by_name[t["name"]]
        for f in ("rmse", "nmse", "max_abs", "cosine", "wmse"):
            if (f in c) != (f in x) or c.get(f) != x.get(f):
                sys.exit("%s %s: stats %r, diff %r" % (t["name"], f, c.get(f), x.get(f)))
        if x["type_b"] != c.get("fallback", ty):
            sys.exit("%s: type %s, stats said %s" % (t["name"], x["type_b"], c.get("fallback", ty)))
        n += 1
    converted = sum(1 for x in d["tensors"] if x["type_a"] != x["type_b"])
    if n != converted:
        sys.exit("stats listed %d tensors, requant converted %d" % (n, converted))
elif mode == "sparse":
    # a GGUF with big tensors whose data is a hole: written sparsely
    import struct
    path, ty, ne0, ne1, count = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    esz = {0: 4, 1: 2}[ty]
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    h = b"GGUF" + struct.pack("<IQQ", 3, count, 1) + s("general.architecture") + struct.pack("<I", 8) + s("llama")
    for i in range(count):
        h += s("blk.%d.ffn_up.weight" % i) + struct.pack("<IQQIQ", 2, ne0, ne1, ty, i * ne0 * ne1 * esz)
    h += b"\0" * (-len(h) % 32)
    with open(path, "wb") as f:
        f.write(h)
        f.truncate(len(h) + count * ne0 * ne1 * esz)
elif mode == "keys":
    # metadata only: an int32 array, a number, a long string (their values from argv)
    import struct
    path, a2, val_type, name = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    h = b"GGUF" + struct.pack("<IQQ", 3, 0, 3)
    h += s("arr") + struct.pack("<IIQ", 9, 5, 3) + struct.pack("<3i", 1, 2, a2)
    h += s("val") + struct.pack("<I", val_type) + (struct.pack("<I", 7) if val_type == 4 else struct.pack("<f", 7.0))
    h += s("name") + struct.pack("<I", 8) + s(name)
    open(path, "wb").write(h)
elif mode == "rss":
    # run the command; print the child's peak resident memory in MiB
    import resource, subprocess
    r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, r.returncode)
PY
check() { python3 "$TMP/check.py" "$@" 2>"$TMP/pyerr" || fail "$(cat "$TMP/pyerr")"; }

check diff "$TMP/diff-default.json" nowmse && echo "ok: diff JSON fields"
# changed values are told apart even where their shortened forms would look alike
long=$(printf 'x%.0s' $(seq 60))
check keys "$TMP/k1.gguf" 3 4 "${long}tail-one"
check keys "$TMP/k2.gguf" 4 6 "${long}tail-two"
run diff "$TMP/k1.gguf" "$TMP/k2.gguf"
expect 0 "diff of metadata"
out_has 'changed  arr: array[int32] (3) (elements differ) -> array[int32] (3) (elements differ)' "diff arrays"
out_has 'changed  val: uint32 7 -> float32 7' "diff value types"
out_has 'changed  name: string "...xxxxxtail-one" -> string "...xxxxxtail-two"' "diff long strings"
printf '\001\000\000\000\025\000\000\000blk.0.ffn_down.weight\001\000\000\000\040\000\000\000' >"$TMP/im.dat"
python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<32f', *[0.5 + i / 8 for i in range(32)]))" >>"$TMP/im.dat"
run diff "$FIXTURE" "$TMP/q8.gguf" --json --imatrix "$TMP/im.dat"
expect 0 "diff --imatrix" && cp "$TMP/out" "$TMP/diff-im.json"
python3 -c "
import json, sys
d = json.load(open('$TMP/diff-im.json'))
w = [t['name'] for t in d['tensors'] if 'wmse' in t]
sys.exit(0 if w == ['blk.0.ffn_down.weight'] else 'wmse on %s' % w)" || fail "diff --imatrix: wmse only where the imatrix has an entry"

for ty in q4_K q5_0 iq4_xs q8_0; do
    "$GGUFQ" requant --pure "$FIXTURE" $ty "$TMP/$ty.gguf" -q || fail "requant to $ty"
    "$GGUFQ" diff "$FIXTURE" "$TMP/$ty.gguf" --json >"$TMP/diff-$ty.json" || fail "diff $ty"
done
run stats "$FIXTURE" --types q4_K,q5_0,iq4_xs,q8_0 --json
expect 0 "stats --json" && cp "$TMP/out" "$TMP/stats.json"
check stats "$TMP/stats.json" q4_K,q5_0,iq4_xs,q8_0 nowmse && echo "ok: stats JSON fields"
for ty in q4_K q5_0 iq4_xs q8_0; do
    check predict "$TMP/stats.json" "$TMP/diff-$ty.json" $ty && echo "ok: stats $ty == requant --pure + diff"
done
"$GGUFQ" requant --pure "$FIXTURE" q4_K "$TMP/q4im.gguf" --imatrix "$TMP/im.dat" -q || fail "requant --imatrix"
"$GGUFQ" diff "$FIXTURE" "$TMP/q4im.gguf" --json --imatrix "$TMP/im.dat" >"$TMP/diff-q4im.json"
run stats "$FIXTURE" --types q4_K --imatrix "$TMP/im.dat" --json --threads 1
expect 0 "stats --imatrix" && cp "$TMP/out" "$TMP/stats-im.json"
check predict "$TMP/stats-im.json" "$TMP/diff-q4im.json" q4_K && echo "ok: stats --imatrix == requant + diff"
run stats "$FIXTURE" --types q4_K,q8_0 --json --stats-cache "$TMP/cache"
cp "$TMP/out" "$TMP/stats-cold.json"
run stats "$FIXTURE" --types q4_K,q8_0 --json --stats-cache "$TMP/cache"
cmp -s "$TMP/out" "$TMP/stats-cold.json" && echo "ok: --stats-cache gives the same output" ||
    fail "--stats-cache: a cached run prints other numbers"
# A path that names anything but a stats cache (the model itself, an imatrix) is never replaced.
cp "$FIXTURE" "$TMP/model-copy.gguf"
for victim in "$TMP/model-copy.gguf" "$TMP/im.dat"; do
    cp "$victim" "$TMP/victim-before"
    run stats "$TMP/model-copy.gguf" --types q8_0 --stats-cache "$victim"
    expect 1 "stats --stats-cache $(basename "$victim")" &&
        err_has "ggufq: $victim: not a ggufq stats cache: refusing to replace it (name a new file)" "foreign cache"
    cmp -s "$victim" "$TMP/victim-before" && echo "ok: $(basename "$victim") kept as it was" ||
        fail "--stats-cache $(basename "$victim"): the file was changed"
done
: >"$TMP/empty-cache"
run stats "$FIXTURE" --types q8_0 --stats-cache "$TMP/empty-cache"
expect 0 "stats with an empty cache file" && head -c 18 "$TMP/empty-cache" | grep -q "^ggufq stats cache " &&
    echo "ok: an empty file becomes a cache" || fail "an empty cache file was not filled"

# ---- bounded memory: 768 MiB of tensors under a 1 GiB address-space limit ---------
# A (f16) and B (f32) hold two [4096, 16384] tensors each, all holes: 256 MiB and
# 512 MiB mapped. Decoding one tensor whole would take 256 MiB per side more than
# the limit leaves; the resident peak must stay far below the files' size.
check sparse "$TMP/big16.gguf" 1 4096 16384 2
check sparse "$TMP/big32.gguf" 0 4096 16384 2
# Not measurable so: a program run through a wrapper script (an emulator: qemu-user's
# own translation cache counts against the limit), or one that cannot even start under
# the limit (AddressSanitizer reserves terabytes of shadow memory).
BIG_CMDS=yes
if [ "$(head -c 2 "$GGUFQ")" = "#!" ]; then
    echo "skip: $GGUFQ is a wrapper (an emulator): bounded memory not checked under ulimit -v"
    BIG_CMDS=""
elif ! (ulimit -v 1048576 && exec "$GGUFQ" --version) >/dev/null 2>&1; then
    echo "skip: $GGUFQ cannot start under ulimit -v 1048576 (a sanitizer): bounded memory not checked"
    BIG_CMDS=""
fi
[ -n "$BIG_CMDS" ] && for cmd in "diff $TMP/big16.gguf $TMP/big32.gguf --threads 2" "stats $TMP/big16.gguf --types q8_0 --threads 2"; do
    # shellcheck disable=SC2086
    res=$( (ulimit -v 1048576 && exec python3 "$TMP/check.py" rss "$GGUFQ" $cmd) ) || fail "big: $cmd"
    mib=${res% *}
    code=${res#* }
    if [ "$code" != 0 ]; then
        fail "big: $cmd: exit $code under ulimit -v"
    elif [ "$mib" -ge 160 ]; then
        fail "big: $cmd: peak resident memory $mib MiB"
    else
        echo "ok: big model, $cmd: peak $mib MiB"
    fi
done

[ "$FAILS" -eq 0 ] || { echo "$FAILS failure(s)"; exit 1; }
echo "all passed"
