#!/bin/sh
# CLI: failures in the middle of a run. SIGINT/SIGTERM, an input truncated
# while mapped (SIGBUS), write errors (ENOSPC/EIO) at many output offsets,
# missing or read-only output directories, truncated inputs. Every one must
# end with exit status 1 and a message naming the file (and offset), leave no
# output and no temporary file, and never modify the input.
# Run by ctest as: sh failures.sh <path-to-ggufq> <tests-dir> <path-to-ggufq-testhooks>
#
# Test hooks used, read only by ggufq-testhooks (tests/cli_testhooks.c):
#   GGUFQ_TEST_PAUSE_BEFORE_DATA=<ms>  the CLI sleeps once its output file is open
#   GGUFQ_FAULT_WRITE_AT=<byte>[:errno] | fsync[:errno]  the writer fails there
set -u
GGUFQ=$1
TESTS=$2
HOOKS=$3
. "$(dirname "$0")/lib.sh"
cli_begin failures
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf
W=$TMP/work

# fresh: an empty work directory holding a writable copy of the fixture as in.gguf
fresh() {
    rm -rf "$W"
    mkdir "$W"
    cp "$FIXTURE" "$W/in.gguf"
    chmod u+w "$W/in.gguf"
}
# only: the work directory holds exactly these names (sorted, space-separated)
only() {
    got=$(ls -A "$W" | tr '\n' ' ')
    [ "$got" = "$1 " ] || fail "$2: files left behind: $got"
}
input_intact() { cmp -s "$W/in.gguf" "$FIXTURE" || fail "$1: the input was modified"; }
# wait_for_pause: true once the command reached the pause hook (it says so on
# stderr, in $TMP/err); its temporary output file exists by then (10 s at most)
wait_for_pause() {
    i=0
    while [ $i -lt 200 ]; do
        grep -q -F "ggufq: test pause" "$TMP/err" 2>/dev/null && return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

# the commands under test, reading $W/in.gguf and writing $W/out.gguf
cmd_args() {
    case $1 in
    dequant)   echo "dequant $W/in.gguf $W/out.gguf --threads 1" ;;
    dequant2)  echo "dequant $W/in.gguf $W/out.gguf --threads 2 --to f16" ;;
    requant)   echo "requant $W/in.gguf q4_0 $W/out.gguf --threads 1 --progress none" ;;
    requant2)  echo "requant $W/in.gguf Q4_K_M $W/out.gguf --threads 2 --progress none" ;;
    esac
}

# temp_kind <pid>: how the running process holds its temporary output file:
# "nameless" (O_TMPFILE: only an open descriptor, shown as <dir>/#<inode>),
# "named" (.out.gguf.tmp-XXXXXX: a file system without O_TMPFILE) or "none".
temp_kind() {
    if ls -A "$W" | grep -q '^\.out\.gguf\.tmp-'; then
        echo named
    elif ls -l "/proc/$1/fd" 2>/dev/null | grep -q -F "$W/#"; then
        echo nameless
    else
        echo none
    fi
}

# tmpfile_works <dir>: true if the file system of dir has O_TMPFILE (needs python3 to tell)
tmpfile_works() {
    command -v python3 >/dev/null 2>&1 &&
        python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o600))' "$1" \
            2>/dev/null
}

# ---- SIGINT / SIGTERM while running --------------------------------------------
# The pause hook holds the run just after its output file is open; the
# signal then arrives mid-run at a known point.
for sig in INT TERM; do
    for c in dequant requant dequant2; do
        fresh
        : >"$TMP/err"   # wait_for_pause must not see the last run's stderr
        # shellcheck disable=SC2046
        GGUFQ_TEST_PAUSE_BEFORE_DATA=10000 "$HOOKS" $(cmd_args $c) >"$TMP/out" 2>"$TMP/err" &
        pid=$!
        wait_for_pause || fail "SIG$sig $c: the pause hook was not reached"
        [ "$(temp_kind $pid)" != none ] || fail "SIG$sig $c: no temporary file during the run"
        kill -s "$sig" "$pid"
        wait "$pid"
        rc=$?
        [ "$sig" = INT ] && want_rc=130 || want_rc=143
        expect $want_rc "SIG$sig during $c: exit $want_rc (128 + the signal)" || continue
        err_has "interrupted" "SIG$sig $c"
        err_has "$W/out.gguf not written" "SIG$sig $c"
        only "in.gguf" "SIG$sig $c"
        input_intact "SIG$sig $c"
    done
