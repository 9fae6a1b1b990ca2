#!/bin/sh
# CLI: `ggufq info` and `ggufq info --json` on the llama fixture, and errors
# on missing, truncated and non-GGUF files.
# Run by ctest as: sh info.sh <path-to-ggufq> <tests-dir>
# The JSON output is checked against an independent parse of the fixture
# written in Python when python3 is available (skipped otherwise).
set -u
GGUFQ=$1
TESTS=$2
. "$(dirname "$0")/lib.sh"
cli_begin info

# out_line REGEX DESC: stdout has a line matching the extended regex
err_empty() { [ ! -s "$TMP/err" ] || fail "$1: unexpected stderr: $(cat "$TMP/err")"; }

FIXTURE=$TESTS/data/llama-2-tiny-random.gguf

# ---- human-readable listing ------------------------------------------------
run info "$FIXTURE"
expect 0 "info fixture"
err_empty "info fixture"
out_line '^version: +3$' "header"
out_line '^alignment: +32$' "header"
out_line '^data offset: +724416$' "header"
out_line '^file size: +1750560 bytes \(1\.67 MiB\)$' "header"
out_line '^kv count: +18$' "header"
out_line '^tensor count: +12$' "header"
out_line '^  general\.architecture +string +"llama"$' "metadata string"
out_line '^  llama\.context_length +uint32 +4096$' "metadata uint32"
out_line '^  llama\.attention\.layer_norm_rms_epsilon +float32 +1e-05$' "metadata float32"
out_line '^  tokenizer\.ggml\.tokens +array\[string\] +\(32000\): "<unk>", "<s>", "</s>", .*, \.\.\.$' "metadata string array"
out_line '^  tokenizer\.ggml\.token_type +array\[int32\] +\(32000\): 2, 3, 3, 6, .*\.\.\.$' "metadata int32 array"
out_line '^ +# +name +type +shape +offset +bytes$' "tensor table heading"
out_line '^ +0 +token_embd\.weight +f16 +\[8, 32000\] +0 +512000$' "tensor 0"
out_line '^ +7 +blk\.0\.ffn_down\.weight +f16 +\[32, 8\] +513536 +512$' "tensor 7"
out_line '^ +11 +output\.weight +f16 +\[8, 32000\] +514144 +512000$' "tensor 11"
out_line '^total bytes: +1026144 ' "totals"
out_line '^total weights: +513048$' "totals"
out_line '^bits/weight: +16\.0007$' "totals"
[ "$(grep -c '^  [a-z]' "$TMP/out")" -eq 18 ] || fail "info: expected 18 metadata lines"
[ "$(grep -c -E '^ +[0-9]+  ' "$TMP/out")" -eq 12 ] || fail "info: expected 12 tensor lines"

# ---- JSON ------------------------------------------------------------------
run info --json "$FIXTURE"
expect 0 "info --json fixture"
err_empty "info --json"
cp "$TMP/out" "$TMP/fixture.json"
[ "$(wc -l <"$TMP/fixture.json")" -eq 1 ] || fail "info --json: not a single line"
printf '%s' '{"version":3,"alignment":32,"kv_count":18,"tensor_count":12,"metadata":{"general.architecture":"llama","general.name":"LLaMA v2","llama.context_length":4096,' >"$TMP/want"
head -c "$(wc -c <"$TMP/want")" "$TMP/fixture.json" >"$TMP/start"
cmp -s "$TMP/start" "$TMP/want" || fail "info --json starts with: $(cat "$TMP/start")"
grep -q -F '"tensors":[{"name":"token_embd.weight","type":"f16","shape":[8,32000],"offset":0,"size":512000,"file_offset":724416},' \
    "$TMP/fixture.json" || fail "info --json: first tensor"
grep -q -F '{"name":"output.weight","type":"f16","shape":[8,32000],"offset":514144,"size":512000,"file_offset":1238560}],' \
    "$TMP/fixture.json" || fail "info --json: last tensor"
# fields added after the old ones: the file, the file type's name, each key's type
grep -q -F '}],"file_size":1750560,"data_offset":724416,"file_type_name":"F16","metadata_types":{"general.architecture":{"value_type":"string"},' \
    "$TMP/fixture.json" || fail "info --json: file size, data offset, file type name"
grep -q -F '"tokenizer.ggml.tokens":{"value_type":"array","element_type":"string","length":32000},' \
    "$TMP/fixture.json" || fail "info --json: an array's element type and length"
