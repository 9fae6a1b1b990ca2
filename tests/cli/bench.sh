#!/bin/sh
# CLI: `ggufq cpu` (text and JSON), GGUFQ_ISA checks, and tiny `ggufq bench`
# runs (table and JSON). No speed is asserted: only that the commands run and
# print what they promise. Kept short (--seconds 0.05, one type).
# Run by ctest as: sh bench.sh <path-to-ggufq> <tests-dir>
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin bench

# run_isa ISA ARGS...: run with GGUFQ_ISA=ISA in the environment
run_isa() { isa=$1; shift; GGUFQ_ISA=$isa "$GGUFQ" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }
# err_empty DESC: nothing on stderr (but qemu-user's own warnings when run under an emulator)
err_empty() {
    ! grep -v -q -E '^qemu-[a-z0-9_]+: warning: ' "$TMP/err" || fail "$1: unexpected stderr: $(cat "$TMP/err")"
}
have_python() { command -v python3 >/dev/null 2>&1; }
# json_ok FILE DESC [PYTHON-EXPRESSION over doc]: FILE is one valid JSON document
json_ok() {
    if ! have_python; then
        echo "skip: python3 not found; $2 not parsed"
        return 0
    fi
    python3 - "$1" "${3:-True}" <<'EOF' || fail "$2: not valid JSON, or a check failed"
import json, sys
def strict(c):
    raise ValueError("non-standard JSON constant " + c)
doc = json.loads(open(sys.argv[1], encoding="utf-8").read(), parse_constant=strict)
sys.exit(0 if eval(sys.argv[2]) else 1)
EOF
}

unset GGUFQ_ISA

# ---- ggufq cpu ----------------------------------------------------------------
run cpu
expect 0 "cpu"
err_empty "cpu"
out_line '^features: ' "cpu"
out_line '^  scalar +yes$' "cpu: scalar always runs"
out_line '^selected: (scalar|avx2|avx512|neon)$' "cpu: selected line"
SELECTED=$(sed -n 's/^selected: //p' "$TMP/out")
# provenance: the machine and the build, before the features
out_line '^machine:  .+, [0-9]+ CPUs? online, ([0-9]+ usable|usable unknown)$' "cpu: machine line"
out_line '^build:    ggufq [0-9]+\.[0-9]+\.[0-9]+, commit ([0-9a-f]{7,40}(-dirty)?|unknown), [A-Za-z]+, (gcc|clang) [0-9]' \
    "cpu: build line"
[ "$(head -n 2 "$TMP/out" | sed 's/:.*//' | tr '\n' '|')" = "machine|build|" ] || fail "cpu: provenance not first"
VERSION=$(sed -n 's/^build:    ggufq \([^,]*\),.*/\1/p' "$TMP/out")
[ "ggufq $VERSION" = "$("$GGUFQ" --version)" ] || fail "cpu: build line's version is not --version's"
# An ISA this CPU cannot run, if there is one (there always is: x86 lacks neon, arm lacks avx2).
UNSUPPORTED=$(sed -n 's/^  \([a-z0-9]*\) *no$/\1/p' "$TMP/out" | head -n 1)

run cpu --json
expect 0 "cpu --json"
json_ok "$TMP/out" "cpu --json" \
    "doc['isa']['scalar'] is True and doc['selected'] == '$SELECTED' and isinstance(doc['features'], list) and \
     doc['provenance']['isa'] == '$SELECTED' and doc['provenance']['cpus_online'] >= 1 and \
     doc['provenance']['version'] == '$VERSION' and \
     sorted(doc['provenance']) == ['build_type', 'commit', 'compiler', 'cpu_model', 'cpus_online', \
                                   'cpus_usable', 'isa', 'version']"

run_isa scalar cpu
expect 0 "GGUFQ_ISA=scalar cpu"
out_line '^selected: scalar$' "GGUFQ_ISA=scalar cpu"
err_empty "GGUFQ_ISA=scalar cpu"

run_isa SCALAR cpu
expect 0 "GGUFQ_ISA=SCALAR cpu (case-insensitive, as the library)"
out_line '^selected: scalar$' "GGUFQ_ISA=SCALAR cpu"

