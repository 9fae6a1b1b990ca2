#!/bin/sh
# CLI: `ggufq requant --stats` — after writing, OUT measured against IN exactly
# as `ggufq diff IN OUT` measures it (text after the summary; with --progress
# json an event before the summary); refused where nothing single is written.
# Run by ctest as: sh requant_stats.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
DATA=$2/data
FIXTURE=$DATA/llama-2-tiny-random.gguf
. "$(dirname "$0")/lib.sh"
cli_begin rqstats

expect() {
    [ "$rc" -eq "$1" ] && return 0
    fail "$2: exit $rc, expected $1 (stderr: $(cat "$TMP/err"))"
    return 1
}

# text: the summary, then a line naming both files, then exactly diff's report
run requant "$FIXTURE" Q8_0 "$TMP/q8.gguf" --stats
expect 0 "requant --stats" && {
    grep -q "^wrote $TMP/q8.gguf (Q8_0, file type 7)$" "$TMP/out" || fail "--stats: no summary first"
    grep -q "^error of $TMP/q8.gguf against $FIXTURE (--stats):$" "$TMP/out" || fail "--stats: no heading"
    sed -n '/^error of /,$p' "$TMP/out" | tail -n +2 >"$TMP/stats.txt"
    "$GGUFQ" diff "$FIXTURE" "$TMP/q8.gguf" >"$TMP/diff.txt"
    cmp -s "$TMP/stats.txt" "$TMP/diff.txt" && echo "ok: --stats prints what ggufq diff IN OUT prints" ||
        fail "--stats differs from ggufq diff: $(diff "$TMP/stats.txt" "$TMP/diff.txt" | head -5)"
}

# requantizing a quantized file: the error it added, with --allow-requantize
run requant "$TMP/q8.gguf" Q4_0 "$TMP/q4.gguf" --allow-requantize --stats --quiet
expect 0 "requant --allow-requantize --stats" && {
    grep -q "^wrote " "$TMP/out" && fail "--quiet --stats: the summary was printed"
    grep -q "^summary: 12 tensors compared, " "$TMP/out" && echo "ok: the added error is reported" ||
        fail "--allow-requantize --stats: no comparison ($(head -3 "$TMP/out"))"
}

# --progress json: a stats event carrying diff's JSON object, then the summary last
run requant "$FIXTURE" Q8_0 "$TMP/q8j.gguf" --stats --progress json
expect 0 "requant --stats --progress json" && {
    "$GGUFQ" diff "$FIXTURE" "$TMP/q8j.gguf" --json >"$TMP/diff.json"
    python3 - "$TMP/out" "$TMP/diff.json" <<'PY' && echo "ok: a stats event with diff's JSON, then the summary" || fail "--progress json --stats"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
want = json.load(open(sys.argv[2]))
assert lines[-1]["event"] == "summary", lines[-1]
stats = [l for l in lines if l["event"] == "stats"]
assert len(stats) == 1 and lines[-2] is stats[0], [l["event"] for l in lines]
assert stats[0]["diff"] == want
PY
}

# refused: nothing single is written (exit 2, nothing written)
for extra in "--dry-run" "--keep-split"; do
    run requant "$FIXTURE" Q8_0 "$TMP/no.gguf" --stats $extra
    expect 2 "--stats $extra" &&
        grep -q "ggufq requant: --stats measures the file written against IN: not with $extra" "$TMP/err" ||
        fail "--stats $extra: message ($(head -1 "$TMP/err"))"
    [ ! -e "$TMP/no.gguf" ] || fail "--stats $extra: a file was written"
done

[ "$FAILS" -eq 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
echo "all requant --stats checks passed"
