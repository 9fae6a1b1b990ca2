#!/bin/sh
# CLI: the progress display of `dequant` and `requant` (src/cli/cli_progress.c):
# --progress json on stdout (start, tensor, summary or error events; human
# messages on stderr), the bar fitted to the terminal's width, long names
# shortened, no partial line left behind.
# Run by ctest as: sh progress.sh <path-to-ggufq> <tests-dir> <path-to-ggufq-testhooks>
set -u
GGUFQ=$1
TESTS=$2
HOOKS=${3:-}
. "$(dirname "$0")/lib.sh"
cli_begin progress
FIXTURE=$TESTS/data/llama-2-tiny-random.gguf

err_empty() { [ ! -s "$TMP/err" ] || fail "$1: unexpected stderr: $(cat "$TMP/err")"; }
# has_ctl FILE: true if FILE holds a carriage return or an escape (terminal control)
has_ctl() { [ "$(tr -d '\r\033' <"$1" | wc -c)" -ne "$(wc -c <"$1")" ]; }

if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: python3 not found: JSON progress lines not parsed"
    exit 0
fi

# check_json FILE KIND [ARGS]: FILE is JSON lines with an "event" each, checked by kind (below)
cat >"$TMP/check_json.py" <<'EOF'
import json, sys
path, kind = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
assert text.endswith("\n"), "the last line is not terminated"
objs = [json.loads(l) for l in text.split("\n")[:-1]]
assert all(isinstance(o, dict) and "event" in o for o in objs), "a line without an event"
events = [o["event"] for o in objs]
if kind in ("dequant", "requant"):
    # start, then one tensor event a tensor at least (indexes never go back), then the summary
    assert events[0] == "start" and events[-1] == "summary", events
    assert set(events[1:-1]) == {"tensor"}, events
    start, summary, ts = objs[0], objs[-1], objs[1:-1]
    assert start["command"] == summary["command"] == kind
    assert [t["index"] for t in ts] == sorted(t["index"] for t in ts)
    assert {t["index"] for t in ts} == set(range(12)), [t["index"] for t in ts]
    for t in ts:
        assert set(t) == {"event", "tensor", "index", "count", "bytes_done", "bytes_total", "bytes_written",
                          "elapsed"}, t
        assert t["count"] == 12 and 0 < t["bytes_done"] <= t["bytes_total"] == 1026144, t
    assert ts[-1]["bytes_done"] == 1026144
    assert start["tensors"] == summary["tensors"] == 12 and start["bytes_total"] == 1026144, start
    assert summary["bytes_in"] == 1026144 and summary["weights"] == 513048, summary
    assert summary["seconds"] >= 0 and summary["bpw_in"] == 16.0007, summary
    if kind == "dequant":   # 9 f16 tensors decoded, 3 f32 ones copied
        want = dict(target="f32", file_type=0, converted=9, copied=3, bytes_out=2052192, bpw_out=32.0, threads=2)
    else:                   # q4_K --pure: only token_embd.weight [8, 32000] is converted (q4_K needs rows of 256)
        want = dict(target="q4_K", file_type=15, threads=2)
    for k, v in want.items():
        assert summary[k] == v, (k, summary[k], v)
    assert summary["output"] == sys.argv[3] and start["output"] == sys.argv[3], (summary, start)
elif kind == "error":
    # an error event, last; the message is stderr's (after "ggufq: ")
    err_text = open(sys.argv[3], encoding="utf-8").read()
    last = objs[-1]
    assert events.count("error") == 1 and events[-1] == "error", events
    assert "summary" not in events
    assert set(last) == {"event", "command", "status", "error", "exit_status", "message"}, last
    assert last["status"] == int(sys.argv[4]) and last["exit_status"] == int(sys.argv[5]), last
    assert err_text.endswith("ggufq: " + last["message"] + "\n"), (err_text, last["message"])
    assert not err_text.lstrip("\n").startswith("{"), "JSON on stderr"
else:
    raise SystemExit("unknown kind " + kind)
EOF
check_json() {
    if python3 "$TMP/check_json.py" "$@" 2>"$TMP/py.err"; then
        return 0
    fi
    sed 's/^/    /' "$TMP/py.err"
    return 1
}