done
# Without the hook: the signal lands wherever the run is (often inside the
# kernels). The run may also finish first; it must never be killed by the signal.
fresh
for i in 1 2 3; do
    "$GGUFQ" requant "$W/in.gguf" q2_K "$W/out.gguf" --threads 2 --progress none >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    sleep 0.0$((i * 3))
    kill -s INT "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    if [ "$rc" -eq 130 ]; then
        err_has "interrupted" "SIGINT at a random point (try $i)"
        only "in.gguf" "SIGINT at a random point (try $i)"
    elif [ "$rc" -ne 0 ]; then
        fail "SIGINT at a random point (try $i): exit $rc"
    fi
    rm -f "$W/out.gguf"
done
echo "ok: SIGINT at random points: exit 0 or 130, nothing left behind"
input_intact "SIGINT at random points"

# ---- SIGKILL while writing: nothing is left behind ------------------------------
# The temporary file has no name until the run succeeds (O_TMPFILE), so even a
# process that cannot clean up leaves nothing. An existing OUT stays as it was.
for c in dequant requant dequant2 requant2; do
    fresh
    printf 'old' >"$W/out.gguf"
    : >"$TMP/err"
    # shellcheck disable=SC2046
    GGUFQ_TEST_PAUSE_BEFORE_DATA=10000 "$HOOKS" $(cmd_args $c) >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_for_pause || fail "SIGKILL $c: the pause hook was not reached"
    kind=$(temp_kind $pid)
    kill -s KILL "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" -eq 137 ] || fail "SIGKILL $c: exit $rc, expected 137"
    [ "$(cat "$W/out.gguf")" = old ] || fail "SIGKILL $c: the existing OUT was replaced"
    input_intact "SIGKILL $c"
    case $kind in
    nameless)
        left=$(ls -A "$W" | tr '\n' ' ')
        if [ "$left" = "in.gguf out.gguf " ]; then echo "ok: SIGKILL during $c: nothing left"
        else fail "SIGKILL during $c: files left behind: $left"; fi ;;
    named)
        if tmpfile_works "$W"; then fail "SIGKILL during $c: a named temporary file although $W has O_TMPFILE"
        else echo "skip: SIGKILL during $c: no O_TMPFILE in $W (a named temporary file is left)"; fi ;;
    *) fail "SIGKILL $c: no temporary file during the run" ;;
    esac
done

# ---- the input truncated while it is mapped (SIGBUS) ----------------------------
# The data section of the fixture starts at 724416; metadata values lie before it.
for c in dequant dequant2 requant requant2; do
    for size in 800000 730000 4000; do
        fresh
        : >"$TMP/err"   # wait_for_pause must not see the last run's stderr
        # shellcheck disable=SC2046
        GGUFQ_TEST_PAUSE_BEFORE_DATA=10000 "$HOOKS" $(cmd_args $c) >"$TMP/out" 2>"$TMP/err" &
        pid=$!
        wait_for_pause || fail "truncated while read ($c): the pause hook was not reached"
        truncate -s $size "$W/in.gguf"
        wait "$pid"
        rc=$?
        expect 1 "$c: input truncated to $size bytes while read: exit 1" || continue
        err_has "$W/in.gguf: offset " "$c truncated to $size"
        err_has "the file changed size while being read (SIGBUS)" "$c truncated to $size"
        err_has "$W/out.gguf not written" "$c truncated to $size"
        only "in.gguf" "$c truncated to $size"
    done
