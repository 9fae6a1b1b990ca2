#!/bin/sh
# CLI: what OUT may be. A symbolic link is written through (the link stays);
# a FIFO or character device is streamed into and stays what it is; a
# directory, socket or block device is refused, untouched; no input (the
# model, the --imatrix file) is ever OUT, by path or link; a replaced file
# keeps its mode; `ulimit -f` is a write error with a message, not SIGXFSZ.
# Device nodes are private copies made with mknod in the test's directory
# (root only): the system's /dev/null is never an output here.
# Run by ctest as: sh outputs.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin outputs
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf
W=$TMP/work

# only: the work directory holds exactly these names (sorted, space-separated)
only() {
    got=$(ls -A "$W" | tr '\n' ' ')
    [ "$got" = "$1 " ] || fail "$2: the directory holds: $got"
}
fresh() { rm -rf "$W" && mkdir "$W"; }
mode_of() { stat -c %a "$1"; }

# the outputs of a good run, for comparison
mkdir "$TMP/good"
"$GGUFQ" requant "$FIXTURE" q8_0 "$TMP/good/requant.gguf" --threads 1 -q || fail "reference requant"
"$GGUFQ" dequant "$FIXTURE" "$TMP/good/dequant.gguf" --threads 1 >/dev/null || fail "reference dequant"
cmd_args() {   # <requant|dequant> <out>
    case $1 in
    requant) echo "requant $FIXTURE q8_0 $2 --threads 1 -q" ;;
    dequant) echo "dequant $FIXTURE $2 --threads 1" ;;
    esac
}

# ---- a symbolic link: the file it leads to is replaced, the link stays ----------
for c in requant dequant; do
    fresh
    mkdir "$W/models"
    printf 'old' >"$W/models/real.gguf"
    ln -s models/real.gguf "$W/link.gguf"
    ln -s link.gguf "$W/chain.gguf"
    # shellcheck disable=SC2046
    run $(cmd_args $c "$W/chain.gguf")
    expect 0 "$c through two symbolic links" || continue
    [ -L "$W/link.gguf" ] && [ -L "$W/chain.gguf" ] || fail "$c: a symbolic link was replaced"
    [ "$(readlink "$W/link.gguf")" = models/real.gguf ] || fail "$c: the link changed"
    cmp -s "$W/models/real.gguf" "$TMP/good/$c.gguf" || fail "$c: the link's target is not the output"
    only "chain.gguf link.gguf models" "$c through links"
    [ "$(ls -A "$W/models")" = real.gguf ] || fail "$c: files left beside the target: $(ls -A "$W/models")"
done

# ---- a FIFO: streamed into, stays a FIFO ----------------------------------------
for c in requant dequant; do
    fresh
    mkfifo "$W/fifo"
    cat "$W/fifo" >"$TMP/from-fifo" &
    reader=$!
    # shellcheck disable=SC2046
    run $(cmd_args $c "$W/fifo")
    # if the FIFO was replaced, its reader still waits on the old one
    [ -p "$W/fifo" ] || { kill "$reader" 2>/dev/null; fail "$c: the FIFO was replaced"; }
    wait "$reader"
    expect 0 "$c into a FIFO" || continue
    cmp -s "$TMP/from-fifo" "$TMP/good/$c.gguf" || fail "$c: the FIFO's reader did not get the output"
    only "fifo" "$c into a FIFO"
done
# the reader goes away early: a write error naming OUT
fresh
mkfifo "$W/fifo"
head -c 100 "$W/fifo" >/dev/null &
reader=$!
run dequant "$FIXTURE" "$W/fifo" --threads 1
[ -p "$W/fifo" ] || { kill "$reader" 2>/dev/null; fail "the FIFO was replaced"; }
wait "$reader"
expect 1 "dequant into a FIFO whose reader stops" && err_has "$W/fifo: writing failed at offset" "reader stops" &&
    err_has "Broken pipe" "reader stops"

# ---- character devices (root only: private copies of /dev/null and /dev/full) ---
if [ "$(id -u)" -eq 0 ] && fresh && mknod "$W/null" c 1 3 2>/dev/null && mknod "$W/full" c 1 7 2>/dev/null; then
    for c in requant dequant; do
        # shellcheck disable=SC2046
        run $(cmd_args $c "$W/null")
        expect 0 "$c into a character device (a copy of /dev/null)"
        [ -c "$W/null" ] && [ "$(stat -c %t:%T "$W/null")" = 1:3 ] || fail "$c: the device node was replaced"
        # shellcheck disable=SC2046
        run $(cmd_args $c "$W/full")
        expect 1 "$c into a device that is always full (a copy of /dev/full)" &&
            err_has "$W/full: writing failed at offset 0 (header): No space left on device" "$c into a full device"
        [ -c "$W/full" ] && [ "$(stat -c %t:%T "$W/full")" = 1:7 ] || fail "$c: the device node was replaced"
        only "full null" "$c into devices"
    done
else
    echo "skip: character devices (needs root and mknod)"
fi