grep -q -F '"tokenizer.ggml.unknown_token_id":{"value_type":"uint32"}}}' \
    "$TMP/fixture.json" || fail "info --json: the last key's type, then the end"
run info "$FIXTURE" --json   # options may follow the file
expect 0 "info FILE --json"
cmp -s "$TMP/out" "$TMP/fixture.json" || fail "info FILE --json differs from info --json FILE"

if command -v python3 >/dev/null 2>&1; then
    cat >"$TMP/check.py" <<'EOF'
# Parse the GGUF file independently and compare with ggufq's JSON.
import json, math, struct, sys

path, json_path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
pos = 0
def take(fmt):
    global pos
    vals = struct.unpack_from("<" + fmt, data, pos)
    pos += struct.calcsize("<" + fmt)
    return vals[0] if len(vals) == 1 else vals
def gstr():
    global pos
    n = take("Q"); s = data[pos:pos + n]; pos += n
    return s
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}
TYPE_NAMES = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32",
              7: "bool", 8: "string", 9: "array", 10: "uint64", 11: "int64", 12: "float64"}
def kv():
    key, t = gstr(), take("I")
    want = {"value_type": TYPE_NAMES[t]}
    if t == 9:
        et, n = struct.unpack_from("<IQ", data, pos)
        want.update(element_type=TYPE_NAMES[et], length=n)
    return key, value(t), want
def value(t):
    if t == 8:
        return ("str", gstr())
    if t == 9:
        et, n = take("I"), take("Q")
        return ("arr", [value(et) for _ in range(n)])
    if t == 7:
        return ("bool", take("B") == 1)
    if t in (6, 12):
        return ("f32" if t == 6 else "f64", data[pos:pos + (4 if t == 6 else 8)], take(SCALAR[t]))
    return ("int", take(SCALAR[t]))

assert take("I") == 0x46554747
version, n_t, n_kv = take("I"), take("Q"), take("Q")
kvs3 = [kv() for _ in range(n_kv)]
kvs = [(k, v) for k, v, _ in kvs3]
tensors = []
for _ in range(n_t):
    name = gstr(); nd = take("I"); dims = [take("q") for _ in range(nd)]
    tensors.append((name, dims, take("I"), take("Q")))
infos_end = pos

def strict(c):
    raise ValueError("non-standard JSON constant " + c)
text = open(json_path, "rb").read()
assert text.endswith(b"\n") and text.count(b"\n") == 1, "one line"
doc = json.loads(text.decode("utf-8"), parse_constant=strict)
errors = []
def same(v, j, where):
    kind = v[0]
    if kind == "str":
        want = v[1].decode("utf-8", errors="replace")
        if j != want: errors.append("%s: %r != %r" % (where, j, want))
    elif kind in ("int", "bool"):
        want = bool if kind == "bool" else int
        if type(j) is not want or j != v[1]: errors.append("%s: %r != %r" % (where, j, v[1]))
    elif kind in ("f32", "f64"):
        fmt = "<f" if kind == "f32" else "<d"
        if math.isnan(v[2]) or math.isinf(v[2]):
            if j is not None: errors.append("%s: %r for a non-finite value" % (where, j))
        elif not isinstance(j, (int, float)) or struct.pack(fmt, j) != v[1]:
            errors.append("%s: %r does not read back as %r" % (where, j, v[2]))
    else:
        if not isinstance(j, list) or len(j) != len(v[1]):
            errors.append("%s: array length" % where); return
        for i, (e, je) in enumerate(zip(v[1], j)):
            same(e, je, "%s[%d]" % (where, i))
if [doc["version"], doc["kv_count"], doc["tensor_count"]] != [version, n_kv, n_t]:
    errors.append("header")
keys = [k.decode("utf-8", errors="replace") for k, _ in kvs]
if list(doc["metadata"].keys()) != keys:
    errors.append("metadata keys or order")
for (k, v), key in zip(kvs, keys):
    same(v, doc["metadata"].get(key), key)
al = dict(zip(keys, [v for _, v in kvs])).get("general.alignment", ("int", 32))[1]
if doc["alignment"] != al: errors.append("alignment")
if len(doc["tensors"]) != n_t: errors.append("tensor count")
data_offset = infos_end + (-infos_end % al)
for (name, dims, typ, off), jt in zip(tensors, doc["tensors"]):
    want = {"name": name.decode("utf-8", errors="replace"), "shape": dims, "offset": off,
            "file_offset": data_offset + off}
    got = {k: jt[k] for k in want}
    if got != want: errors.append("tensor %r: %r != %r" % (name, got, want))
    if list(jt.keys()) != ["name", "type", "shape", "offset", "size", "file_offset"]: errors.append("tensor keys")
