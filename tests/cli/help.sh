#!/bin/sh
# CLI: every command's help. 'ggufq help X', 'ggufq X --help' and 'ggufq X -h'
# print the same text; it documents every option the command's parser accepts
# (each "--option" / "-o" string literal of the parser's source files, found
# in src/cli/, must appear in the help) and ends with 2-4 examples.
# Run by ctest as: sh help.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
SRC=$TESTS/../src/cli
. "$(dirname "$0")/lib.sh"
cli_begin help

# The source files of each command's parser(s).
sources() {
    case $1 in
    bench) echo "cmd_bench.c bench_requant.c" ;;
    requant) echo "cmd_requant.c cmd_requant_auto.c" ;;
    *)     echo "cmd_$1.c" ;;
    esac
}

COMMANDS="info dequant requant diff stats types bench cpu"
# every command in the program's help is checked here (a new one must be added above)
run help
listed=$(sed -n 's/^  \([a-z]*\)  .*/\1/p' "$TMP/out" | grep -v '^help$' | tr '\n' ' ')
[ "$listed" = "$COMMANDS " ] || fail "commands listed by 'ggufq help': '$listed', checked here: '$COMMANDS '"

for cmd in $COMMANDS; do
    run help "$cmd"
    [ "$rc" -eq 0 ] || fail "help $cmd: exit $rc"
    cp "$TMP/out" "$TMP/help"
    head -n 1 "$TMP/help" | grep -q "^usage: ggufq $cmd" || fail "help $cmd: does not start with its usage"
    [ ! -s "$TMP/err" ] || fail "help $cmd: stderr: $(cat "$TMP/err")"
    for opt in --help -h; do
        run "$cmd" "$opt"
        [ "$rc" -eq 0 ] || fail "$cmd $opt: exit $rc"
        cmp -s "$TMP/out" "$TMP/help" || fail "'$cmd $opt' differs from 'help $cmd'"
    done
    grep -q -e '^  -h, --help ' "$TMP/help" || fail "help $cmd: no '-h, --help' line"

    # Every option string the parser compares arguments with.
    opts=""
    for f in $(sources "$cmd"); do
        [ -f "$SRC/$f" ] || { fail "help $cmd: no source $SRC/$f"; continue; }
        opts="$opts $(grep -o -E '"--?[A-Za-z][A-Za-z0-9-]*"' "$SRC/$f" | tr -d '"')"
    done
    n=0
    for opt in $opts; do
        n=$((n + 1))
        grep -q -E -e "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|\$)" "$TMP/help" ||
            fail "help $cmd: option $opt (accepted by its parser) is not documented"
    done
    [ "$n" -gt 0 ] || fail "help $cmd: no option found in its parser's source"

    # Examples last: 2 to 4 lines '  ggufq <cmd> ...' (an environment assignment may come first).
    examples=$(sed -n '/^Examples:$/,$p' "$TMP/help")
    [ -n "$examples" ] || { fail "help $cmd: no 'Examples:' section"; continue; }
    count=$(printf '%s\n' "$examples" | sed 1d | grep -c -E "^  ([A-Z_]+=[^ ]+ )?ggufq $cmd( |\$)")
    total=$(printf '%s\n' "$examples" | sed 1d | grep -c .)
    [ "$count" -ge 2 ] && [ "$count" -le 4 ] && [ "$count" -eq "$total" ] ||
        fail "help $cmd: $count example(s) of 'ggufq $cmd' in $total line(s) after 'Examples:' (want 2-4, nothing else)"
    echo "ok: help $cmd ($n option strings documented, $count examples)"
done

# help of an unknown command and of 'help' itself keep their exit statuses
run help frobnicate
[ "$rc" -eq 2 ] || fail "help frobnicate: exit $rc, expected 2"
run help help
[ "$rc" -eq 0 ] || fail "help help: exit $rc, expected 0"
grep -q '^usage: ggufq COMMAND' "$TMP/out" || fail "help help: not the program's help"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