# ---- refused: a directory, a socket, a block device; nothing changes ------------
fresh
mkdir "$W/dir"
run requant "$FIXTURE" q8_0 "$W/dir" --threads 1
expect 1 "OUT is a directory" && err_has "$W/dir: output path is a directory: refusing to write there" "directory"
ln -s dir "$W/dirlink"
run requant "$FIXTURE" q8_0 "$W/dirlink" --threads 1
expect 1 "OUT links to a directory" && err_has "$W/dirlink: output path is a directory ($W/dir, where" "dir link"
if command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$W/sock" 2>/dev/null; then
    run dequant "$FIXTURE" "$W/sock" --threads 1
    expect 1 "OUT is a socket" && err_has "$W/sock: output path is a socket" "socket"
    [ -S "$W/sock" ] || fail "the socket was replaced"
else
    echo "skip: socket (needs python3)"
    : >"$W/sock"
fi
if [ "$(id -u)" -eq 0 ] && mknod "$W/blk" b 7 254 2>/dev/null; then   # never opened
    run requant "$FIXTURE" q8_0 "$W/blk" --threads 1
    expect 1 "OUT is a block device" && err_has "$W/blk: output path is a block device" "block device"
    [ -b "$W/blk" ] || fail "the block device node was replaced"
else
    echo "skip: block device (needs root and mknod)"
    : >"$W/blk"
fi
only "blk dir dirlink sock" "refused outputs"
[ -z "$(ls -A "$W/dir")" ] || fail "something was written into the directory"

# ---- no input is OUT: the --imatrix file, by path or link ------------------------
fresh
cp "$FIXTURE" "$W/in.gguf"
# a legacy imatrix with one entry ("none", one value 1.0): usable with any model
printf '\001\000\000\000\004\000\000\000none\001\000\000\000\001\000\000\000\000\000\200\077' >"$W/imx.dat"
cp "$W/imx.dat" "$TMP/imx.orig"
ln "$W/imx.dat" "$W/imx-hard.gguf"
ln -s imx.dat "$W/imx-soft.gguf"
for out in imx.dat imx-hard.gguf imx-soft.gguf; do
    run requant "$W/in.gguf" q4_K "$W/$out" --imatrix "$W/imx.dat" --threads 1 -q
    expect 1 "OUT is the --imatrix file ($out)" &&
        err_has "$W/$out: refusing to overwrite the input file $W/imx.dat (same file)" "imatrix as $out"
    cmp -s "$W/imx.dat" "$TMP/imx.orig" || fail "the imatrix was modified (OUT $out)"
done
[ -L "$W/imx-soft.gguf" ] || fail "the link to the imatrix was replaced"
run requant "$W/in.gguf" q4_K "$W/in.gguf" --threads 1 -q
expect 1 "OUT is IN" && err_has "refusing to overwrite the input file" "OUT is IN"
cmp -s "$W/in.gguf" "$FIXTURE" || fail "the input was modified"
only "imx-hard.gguf imx-soft.gguf imx.dat in.gguf" "inputs as OUT"
run requant "$W/in.gguf" q4_K "$W/out.gguf" --imatrix "$W/imx.dat" --threads 1 -q
expect 0 "the same imatrix with another OUT"

# ---- a replaced file keeps its mode; a new one follows the umask -----------------
for c in requant dequant; do
    fresh
    for m in 600 640 444 755; do
        printf 'old' >"$W/out.gguf"
        chmod "$m" "$W/out.gguf"
        # shellcheck disable=SC2046
        run $(cmd_args $c "$W/out.gguf")
        expect 0 "$c over a file of mode $m" || continue
        [ "$(mode_of "$W/out.gguf")" = "$m" ] || fail "$c: mode $m became $(mode_of "$W/out.gguf")"
        cmp -s "$W/out.gguf" "$TMP/good/$c.gguf" || fail "$c over mode $m: wrong bytes"
    done
    # shellcheck disable=SC2046
    (umask 027 && exec "$GGUFQ" $(cmd_args $c "$W/new.gguf") >/dev/null 2>&1) || fail "$c: a new file"
    [ "$(mode_of "$W/new.gguf")" = 640 ] || fail "$c: a new file under umask 027 has mode $(mode_of "$W/new.gguf")"
    only "new.gguf out.gguf" "$c modes"
done

# ---- ulimit -f: a write error with a message, never SIGXFSZ ----------------------
for c in requant dequant; do
    fresh
    printf 'old' >"$W/out.gguf"
    # shellcheck disable=SC2046
    (ulimit -f 500 && exec "$GGUFQ" $(cmd_args $c "$W/out.gguf")) >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect 1 "$c past ulimit -f: exit 1" || continue
    err_has "$W/out.gguf: writing temporary file" "$c past ulimit -f"
    err_has "failed at offset " "$c past ulimit -f"   # the limit's unit is the shell's (512 or 1024 bytes)
    err_has "File too large" "$c past ulimit -f"
    [ "$(cat "$W/out.gguf")" = old ] || fail "$c past ulimit -f: the existing OUT was replaced"
    only "out.gguf" "$c past ulimit -f"
done

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
