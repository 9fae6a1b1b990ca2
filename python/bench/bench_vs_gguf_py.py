#!/usr/bin/env python3
"""Benchmark ggufq against gguf-py's numpy implementation (not a test).

    python bench/bench_vs_gguf_py.py /path/to/llama.cpp/gguf-py [--weights N] [--repeat R]

gguf-py is imported from the checkout given (its code is not part of this
project). Measures, on one thread with new output arrays:
  - dequantize speed per type (Mweights/s), and whether both give the same bits;
  - opening a GGUF with a 256k-token vocabulary (generated here), with and
    without reading the tokens as Python strings;
  - peak memory (max RSS above the interpreter's, each case in a fresh process).
Prints a Markdown table.
"""
import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

import ggufq


def import_gguf(path):
    sys.path.insert(0, os.path.abspath(path))
    try:
        import sentencepiece  # noqa: F401
    except ImportError:   # older gguf-py imports it unconditionally; nothing measured here needs it
        stub = types.ModuleType("sentencepiece")
        stub.SentencePieceProcessor = object
        sys.modules["sentencepiece"] = stub
    import gguf
    import gguf.quants
    return gguf


def gguf_py_version(path):
    try:
        for line in open(os.path.join(path, "pyproject.toml")):
            if line.startswith("version"):
                return line.split("=")[1].strip().strip('"')
    except OSError:
        pass
    return "?"


