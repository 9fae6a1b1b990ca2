"""ggml's own kernels from the peer library (libggml-base.so), through ctypes,
as tests/peer_kernels.c binds them: quantize_<t> (chunk), quantize_row_<t>_ref,
dequantize_row_<t>, and the F16/BF16 row conversions; ggml_quantize_init
prepares the IQ grids."""
import ctypes

import numpy as np

import ggufq

# per type: how ggml quantizes it, flags, and the block's float scale fields (kind, offset)
CHUNK, ROW_REF, F16_ROW, BF16_ROW = range(4)
NEEDS_IMATRIX, NO_IMATRIX, NO_DEQUANT, PLAIN, SLOW = 1, 2, 4, 8, 16
F16S, F32S, E8M0, UE4M3, IQ1M = "f16", "f32", "e8m0", "ue4m3", "iq1m"

TYPES = {
    "f16": (F16_ROW, PLAIN, []), "bf16": (BF16_ROW, PLAIN, []),
    "q4_0": (CHUNK, 0, [(F16S, 0)]), "q4_1": (CHUNK, 0, [(F16S, 0), (F16S, 2)]),
    "q5_0": (CHUNK, 0, [(F16S, 0)]), "q5_1": (CHUNK, 0, [(F16S, 0), (F16S, 2)]),
    "q8_0": (CHUNK, 0, [(F16S, 0)]), "q8_1": (ROW_REF, NO_IMATRIX | NO_DEQUANT, [(F16S, 0), (F16S, 2)]),
    "q1_0": (CHUNK, 0, [(F16S, 0)]), "q2_0": (CHUNK, 0, [(F16S, 0)]),
    "q2_K": (CHUNK, 0, [(F16S, 80), (F16S, 82)]), "q3_K": (CHUNK, 0, [(F16S, 108)]),
    "q4_K": (CHUNK, 0, [(F16S, 0), (F16S, 2)]), "q5_K": (CHUNK, 0, [(F16S, 0), (F16S, 2)]),
    "q6_K": (CHUNK, 0, [(F16S, 208)]), "q8_K": (ROW_REF, NO_IMATRIX, [(F32S, 0)]),
    "iq2_xxs": (CHUNK, NEEDS_IMATRIX | SLOW, [(F16S, 0)]), "iq2_xs": (CHUNK, NEEDS_IMATRIX | SLOW, [(F16S, 0)]),
    "iq2_s": (CHUNK, SLOW, [(F16S, 0)]), "iq3_xxs": (CHUNK, SLOW, [(F16S, 0)]),
    "iq3_s": (CHUNK, SLOW, [(F16S, 0)]), "iq1_s": (CHUNK, NEEDS_IMATRIX | SLOW, [(F16S, 0)]),
    "iq1_m": (CHUNK, SLOW, [(IQ1M, 48)]), "iq4_nl": (CHUNK, 0, [(F16S, 0)]),
    "iq4_xs": (CHUNK, 0, [(F16S, 0)]), "tq1_0": (CHUNK, 0, [(F16S, 52)]), "tq2_0": (CHUNK, 0, [(F16S, 64)]),
    "mxfp4": (CHUNK, 0, [(E8M0, 0)]),
    "nvfp4": (CHUNK, 0, [(UE4M3, 0), (UE4M3, 1), (UE4M3, 2), (UE4M3, 3)]),
}

# special scale values (NaNs of both signs and several payloads, +-Inf, +-0, subnormals, extremes)
SPECIALS = {
    F16S: [0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7D5A, 0xFEA5, 0x7FFF, 0xFFFF,
           0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x8001, 0x7BFF, 0xFBFF],
    F32S: [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA5A5A5, 0xFFD0C0B0, 0x7FFFFFFF, 0xFFFFFFFF,
           0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x7F7FFFFF, 0xFF7FFFFF],
    E8M0: [0xFF, 0xFE, 0x00, 0x01, 0x7F, 0x80],
    UE4M3: [0x7F, 0xFF, 0x7E, 0xFE, 0x00, 0x80, 0x01, 0x81],
}
SPECIALS[IQ1M] = SPECIALS[F16S]


def force_scale(kind, offset, value, block):
    """Write a special value into one scale field of a block (a uint8 array)."""
    if kind == F16S:
        block[offset:offset + 2] = [value & 0xFF, value >> 8]
    elif kind == F32S:
        block[offset:offset + 4] = [(value >> 8 * i) & 0xFF for i in range(4)]
    elif kind in (E8M0, UE4M3):
        block[offset] = value
    elif kind == IQ1M:   # nibble k of the half is the top nibble of little-endian u16 k
        for k in range(4):
            block[offset + 2 * k + 1] = (block[offset + 2 * k + 1] & 0x0F) | (((value >> 4 * k) & 0xF) << 4)


class Peer:
    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        self.lib.ggml_quantize_init.argtypes = [ctypes.c_int]
        self.lib.ggml_quantize_init.restype = None
        self._inited = set()

    def _fn(self, name, argtypes, restype=None):
        f = getattr(self.lib, name)
        f.argtypes, f.restype = argtypes, restype
        return f

    def has_dequantize(self, name):
        return not TYPES[name][1] & NO_DEQUANT

    def dequantize(self, name, blocks, n):
        """ggml's decoding of n weights of type name from the bytes `blocks`."""
        via = TYPES[name][0]
        src = np.ascontiguousarray(blocks, dtype=np.uint8)
        out = np.empty(n, dtype=np.float32)
        sym = {F16_ROW: "ggml_fp16_to_fp32_row", BF16_ROW: "ggml_bf16_to_fp32_row"}.get(via, f"dequantize_row_{name}")
        fn = self._fn(sym, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64])
        fn(src.ctypes.data, out.ctypes.data, n)
        return out

    def quantize(self, name, x, imatrix=None):
        """ggml's encoding of the rows of x (2-D float32)."""
        via, flags, _ = TYPES[name]
        t = ggufq.type_info(name)
        x = np.ascontiguousarray(x, dtype=np.float32)
        nrows, n_per_row = x.shape
        out = np.zeros((nrows, t.row_bytes(n_per_row)), dtype=np.uint8)
        if via == CHUNK:
            if t.id not in self._inited:
                self.lib.ggml_quantize_init(t.id)
                self._inited.add(t.id)
            fn = self._fn(f"quantize_{name}", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                               ctypes.c_void_p], ctypes.c_size_t)
            im = None if imatrix is None else np.ascontiguousarray(imatrix, dtype=np.float32)
            fn(x.ctypes.data, out.ctypes.data, nrows, n_per_row, None if im is None else im.ctypes.data)
            return out
        sym = {F16_ROW: "ggml_fp32_to_fp16_row", BF16_ROW: "ggml_fp32_to_bf16_row_ref"}.get(via,
                                                                                           f"quantize_row_{name}_ref")
        fn = self._fn(sym, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64])
        for r in range(nrows):
            fn(x[r].ctypes.data, out[r].ctypes.data, n_per_row)
        return out