if list(doc.keys()) != ["version", "alignment", "kv_count", "tensor_count", "metadata", "tensors",
                        "file_size", "data_offset", "file_type_name", "metadata_types"]:
    errors.append("top-level keys %r" % list(doc.keys()))
if doc["file_size"] != len(data): errors.append("file_size %r != %r" % (doc["file_size"], len(data)))
if doc["data_offset"] != data_offset: errors.append("data_offset %r != %r" % (doc["data_offset"], data_offset))
types = doc["metadata_types"]
if list(types.keys()) != keys: errors.append("metadata_types keys or order")
for key, (_, _, want) in zip(keys, kvs3):
    if types.get(key) != want: errors.append("type of %s: %r != %r" % (key, types.get(key), want))
extra = sys.argv[3:]
if "fixture" in extra:
    toks = doc["metadata"]["tokenizer.ggml.tokens"]
    if len(toks) != 32000 or toks[:3] != ["<unk>", "<s>", "</s>"]: errors.append("tokens")
    if len(doc["metadata"]["tokenizer.ggml.scores"]) != 32000: errors.append("scores")
    if doc["metadata"]["general.file_type"] != 1: errors.append("file_type")
    if sum(t["size"] for t in doc["tensors"]) != 1026144: errors.append("sizes")
for e in errors[:20]:
    print("  " + e)
sys.exit(1 if errors else 0)
EOF
    if python3 "$TMP/check.py" "$FIXTURE" "$TMP/fixture.json" fixture; then
        echo "ok: info --json matches an independent parse of the fixture"
    else
        fail "info --json differs from an independent parse of the fixture"
    fi
else
    echo "skip: python3 not found; JSON not checked against an independent parse"
fi

# ---- general.file_type by name; tensor offsets that lead to the tensors' bytes ----
run info "$FIXTURE"
out_line '^  general\.file_type +uint32 +1 \(F16\)$' "file type named"
"$GGUFQ" requant "$FIXTURE" Q4_K_M "$TMP/q4km.gguf" -q || fail "requant Q4_K_M"
run info "$TMP/q4km.gguf"
expect 0 "info of a Q4_K_M file" && out_line '^  general\.file_type +uint32 +15 \(Q4_K_M\)$' "Q4_K_M named"
run info --json "$TMP/q4km.gguf"
grep -q -F '"file_type_name":"Q4_K_M",' "$TMP/out" || fail "info --json: file_type_name Q4_K_M"
if command -v python3 >/dev/null 2>&1; then
    # general.file_type 1039: llama.cpp's LLAMA_FTYPE_GUESSED (1024) + 15; 4: an id without a name
    for ft in 1039 4; do
        python3 -c 'import struct, sys
k = b"general.file_type"
open(sys.argv[1], "wb").write(b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, len(k)) + k + struct.pack("<II", 4, int(sys.argv[2])))' \
            "$TMP/ft$ft.gguf" "$ft"
    done
    run info "$TMP/ft1039.gguf"
    expect 0 "info of a guessed file type" && out_line '^  general\.file_type +uint32 +1039 \(Q4_K_M, guessed\)$' "guessed file type"
    run info --json "$TMP/ft1039.gguf"
    grep -q -F '"file_type_name":"Q4_K_M (guessed)",' "$TMP/out" || fail "info --json: guessed file type: $(cat "$TMP/out")"
    run info "$TMP/ft4.gguf"
    expect 0 "info of a file type without a name" && out_line '^  general\.file_type +uint32 +4$' "file type 4 unnamed"
    run info --json "$TMP/ft4.gguf"
    grep -q -F '"file_type_name":null,' "$TMP/out" || fail "info --json: unnamed file type: $(cat "$TMP/out")"

    # Every tensor's "file_offset" and "size" in IN (f16, f32) and in dequant's f32 OUT
    # frame the same weights: IN's bytes decoded independently equal OUT's.
    "$GGUFQ" dequant "$FIXTURE" "$TMP/f32.gguf" -q || fail "dequant for the offsets check"
    "$GGUFQ" info --json "$TMP/f32.gguf" >"$TMP/f32.json"
    if python3 - "$FIXTURE" "$TMP/fixture.json" "$TMP/f32.gguf" "$TMP/f32.json" <<'EOF'
