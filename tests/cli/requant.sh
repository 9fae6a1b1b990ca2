#!/bin/sh
# CLI: `ggufq requant` — plan (--dry-run), summary, progress, options, and
# failures that leave nothing behind. Parity with llama.cpp is tested in
# tests/test_requant.c; here the program around the library.
# Run by ctest as: sh requant.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ggufq-cli-requant.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM HUP
FAILS=0
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf

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
out_has() { grep -q -F -e "$1" "$TMP/out" || fail "$2: stdout lacks '$1'"; }
err_has() { grep -q -F -e "$1" "$TMP/err" || fail "$2: stderr lacks '$1' (got: $(cat "$TMP/err"))"; }
nfiles() { ls -A "$1" | wc -l | tr -d ' '; }

# ---- a run: summary on stdout, the file, its metadata -----------------------
run requant "$FIXTURE" q4_K "$TMP/q4.gguf" --threads 2
expect 0 "requant q4_K" && {
    out_has "wrote $TMP/q4.gguf" "summary"
    out_has "bits per weight" "summary bpw"
    out_has "2 threads" "summary threads"
    [ -s "$TMP/err" ] && fail "no progress expected when stderr is not a terminal"
    "$GGUFQ" info "$TMP/q4.gguf" | grep -q "general.quantization_version *uint32 *2" ||
        fail "quantization_version"
    "$GGUFQ" info "$TMP/q4.gguf" | grep -q "general.file_type *uint32 *15" || fail "file_type 15"
    "$GGUFQ" info "$TMP/q4.gguf" | grep -q "blk.0.ffn_down.weight *q5_0" || fail "fallback q5_0"
}

# ---- the thread count does not change a byte --------------------------------
run requant "$FIXTURE" q4_K "$TMP/t1.gguf" --threads 1 --quiet
expect 0 "requant --threads 1 --quiet" && [ -s "$TMP/out" ] && fail "--quiet printed a summary"
run requant "$FIXTURE" q6_K "$TMP/a.gguf" --pure --threads=1 -q
run requant "$FIXTURE" q6_K "$TMP/b.gguf" --pure --threads=2 -q
cmp -s "$TMP/a.gguf" "$TMP/b.gguf" && echo "ok: same bytes for 1 and 2 threads" || fail "threads change bytes"

# ---- dry run: the plan, nothing written --------------------------------------
run requant --dry-run "$FIXTURE" q4_K
expect 0 "dry run without OUT" && {
    out_has "blk.0.ffn_down.weight" "plan lists tensors"
    out_has "q5_0" "plan shows the fallback"
    out_has "file type:   15" "plan file type"
}
run requant "$FIXTURE" q4_K "$TMP/dry.gguf" --dry-run
expect 0 "dry run with OUT" && [ -e "$TMP/dry.gguf" ] && fail "dry run wrote a file"

# ---- progress as JSON lines ----------------------------------------------------
run requant "$FIXTURE" q4_K "$TMP/j.gguf" --pure --progress=json
expect 0 "--progress=json" && {
    err_has '"tensor":"output.weight"' "json progress names tensors"
    err_has '"bytes_total":' "json progress totals"
}

# ---- options -------------------------------------------------------------------
run requant "$FIXTURE" q4_K "$TMP/o.gguf" --override-kv general.name=str:renamed --tensor-type 'ffn_down=q8_0' -q
expect 0 "--override-kv, --tensor-type" && {
    "$GGUFQ" info "$TMP/o.gguf" | grep -q '"renamed"' || fail "override not applied"
    "$GGUFQ" info "$TMP/o.gguf" | grep -q "blk.0.ffn_down.weight *q8_0" || fail "--tensor-type not applied"
}
run requant "$FIXTURE" q4_K "$TMP/o.gguf" --leave-output-tensor --token-embedding-type bf16 -q
expect 0 "--leave-output-tensor --token-embedding-type" &&
    { "$GGUFQ" info "$TMP/o.gguf" | grep -q "output.weight *f16" || fail "output.weight not left as is"; }

# ---- usage errors (exit 2) ------------------------------------------------------
run requant "$FIXTURE" q4_K
expect 2 "missing OUT"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --frobnicate
expect 2 "unknown option"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --output-tensor-type q9_X
expect 2 "bad type name"
run requant "$FIXTURE" q4_K "$TMP/x.gguf" --include-weights a --exclude-weights b
expect 2 "include and exclude together"

# ---- failures (exit 1) leave nothing behind -----------------------------------
mkdir "$TMP/empty"
run requant "$FIXTURE" q9_K "$TMP/empty/x.gguf"
expect 1 "unknown target" && err_has "q9_K" "unknown target named"
run requant "$FIXTURE" q4_K "$TMP/missing/x.gguf"
expect 1 "missing output directory"
cp "$FIXTURE" "$TMP/in.gguf"
run requant "$TMP/in.gguf" q4_K "$TMP/in.gguf"
expect 1 "OUT is IN" && cmp -s "$FIXTURE" "$TMP/in.gguf" || fail "input changed"
head -c 1000000 "$FIXTURE" >"$TMP/trunc.gguf"
run requant "$TMP/trunc.gguf" q4_K "$TMP/empty/x.gguf"
expect 1 "truncated input" && err_has "trunc.gguf" "truncated input named"
run requant "$FIXTURE" q4_K "$TMP/empty/x.gguf" --imatrix "$TMP/nope.dat"
expect 1 "missing imatrix file"
[ "$(nfiles "$TMP/empty")" -eq 0 ] && echo "ok: no file left behind" || fail "files left: $(ls -A "$TMP/empty")"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS failure(s)"
    exit 1
fi
echo "all passed"
