#!/bin/sh
# CLI: thread counts and running out of threads. When the system refuses
# threads (here: an address-space limit, `ulimit -v`; a pids cgroup does the
# same) ggufq goes on with the threads it got, at least one, and writes the
# same bytes; or, when even that memory is missing, fails with exit 1 and a
# ggufq message. Never another exit (libgomp used to exit(1) on its own, with
# no ggufq message and the temporary file left behind), never a file left.
# Run by ctest as: sh threads.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin threads
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf
W=$TMP/work

# run_env ENV-ARGS -- ARGS: the program under env(1) (VAR=value, -u VAR)
run_env() {
    envargs=""
    while [ "$1" != "--" ]; do envargs="$envargs $1"; shift; done
    shift
    # shellcheck disable=SC2086
    env $envargs "$GGUFQ" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
}

# The input: the fixture as F32, so requant converts its two 32000-row tensors
# (to F16: rows of 8 fit no block type) in chunks that are split over threads.
run dequant "$FIXTURE" "$TMP/f32.gguf" --to f32
expect 0 "dequant the fixture to f32" || exit 1
run requant "$TMP/f32.gguf" q4_K "$TMP/ref.gguf" --threads 1
expect 0 "requant with 1 thread" || exit 1
out_has "1 thread" "summary, 1 thread"

# ---- the thread count in the summary: capped, OMP_NUM_THREADS for "all" ------
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
cap=$((cpus * 4))
[ "$cap" -gt 512 ] && cap=512
run requant "$TMP/f32.gguf" q4_K "$TMP/a.gguf" --threads 1024
expect 0 "--threads 1024" && out_has " $cap threads" "--threads 1024 capped at 4 per CPU"
cmp -s "$TMP/a.gguf" "$TMP/ref.gguf" || fail "--threads 1024 changed the bytes"
run_env OMP_NUM_THREADS=3 -- requant "$TMP/f32.gguf" q4_K "$TMP/a.gguf"
want=3
[ "$cap" -lt 3 ] && want=$cap
expect 0 "OMP_NUM_THREADS=3" && out_has " $want threads" "OMP_NUM_THREADS=3 when --threads is not given"
run_env OMP_NUM_THREADS=3 -- requant "$TMP/f32.gguf" q4_K "$TMP/a.gguf" --threads 2
expect 0 "OMP_NUM_THREADS=3 --threads 2" && out_has " 2 threads" "--threads wins over OMP_NUM_THREADS"
run_env -u OMP_NUM_THREADS -- requant "$TMP/f32.gguf" q4_K "$TMP/a.gguf"
want=$cpus
[ "$want" -eq 1 ] && want="1 thread" || want="$want threads"
expect 0 "no thread count" && out_has " $want" "all CPUs by default"
run_env -u OMP_NUM_THREADS -- requant "$TMP/f32.gguf" q4_K "$TMP/a.gguf" --threads 0
expect 0 "--threads 0" && out_has " $want" "--threads 0 is all CPUs"
cmp -s "$TMP/a.gguf" "$TMP/ref.gguf" || fail "--threads 0 changed the bytes"

# ---- out of address space ----------------------------------------------------
# Not under a sanitizer (its shadow memory needs terabytes of address space)
# nor under an emulator (a wrapper script: qemu reserves the guest's space).
skip_limits=""
[ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ] && skip_limits="a sanitizer's options are set"
grep -q -a -e __asan_init -e __tsan_init -e __msan_init "$GGUFQ" 2>/dev/null &&
    skip_limits="the program is built with a sanitizer"
[ "$(head -c 2 "$GGUFQ")" = "#!" ] && skip_limits="the program runs under an emulator"
if [ -n "$skip_limits" ]; then
    echo "skip: address-space limits ($skip_limits)"
else
    # From roomy (64 threads' default stacks do not fit: the old libgomp build
    # died there) down to where the program still loads but its buffers may
    # not fit (the last few limits: fewer threads, then none, then a failure).
    for limit in 300000 100000 60000 48000 44000 40000 36000 32000 28000; do
        rm -rf "$W"
        mkdir "$W"
        ( ulimit -v "$limit" && exec "$GGUFQ" requant "$TMP/f32.gguf" q4_K "$W/out.gguf" --threads 64 \
              --progress none ) >"$TMP/out" 2>"$TMP/err"
        rc=$?
        what="ulimit -v $limit, --threads 64"
        if [ "$rc" -eq 0 ]; then
            if cmp -s "$W/out.gguf" "$TMP/ref.gguf"; then echo "ok: $what: written, same bytes"
            else fail "$what: the output differs from the 1-thread output"; fi
        elif [ "$rc" -eq 1 ] && [ "$limit" -lt 300000 ] && grep -q '^ggufq: ' "$TMP/err" &&
                ! grep -q -i 'libgomp\|thread creation' "$TMP/err"; then
            echo "ok: $what: exit 1, $(head -n 1 "$TMP/err")"
            [ -e "$W/out.gguf" ] && fail "$what: failed but wrote OUT"
        else
            fail "$what: exit $rc"
            sed 's/^/    stderr: /' "$TMP/err"
        fi
        left=$(ls -A "$W" | grep -v -x 'out.gguf')
        [ -z "$left" ] || fail "$what: left behind: $left"
    done
fi

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS failure(s)"
    exit 1
fi
echo "all passed"
