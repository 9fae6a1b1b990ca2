"""Build of the ggufq Python package: a CPython extension compiled from
libggufq's own C sources (../src), so `pip install ./python` needs no
separately installed library and no network.

Why a C extension rather than ctypes over libggufq.so: a call costs about a
microsecond instead of tens (ctypes converts every argument in Python), the
GIL is released around every kernel, the buffers are checked in C against
the buffer protocol's real sizes before any pointer reaches the library, and
tensor views export the file mapping through a Python object that keeps the
mapping alive, so no view can outlive it.

The library's sources need per-file flags (AVX2 / AVX-512 kernels,
-ffp-contract=off for bit-exactness), which setuptools' Extension cannot
express; build_ext below compiles them itself, in parallel, skipping objects
newer than their sources and every header.
"""
import os
import platform
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if not (ROOT / "src" / "gguf" / "reader.c").is_file() or not (ROOT / "include" / "ggufq.h").is_file():
    sys.exit("ggufq: build from the ggufq source tree (pip install ./python at its top): "
             f"{ROOT / 'src'} not found")

KERNEL_FLAGS = ["-ffp-contract=off", "-fno-math-errno"]
COMMON_FLAGS = ["-std=c11", "-O2", "-fvisibility=hidden", "-D_GNU_SOURCE", "-pthread",
                "-Wall", "-Wno-unused-parameter"]
AVX2_FLAGS = ["-mavx2", "-mfma", "-mf16c", "-mbmi2"]
AVX512_FLAGS = ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq"] + AVX2_FLAGS


def library_groups():
    """(sources, extra flags) of libggufq, as the top CMakeLists.txt builds it."""
    src = ROOT / "src"
    groups = [
        (sorted(src.glob("gguf/*.c")) + sorted(src.glob("api/*.c")) + sorted(src.glob("requant/*.c")) +
         sorted(src.glob("measure/*.c")), []),
        (sorted(src.glob("quants/*.c")) + [src / "simd" / "dispatch.c"], KERNEL_FLAGS),
    ]
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        # the kernel tables hold addresses only, and SSE2 is baseline: baseline flags, like dispatch.c
        groups.append(([src / "simd" / "kernels_avx2.c", src / "simd" / "kernels_avx512.c",
                        src / "simd" / "stream_sse2.c"], KERNEL_FLAGS))
        groups.append((sorted(src.glob("simd/avx2/*.c")), KERNEL_FLAGS + AVX2_FLAGS))
        groups.append((sorted(src.glob("simd/avx512/*.c")), KERNEL_FLAGS + AVX512_FLAGS))
    elif machine in ("aarch64", "arm64"):
        groups.append(([src / "simd" / "kernels_neon.c"] + sorted(src.glob("simd/neon/*.c")), KERNEL_FLAGS))
    return groups


class BuildLibggufq(build_ext):
    """Compile libggufq's sources into objects linked into the extension."""

    def build_extension(self, ext):
        headers = list((ROOT / "src").rglob("*.h")) + [ROOT / "include" / "ggufq.h"]
        newest_header = max(h.stat().st_mtime for h in headers)
        objdir = Path(self.build_temp) / "libggufq"
        jobs = []
        for sources, flags in library_groups():
            for s in sources:
                obj = objdir / (str(s.relative_to(ROOT)).replace(os.sep, "_")[:-2] + ".o")
                jobs.append((s, obj, flags))
        objdir.mkdir(parents=True, exist_ok=True)
        compiler = self.compiler
        includes = [str(ROOT / "include"), str(ROOT / "src")]

        def compile_one(job):
            s, obj, flags = job
            if obj.exists() and obj.stat().st_mtime > max(s.stat().st_mtime, newest_header):
                return str(obj)
            cmd = compiler.compiler_so + ["-c", str(s), "-o", str(obj)] + \
                ["-I" + i for i in includes] + COMMON_FLAGS + flags
            compiler.spawn(cmd)
            return str(obj)

        workers = max(1, min(len(jobs), int(os.environ.get("GGUFQ_BUILD_JOBS", os.cpu_count() or 1))))
        with ThreadPoolExecutor(workers) as pool:
            ext.extra_objects = list(pool.map(compile_one, jobs)) + list(ext.extra_objects or [])
        # always recompile csrc/ (five small files) and relink: setuptools would skip the link
        # when only library objects changed or were added
        self.force = True
        super().build_extension(ext)


ext = Extension(
    "ggufq._ggufq",
    sources=["csrc/module.c", "csrc/file.c", "csrc/strarray.c", "csrc/writer.c", "csrc/measure.c"],
    include_dirs=[str(ROOT / "include"), "csrc"],
    extra_compile_args=["-std=c11", "-O2", "-fvisibility=hidden", "-Wall", "-Wno-unused-parameter",
                        "-Wno-missing-field-initializers"],
    extra_link_args=["-pthread"],
    libraries=["sleef", "m"],
)

setup(
    name="ggufq",
    version="0.1.0",
    description="ggml's quantization bit for bit at C speed, and a hardened GGUF reader/writer",
    license="MIT",
    packages=["ggufq"],
    ext_modules=[ext],
    cmdclass={"build_ext": BuildLibggufq},
    python_requires=">=3.9",
    install_requires=["numpy"],
)