def blocks_of(tname, n_weights):
    """Valid blocks of n_weights weights: a 256 Ki-weight quantization, tiled."""
    rng = np.random.default_rng(7)
    chunk = min(n_weights, 256 * 1024)
    x = rng.standard_normal((chunk // 1024, 1024)).astype(np.float32)
    q = ggufq.quantize(x, tname, imatrix=np.ones(1024, np.float32) if ggufq.type_info(tname).needs_imatrix
                       else None)
    reps = n_weights // chunk
    return np.tile(q, (reps, 1))


def best_time(fn, repeat):
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bits_equal(a, b):
    a, b = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def make_vocab(path, n_tokens):
    rng = np.random.default_rng(3)
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyzĠ▁éü0123456789"))
    lens = rng.integers(1, 12, size=n_tokens)
    letters = alphabet[rng.integers(0, len(alphabet), size=int(lens.sum()))]
    tokens, pos = [], 0
    for i, n in enumerate(lens):
        tokens.append("".join(letters[pos:pos + n]) + str(i))
        pos += n
    merges = [f"{tokens[i]} {tokens[i + 1]}" for i in range(0, n_tokens - 1)]
    with ggufq.GGUFWriter(path) as w:
        w.add("general.architecture", "llama")
        w.add("tokenizer.ggml.model", "gpt2")
        w.add("tokenizer.ggml.tokens", tokens)
        w.add("tokenizer.ggml.scores", rng.standard_normal(n_tokens).astype(np.float32))
        w.add("tokenizer.ggml.token_type", np.ones(n_tokens, np.int32))
        w.add("tokenizer.ggml.merges", merges)
        w.add_tensor("token_embd.weight", np.zeros((16, 32), np.float16))


# ---- child processes: one case each, report (seconds, peak RSS above baseline) ----

def rss_kib():
    """Peak resident memory of this process (VmHWM; ru_maxrss would carry the
    parent's peak across fork and exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(args):
    case, lib = args.child
    if lib == "gguf-py":
        gguf = import_gguf(args.gguf_py)
    base = rss_kib()
    t0 = time.perf_counter()
    if case in ("open", "tokens"):
        # open: the file and its whole metadata (ggufq: string arrays as StringArray);
        # tokens: and the tokens as a list of str, as a tokenizer loader wants them
        if lib == "ggufq":
            f = ggufq.GGUFFile(args.vocab)
            tokens = f.metadata["tokenizer.ggml.tokens"]
            if case == "tokens":
                tokens.tolist()
        else:
            r = gguf.GGUFReader(args.vocab)
            field = r.fields["tokenizer.ggml.tokens"]
            if case == "tokens":
                [str(bytes(field.parts[i]), encoding="utf-8") for i in field.data]
    elif case.startswith("dequant:"):
        tname = case.split(":", 1)[1]
        data = np.load(args.blocks)
        base = rss_kib()
        t0 = time.perf_counter()
        if lib == "ggufq":
            ggufq.dequantize(data, tname, threads=1)
        else:
            gguf.quants.dequantize(data, gguf.GGMLQuantizationType[tname.upper()])
    print(f"{time.perf_counter() - t0:.6f} {max(0, rss_kib() - base)}")


def run_child(args, case, lib):
    cmd = [sys.executable, __file__, args.gguf_py, "--child", case, lib, "--vocab", args.vocab,
           "--blocks", args.blocks or ""]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    secs, kib = out.stdout.split()
    return float(secs), int(kib) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gguf_py", help="a gguf-py checkout (the directory holding the gguf package)")
    ap.add_argument("--weights", type=int, default=16 << 20, help="weights per dequantize call (16 Mi)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=256 * 1024)
    ap.add_argument("--types", default="", help="comma-separated subset")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--vocab", help=argparse.SUPPRESS)
    ap.add_argument("--blocks", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)

    gguf = import_gguf(args.gguf_py)
    os.environ["OMP_NUM_THREADS"] = "1"
    info = ggufq.library_info()
    print(f"ggufq {ggufq.__version__} ({info['isa']} kernels) vs gguf-py {gguf_py_version(args.gguf_py)} "
          f"(numpy {np.__version__}); {args.weights} weights per call, one thread, new arrays, best of "
          f"{args.repeat}\n")
    names = [t.name for t in ggufq.TYPES.values() if t.quantized or t.name in ("f16", "bf16")]
    names = [n for n in names if n.upper() in gguf.GGMLQuantizationType.__members__
             and (n == "f16" or gguf.GGMLQuantizationType[n.upper()] in gguf.quants._type_traits)]
    if args.types:
        names = [n for n in names if n in args.types.split(",")]
    tmp = tempfile.mkdtemp(prefix="ggufq-bench-")
    args.vocab = os.path.join(tmp, "vocab.gguf")
    ratios = []
    print("| type | gguf-py Mw/s | ggufq Mw/s | speed-up | same bits | gguf-py peak MiB | ggufq peak MiB |")
    print("|---|---:|---:|---:|:---:|---:|---:|")
    for n in names:
        data = blocks_of(n, args.weights)
        qt = gguf.GGMLQuantizationType[n.upper()]
        theirs = gguf.quants.dequantize(data, qt)
        ours = ggufq.dequantize(data, n, threads=1)
        same = bits_equal(theirs, ours)
        del theirs, ours
        t_py = best_time(lambda: gguf.quants.dequantize(data, qt), max(1, args.repeat - 1))
        t_q = best_time(lambda: ggufq.dequantize(data, n, threads=1), args.repeat)
        args.blocks = os.path.join(tmp, "blocks.npy")
        np.save(args.blocks, data)
        _, m_py = run_child(args, f"dequant:{n}", "gguf-py")
        _, m_q = run_child(args, f"dequant:{n}", "ggufq")
        ratios.append(t_py / t_q)
        print(f"| {n} | {args.weights / t_py / 1e6:.1f} | {args.weights / t_q / 1e6:.1f} | "
              f"{t_py / t_q:.1f}x | {'yes' if same else 'NO'} | {m_py:.0f} | {m_q:.0f} |", flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\ngeometric mean speed-up over {len(ratios)} types: {geo:.1f}x "
              f"(output {args.weights * 4 / 2**20:.0f} MiB float32)\n")

    make_vocab(args.vocab, args.tokens)
    size = os.path.getsize(args.vocab) / 2**20
    print(f"| {args.tokens}-token vocabulary ({size:.1f} MiB file) | time | peak MiB |")
    print("|---|---:|---:|")
    for lib in ("gguf-py", "ggufq"):
        for case, what in (("open", "open + all metadata"), ("tokens", "open + tokens as list[str]")):
            runs = [run_child(args, case, lib) for _ in range(1 if lib == "gguf-py" else args.repeat)]
            print(f"| {lib}: {what} | {min(r[0] for r in runs) * 1e3:.1f} ms | {min(r[1] for r in runs):.1f} |")
    t_open = best_time(lambda: ggufq.GGUFFile(args.vocab).close(), 5)
    print(f"| ggufq: open only (validated, metadata lazy) | {t_open * 1e3:.2f} ms | |")
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
