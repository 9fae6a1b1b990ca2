#!/bin/sh
# CLI: `ggufq requant IN auto OUT --target-size SIZE | --target-bpw B` — usage
# errors, impossible budgets, the budget met within 2% (size and bpw), the
# --plan-out round trip (the same bytes), thread counts changing nothing,
# --dry-run, --imatrix (weighted objective, recorded keys), user rules as
# fixed points, --keep-split, and the plan's error measured by `ggufq diff`
# at least 10% below llama.cpp's Q4_K_M and Q3_K_M at their sizes.
# Run by ctest as: sh auto.sh <path-to-ggufq> <tests-dir> <ggufq-testhooks>
set -u
GGUFQ=$1
. "$(dirname "$0")/lib.sh"
cli_begin auto
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 not found"; exit 0; }

size() { wc -c <"$1" | tr -d ' '; }

# A 2-block llama of width 256 (f32, outlier columns, per-tensor scales) and an imatrix for it.
cat >"$TMP/gen.py" <<'PY'
import random, struct, sys
path, im_path = sys.argv[1], sys.argv[2]
rng = random.Random(11)
E, F, V, L = 256, 512, 1024, 2
names = [("token_embd.weight", E, V)]
for b in range(L):
    p = "blk.%d." % b
    names += [(p + "attn_norm.weight", E, 1), (p + "attn_q.weight", E, E), (p + "attn_k.weight", E, E),
              (p + "attn_v.weight", E, E), (p + "attn_output.weight", E, E), (p + "ffn_norm.weight", E, 1),
              (p + "ffn_gate.weight", E, F), (p + "ffn_up.weight", E, F), (p + "ffn_down.weight", F, E)]
names += [("output_norm.weight", E, 1), ("output.weight", E, V)]
def s(x): b = x.encode(); return struct.pack("<Q", len(b)) + b
kv = [("general.architecture", 8, s("llama")), ("llama.block_count", 4, struct.pack("<I", L)),
      ("llama.embedding_length", 4, struct.pack("<I", E)), ("llama.attention.head_count", 4, struct.pack("<I", 4)),
      ("llama.attention.head_count_kv", 4, struct.pack("<I", 2))]
head = b"GGUF" + struct.pack("<IQQ", 3, len(names), len(kv))
for k, t, v in kv:
    head += s(k) + struct.pack("<I", t) + v
data, off = b"", 0
for n, ne0, ne1 in names:
    nd = 1 if ne1 == 1 else 2
    head += s(n) + struct.pack("<I", nd) + struct.pack("<%dQ" % nd, *([ne0] if nd == 1 else [ne0, ne1]))
    head += struct.pack("<IQ", 0, off)
    if nd == 1:
        w = [1 + 0.1 * rng.gauss(0, 1) for _ in range(ne0)]
    else:
        scale = rng.choice([0.02, 0.05, 0.1])
        out = set(rng.sample(range(ne0), 3))
        w = [rng.gauss(0, scale) * (8 if j in out else 1) for i in range(ne1) for j in range(ne0)]
    t = struct.pack("<%df" % len(w), *w)
    t += b"\0" * (-len(t) % 32)
    data += t
    off += len(t)
head += b"\0" * (-len(head) % 32)
open(path, "wb").write(head + data)
ents = [(n, ne0) for n, ne0, ne1 in names if ne1 > 1 and n not in ("token_embd.weight", "output.weight")]
with open(im_path, "wb") as f:
    f.write(struct.pack("<i", len(ents)))
    for n, ne0 in ents:
        v = [rng.lognormvariate(0, 1) * (40 if rng.random() < 0.03 else 1) for _ in range(ne0)]
        f.write(struct.pack("<i", len(n)) + n.encode() + struct.pack("<ii", 1, ne0) + struct.pack("<%df" % ne0, *v))