run_isa bogus cpu
expect 1 "GGUFQ_ISA=bogus cpu"
err_has "GGUFQ_ISA=bogus: not one of scalar, avx2, avx512, neon" "GGUFQ_ISA=bogus cpu"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "GGUFQ_ISA=bogus cpu: not one line on stderr: $(cat "$TMP/err")"
[ ! -s "$TMP/out" ] || fail "GGUFQ_ISA=bogus cpu: printed something"
# a value with a terminal escape reaches the terminal escaped
run_isa "$(printf 'x\033[2J')" cpu
expect 1 "GGUFQ_ISA=<ESC>[2J cpu"
err_has 'GGUFQ_ISA=x\x1B[2J: not one of' "GGUFQ_ISA=<ESC>[2J cpu"
! grep -q "$(printf '\033')" "$TMP/err" || fail "GGUFQ_ISA=<ESC>[2J cpu: raw escape on stderr"

if [ -n "$UNSUPPORTED" ]; then
    run_isa "$UNSUPPORTED" cpu
    expect 1 "GGUFQ_ISA=$UNSUPPORTED (not runnable here) cpu"
    err_has "GGUFQ_ISA=$UNSUPPORTED: this CPU/OS cannot run it" "GGUFQ_ISA=$UNSUPPORTED cpu"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "GGUFQ_ISA=$UNSUPPORTED cpu: not one line on stderr"
    # every command refuses, not only cpu
    run_isa "$UNSUPPORTED" info "$2/data/llama-2-tiny-random.gguf"
    expect 1 "GGUFQ_ISA=$UNSUPPORTED info"
    run bench --isa "$UNSUPPORTED" --type q4_0 --seconds 0.01
    expect 1 "bench --isa $UNSUPPORTED (not runnable here)"
fi

run cpu --bogus
expect 2 "cpu --bogus"

# ---- ggufq bench ----------------------------------------------------------------
run bench --type q4_0 --seconds 0.05
expect 0 "bench --type q4_0"
out_line '^dequantize: ' "bench table heading"
out_line '^type +Mw/s +GB/s' "bench column heading"
out_line '^q4_0 +[0-9]+\.[0-9] +[0-9]+\.[0-9]{2} ' "bench q4_0 row"
out_line "^selected: $SELECTED\$" "bench names the selected ISA"
out_line '^machine:  .+ CPUs? online' "bench: machine line"
out_line '^build:    ggufq [0-9.]+, commit ' "bench: build line"
[ "$(grep -c '^q4_0 ' "$TMP/out")" -eq 1 ] || fail "bench --type q4_0: expected one q4_0 row"
out_line ' GB/s over 256 KiB, one thread \(one call.s f32 output, in cache: the ceiling for dequantize\)$' \
    "bench: the in-cache memset"
out_line '^%memset = speed as a percentage of a memset of the same output bytes \(in cache, its best in the run\);$' "bench: %memset legend"
# the %memset and %bound columns are the last: as many as ISAs each, whole numbers
grep -E '^q4_0 ' "$TMP/out" | awk '{ if ($NF !~ /^[0-9]+$/) exit 1 }' || fail "bench: no %memset figure on the q4_0 row"
if grep -q '^ggml: .*libggml-base.so (reference kernels)$' "$TMP/out"; then
    out_line '^geomean +[0-9]' "bench geomean row (peer present)"
    out_line '^geometric mean of ours/ggml, dequantize: scalar [0-9.]+x' "bench geomean line"
else
    echo "note: ggml peer not found: no side-by-side columns checked"
fi

run bench --json --type q8_0 --seconds 0.05 --isa scalar --no-memset
expect 0 "bench --json --type q8_0"
[ "$(wc -l <"$TMP/out")" -eq 1 ] || fail "bench --json: not a single line"
json_ok "$TMP/out" "bench --json" \
    "doc['weights'] == 65536 and doc['selected'] == '$SELECTED' and \
     [r['impl'] for r in doc['dequantize'] if r['impl'] != 'ggml'] == ['scalar'] and \
     all(r['type'] == 'q8_0' and r['mweights_per_s'] > 0 and r['gb_per_s'] > 0 for r in doc['dequantize']) and \
     'quantize' not in doc and set(doc['geomean_vs_ggml']) == {'dequantize'} and doc['memset'] == [] and \
     doc['provenance']['isa'] == '$SELECTED' and doc['provenance']['commit'] != ''"

run bench --json --quantize --type q4_1 --seconds 0.02 --isa scalar --no-peer --no-memset
expect 0 "bench --json --quantize --no-peer"
json_ok "$TMP/out" "bench --json --quantize" \
    "doc['peer'] is None and [r['impl'] for r in doc['quantize']] == ['scalar'] and \
     doc['geomean_vs_ggml']['quantize']['scalar'] is None"