done
for json in "" --json; do
    fresh
    : >"$TMP/err"
    # shellcheck disable=SC2086
    GGUFQ_TEST_PAUSE_BEFORE_DATA=10000 "$HOOKS" info $json "$W/in.gguf" >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_for_pause || fail "truncated while read (info): the pause hook was not reached"
    truncate -s 4000 "$W/in.gguf"
    wait "$pid"
    rc=$?
    expect 1 "info $json: input truncated while read: exit 1" &&
        err_has "the file changed size while being read (SIGBUS)" "info $json truncated"
done
# No hook: truncate at some point of a run; it may finish first, but never crash.
"$GGUFQ" dequant "$FIXTURE" "$TMP/big.gguf" >/dev/null 2>&1 || fail "making an F32 input"
for i in 1 2 3 4; do
    rm -rf "$W" && mkdir "$W" && cp "$TMP/big.gguf" "$W/in.gguf"
    "$GGUFQ" dequant "$W/in.gguf" "$W/out.gguf" --to f16 --threads 2 >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    sleep 0.0$((i * 2))
    truncate -s 1000000 "$W/in.gguf"
    wait "$pid"
    rc=$?
    if [ "$rc" -eq 1 ]; then
        err_has "in.gguf" "truncated at a random point (try $i)"
        only "in.gguf" "truncated at a random point (try $i)"
    elif [ "$rc" -ne 0 ]; then
        fail "truncated at a random point (try $i): exit $rc"
        sed 's/^/    stderr: /' "$TMP/err"
    fi
done
echo "ok: input truncated at random points: exit 0 or 1, never a crash"
rm -f "$TMP/big.gguf"

# ---- write errors at many output offsets ----------------------------------------
for c in dequant requant dequant2; do
    fresh
    # shellcheck disable=SC2046
    run $(cmd_args $c)
    expect 0 "$c: a good run" || continue
    size=$(wc -c <"$W/out.gguf")
    mv "$W/out.gguf" "$W/good.gguf"
    printf 'old' >"$W/out.gguf"   # an existing OUT must survive a failed run
    for at in 0 1 23 4095 100000 724415 724416 $((size / 2)) $((size - 4097)) $((size - 1)) \
              $((size / 3)):EIO $((size - 1)):EIO fsync fsync:EIO; do
        case $at in
        fsync*) what="syncing temporary file" ;;
        *) what="failed at offset ${at%:*}" ;;
        esac
        case $at in
        *EIO) why="Input/output error" ;;
        *) why="No space left on device" ;;
        esac
        # shellcheck disable=SC2046
        GGUFQ_FAULT_WRITE_AT=$at "$HOOKS" $(cmd_args $c) >"$TMP/out" 2>"$TMP/err"
        rc=$?
        expect 1 "$c: write error at $at: exit 1" || continue
        err_has "$W/out.gguf: " "$c write error at $at"
        err_has "$what" "$c write error at $at"
        err_has "$why" "$c write error at $at"
        [ "$(cat "$W/out.gguf")" = old ] || fail "$c write error at $at: the existing OUT was replaced"
        only "good.gguf in.gguf out.gguf" "$c write error at $at"
    done
    # past the end: the hook never fires, the run succeeds with the same bytes
    # shellcheck disable=SC2046
    GGUFQ_FAULT_WRITE_AT=$((size + 10)) "$HOOKS" $(cmd_args $c) >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect 0 "$c: write error hook past the end" && { cmp -s "$W/out.gguf" "$W/good.gguf" ||
        fail "$c: output differs with the hook set past the end"; }
    input_intact "$c write errors"