# ---- --progress json: stdout carries JSON lines only, the last one a summary -------
run dequant "$FIXTURE" "$TMP/d.gguf" --threads 2 --progress json
expect 0 "dequant --progress json" && {
    err_empty "dequant --progress json"
    check_json "$TMP/out" dequant "$TMP/d.gguf" && echo "ok: dequant's JSON lines: start, tensors, summary" ||
        fail "dequant --progress json lines"
}
run dequant "$FIXTURE" "$TMP/d2.gguf" --threads 2 --progress=json --quiet   # --quiet leaves explicit JSON
expect 0 "dequant --progress=json --quiet" && {
    err_empty "dequant --progress=json --quiet"
    check_json "$TMP/out" dequant "$TMP/d2.gguf" || fail "dequant --progress=json --quiet lines"
    cmp -s "$TMP/d.gguf" "$TMP/d2.gguf" || fail "progress changed dequant's output"
}
run requant "$FIXTURE" q4_K "$TMP/r.gguf" --pure --threads 2 --progress json
expect 0 "requant --progress json" && {
    err_empty "requant --progress json"
    check_json "$TMP/out" requant "$TMP/r.gguf" && echo "ok: requant's JSON lines: start, tensors, summary" ||
        fail "requant --progress json lines"
}

# ---- failures: the last JSON line is an error event; the message is on stderr ------
mkdir "$TMP/empty"
run dequant "$FIXTURE" "$TMP/no-such-dir/d.gguf" --progress json
expect 1 "dequant --progress json into a missing directory" && {
    check_json "$TMP/out" error "$TMP/err" -3 1 && echo "ok: dequant failure: an error event last, message on stderr" ||
        fail "dequant failure JSON: $(cat "$TMP/out")"
    grep -q -F "ggufq: $TMP/no-such-dir/d.gguf: output directory" "$TMP/err" || fail "dequant failure: stderr $(cat "$TMP/err")"
}
head -c 1000 "$FIXTURE" >"$TMP/trunc.gguf"
run dequant "$TMP/trunc.gguf" "$TMP/empty/t.gguf" --progress json
expect 1 "dequant --progress json of a truncated input" && {
    [ "$(wc -l <"$TMP/out")" -eq 1 ] || fail "truncated input: no start before the file is read: $(cat "$TMP/out")"
    check_json "$TMP/out" error "$TMP/err" -13 1 || fail "truncated input JSON: $(cat "$TMP/out")"
}
run requant "$TMP/trunc.gguf" q8_0 "$TMP/empty/t.gguf" --progress json
expect 1 "requant --progress json of a truncated input" &&
    { check_json "$TMP/out" error "$TMP/err" -13 1 || fail "requant truncated input JSON: $(cat "$TMP/out")"; }
# esc_nan_tensor.gguf: a NaN in a tensor named with escape sequences: the run fails after its start
run requant "$TESTS/data/esc_nan_tensor.gguf" q8_0 "$TMP/empty/n.gguf" --progress json
expect 1 "requant --progress json, NaN in the input" && {
    check_json "$TMP/out" error "$TMP/err" -32 1 || fail "requant NaN JSON: $(cat "$TMP/out")"
    head -c 18 "$TMP/out" | grep -q -F '{"event":"start",' || fail "requant NaN: no start event first"
    grep -q -F '"message":"'"$TESTS"'/data/esc_nan_tensor.gguf: offset 160: tensor '"'"'blk.0.\\x1b[31mRED\\x1b[0m.weight'"'"' row 0: NaN or Inf' \
        "$TMP/out" || fail "requant NaN: message not as on stderr, escaped: $(cat "$TMP/out")"
}
if [ -n "$HOOKS" ]; then   # a write that fails after some tensors went out (a full disk)
    GGUFQ_FAULT_WRITE_AT=2500000 "$HOOKS" dequant "$FIXTURE" "$TMP/empty/f.gguf" --progress json \
        >"$TMP/out" 2>"$TMP/err"; rc=$?
    expect 1 "dequant --progress json, disk full mid-run" && {
        check_json "$TMP/out" error "$TMP/err" -30 1 || fail "disk full JSON: $(cat "$TMP/out")"
        grep -q '"event":"tensor"' "$TMP/out" || fail "disk full: no tensor event before the error"
    }