# --out: one table per output, each with the bound and %bound columns; the
# half outputs' tables also compare their weight rate with the f32 output's
run bench --type q4_0 --isa scalar --out f32,bf16 --seconds 0.02 --no-peer
expect 0 "bench --out f32,bf16"
out_line '^dequantize: Mw/s = million weights per second, GB/s = of f32 output;$' "bench --out: f32 table"
out_line '^dequantize to bf16: Mw/s = million weights per second, GB/s = of bf16 output;$' "bench --out: bf16 table"
! grep -q '^dequantize to f16' "$TMP/out" || fail "bench --out f32,bf16: an f16 table"
out_line '^bound = a kernel with the type.s input and output bytes and no decoding \((avx512|avx2|neon|scalar)\), GB/s;$' \
    "bench --out: bound legend"
out_line '^%bound = speed as a percentage of it: how far from what the memory system allows' "bench: %bound legend"
out_line '^x f32 = weights per second against the f32 output.s \(the goal: 1.7 or more\)$' "bench: x f32 legend"
out_line '^ +scalar +bound +%memset +%bound$' "bench --out: f32 heading"
out_line '^ +scalar +bound +%memset +%bound +x f32$' "bench --out: bf16 heading"
out_line ' GB/s over 128 KiB, one thread \(one call.s f16/bf16 output, in cache: the ceiling for dequantize\)$' \
    "bench --out: the half outputs' in-cache memset"
# q4_0 rows: Mw/s, GB/s, bound, %memset, %bound (and x f32 on the bf16 table)
grep -E '^q4_0 ' "$TMP/out" | awk 'NR == 1 && NF != 6 || NR == 2 && (NF != 7 || $NF !~ /^[0-9]+\.[0-9][0-9]$/) ||
    $4 !~ /^[0-9]+\.[0-9][0-9]$/ || $5 !~ /^[0-9]+$/ || $6 !~ /^[0-9]+$/ { bad = 1 } END { exit bad || NR != 2 }' ||
    fail "bench --out f32,bf16: q4_0 rows: $(grep -E '^q4_0 ' "$TMP/out")"

run bench --json --type q4_0 --isa scalar --out f16,f32 --seconds 0.02 --no-memset
expect 0 "bench --json --out f16,f32"
json_ok "$TMP/out" "bench --json --out" \
    "doc['outs'] == ['f16', 'f32'] and doc['bound_isa'] in ('scalar', 'avx2', 'avx512', 'neon') and \
     sorted((b['type'], b['out']) for b in doc['bound']) == [('q4_0', 'f16'), ('q4_0', 'f32')] and \
     all(b['gb_per_s'] > 0 for b in doc['bound']) and \
     [(r['impl'], r['out']) for r in doc['dequantize'] if r['impl'] != 'ggml'] == [('scalar', 'f16'), ('scalar', 'f32')] and \
     all(r['out'] == 'f32' for r in doc['dequantize'] if r['impl'] == 'ggml') and \
     all(r['percent_of_bound'] > 0 and r['percent_of_memset'] is None for r in doc['dequantize'] if r['impl'] != 'ggml') and \
     [r['vs_ggml'] for r in doc['dequantize'] if r['out'] == 'f16'] == [None] and \
     all(('vs_f32' in r) == (r['out'] == 'f16') for r in doc['dequantize']) and \
     all(r['vs_f32'] > 0 for r in doc['dequantize'] if r['out'] == 'f16')"
for bad in f64 f32,q4_0 ,; do
    run bench --type q4_0 --out "$bad"
    expect 2 "bench --out '$bad'"
done
err_has "--out needs at least one of f32, f16, bf16" "bench --out ','"
run bench --type q4_0 --out=q8_0
expect 2 "bench --out=q8_0"
err_has "--out: unknown output 'q8_0' (f32, f16, bf16)" "bench --out=q8_0"
run bench --type q4_0 --out
expect 2 "bench --out (no value)"

# --mt --fresh: a never-touched output buffer each pass (256 MiB, and 128 MiB for a half
# output; kept to one type, no memset)
run bench --mt --fresh --json --type q8_0 --out bf16,f32 --seconds 0.01 --no-memset
expect 0 "bench --mt --fresh --json --out bf16,f32"
json_ok "$TMP/out" "bench --mt --fresh --json" \
    "doc['fresh'] is True and doc['bytes'] == 268435456 and doc['memset'] == [] and doc['outs'] == ['bf16', 'f32'] and \
     sorted(set((r['out'], r['bytes']) for r in doc['dequantize_mt'])) == [('bf16', 134217728), ('f32', 268435456)] and \
     all(r['type'] == 'q8_0' and r['gb_per_s'] > 0 for r in doc['dequantize_mt']) and \
     doc['provenance']['isa'] == '$SELECTED'"