import json, struct, sys
def tensors(gguf, js):
    data, doc = open(gguf, "rb").read(), json.load(open(js))
    return {t["name"]: (t["type"], data[t["file_offset"]:t["file_offset"] + t["size"]], t) for t in doc["tensors"]}
src, out = tensors(*sys.argv[1:3]), tensors(*sys.argv[3:5])
assert set(src) == set(out) and len(src) == 12
for name, (typ, raw, t) in src.items():
    n = 1
    for d in t["shape"]:
        n *= d
    assert len(raw) == t["size"] == n * {"f16": 2, "f32": 4}[typ], name
    want = struct.unpack("<%d%s" % (n, "e" if typ == "f16" else "f"), raw)
    otyp, oraw, _ = out[name]
    assert otyp == "f32" and struct.unpack("<%df" % n, oraw) == want, name
EOF
    then echo "ok: info --json offsets and sizes frame each tensor's bytes (IN and dequant's OUT)"
    else fail "info --json offsets do not lead to the tensors' bytes"
    fi
else
    echo "skip: python3 not found; file type names and tensor bytes not checked"
fi

# ---- unusual metadata: exact integers, non-finite floats, escapes, nesting --
if command -v python3 >/dev/null 2>&1; then
    cat >"$TMP/make_odd.py" <<'EOF'
# Write a small valid GGUF v3 file with unusual metadata values and names.
import struct, sys
P = struct.pack
def s(b):
    b = b.encode() if isinstance(b, str) else b
    return P("<Q", len(b)) + b
def arr(et, items):
    return P("<IQ", et, len(items)) + b"".join(items)
kv = []
def add(key, t, payload):
    kv.append(s(key) + P("<I", t) + payload)
add("u64max", 10, P("<Q", 2**64 - 1))
add("u64big", 10, P("<Q", 2**53 + 1))
add("i64min", 11, P("<q", -2**63))
add("u8", 0, P("<B", 255)); add("i8", 1, P("<b", -128))
add("u16", 2, P("<H", 65535)); add("i16", 3, P("<h", -32768))
add("u32", 4, P("<I", 2**32 - 1)); add("i32", 5, P("<i", -2**31))
add("f32nan", 6, P("<I", 0x7fc00001)); add("f32inf", 6, P("<I", 0x7f800000))
add("f32ninf", 6, P("<I", 0xff800000)); add("f32pi", 6, P("<f", 3.14159265))
add("f32denorm", 6, P("<I", 1)); add("f32max", 6, P("<I", 0x7f7fffff))
add("f32negzero", 6, P("<I", 0x80000000)); add("f32third", 6, P("<f", 1 / 3))
add("f64", 12, P("<d", 0.1)); add("f64nan", 12, P("<Q", 0x7ff8000000000001))
add("f64denorm", 12, P("<Q", 1)); add("f64big", 12, P("<d", 1e300))
add("b_true", 7, b"\x01"); add("b_false", 7, b"\x00")
add("s_ctrl", 8, s(b'a"b\\c\nd\te\r\x08\x0c\x01\x1f\x7f\x00z'))
add("s_bad", 8, s(b"ok\xff\x80\xc0\xaf\xed\xa0\x80\xe2\x82x\xf4\x90\x80\x80\xf0\x9f\x98end\xe2"))
add("s_utf8", 8, s("h\u00e9llo \u2581 \U0001F600"))
add("s_empty", 8, s(b""))
add("s_long", 8, s(b"x" * 1000))
add('we"ird\\key.\u00e9', 4, P("<I", 7))
add("arr_empty", 9, arr(5, []))
if "--flat" not in sys.argv:   # nested arrays: valid GGUF, refused by ggml (and by dequant)
    add("arr_nested", 9, arr(9, [arr(2, [P("<H", 1), P("<H", 2), P("<H", 3)]), arr(2, []), arr(2, [P("<H", 4)])]))
    add("arr_nested_str", 9, arr(9, [arr(8, [s("a"), s('b"')]), arr(8, [s(b"\xff")])]))
add("arr_bool", 9, arr(7, [b"\x01", b"\x00"]))
add("arr_f32", 9, arr(6, [P("<f", 1.5), P("<I", 0x7fc00000), P("<I", 0xff800000)]))
add("arr_u64", 9, arr(10, [P("<Q", 2**64 - 1), P("<Q", 0)]))
# tensors: (name, dims, type, data)
q8 = P("<H", 0x3c00) + bytes((i * 7 - 100) & 0xff for i in range(32))
tensors = [('t"ens\\or', [4, 2], 0, P("<8f", *[0.5 * i for i in range(8)])),
           ("half", [8], 1, P("<8H", *[0x3c00 + i for i in range(8)])),
           ("q", [32, 2], 8, q8 + q8)]