fi
if [ -n "$HOOKS" ]; then   # SIGTERM during the run: an error event with exit status 143
    for cmd in dequant requant; do
        [ $cmd = requant ] && target=q8_0 || target=
        : >"$TMP/err"
        # shellcheck disable=SC2086
        GGUFQ_TEST_PAUSE_BEFORE_DATA=10000 "$HOOKS" $cmd "$FIXTURE" $target "$TMP/empty/s.gguf" --progress json \
            >"$TMP/out" 2>"$TMP/err" &
        pid=$!
        i=0
        while [ $i -lt 200 ] && ! grep -q -F "ggufq: test pause" "$TMP/err"; do sleep 0.05; i=$((i + 1)); done
        kill -s TERM "$pid"
        wait "$pid"
        rc=$?
        expect 143 "$cmd --progress json, SIGTERM" && {
            check_json "$TMP/out" error "$TMP/err" -31 143 || fail "$cmd SIGTERM JSON: $(cat "$TMP/out")"
            grep -q -F '"message":"interrupted; '"$TMP"'/empty/s.gguf not written"}' "$TMP/out" ||
                fail "$cmd SIGTERM: message $(tail -1 "$TMP/out")"
        }
    done
fi
[ "$(ls -A "$TMP/empty" | wc -l)" -eq 0 ] || fail "files left: $(ls -A "$TMP/empty")"
run dequant "$FIXTURE" "$TMP/x.gguf" --progress yes
expect 2 "dequant --progress yes is a usage error" && {
    grep -q -F "ggufq dequant: --progress must be bar, json or none, not 'yes'" "$TMP/err" || fail "usage message"
    [ -s "$TMP/out" ] && fail "a usage error printed on stdout"
}

# ---- no terminal: no bar unless asked; then plain lines, never a control sequence --
run dequant "$FIXTURE" "$TMP/n.gguf"
expect 0 "dequant, stderr not a terminal" && err_empty "dequant: no progress when stderr is no terminal"
grep -q -x "wrote $TMP/n.gguf: 12 tensors as f32" "$TMP/out" || fail "dequant summary: $(cat "$TMP/out")"
run dequant "$FIXTURE" "$TMP/n.gguf" -q
expect 0 "dequant -q" && { [ -s "$TMP/out" ] && fail "dequant -q printed $(cat "$TMP/out")"; err_empty "dequant -q"; }
COLUMNS=200 "$GGUFQ" dequant "$FIXTURE" "$TMP/n.gguf" --progress bar >"$TMP/out" 2>"$TMP/err"; rc=$?
expect 0 "dequant --progress bar into a file" && {
    has_ctl "$TMP/err" && fail "--progress bar into a file wrote CR or ESC"
    [ "$(grep -c '^\[[#.]*\] ' "$TMP/err")" -eq 12 ] || fail "one bar line a tensor: $(cat "$TMP/err")"
    grep -q -F '[##############################] 100.0% 12/12 output.weight ' "$TMP/err" ||
        fail "last bar line: $(tail -1 "$TMP/err")"
}

# ---- on a terminal (util-linux's script gives the run a pseudo-terminal) -------------
# tty_run COLS CMD: run CMD on a pseudo-terminal COLS columns wide (0: size unknown);
# $TMP/tty receives what it printed.
tty_run() {
    script -qfec "stty cols $1 rows 24 2>/dev/null; $2" /dev/null </dev/null >"$TMP/tty" 2>&1; rc=$?
}
# width.py FILE: the widest progress line the terminal showed: text between CRs and
# newlines holding a percentage, in characters, "erase to end of line" removed
cat >"$TMP/width.py" <<'EOF'
import re, sys
t = open(sys.argv[1], encoding="utf-8").read().replace("\x1b[K", "")
segs = re.split("[\r\n]", t)
assert not any("\x1b" in s for s in segs), "another control sequence"
print(max(len(s) for s in segs if "%" in s))
EOF
# a tensor whose name is 59 characters long
python3 -c 'import struct, sys
name = b"blk.12." + b"x" * 40 + b".long.weight"
P = struct.pack
head = b"GGUF" + P("<IQQ", 3, 1, 0) + P("<Q", len(name)) + name + P("<IqI", 1, 8, 1) + P("<Q", 0)
head += b"\0" * (-len(head) % 32)
open(sys.argv[1], "wb").write(head + P("<8H", *range(0x3c00, 0x3c08)))' "$TMP/long.gguf"
if ! command -v script >/dev/null 2>&1; then
    echo "skip: 'script' (util-linux) not found: progress on a terminal not tested"
