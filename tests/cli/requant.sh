#!/bin/sh
# CLI: `ggufq requant` — plan (--dry-run), summary, progress, options, and
# failures that leave nothing behind. Parity with llama.cpp is tested in
# tests/test_requant.c; here the program around the library.
# Run by ctest as: sh requant.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin requant
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf

out_has() { grep -q -F -e "$1" "$TMP/out" || fail "$2: stdout lacks '$1'"; }
nfiles() { ls -A "$1" | wc -l | tr -d ' '; }
# has_ctl FILE: true if FILE holds a carriage return or an escape (terminal control)
has_ctl() { [ "$(tr -d '\r\033' <"$1" | wc -c)" -ne "$(wc -c <"$1")" ]; }

# ---- a run: summary on stdout, the file, its metadata -----------------------
run requant "$FIXTURE" q4_K "$TMP/q4.gguf" --pure --threads 2
expect 0 "requant q4_K --pure" && {
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
run requant "$FIXTURE" q4_K "$TMP/t1.gguf" --pure --threads 1 --quiet
expect 0 "requant --threads 1 --quiet" && [ -s "$TMP/out" ] && fail "--quiet printed a summary"
run requant "$FIXTURE" q6_K "$TMP/a.gguf" --pure --threads=1 -q
run requant "$FIXTURE" q6_K "$TMP/b.gguf" --pure --threads=2 -q
cmp -s "$TMP/a.gguf" "$TMP/b.gguf" && echo "ok: same bytes for 1 and 2 threads" || fail "threads change bytes"

# ---- dry run: the plan, nothing written --------------------------------------
run requant --dry-run "$FIXTURE" q4_K --pure
expect 0 "dry run without OUT" && {
    out_has "blk.0.ffn_down.weight" "plan lists tensors"
    out_has "q5_0" "plan shows the fallback"
    out_has "file type:   15" "plan file type"
}
run requant "$FIXTURE" q4_K "$TMP/dry.gguf" --dry-run
expect 0 "dry run with OUT" && [ -e "$TMP/dry.gguf" ] && fail "dry run wrote a file"

# ---- TYPE as llama-quantize reads it -----------------------------------------
# its names in any case (Q3_K/Q4_K/Q5_K: the _M recipes), file type numbers, COPY
run requant "$FIXTURE" Q4_K_M "$TMP/n-m.gguf" -q
expect 0 "requant Q4_K_M"
for t in Q4_K q4_k q4_k_m 15 " +15"; do
    run requant "$FIXTURE" "$t" "$TMP/n.gguf" -q
    expect 0 "requant '$t'" && { cmp -s "$TMP/n.gguf" "$TMP/n-m.gguf" || fail "'$t' is not Q4_K_M"; }
done
cmp -s "$TMP/q4.gguf" "$TMP/n-m.gguf" && fail "q4_K --pure is the Q4_K_M recipe"
for tf in "Q3_K 12" "q5_K 17" "Q5_K_S 16" "7 7" "0 0" "12 12" "COPY 1" "copy 1" "mxfp4 38"; do
    set -- $tf
    run requant --dry-run "$FIXTURE" "$1"
    expect 0 "dry run '$1'" && out_has "file type:   $2" "'$1' is file type $2"
done
run requant "$FIXTURE" COPY "$TMP/copy.gguf"
expect 0 "requant COPY" && {
    out_has "(COPY, file type 1)" "COPY summary"
    out_has "(0 converted, 12 copied)" "COPY converts nothing"
}
run requant --dry-run "$FIXTURE" 0
expect 0 "ftype 0" && out_has "(9 converted" "ftype 0 is F32 (converts), not COPY"
# ---- already quantized tensors: --allow-requantize, as llama-quantize ---------
run requant "$FIXTURE" q8_0 "$TMP/q8.gguf" --pure -q
expect 0 "make a q8_0 model"
mkdir "$TMP/rq"
for dry in "" --dry-run; do
    run requant "$TMP/q8.gguf" q4_0 "$TMP/rq/x.gguf" --pure $dry
    expect 1 "requant of a quantized tensor without --allow-requantize ${dry:-(real run)}" && {
        err_has "requantizing from type q8_0 is disabled (tensor blk.0.ffn_down.weight would become q4_0)" \
            "requantize refusal"
        err_has "loses quality; --allow-requantize does it anyway" "requantize refusal names the flag"
        [ -s "$TMP/out" ] && fail "refused requant printed to stdout"
    }
    [ "$(nfiles "$TMP/rq")" -eq 0 ] || fail "refused requant left a file"
done
run requant "$TMP/q8.gguf" q4_0 "$TMP/rq/x.gguf" --pure --allow-requantize -q
expect 0 "requant --allow-requantize"
run requant "$TMP/q8.gguf" Q8_0 "$TMP/rq/y.gguf" -q
expect 0 "requant that converts no quantized tensor needs no --allow-requantize"
run requant "$TMP/q8.gguf" COPY "$TMP/rq/z.gguf" -q
expect 0 "COPY of a quantized model needs no --allow-requantize"

# ---- --dry-run refuses what the run refuses: same message, same status -------
# (a type that needs an imatrix, an imatrix entry of the wrong size, a bad --override-kv)
Z3=$TESTS/data/z3a.gguf   # blk.0.attn_q.weight [2^40, 0, 2] f16: empty, rows fit 256-blocks
for args in "$Z3 IQ2_XXS" "$Z3 q8_0 --imatrix $TESTS/data/one_entry.dat" \
            "$FIXTURE q8_0 --override-kv general.name=text:x"; do
    set -- $args
    in=$1; t=$2; shift 2
    run requant "$in" "$t" "$TMP/rq/w.gguf" "$@"
    real_rc=$rc; cp "$TMP/err" "$TMP/real.err"
    run requant "$in" "$t" "$TMP/rq/w.gguf" "$@" --dry-run
    [ "$rc" -ne 0 ] && [ "$rc" -eq "$real_rc" ] && cmp -s "$TMP/err" "$TMP/real.err" &&
        echo "ok: --dry-run refuses as the run does: $t $*" ||
        fail "--dry-run vs run ($t $*): exit $rc vs $real_rc: $(cat "$TMP/err") / $(cat "$TMP/real.err")"
    [ -e "$TMP/rq/w.gguf" ] && fail "refused run wrote $TMP/rq/w.gguf"
done

for t in 99 4 q8_K "Q4_K " x15; do
    run requant "$FIXTURE" "$t" "$TMP/empty/x.gguf"
    expect 2 "unknown TYPE '$t' is a usage error" && err_has "is not a llama-quantize type" "unknown TYPE message"
done

# what the library refuses before reading the file is a usage error: exit 2, nothing written
for opt in "--tensor-type (=q8_0" "--override-kv foo" "--override-kv general.name=text:x" \
           "--include-weights attn"; do
    # shellcheck disable=SC2086
    run requant "$FIXTURE" q8_0 "$TMP/rq/none.gguf" $opt
    expect 2 "usage error: $opt"
    [ -e "$TMP/rq/none.gguf" ] && fail "usage error $opt wrote a file"
done

# ---- llama-quantize's order IN OUT TYPE [NTHREADS], when unambiguous -----------
run requant "$FIXTURE" Q4_K "$TMP/rq/ours-order.gguf" -q
expect 0 "IN TYPE OUT"
run requant "$FIXTURE" "$TMP/rq/llama-order.gguf" Q4_K -q
expect 0 "IN OUT TYPE (llama-quantize's order)" &&
    { cmp -s "$TMP/rq/ours-order.gguf" "$TMP/rq/llama-order.gguf" && echo "ok: both orders, same bytes" ||
      fail "IN OUT TYPE wrote other bytes than IN TYPE OUT"; }
run requant "$FIXTURE" "$TMP/rq/llama-order2.gguf" q4_k_m 2
expect 0 "IN OUT TYPE NTHREADS" && out_has " 2 threads" "NTHREADS as the thread count" &&
    { cmp -s "$TMP/rq/ours-order.gguf" "$TMP/rq/llama-order2.gguf" || fail "IN OUT TYPE NTHREADS: other bytes"; }
run requant "$FIXTURE" "$TMP/rq/llama-order3.gguf" Q4_K lots
expect 2 "NTHREADS not a number" && err_has "NTHREADS must be a number" "NTHREADS not a number"
run requant "$FIXTURE" Q4_K "$TMP/rq/none.gguf" 2
expect 2 "NTHREADS after IN TYPE OUT" && err_has "too many arguments ('2')" "NTHREADS after IN TYPE OUT"
run requant "$FIXTURE" "$TMP/rq/none.gguf" Q9_K
expect 2 "neither argument a TYPE" && err_has "llama-quantize's IN OUT TYPE" "the hint names both orders"
[ -e "$TMP/rq/none.gguf" ] && fail "a usage error wrote $TMP/rq/none.gguf"

# ---- progress as JSON lines (on stdout; the human summary then is not printed) --------
run requant "$FIXTURE" q4_K "$TMP/j.gguf" --pure --progress=json
expect 0 "--progress=json" && {
    out_has '"tensor":"output.weight"' "json progress names tensors"
    out_has '"bytes_total":' "json progress totals"
    [ -s "$TMP/err" ] && fail "--progress=json wrote to stderr: $(cat "$TMP/err")"
    grep -q '^wrote ' "$TMP/out" && fail "--progress=json mixed the human summary into the JSON"
}

# ---- progress: --progress=json is one JSON object a line ---------------------------
run requant "$FIXTURE" q4_K "$TMP/j2.gguf" --threads 1 --progress json
expect 0 "--progress json (no terminal)" && {
    has_ctl "$TMP/out" && fail "--progress json wrote control characters"
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$TMP/out" <<'PY' && echo "ok: every --progress json line is a JSON object" || fail "--progress json lines"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
assert lines[-1] == "", "the last line is not terminated"
objs = [json.loads(l) for l in lines[:-1]]
assert objs[0]["event"] == "start" and objs[-1]["event"] == "summary", (objs[0], objs[-1])
objs = objs[1:-1]
assert objs, "no progress lines"
keys = {"event", "tensor", "index", "count", "bytes_done", "bytes_total", "bytes_written", "elapsed"}
for o in objs:
    assert o["event"] == "tensor", o
    assert isinstance(o, dict) and set(o) == keys, o
    assert 0 <= o["index"] < o["count"] == 12 and 0 <= o["bytes_done"] <= o["bytes_total"], o
assert [o["index"] for o in objs] == sorted(o["index"] for o in objs), "indexes go backwards"
assert objs[-1]["bytes_done"] == objs[-1]["bytes_total"] and objs[-1]["index"] == 11, objs[-1]
assert "output.weight" in {o["tensor"] for o in objs}
PY
    else
        echo "skip: python3 not found, --progress json lines not parsed"
    fi
}

# ---- progress when stderr is not a terminal: never a control sequence ------------
run requant "$FIXTURE" q4_K "$TMP/nb.gguf" --threads 1 --progress bar
expect 0 "--progress bar (no terminal)" && {
    has_ctl "$TMP/err" && fail "--progress bar into a file wrote CR or ESC: $(od -c "$TMP/err" | head -3)"
    err_has "MB/s" "--progress bar into a file: plain lines"
    err_has "100.0%" "--progress bar into a file: the last line"
    [ "$(tail -c 1 "$TMP/err" | od -An -c | tr -d ' ')" = '\n' ] || fail "--progress bar: unterminated line"
}

# ---- progress on a terminal (util-linux's script gives the run a pseudo-terminal) --
# tty_run CMD: run the shell command CMD with stdin, stdout and stderr on a
# pseudo-terminal; $TMP/tty receives everything it printed, rc its exit status.
tty_run() { script -qfec "$1" /dev/null </dev/null >"$TMP/tty" 2>&1; rc=$?; }
tty_has() { grep -q -F -e "$1" "$TMP/tty" || fail "$2: the terminal did not show '$1' (got: $(od -c "$TMP/tty" | head -8))"; }
if ! command -v script >/dev/null 2>&1; then
    echo "skip: 'script' (util-linux) not found: progress on a terminal not tested"
elif ! script -qfec true /dev/null </dev/null >/dev/null 2>&1; then
    echo "skip: 'script' cannot open a pseudo-terminal here: progress on a terminal not tested"
else
    # a terminal 120 columns wide: the whole bar (30 cells), the name and the speed
    tty_run "stty cols 120; '$GGUFQ' requant '$FIXTURE' q4_K '$TMP/tty.gguf' --pure --threads 2"
    expect 0 "requant on a terminal" && {
        tty_has "[##############################] 100.0%" "bar at 100%"
        tty_has "12/12" "bar tensor count"
        tty_has "output.weight" "bar tensor name"
        tty_has "blk.0.ffn_up.weight" "bar tensor name"
        tty_has " MB/s" "bar speed"
        tty_has "ETA 0:00" "bar ETA"
        grep -q "$(printf '\r')\[#*\.*\] " "$TMP/tty" || fail "bar not redrawn in place (no CR before it)"
        grep -q "$(printf '\033')\[K" "$TMP/tty" || fail "bar does not erase the rest of its line"
        tty_has "wrote $TMP/tty.gguf (Q4_K_M from 'q4_K', pure, file type 15)" "summary on a terminal"
        tty_has "2 threads" "summary on a terminal"
        # the summary starts on a line of its own, after the bar
        tr -d '\r' <"$TMP/tty" | grep -q "^wrote $TMP/tty.gguf" || fail "summary not on its own line"
        cmp -s "$TMP/tty.gguf" "$TMP/q4.gguf" || fail "a terminal changed the output bytes"
    }
    tty_run "'$GGUFQ' requant '$FIXTURE' q4_K '$TMP/ttyq.gguf' --threads 2 --quiet"
    expect 0 "requant --quiet on a terminal" &&
        { [ -s "$TMP/tty" ] && fail "--quiet on a terminal printed: $(od -c "$TMP/tty" | head -4)"; }
    tty_run "'$GGUFQ' requant '$FIXTURE' q4_K '$TMP/no-such-dir/ttyq.gguf' --quiet"
    expect 1 "requant --quiet on a terminal, failing" && {
        tty_has "no-such-dir" "--quiet still prints the error"
        [ "$(tr -d '\r' <"$TMP/tty" | grep -c .)" -eq 1 ] || fail "--quiet printed more than the error: $(cat "$TMP/tty")"
        grep -q "$(printf '\033')" "$TMP/tty" && fail "--quiet error with control sequences"
    }
    tty_run "'$GGUFQ' requant '$FIXTURE' q4_K '$TMP/ttyj.gguf' --threads 2 --progress=json --quiet >'$TMP/ttyj.out'"
    expect 0 "--progress=json on a terminal" && {
        [ -s "$TMP/tty" ] && fail "--progress=json --quiet on a terminal printed to stderr: $(cat "$TMP/tty")"
        has_ctl "$TMP/ttyj.out" && fail "--progress=json on a terminal wrote control characters"
        grep -q '^{"event":"tensor","tensor":"output.weight",' "$TMP/ttyj.out" || fail "--progress=json on a terminal: no JSON"
    }
fi

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
expect 2 "unknown target" && err_has "q9_K" "unknown target named"
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

# ---- names from the file reach the terminal escaped (as `info` shows them) ------
# esc_nan_tensor.gguf: one f16 tensor 'blk.0.\e[31mRED\e[0m.weight' [32, 2] starting with a NaN
ESC_IN=$TESTS/data/esc_nan_tensor.gguf
run requant "$ESC_IN" q8_0 --dry-run
expect 0 "dry run of a name with escape sequences" && {
    sed -n 2p "$TMP/out" >"$TMP/got"
    printf '%s\n' '   0  blk.0.\x1b[31mRED\x1b[0m.weight      [32, 2]              f16      q8_0              128           68   8.500  recipe: default' >"$TMP/want"
    cmp -s "$TMP/want" "$TMP/got" && echo "ok: dry-run table escapes the name" ||
        fail "dry-run table: got $(od -c "$TMP/got" | head -6)"
    has_ctl "$TMP/out" && fail "dry-run table wrote raw control characters"
}
run requant "$ESC_IN" q8_0 "$TMP/empty/esc.gguf"
expect 1 "NaN in a tensor named with escape sequences" && {
    printf '%s\n' "ggufq: $ESC_IN: offset 160: tensor 'blk.0.\\x1b[31mRED\\x1b[0m.weight' row 0: NaN or Inf in the input (f16 weight 0)" >"$TMP/want"
    cmp -s "$TMP/want" "$TMP/err" && echo "ok: the error message escapes the name" ||
        fail "error message: got $(od -c "$TMP/err" | head -6)"
}
[ "$(nfiles "$TMP/empty")" -eq 0 ] || fail "files left: $(ls -A "$TMP/empty")"
# esc_name.gguf: the same name, finite weights: progress lines escape it too
ESC_OK=$TESTS/data/esc_name.gguf
run requant "$ESC_OK" q8_0 "$TMP/esc.gguf" --progress bar
expect 0 "progress bar of a name with escape sequences" && {
    grep -q -F '] 100.0% 1/1 blk.0.\x1b[31mRED\x1b[0m.weight ' "$TMP/err" &&
        echo "ok: the bar escapes the name" || fail "progress bar: got $(od -c "$TMP/err" | head -6)"
    has_ctl "$TMP/err" && fail "progress bar wrote raw control characters"
}
run requant "$ESC_OK" q8_0 "$TMP/esc.gguf" --progress json
expect 0 "json progress of a name with escape sequences" && {
    printf '%s' '{"event":"tensor","tensor":"blk.0.\u001b[31mRED\u001b[0m.weight","index":0,"count":1,"bytes_done":128,"bytes_total":128,"bytes_written":68,' >"$TMP/want"
    sed -n 2p "$TMP/out" | head -c "$(wc -c <"$TMP/want")" | cmp -s - "$TMP/want" && echo "ok: json progress escapes the name" ||
        fail "json progress: got $(head -c 400 "$TMP/out")"
}

# ---- outputs must load in ggml: nested arrays are refused (requant and dequant) ----
# a GGUF v3 file, no tensors, one key 'k<ESC>x' holding an empty array of arrays
printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\001\000\000\000\000\000\000\000\003\000\000\000\000\000\000\000k\033x\011\000\000\000\011\000\000\000\000\000\000\000\000\000\000\000' >"$TMP/nested.gguf"
run requant "$TMP/nested.gguf" q8_0 "$TMP/empty/n.gguf"
expect 1 "requant refuses nested arrays" && {
    printf '%s\n' "ggufq: $TMP/nested.gguf: key 'k\\x1bx' is an array of arrays: valid GGUF, but ggml's GGUF reader refuses nested arrays (llama.cpp cannot quantize this file, nor load an output with this key)" >"$TMP/want"
    cmp -s "$TMP/want" "$TMP/err" || fail "requant nested arrays: got $(od -c "$TMP/err" | head -8)"
}
run dequant "$TMP/nested.gguf" "$TMP/empty/n.gguf"
expect 1 "dequant refuses nested arrays" && {
    printf '%s\n' "ggufq: $TMP/nested.gguf: key 'k\\x1bx' is an array of arrays: valid GGUF, but ggml's GGUF reader refuses nested arrays, so OUT would not load; $TMP/empty/n.gguf not written" >"$TMP/want"
    cmp -s "$TMP/want" "$TMP/err" || fail "dequant nested arrays: got $(od -c "$TMP/err" | head -8)"
}

# ---- the imatrix must be a regular file (/dev/zero never ends) -------------------
run requant "$FIXTURE" q4_K "$TMP/empty/x.gguf" --imatrix /dev/zero
expect 1 "--imatrix /dev/zero" && {
    printf '%s\n' "ggufq: /dev/zero: the imatrix must be a regular file, not a character device" >"$TMP/want"
    cmp -s "$TMP/want" "$TMP/err" || fail "--imatrix /dev/zero: got $(cat "$TMP/err")"
}
[ "$(nfiles "$TMP/empty")" -eq 0 ] || fail "files left: $(ls -A "$TMP/empty")"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS failure(s)"
    exit 1
fi
echo "all passed"