head = b"GGUF" + P("<IQQ", 3, len(tensors), len(kv)) + b"".join(kv)
data, infos = b"", b""
for name, dims, typ, raw in tensors:
    data += b"\0" * (-len(data) % 32)
    infos += s(name) + P("<I", len(dims)) + b"".join(P("<q", d) for d in dims) + P("<IQ", typ, len(data))
    data += raw
head += infos
open(sys.argv[1], "wb").write(head + b"\0" * (-len(head) % 32) + data)
EOF
    python3 "$TMP/make_odd.py" "$TMP/odd.gguf"
    run info --json "$TMP/odd.gguf"
    expect 0 "info --json on unusual metadata"
    cp "$TMP/out" "$TMP/odd.json"
    if python3 "$TMP/check.py" "$TMP/odd.gguf" "$TMP/odd.json"; then
        echo "ok: info --json on unusual metadata matches an independent parse"
    else
        fail "info --json on unusual metadata differs from an independent parse"
    fi
    for want in '"u64max":18446744073709551615,' '"u64big":9007199254740993,' \
        '"i64min":-9223372036854775808,' '"f32nan":null,' '"f32inf":null,' '"f32ninf":null,' \
        '"f32pi":3.1415927,' '"f32denorm":1e-45,' '"f32max":3.4028235e+38,' '"f32negzero":-0.0,' \
        '"f64":0.1,' '"f64nan":null,' '"f64denorm":5e-324,' \
        '"s_ctrl":"a\"b\\c\nd\te\r\b\f\u0001\u001f' '\u0000z",' \
        '"s_bad":"ok\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffdx\ufffd\ufffd\ufffd\ufffd\ufffdend\ufffd",' \
        '"we\"ird\\key.' '"arr_empty":[],' '"arr_nested":[[1,2,3],[],[4]],' \
        '"arr_nested_str":[["a","b\""],["\ufffd"]],' '"arr_bool":[true,false],' \
        '"arr_f32":[1.5,null,null],' '"arr_u64":[18446744073709551615,0]}' \
        '{"name":"t\"ens\\or","type":"f32","shape":[4,2],"offset":0,"size":32,"file_offset":' \
        '"file_type_name":null,' '"arr_nested":{"value_type":"array","element_type":"array","length":3},'; do
        grep -q -F -e "$want" "$TMP/odd.json" || fail "info --json on unusual metadata lacks: $want"
    done
    run info "$TMP/odd.gguf"
    expect 0 "info on unusual metadata"
    out_line '^  u64max +uint64 +18446744073709551615$' "odd: uint64"
    out_line '^  f32nan +float32 +nan$' "odd: nan"
    out_line '^  f32ninf +float32 +-inf$' "odd: -inf"
    out_line '^  s_ctrl +string +"a\\"b\\\\c\\nd\\te\\r\\x08\\x0c\\x01\\x1f\\x7f\\x00z"$' "odd: escapes"
    out_line '^  s_bad +string +"ok\\xff\\x80' "odd: invalid UTF-8"
    out_line '^  s_long +string +"x{60}"… \(1000 bytes\)$' "odd: long string"
    out_line '^  s_empty +string +""$' "odd: empty string"
    out_line '^  arr_empty +array\[int32\] +\(0\)$' "odd: empty array"
    out_line '^  arr_nested +array\[array\] +\(3\): \[1, 2, 3\], \[\], \[4\]$' "odd: nested array"
    out_line '^  arr_nested_str +array\[array\] +\(2\): \["a", "b\\""\], \["\\xff"\]$' "odd: nested strings"
    out_line '^ +0 +t"ens\\\\or +f32 +\[4, 2\] +0 +32$' "odd: tensor name"

    # dequant refuses nested arrays (ggml could not load OUT), naming the key
    run dequant "$TMP/odd.gguf" "$TMP/odd-f32.gguf"
    expect 1 "dequant refuses nested arrays" && {
        printf '%s\n' "ggufq: $TMP/odd.gguf: key 'arr_nested' is an array of arrays: valid GGUF, but ggml's GGUF reader refuses nested arrays, so OUT would not load; $TMP/odd-f32.gguf not written" >"$TMP/want"
        cmp -s "$TMP/want" "$TMP/err" || fail "dequant nested arrays: got $(cat "$TMP/err")"
        [ -e "$TMP/odd-f32.gguf" ] && fail "dequant wrote a file ggml cannot load"
    }
    # and copies every other value exactly (then sets general.file_type)
    python3 "$TMP/make_odd.py" "$TMP/odd.gguf" --flat
    run info --json "$TMP/odd.gguf"
    cp "$TMP/out" "$TMP/odd.json"
    run dequant "$TMP/odd.gguf" "$TMP/odd-f32.gguf"
    expect 0 "dequant on unusual metadata"
    run info --json "$TMP/odd-f32.gguf"
    expect 0 "info --json on dequant output"
    cat >"$TMP/same_meta.py" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