elif ! script -qfec true /dev/null </dev/null >/dev/null 2>&1; then
    echo "skip: 'script' cannot open a pseudo-terminal here: progress on a terminal not tested"
else
    for cols in 60 80 120; do
        tty_run "$cols" "'$GGUFQ' dequant '$FIXTURE' '$TMP/t.gguf' --threads 2"
        expect 0 "dequant on a $cols-column terminal" && {
            w=$(python3 "$TMP/width.py" "$TMP/tty")
            [ "$w" -lt "$cols" ] && echo "ok: the bar fits $cols columns ($w)" || fail "the bar is $w columns on a $cols-column terminal"
            grep -q "$(printf '\r')\[#*\.*\] " "$TMP/tty" || fail "bar not redrawn in place (no CR before it)"
            grep -q "100.0% 12/12 output.weight" "$TMP/tty" || fail "$cols columns: last bar $(od -c "$TMP/tty" | tail -8)"
            tr -d '\r' <"$TMP/tty" | grep -q "^wrote $TMP/t.gguf: 12 tensors as f32$" || fail "summary not on its own line"
        }
    done
    tty_run 0 "COLUMNS=60 '$GGUFQ' dequant '$FIXTURE' '$TMP/t.gguf' --threads 2"
    expect 0 "dequant, terminal size unknown, COLUMNS=60" && {
        w=$(python3 "$TMP/width.py" "$TMP/tty")
        [ "$w" -lt 60 ] && echo "ok: COLUMNS=60 is followed ($w)" || fail "COLUMNS=60: the bar is $w columns"
    }
    tty_run 60 "'$GGUFQ' requant '$FIXTURE' q4_K '$TMP/t.gguf' --threads 2"
    expect 0 "requant on a 60-column terminal" && {
        w=$(python3 "$TMP/width.py" "$TMP/tty")
        [ "$w" -lt 60 ] || fail "requant: the bar is $w columns on a 60-column terminal"
        tr -d '\r' <"$TMP/tty" | grep -q "^wrote $TMP/t.gguf (Q4_K_M from 'q4_K', file type 15)$" || fail "requant: summary not on its own line"
    }
    tty_run 25 "'$GGUFQ' dequant '$FIXTURE' '$TMP/t.gguf' --progress bar 2>&1 >/dev/null"
    expect 0 "dequant on a 25-column terminal" && {
        tr '\r' '\n' <"$TMP/tty" | grep -q -x '100.0%.\[K' || fail "25 columns: not the percentage alone: $(od -c "$TMP/tty" | head)"
        grep -q '\[#' "$TMP/tty" && fail "25 columns: a bar was drawn"
        [ "$(tail -c 1 "$TMP/tty" | od -An -c | tr -d ' ')" = '\n' ] || fail "25 columns: a partial line left"
    }
    tty_run 60 "'$GGUFQ' dequant '$TMP/long.gguf' '$TMP/l.gguf'"
    expect 0 "a long tensor name on a 60-column terminal" && {
        w=$(python3 "$TMP/width.py" "$TMP/tty")
        [ "$w" -lt 60 ] || fail "long name: the bar is $w columns"
        # 60 columns: 32 for the name, its middle cut: 15 characters, "…", the last 16
        grep -q -F "100.0% 1/1 blk.12.xxxxxxxx…xxxx.long.weight" "$TMP/tty" && echo "ok: the name is cut in its middle" ||
            fail "long name: $(tr '\r' '\n' <"$TMP/tty" | head -3)"
    }
    if [ -n "$HOOKS" ]; then   # an error mid-run starts on a line of its own, after the bar's
        tty_run 80 "GGUFQ_FAULT_WRITE_AT=2500000 '$HOOKS' dequant '$FIXTURE' '$TMP/empty/f.gguf' --threads 2"
        expect 1 "dequant on a terminal, disk full mid-run" && {
            grep -q '\[#' "$TMP/tty" || fail "disk full: no bar before the error"
            tr -d '\r' <"$TMP/tty" | grep -q '^ggufq: .*f.gguf' || fail "the error does not start its own line: $(od -c "$TMP/tty" | tail -12)"
            [ "$(tail -c 1 "$TMP/tty" | od -An -c | tr -d ' ')" = '\n' ] || fail "disk full: a partial line left"
        }
    fi
fi

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
