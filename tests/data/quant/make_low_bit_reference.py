#!/usr/bin/env python3
"""Writes Q2_K.bin, Q3_K.bin, IQ4_NL.bin, IQ4_XS.bin and MXFP4.bin (the AQT1 format of
README.md): random blocks of each type and the float32 values gguf-py's
gguf.quants.dequantize returns for them. gguf-py cannot quantize these types, so the
blocks are random bytes with realistic scale fields.

Run in a virtual environment with `pip install gguf numpy`, from this directory:
    python3 make_low_bit_reference.py
"""
import struct

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

rng = np.random.default_rng(20261126)


def half_bytes(n, positive=False):
    v = rng.uniform(1e-3, 0.1, n)
    if not positive:
        v *= rng.choice([-1.0, 1.0], n)
    return v.astype(np.float16).view(np.uint8).reshape(n, 2)


# type, rows, elements per row, byte offsets of its half-float scale fields (positive ones)
SPECS = [
    (T.Q2_K, 2, 512, [], [80, 82]),      # d, dmin at the block's end, as in real files >= 0
    (T.Q3_K, 2, 512, [108], []),
    (T.IQ4_NL, 4, 128, [0], []),
    (T.IQ4_XS, 2, 512, [0], []),
    (T.MXFP4, 4, 128, [], []),           # the scale is an exponent byte: random, edges below
]

for qtype, rows, n, signed, positive in SPECS:
    block_elems, block_bytes = quants.GGML_QUANT_SIZES[qtype]
    n_blocks = rows * n // block_elems
    raw = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    for at in signed:
        raw[:, at:at + 2] = half_bytes(n_blocks)
    for at in positive:
        raw[:, at:at + 2] = half_bytes(n_blocks, positive=True)
    if qtype == T.MXFP4:
        # Subnormal scales (0, 1), 2^0 (127) and a large one whose products overflow (254).
        raw[:4, 0] = [0, 1, 127, 254]
    with np.errstate(over="ignore"):
        values = quants.dequantize(raw.reshape(-1), qtype).astype(np.float32).reshape(-1)
    with open(f"{qtype.name}.bin", "wb") as f:
        f.write(b"AQT1" + struct.pack("<III", int(qtype.value), rows, n))
        f.write(raw.tobytes())
        f.write(values.astype("<f4").tobytes())