want = dict(a["metadata"]); want["general.file_type"] = 0
ok = list(b["metadata"].items()) == list(want.items())
ok = ok and [(t["name"], t["shape"], "f32") for t in a["tensors"]] == \
            [(t["name"], t["shape"], t["type"]) for t in b["tensors"]]
sys.exit(0 if ok else 1)
EOF
    if python3 "$TMP/same_meta.py" "$TMP/odd.json" "$TMP/out"; then
        echo "ok: dequant copies unusual metadata exactly"
    else
        fail "dequant did not copy unusual metadata exactly"
    fi
else
    echo "skip: python3 not found; unusual metadata not tested"
fi

# ---- a closed pipe is not an error ------------------------------------------
for args in "info --json" "info"; do
    # shellcheck disable=SC2086
    { "$GGUFQ" $args "$FIXTURE" 2>"$TMP/err"; echo $? >"$TMP/rc"; } | head -c 10 >/dev/null
    rc=$(cat "$TMP/rc")
    expect 0 "$args | head -c 10"
    err_empty "$args | head -c 10"
done

# ---- failures: exit 1 with a message naming the file ------------------------
run info "$TMP/no-such-file.gguf"
expect 1 "missing file"
err_has "$TMP/no-such-file.gguf" "missing file"

head -c 1000 "$FIXTURE" >"$TMP/truncated.gguf"
run info "$TMP/truncated.gguf"
expect 1 "truncated in the metadata"
err_has "truncated.gguf" "truncated in the metadata"
err_has "offset" "truncated in the metadata"
[ ! -s "$TMP/out" ] || fail "truncated in the metadata: printed something"

head -c 1000000 "$FIXTURE" >"$TMP/short-data.gguf"
run info --json "$TMP/short-data.gguf"
expect 1 "truncated in the tensor data"
err_has "short-data.gguf" "truncated in the tensor data"

head -c 3 "$FIXTURE" >"$TMP/tiny.gguf"
run info "$TMP/tiny.gguf"
expect 1 "3-byte file"

: >"$TMP/empty.gguf"
run info "$TMP/empty.gguf"
expect 1 "empty file"
err_has "empty.gguf" "empty file"

run info "$TESTS/golden/README.md"
expect 1 "not a GGUF file"
err_has "README.md" "not a GGUF file"

run info "$TMP"
expect 1 "a directory"
err_has "$TMP" "a directory"

# A FIFO with no writer: refused at once (opening it must not wait for a writer).
if mkfifo "$TMP/fifo.gguf" 2>/dev/null; then
    if command -v timeout >/dev/null 2>&1; then
        timeout 20 "$GGUFQ" info "$TMP/fifo.gguf" >"$TMP/out" 2>"$TMP/err"; rc=$?
    else
        run info "$TMP/fifo.gguf"
    fi
    expect 1 "a FIFO input" && err_has "fifo.gguf: not a regular file" "a FIFO input"
fi

# ---- names in error messages reach the terminal escaped, never raw --------------
# esc_dupkey.gguf: the key '\e]0;PWNED\a\e[2J' (set the window title, clear the screen) twice
run info "$TESTS/data/esc_dupkey.gguf"
expect 1 "duplicate key with escape sequences" && {
    printf '%s\n' "ggufq: $TESTS/data/esc_dupkey.gguf: offset 51: duplicate key '\\x1b]0;PWNED\\x07\\x1b[2J' (keys 0 and 1)" >"$TMP/want"
    cmp -s "$TMP/want" "$TMP/err" && echo "ok: the key is escaped in the message" ||
        fail "escaped key: got $(od -c "$TMP/err" | head -6)"
    [ ! -s "$TMP/out" ] || fail "duplicate key: printed something"
}

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