# --mt --out: each output's own table, next to memset of its bytes
run bench --mt --out f16 --type q8_0 --seconds 0.01
expect 0 "bench --mt --out f16"
out_line '^dequantize to f16 \(128 MiB of output\); % memset: ' "bench --mt --out f16: table"
out_line '^memset: +[0-9.]+ GB/s with 1 thread.* \(128 MiB\)$' "bench --mt --out f16: memset of 128 MiB"
! grep -q '^dequantize to f32' "$TMP/out" || fail "bench --mt --out f16: an f32 table"
out_line '^q8_0 +[0-9]+\.[0-9]{2} +[0-9]+% ' "bench --mt --out f16: q8_0 row"
run bench --mt --out f8
expect 2 "bench --mt --out f8"
run bench --fresh --type q8_0
expect 2 "bench --fresh without --mt"
err_has "--fresh goes with --mt" "bench --fresh without --mt"

# ---- bench --requant ------------------------------------------------------------------
FIXTURE="$TESTS/data/llama-2-tiny-random.gguf"
# q4_0: a bare type (llama-quantize --pure); Q4_K_M and IQ4_XS: recipes
run bench --requant --model "$FIXTURE" --target q4_0,Q4_K_M,IQ4_XS --runs 1 --threads 1
expect 0 "bench --requant"
out_line '^q4_0 ' "bench --requant: q4_0 row"
out_line '^Q4_K_M ' "bench --requant: Q4_K_M row"
out_line '^IQ4_XS ' "bench --requant: IQ4_XS row"
# the floor: reading the input from the page cache, and each target's time over it
out_line '^target +llama.cpp s +ggufq s +speed-up +ggufq/read +llama.cpp MB +ggufq MB ' "bench --requant: heading"
out_line '^read +- +[0-9]+\.[0-9]{3} +- +1\.00x +- +-$' "bench --requant: read row"
out_line '^q4_0 +([0-9]+\.[0-9]{3}|-) +[0-9]+\.[0-9]{3} +([0-9]+\.[0-9]{2}x|-) +[0-9]+\.[0-9]{2}x ' \
    "bench --requant: q4_0 row with ggufq/read"
out_line '^read = reading the whole input from the page cache' "bench --requant: read legend"
if grep -q '^llama.cpp: .*libllama.*(llama_model_quantize)$' "$TMP/out"; then
    [ "$(grep -c ' yes / yes$' "$TMP/out")" -eq 3 ] || fail "bench --requant: outputs differ from llama.cpp's"
else
    echo "note: libllama not found: no comparison with llama.cpp checked"
fi
run bench --requant --model "$FIXTURE" --target q4_0,Q8_0 --runs 2 --threads 2 --no-peer --json
expect 0 "bench --requant --json --no-peer"
json_ok "$TMP/out" "bench --requant --json" \
    "doc['threads'] == 2 and doc['runs'] == 2 and doc['llama'] is None and doc['synthetic_weights'] == 0 and \
     [r['target'] for r in doc['requant']] == ['q4_0', 'Q8_0'] and doc['requant'][0]['ggufq_seconds'] > 0 and \
     doc['read_seconds'] > 0 and all(r['ggufq_vs_read'] > 0 for r in doc['requant']) and \
     doc['requant'][0]['ggufq_max_rss_kb'] > 0 and doc['requant'][0]['same_file'] is None and \
     doc['provenance']['isa'] == '$SELECTED'"
run bench --requant --help
expect 0 "bench --requant --help"
out_line '^usage: ggufq bench ' "bench --requant --help"
run bench --requant --runs 0
expect 2 "bench --requant --runs 0"
run bench --requant --target
expect 2 "bench --requant --target (no value)"
run bench --requant --model "$TMP/missing.gguf" --target q4_0 --no-peer
expect 1 "bench --requant --model missing"
err_has "missing.gguf" "bench --requant --model missing"

# ---- usage errors ------------------------------------------------------------------
run bench --type nosuchtype
expect 2 "bench --type nosuchtype"
err_has "unknown type 'nosuchtype'" "bench --type nosuchtype"
run bench --isa nosuchisa
expect 2 "bench --isa nosuchisa"
run bench --seconds 0
expect 2 "bench --seconds 0"
run bench --seconds abc
expect 2 "bench --seconds abc"
run bench --peer "$TMP/no-such-dir" --type q4_0 --seconds 0.01
expect 1 "bench --peer with no library there"
err_has "no-such-dir" "bench --peer with no library there"
run help bench
expect 0 "help bench"
out_line '^usage: ggufq bench ' "help bench"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