done
# the installed program has no test hooks: the same variables change nothing
fresh
GGUFQ_FAULT_WRITE_AT=100 GGUFQ_TEST_PAUSE_BEFORE_DATA=2000 "$GGUFQ" dequant "$W/in.gguf" "$W/out.gguf" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
expect 0 "ggufq (not ggufq-testhooks) ignores GGUFQ_FAULT_WRITE_AT and GGUFQ_TEST_PAUSE_BEFORE_DATA"
! grep -q "test pause" "$TMP/err" || fail "the installed ggufq paused for GGUFQ_TEST_PAUSE_BEFORE_DATA"
# the failing offset is named with what lies there
fresh
GGUFQ_FAULT_WRITE_AT=100 "$HOOKS" dequant "$W/in.gguf" "$W/out.gguf" >"$TMP/out" 2>"$TMP/err"
err_has "at offset 100 (header)" "write error in the header"
GGUFQ_FAULT_WRITE_AT=724416 "$HOOKS" dequant "$W/in.gguf" "$W/out.gguf" >"$TMP/out" 2>"$TMP/err"
err_has "at offset 724416 (tensor 'token_embd.weight')" "write error in the first tensor"

# ---- output directory missing or read-only --------------------------------------
for c in dequant requant; do
    fresh
    # shellcheck disable=SC2046
    run $(cmd_args $c | sed "s|$W/out.gguf|$W/no-such-dir/out.gguf|")
    expect 1 "$c into a missing directory" &&
        err_has "$W/no-such-dir" "$c into a missing directory"
    only "in.gguf" "$c into a missing directory"
done
if [ "$(id -u)" -eq 0 ]; then
    echo "skip: read-only output directory (root ignores directory permissions)"
else
    for c in dequant requant; do
        fresh
        mkdir "$W/ro"
        chmod a-w "$W/ro"
        # shellcheck disable=SC2046
        run $(cmd_args $c | sed "s|$W/out.gguf|$W/ro/out.gguf|")
        expect 1 "$c into a read-only directory" && err_has "$W/ro" "$c into a read-only directory"
        [ -z "$(ls -A "$W/ro")" ] || fail "$c into a read-only directory: files left behind"
        chmod u+w "$W/ro"
    done
fi

# ---- truncated inputs: every 1000th length ---------------------------------------
# Truncated in place from the longest length down (no copies). Each must fail
# with exit 1 naming the file and an offset; a crash (exit >= 128) is a failure.
# Under a sanitizer (a run costs ~10x more) every 7000th length, to stay well
# under a minute; GGUFQ_TEST_TRUNC_STEP overrides.
step=1000
[ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ] && step=7000
step=${GGUFQ_TEST_TRUNC_STEP:-$step}
fresh
full=$(wc -c <"$W/in.gguf")
n=0
bad=0
len=$(( (full - 1) / step * step ))
while [ "$len" -ge 0 ]; do
    truncate -s "$len" "$W/in.gguf"
    "$GGUFQ" dequant "$W/in.gguf" "$W/out.gguf" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -ne 1 ] || ! grep -q -F "$W/in.gguf: offset " "$TMP/err"; then
        bad=$((bad + 1))
        [ "$bad" -le 5 ] && fail "dequant of the fixture cut to $len bytes: exit $rc: $(cat "$TMP/err")"
    fi
    # requant and info on every 50th of those lengths (every 7th under a sanitizer)
    if [ $((n % (350000 / step))) -eq 0 ]; then
        for c in "requant $W/in.gguf q4_0 $W/out.gguf --threads 1" "info $W/in.gguf"; do
            # shellcheck disable=SC2086
            "$GGUFQ" $c >"$TMP/out" 2>"$TMP/err"
            rc=$?
            if [ "$rc" -ne 1 ] || ! grep -q -F "$W/in.gguf: offset " "$TMP/err"; then
                bad=$((bad + 1))
                fail "${c%% *} of the fixture cut to $len bytes: exit $rc: $(cat "$TMP/err")"
            fi
        done
    fi
    n=$((n + 1))
    len=$((len - step))
done
[ "$bad" -eq 0 ] && echo "ok: $n truncated inputs: exit 1, file and offset named"
only "in.gguf" "truncated inputs"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
