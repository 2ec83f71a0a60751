#!/usr/bin/python3
"""tests/torch_llmc.py: llm.c GPT-2 model files against the float64 PyTorch reference.

Usage:
  /usr/bin/python3 tests/torch_llmc.py write DIR
        writes DIR/model_v3.bin (float32), DIR/model_v5.bin (bfloat16) and DIR/tokens.bin (an llm.c
        uint16 token shard): a random GPT-2 (context 16, vocabulary 300 padded to 384, 2 layers,
        4 heads, 32 channels) in llm.c's layout, from llm.c's write_model (train_gpt2.py): a
        256-int32 header (20240326, version, maxT, V, L, NH, C, Vp), then wte (Vp, C) with zero
        padding rows, wpe (maxT, C), ln1w, ln1b, qkvw (L, 3C, C), qkvb, attprojw (L, C, C),
        attprojb, ln2w, ln2b, fcw (L, 4C, C), fcb, fcprojw (L, C, 4C), fcprojb, lnfw, lnfb;
        weights (out, in).
  /usr/bin/python3 tests/torch_llmc.py check MODEL.bin DUMP.safetensors
        reads MODEL.bin (either version) with its own reader, rebuilds GPT-2 in float64 (the
        model of tests/torch_model.py: learned positions, every layer nope) and compares the loss,
        the logits and every gradient of the C dump (./train --load MODEL.bin --dump-step DUMP)
        with rtol 1e-4 of each tensor's largest value. Exits 1 on any mismatch.
Written from llm.c's layout, not from the C reader.
"""
import os
import struct
import sys

import numpy as np

from torch_io import RefError, read_safetensors
from torch_model import ATOL, compare, reference

MAXT, V, L, NH, C = 16, 300, 2, 4, 32
VP = (V + 127) // 128 * 128
# (HF name, per layer, shape as a function of C, maxT, Vp), in llm.c's file order
TENSORS = [
    ("transformer.wte.weight", False, lambda: (VP, C)),
    ("transformer.wpe.weight", False, lambda: (MAXT, C)),
    ("ln_1.weight", True, lambda: (C,)), ("ln_1.bias", True, lambda: (C,)),
    ("attn.c_attn.weight", True, lambda: (3 * C, C)), ("attn.c_attn.bias", True, lambda: (3 * C,)),
    ("attn.c_proj.weight", True, lambda: (C, C)), ("attn.c_proj.bias", True, lambda: (C,)),
    ("ln_2.weight", True, lambda: (C,)), ("ln_2.bias", True, lambda: (C,)),
    ("mlp.c_fc.weight", True, lambda: (4 * C, C)), ("mlp.c_fc.bias", True, lambda: (4 * C,)),
    ("mlp.c_proj.weight", True, lambda: (C, 4 * C)), ("mlp.c_proj.bias", True, lambda: (C,)),
    ("transformer.ln_f.weight", False, lambda: (C,)), ("transformer.ln_f.bias", False, lambda: (C,)),
]


def bf16(a):
    """float32 values rounded to bfloat16 (to nearest even) as float32, and their 16-bit patterns."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u << 16).astype(np.uint32).view(np.float32), u.astype(np.uint16)


def write(d):
    rng = np.random.RandomState(20240326)
    arrays = []
    for name, per_layer, shape in TENSORS:
        s = (L,) + shape() if per_layer else shape()
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "transformer.ln_f.weight":
            a = 1 + 0.2 * rng.randn(*s)
        else:
            a = (0.5 if "wte" in name or "wpe" in name else 0.15) * rng.randn(*s)
        if name == "transformer.wte.weight":
            a[V:] = 0
        arrays.append(a.astype(np.float32))
    for version in (3, 5):
        h = [0] * 256
        h[:8] = [20240326, version, MAXT, V, L, NH, C, VP]
        with open(os.path.join(d, "model_v%d.bin" % version), "wb") as f:
            f.write(struct.pack("<256i", *h))
            for a in arrays:
                f.write(a.astype("<f4").tobytes() if version == 3 else bf16(a)[1].astype("<u2").tobytes())
    tokens = np.random.RandomState(7).randint(0, V, size=400)
    h = [0] * 256
    h[:3] = [20240520, 1, len(tokens)]
    with open(os.path.join(d, "tokens.bin"), "wb") as f:
        f.write(struct.pack("<256i", *h) + tokens.astype("<u2").tobytes())


def read_llmc(path):
    """The parameters of an llm.c file by HF name, in the Conv1D (in, out) layout of an export."""
    raw = open(path, "rb").read()
    h = struct.unpack("<256i", raw[:1024])
    if h[0] != 20240326 or h[1] not in (3, 5):
        raise RefError("%s: not an llm.c model of version 3 or 5" % path)
    maxT, v, nl, nh, c, vp = h[2:8]
    if (maxT, v, nl, nh, c, vp) != (MAXT, V, L, NH, C, VP):
        raise RefError("%s: header %s, not the model this script writes" % (path, h[2:8]))
    width = 4 if h[1] == 3 else 2
    out, off = {}, 1024
    for name, per_layer, shape in TENSORS:
        s = (L,) + shape() if per_layer else shape()
        n = int(np.prod(s))
        b = raw[off:off + n * width]
        off += n * width
        if width == 4:
            a = np.frombuffer(b, dtype="<f4").astype(np.float64)
        else:
            a = (np.frombuffer(b, dtype="<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        a = a.reshape(s)
        if name == "transformer.wte.weight":
            if np.any(a[V:] != 0):
                raise RefError("%s: padding rows of wte are not zero" % path)
            a = a[:V]
        for l in range(L if per_layer else 1):
            t = a[l] if per_layer else a
            full = "transformer.h.%d.%s" % (l, name) if per_layer else name
            out[full] = t.T.copy() if t.ndim == 2 and full != "transformer.wte.weight" and full != "transformer.wpe.weight" else t
    if off != len(raw):
        raise RefError("%s: %d bytes, expected %d" % (path, len(raw), off))
    return out


def check(model_path, dump_path):
    P = read_llmc(model_path)
    dump, _ = read_safetensors(dump_path)
    c = {"vocab_size": V, "n_layer": L, "n_head": NH, "n_embd": C, "max_seq_len": MAXT,
         "input_pe": "learned", "layer_pe": ["nope"] * L}
    logits, loss, grads = reference(P, c, dump["tokens"], dump["targets"])
    lines = []
    ok = compare("loss", dump["loss"], np.array(loss), 1e-4, lines)
    ok &= compare("logits", dump["logits"], logits, 1e-4, lines)
    for n in P:
        ok &= compare("grad." + n, dump["grad." + n], grads[n], 1e-4, lines)
    print("torch_llmc: %s against %s: loss %.6f (C) %.6f (torch)" % (model_path, dump_path, float(dump["loss"]), loss))
    for l in lines:
        if "FAIL" in l:
            print(l)
    print("torch_llmc: %s (rtol 1e-4, atol %g)" % ("all tensors match" if ok else "MISMATCH", ATOL))
    return ok


def main(argv):
    try:
        if len(argv) == 2 and argv[0] == "write":
            write(argv[1])
            return 0
        if len(argv) == 3 and argv[0] == "check":
            return 0 if check(argv[1], argv[2]) else 1
    except RefError as e:
        print("torch_llmc: error: %s" % e)
        return 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
