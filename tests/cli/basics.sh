#!/bin/sh
# CLI: --version, help, and usage errors (exit status 2, message on stderr).
# Run by ctest as: sh basics.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin basics

# run ARGS...: run ggufq; sets $rc, stdout in $TMP/out, stderr in $TMP/err
# expect STATUS DESCRIPTION: check the last run's exit status
out_has() { grep -q -e "$1" "$TMP/out" || fail "$2: stdout lacks '$1'"; }
err_has() { grep -q -e "$1" "$TMP/err" || fail "$2: stderr lacks '$1'"; }
out_empty() { [ ! -s "$TMP/out" ] || fail "$1: unexpected stdout"; }
err_empty() { [ ! -s "$TMP/err" ] || fail "$1: unexpected stderr: $(cat "$TMP/err")"; }

FIXTURE=$TESTS/data/llama-2-tiny-random.gguf

# --version
run --version
expect 0 "--version"
[ "$(cat "$TMP/out")" = "ggufq 0.1.0" ] || fail "--version printed '$(cat "$TMP/out")'"
err_empty "--version"

# help, in its three spellings
for args in "help" "--help" "-h"; do
    # shellcheck disable=SC2086
    run $args
    expect 0 "ggufq $args"
    out_has "^usage: ggufq COMMAND" "ggufq $args"
    out_has "^  info " "ggufq $args"
    out_has "^  dequant " "ggufq $args"
    for c in requant types bench cpu; do
        out_has "^  $c " "ggufq $args"
    done
    err_empty "ggufq $args"
done

for cmd in info dequant requant types bench cpu; do
    run help $cmd
    expect 0 "help $cmd"
    out_has "^usage: ggufq $cmd" "help $cmd"
    cp "$TMP/out" "$TMP/help_$cmd"
    for opt in --help -h; do
        run $cmd $opt
        expect 0 "$cmd $opt"
        cmp -s "$TMP/out" "$TMP/help_$cmd" || fail "$cmd $opt differs from 'help $cmd'"
    done
done
run help info
out_has "\-\-json" "help info"
run help dequant
out_has "\-\-to" "help dequant"
out_has "\-\-threads" "help dequant"

# usage errors: exit 2, usage on stderr, nothing on stdout
usage_error() {
    desc=$1
    shift
    run "$@"
    expect 2 "usage error: $desc" || return
    out_empty "$desc"
    err_has "usage: ggufq" "$desc"
}
usage_error "no command"
usage_error "unknown command" frobnicate
err_has "unknown command 'frobnicate'" "unknown command"
usage_error "unknown program option" --frobnicate
usage_error "--version with arguments" --version extra
usage_error "help for an unknown command" help frobnicate
usage_error "help with two names" help info dequant
usage_error "info without FILE" info
usage_error "info with two files" info "$FIXTURE" "$FIXTURE"
usage_error "info unknown option" info --frobnicate "$FIXTURE"
err_has "unknown option '--frobnicate'" "info unknown option"
usage_error "dequant without arguments" dequant
usage_error "dequant without OUT" dequant "$FIXTURE"
usage_error "dequant with three files" dequant "$FIXTURE" "$TMP/a" "$TMP/b"
usage_error "dequant --to quantized type" dequant "$FIXTURE" "$TMP/a" --to q4_0
usage_error "dequant --to unknown type" dequant "$FIXTURE" "$TMP/a" --to=f8
usage_error "dequant --to without value" dequant "$FIXTURE" "$TMP/a" --to
usage_error "dequant --threads -1" dequant "$FIXTURE" "$TMP/a" --threads -1
usage_error "dequant --threads 1025" dequant "$FIXTURE" "$TMP/a" --threads 1025
usage_error "dequant --threads abc" dequant "$FIXTURE" "$TMP/a" --threads=abc
usage_error "dequant --threads 2x" dequant "$FIXTURE" "$TMP/a" --threads 2x
usage_error "dequant unknown option" dequant "$FIXTURE" "$TMP/a" --fast
[ ! -e "$TMP/a" ] || fail "a usage error created the output file"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
