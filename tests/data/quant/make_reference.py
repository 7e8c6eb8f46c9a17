#!/usr/bin/env python3
"""Writes gguf_py_dequant.json: random blocks of the 2- to 4-bit GGUF types and the
values gguf-py (the reference Python implementation of GGUF, MIT licence) dequantizes
them to, as IEEE float bits. test_dequant checks the scalar dequantizers against it.

Run in a virtual environment with `pip install gguf numpy` (gguf 0.17 or later):
    python3 make_reference.py > gguf_py_dequant.json
"""
import json
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

BLOCKS = 6
rng = np.random.default_rng(20261126)


def halves(n, lo=1e-3, hi=0.1):
    v = rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)
    return v.astype(np.float16).view(np.uint8).reshape(n, 2)


def blocks_of(qtype):
    size = quants.GGML_QUANT_SIZES[qtype][1]
    raw = rng.integers(0, 256, (BLOCKS, size), dtype=np.uint8)
    # Scales as a real file has them: finite halves, positive d/dmin for Q2_K.
    if qtype == T.Q2_K:
        raw[:, 80:82] = halves(BLOCKS, 1e-3, 0.1).view(np.float16).__abs__().view(np.uint8)
        raw[:, 82:84] = halves(BLOCKS, 1e-3, 0.1).view(np.float16).__abs__().view(np.uint8)
    elif qtype == T.Q3_K:
        raw[:, 108:110] = halves(BLOCKS)
    elif qtype in (T.IQ4_NL, T.IQ4_XS):
        raw[:, 0:2] = halves(BLOCKS)
    elif qtype == T.MXFP4:
        # The exponent byte's edges: subnormal halves (0, 1), 2^0 (127), the largest (254).
        raw[:4, 0] = [0, 1, 127, 254]
    return raw


out = []
for qtype in (T.Q2_K, T.Q3_K, T.IQ4_NL, T.IQ4_XS, T.MXFP4):
    raw = blocks_of(qtype)
    values = quants.dequantize(raw.reshape(-1), qtype).astype(np.float32).reshape(-1)
    out.append({
        "type": qtype.name,
        "id": int(qtype.value),
        "blocks": raw.tobytes().hex(),
        "values": values.view(np.uint32).tolist(),
    })
json.dump({"origin": "gguf-py " + getattr(sys.modules["gguf"], "__version__", "(version unknown)"),
           "types": out}, sys.stdout)