PY
# Total (weighted) squared error of B against A from `ggufq diff --json [--imatrix IM]`, as the plan's
# objective (ggufq.h): with an imatrix, tensors without an entry are token_embd (the squared error over
# its rows) or scored with the mean importance of the entries of their width.
cat >"$TMP/err.py" <<'PY'
import json, struct, sys
d = json.load(open(sys.argv[1]))
ne0 = {t["name"]: t["shape"][0] for t in json.load(open(sys.argv[2]))["tensors"]}
S, C = {}, {}
if len(sys.argv) > 3:
    b = open(sys.argv[3], "rb").read(); o = 4
    for _ in range(struct.unpack_from("<i", b)[0]):
        l, = struct.unpack_from("<i", b, o); o += 4; name = b[o:o + l].decode(); o += l
        _, n = struct.unpack_from("<ii", b, o); o += 8
        S[name] = sum(struct.unpack_from("<%df" % n, b, o)); C[name] = n; o += 4 * n
def stand_in(w):
    same = [k for k in S if C[k] == w] or list(S)
    return sum(S[k] for k in same) / sum(C[k] for k in same)
tot = 0.0
for t in d["tensors"]:
    sq = t["rmse"] ** 2 * t["n"]
    if not S:
        tot += sq
    elif t.get("wmse") is not None and t["name"] in S:
        tot += t["wmse"] * S[t["name"]] * (t["n"] // C[t["name"]])
    elif t["name"].endswith("embd.weight"):
        tot += sq / (t["n"] // ne0[t["name"]])
    else:
        tot += sq * stand_in(ne0[t["name"]])
print(tot)
PY
# 8 * tensor bytes / weights of a file
bpw() { "$GGUFQ" info "$1" --json | python3 -c "import json,sys,math; t=json.load(sys.stdin)['tensors']
print(8 * sum(x['size'] for x in t) / sum(math.prod(x['shape']) for x in t))"; }
total_err() { "$GGUFQ" diff "$M" "$1" --json ${2:-} >"$TMP/d.json" && "$GGUFQ" info "$M" --json >"$TMP/i.json" &&
    python3 "$TMP/err.py" "$TMP/d.json" "$TMP/i.json" ${3:-}; }

python3 "$TMP/gen.py" "$TMP/m.gguf" "$TMP/im.dat" || { echo "FAIL: generating the model"; exit 1; }
M=$TMP/m.gguf
"$GGUFQ" requant "$M" Q4_K_M "$TMP/q4km.gguf" -q || fail "requant Q4_K_M"
"$GGUFQ" requant "$M" Q3_K_M "$TMP/q3km.gguf" -q || fail "requant Q3_K_M"
S4=$(size "$TMP/q4km.gguf")

# ---- usage errors and impossible budgets ------------------------------------------
run requant "$M" auto "$TMP/o.gguf"
expect 2 "auto without a budget" && err_has "TYPE auto needs a budget: --target-size SIZE or --target-bpw B" "no budget"
run requant "$M" auto "$TMP/o.gguf" --target-size 1M --target-bpw 4
expect 2 "both budgets" && err_has "--target-size and --target-bpw cannot be used together" "both budgets"
run requant "$M" Q4_K_M "$TMP/o.gguf" --target-size 1M
expect 2 "--target-size without auto" && err_has "--target-size needs TYPE auto" "--target-size without auto"
run requant "$M" auto "$TMP/o.gguf" --target-size 12X
expect 2 "bad size" && err_has "--target-size: '12X' is not a size" "bad size"
run requant "$M" auto "$TMP/o.gguf" --target-bpw -1
expect 2 "bad bpw" && err_has "--target-bpw: '-1' is not a number" "bad bpw"
run requant "$M" auto "$TMP/o.gguf" --target-bpw 4 --candidates q4_K,q9_X
expect 2 "unknown candidate" && err_has "--candidates: unknown type 'q9_X'" "unknown candidate"
run requant "$M" auto "$TMP/o.gguf" --target-bpw 4 --candidates q4_K,Q4_K
expect 2 "candidate twice" && err_has "--candidates: 'Q4_K' given twice" "candidate twice"
run requant "$M" auto "$TMP/o.gguf" --target-bpw 4 --candidates q4_K,iq2_xs
expect 1 "iq2_xs without an imatrix" && err_has "candidate iq2_xs needs an importance matrix (--imatrix)" "iq2_xs"
run requant "$M" auto "$TMP/o.gguf" --target-size 100k
expect 1 "budget below the smallest plan" && err_has "the budget --target-size 100000 bytes is below the smallest plan:" "too small"
[ ! -e "$TMP/o.gguf" ] && echo "ok: nothing written" || fail "an impossible budget wrote $TMP/o.gguf"
run requant "$M" auto "$TMP/o.gguf" --target-bpw 2 --candidates q4_K,q8_0
expect 1 "bpw below the smallest plan" && err_has "is below the smallest plan" "bpw too small"
run requant "$M" auto "$TMP/o.gguf" --target-bpw 4 --prune-layers 1
expect 1 "--prune-layers refused" && err_has "a budget plan cannot prune layers" "--prune-layers"
run requant "$M" auto "$TMP/big.gguf" --target-size 1G --candidates q4_K,q8_0
expect 0 "budget above the largest plan" && err_has "note: the budget is above the largest plan" "above the largest"
"$GGUFQ" info "$TMP/big.gguf" | grep -q "q4_K" && fail "above the largest plan: a q4_K tensor" || echo "ok: every tensor q8_0"

# ---- the budget met: size and bpw -------------------------------------------------
run requant "$M" auto "$TMP/a4.gguf" --target-size "$S4" --plan-out "$TMP/plan4.txt" --threads 2
expect 0 "auto at Q4_K_M's size"
A4=$(size "$TMP/a4.gguf")
python3 -c "import sys; sys.exit(0 if 0.98 * $S4 <= $A4 <= $S4 else 1)" && echo "ok: size $A4 within 2% under $S4" ||
    fail "size $A4 not within 2% under $S4"
run requant "$M" auto "$TMP/b45.gguf" --target-bpw 4.5 -q
expect 0 "auto --target-bpw 4.5"
B=$(bpw "$TMP/b45.gguf")
python3 -c "import sys; sys.exit(0 if 0.98 * 4.5 <= $B <= 4.5 else 1)" && echo "ok: $B bpw within 2% under 4.5" ||
    fail "$B bpw not within 2% under 4.5"

# ---- determinism and the plan round trip ------------------------------------------
"$GGUFQ" requant "$M" auto "$TMP/a4t1.gguf" --target-size "$S4" --threads 1 -q || fail "auto --threads 1"
cmp -s "$TMP/a4.gguf" "$TMP/a4t1.gguf" && echo "ok: same bytes with 1 and 2 threads" || fail "thread counts differ"
grep -q -x -F '^blk\.0\.attn_q\.weight$=q4_K' "$TMP/plan4.txt" || grep -q -F '^blk\.0\.attn_q\.weight$=' "$TMP/plan4.txt" ||
    fail "plan: no anchored rule for blk.0.attn_q.weight"
grep -q 'norm' "$TMP/plan4.txt" && fail "plan: a rule for a norm (never converted)" || echo "ok: plan rules"
run requant "$M" auto --dry-run --target-size "$S4"
expect 0 "auto --dry-run"
BASE=$(sed -n 's/^base type: *\([^ ]*\) .*/\1/p' "$TMP/out")
out_has "budget:      $S4 bytes (file)" "dry-run budget"
out_has "Q4_K_M       " "dry-run names the nearest recipe"
out_has "this plan:" "dry-run compares"
TGT=$("$GGUFQ" info "$TMP/a4.gguf" | sed -n 's/^ *quantize.budget.bpw *float32 *//p')
"$GGUFQ" requant "$M" "$BASE" "$TMP/replay.gguf" --pure --tensor-type-file "$TMP/plan4.txt" -q \
    --override-kv "quantize.budget.target=str:size $S4 bytes" --override-kv "quantize.budget.bpw=float:$TGT" \
    --override-kv "quantize.budget.objective=str:squared error" || fail "replay"
cmp -s "$TMP/a4.gguf" "$TMP/replay.gguf" && echo "ok: --plan-out replayed on $BASE --pure: same bytes" ||
    fail "replay of the plan differs"
run info "$TMP/a4.gguf"
out_has "quantize.budget.objective" "objective recorded"
out_has '"squared error"' "objective without an imatrix"

# a recipe is compared only near the plan's size, and only when every type it uses was measured
run requant "$M" auto --dry-run --target-bpw 4.9 --candidates q4_K,q5_K,q8_0
expect 0 "dry-run without a comparable recipe" &&
    out_has "recipe:      no llama.cpp recipe within 10% of this size uses only the measured types" "no recipe"

# a gap the candidates' sizes cannot fill is explained (q4_K or f16 for every tensor: steps of 11.5 bpw)
run requant "$M" auto --dry-run --target-bpw 4.8 --candidates q4_K,f16
expect 0 "a budget the sizes cannot fill" && err_has "bytes (" "gap note" &&
    err_has "): no choice among the candidates' sizes comes closer without going over" "gap note"

# ---- better than the recipes at their size --------------------------------------------
S3=$(size "$TMP/q3km.gguf")
"$GGUFQ" requant "$M" auto "$TMP/a3.gguf" --target-size "$S3" -q || fail "auto at Q3_K_M's size"
for pair in "q4km a4" "q3km a3"; do
    set -- $pair
    er=$(total_err "$TMP/$1.gguf") && ea=$(total_err "$TMP/$2.gguf") &&
    python3 -c "import sys; sys.exit(0 if $ea <= 0.9 * $er else 1)" && echo "ok: $2 error $ea <= 90% of $1's $er" ||
        fail "$2 error $ea not 10% below $1's $er"
done

# ---- with an imatrix ---------------------------------------------------------------------
"$GGUFQ" requant "$M" Q4_K_M "$TMP/q4km-im.gguf" -q --imatrix "$TMP/im.dat" || fail "requant Q4_K_M --imatrix"
S4I=$(size "$TMP/q4km-im.gguf")
run requant "$M" auto "$TMP/a4-im.gguf" --target-size "$S4I" --imatrix "$TMP/im.dat" --stats-cache "$TMP/cache"
expect 0 "auto --imatrix" && out_has "predicted (imatrix-weighted)" "imatrix objective"
run info "$TMP/a4-im.gguf"
out_has "quantize.imatrix.file" "imatrix recorded"
out_has '"imatrix-weighted squared error"' "weighted objective recorded"
er=$(total_err "$TMP/q4km-im.gguf" "--imatrix $TMP/im.dat" "$TMP/im.dat")
ea=$(total_err "$TMP/a4-im.gguf" "--imatrix $TMP/im.dat" "$TMP/im.dat")
python3 -c "import sys; sys.exit(0 if $ea <= 0.9 * $er else 1)" && echo "ok: weighted error $ea <= 90% of Q4_K_M's $er" ||
    fail "weighted error $ea not 10% below Q4_K_M's $er"
run requant "$M" auto --dry-run --target-size "$S4I" --imatrix "$TMP/im.dat" --stats-cache "$TMP/cache"
expect 0 "auto --imatrix --dry-run from the cache" && out_has "(imatrix-weighted squared error)" "dry-run weighted"

# ---- fixed points and --keep-split ---------------------------------------------------------
run requant "$M" auto --dry-run --target-bpw 4.5 --tensor-type 'attn_v=q8_0'
expect 0 "auto with a --tensor-type rule"
grep -E 'blk\.[01]\.attn_v\.weight +f32 +q8_0 .*override: --tensor-type' "$TMP/out" | wc -l | grep -q '^ *2$' &&
    echo "ok: attn_v fixed at q8_0" || fail "attn_v not fixed: $(grep attn_v "$TMP/out")"
"$GGUFQ" requant "$M" auto "$TMP/ks.gguf" --target-size "$S4" --keep-split -q || fail "auto --keep-split"
# one input file: one output, in the input's tensor order (--keep-split's), with the same tensors and keys
[ ! -e "$TMP/ks.gguf" ] && [ -f "$TMP/ks-00001-of-00001.gguf" ] && echo "ok: one kept shard named as llama.cpp names it" ||
    fail "--keep-split of one file: $(ls "$TMP" | grep '^ks')"
run diff "$TMP/a4.gguf" "$TMP/ks-00001-of-00001.gguf"
expect 0 "diff of --keep-split's output" && out_has "metadata: no differences" "--keep-split keys"
out_has "summary: 21 tensors compared, 21 identical;" "--keep-split tensors"

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
