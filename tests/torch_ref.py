#!/usr/bin/python3
"""tests/torch_ref.py: an independent PyTorch (float64) reference for the C GPT trainer.

Usage:
  /usr/bin/python3 tests/torch_ref.py EXPORT.safetensors DUMP.safetensors
        [--write-ref OUT.safetensors] [--rtol 1e-4] [--check-hf-config CONFIG.json]
  /usr/bin/python3 tests/torch_ref.py EXPORT.safetensors --check-hf-config CONFIG.json
  /usr/bin/python3 tests/torch_ref.py --self-test [--tmp-prefix /tmp/torch_ref_selftest]

EXPORT holds the model parameters under HF GPT-2 names (Conv1D convention: linear weights are
stored (in, out) and y = x @ W + b) and a "__metadata__" entry "config": a JSON string with
vocab_size, n_layer, n_head, n_embd, max_seq_len, input_pe ("none" | "learned" | "sinusoidal"),
layer_pe (one of "nope", "rope", "alibi" per layer), rope_base, rope_fraction and rope_pairing
("split" | "interleaved").
DUMP holds tokens I32 [B,T], targets I32 [B,T], logits F32 [B,T,V], loss F32 scalar and grad.NAME
for every exported NAME, all computed by the C code with positions 0..T-1 and loss weights 1.

This script rebuilds the model in float64 from the exported parameters, recomputes logits, the
mean cross-entropy loss and its gradient w.r.t. every exported parameter, and compares each with
the dump using a scale-aware tolerance: max|got - ref| <= rtol * max|ref| + 1e-6 per tensor.
It prints one line per tensor and exits 1 on any mismatch, any missing gradient or any malformed
file. It is written from the model's specification, not from the C code, and imports nothing but
torch, numpy, json, struct, sys, argparse and math.
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

ATOL = 1e-6
LN_EPS = 1e-5
KNOWN_INPUT_PE = ("none", "learned", "sinusoidal")
KNOWN_LAYER_PE = ("nope", "rope", "alibi")


class RefError(Exception):
    """A problem with an input file or the configuration; the message says which and why."""


# ----------------------------------------------------------------------------------------------
# safetensors, by hand (struct + numpy)

_DTYPES = {"F32": "<f4", "I32": "<i4", "F64": "<f8", "I64": "<i8"}


def read_safetensors(path):
    """Returns (tensors, metadata): an insertion-ordered dict name -> numpy array, and the
    __metadata__ dict (or None). Raises RefError naming the file on any inconsistency."""
    try:
        with open(path, "rb") as fp:
            raw = fp.read()
    except OSError as e:
        raise RefError("cannot read safetensors file %s: %s" % (path, e))
    if len(raw) < 8:
        raise RefError("safetensors file %s is %d bytes, too short for the header length" % (path, len(raw)))
    (hlen,) = struct.unpack("<Q", raw[:8])
    if hlen > len(raw) - 8:
        raise RefError("safetensors file %s declares a %d-byte header but only %d bytes follow; "
                       "the file is truncated" % (path, hlen, len(raw) - 8))
    try:
        header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise RefError("safetensors file %s has a header that is not valid JSON: %s" % (path, e))
    if not isinstance(header, dict):
        raise RefError("safetensors file %s: the header is not a JSON object" % path)
    data = raw[8 + hlen:]
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not isinstance(metadata, dict):
        raise RefError("safetensors file %s: __metadata__ is not an object" % path)
    tensors = {}
    spans = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise RefError("safetensors file %s: tensor %s needs exactly dtype, shape and data_offsets" % (path, name))
        dtype, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in _DTYPES:
            raise RefError("safetensors file %s: tensor %s has unsupported dtype %r" % (path, name, dtype))
        if (not isinstance(shape, list) or any(not isinstance(s, int) or isinstance(s, bool) or s < 0 for s in shape)):
            raise RefError("safetensors file %s: tensor %s has a bad shape %r" % (path, name, shape))
        if (not isinstance(offs, list) or len(offs) != 2
                or any(not isinstance(o, int) or isinstance(o, bool) or o < 0 for o in offs)):
            raise RefError("safetensors file %s: tensor %s has bad data_offsets %r" % (path, name, offs))
        begin, end = offs
        itemsize = np.dtype(_DTYPES[dtype]).itemsize
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (begin <= end <= len(data)):
            raise RefError("safetensors file %s: tensor %s has data_offsets [%d, %d] outside the %d-byte "
                           "data section" % (path, name, begin, end, len(data)))
        if end - begin != numel * itemsize:
            raise RefError("safetensors file %s: tensor %s spans %d bytes but %s%r needs %d"
                           % (path, name, end - begin, dtype, shape, numel * itemsize))
        arr = np.frombuffer(data, dtype=_DTYPES[dtype], count=numel, offset=begin).reshape(shape).copy()
        tensors[name] = arr
        if end > begin:
            spans.append((begin, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise RefError("safetensors file %s: tensors %s and %s overlap" % (path, n0, n1))
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, numpy array) in order; float arrays are written F32, integer I32."""
    entries = {}
    if metadata is not None:
        entries["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    off = 0
    for name, arr in tensors:
        arr = np.asarray(arr)
        if arr.dtype.kind == "f":
            dt, a = "F32", np.array(arr, dtype="<f4", order="C")  # keeps 0-d scalars 0-d
        elif arr.dtype.kind in "iu":
            dt, a = "I32", np.array(arr, dtype="<i4", order="C")
        else:
            raise RefError("cannot write tensor %s of numpy dtype %s" % (name, arr.dtype))
        b = a.tobytes()
        entries[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header = json.dumps(entries, separators=(",", ":")).encode("utf-8")
    header += b" " * ((-len(header)) % 8)  # data section starts 8-byte aligned
    try:
        with open(path, "wb") as fp:
            fp.write(struct.pack("<Q", len(header)))
            fp.write(header)
            for b in blobs:
                fp.write(b)
    except OSError as e:
        raise RefError("cannot write safetensors file %s: %s" % (path, e))


# ----------------------------------------------------------------------------------------------
# Configuration

def parse_config(metadata, path):
    if metadata is None or "config" not in metadata:
        raise RefError("export %s has no __metadata__ \"config\" entry; the exporter must store the "
                       "model configuration there as a JSON string" % path)
    raw = metadata["config"]
    try:
        cfg = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        raise RefError("export %s: __metadata__ config is not valid JSON: %s" % (path, e))
    if not isinstance(cfg, dict):
        raise RefError("export %s: __metadata__ config is not a JSON object" % path)

    def need(key, kind):
        if key not in cfg:
            raise RefError("export %s: config lacks %r" % (path, key))
        v = cfg[key]
        if kind is int and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            raise RefError("export %s: config %s must be a positive integer, got %r" % (path, key, v))
        if kind is float and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise RefError("export %s: config %s must be a number, got %r" % (path, key, v))
        if kind is str and not isinstance(v, str):
            raise RefError("export %s: config %s must be a string, got %r" % (path, key, v))
        return v

    c = {k: need(k, int) for k in ("vocab_size", "n_layer", "n_head", "n_embd", "max_seq_len")}
    c["input_pe"] = need("input_pe", str)
    if c["input_pe"] not in KNOWN_INPUT_PE:
        raise RefError("export %s: input_pe %r is not one of %s; this reference does not know it"
                       % (path, c["input_pe"], ", ".join(KNOWN_INPUT_PE)))
    lp = cfg.get("layer_pe")
    if not isinstance(lp, list) or len(lp) != c["n_layer"] or not all(isinstance(s, str) for s in lp):
        raise RefError("export %s: config layer_pe must be a list of %d scheme names, got %r"
                       % (path, c["n_layer"], lp))
    for i, s in enumerate(lp):
        if s not in KNOWN_LAYER_PE:
            raise RefError("export %s: layer %d uses positional scheme %r, which this reference does not "
                           "know (known: %s); extend tests/torch_ref.py first" % (path, i, s, ", ".join(KNOWN_LAYER_PE)))
    c["layer_pe"] = list(lp)
    if c["n_embd"] % c["n_head"]:
        raise RefError("export %s: n_embd %d is not a multiple of n_head %d" % (path, c["n_embd"], c["n_head"]))
    hs = c["n_embd"] // c["n_head"]
    if "rope" in lp:
        c["rope_base"] = float(need("rope_base", float))
        c["rope_fraction"] = float(need("rope_fraction", float))
        c["rope_pairing"] = need("rope_pairing", str)
        if c["rope_pairing"] not in ("split", "interleaved"):
            raise RefError("export %s: rope_pairing %r is not split or interleaved" % (path, c["rope_pairing"]))
        if not (c["rope_base"] > 0):
            raise RefError("export %s: rope_base %r must be positive" % (path, c["rope_base"]))
        d_rot = int(hs * c["rope_fraction"])
        if not (0 <= d_rot <= hs) or d_rot % 2:
            raise RefError("export %s: rope_fraction %r gives d_rot = int(%d * %r) = %d, which must be even "
                           "and in 0..head size" % (path, c["rope_fraction"], hs, c["rope_fraction"], d_rot))
        c["d_rot"] = d_rot
    known = {"vocab_size", "n_layer", "n_head", "n_embd", "max_seq_len", "input_pe", "layer_pe",
             "rope_base", "rope_fraction", "rope_pairing"}
    c["ignored_keys"] = sorted(k for k in cfg if k not in known)
    return c


def expected_params(c):
    """Ordered (name, shape) of every parameter the export must hold."""
    V, C, L = c["vocab_size"], c["n_embd"], c["n_layer"]
    out = [("transformer.wte.weight", (V, C))]
    if c["input_pe"] == "learned":
        out.append(("transformer.wpe.weight", (c["max_seq_len"], C)))
    for i in range(L):
        p = "transformer.h.%d." % i
        out += [(p + "ln_1.weight", (C,)), (p + "ln_1.bias", (C,)),
                (p + "attn.c_attn.weight", (C, 3 * C)), (p + "attn.c_attn.bias", (3 * C,)),
                (p + "attn.c_proj.weight", (C, C)), (p + "attn.c_proj.bias", (C,)),
                (p + "ln_2.weight", (C,)), (p + "ln_2.bias", (C,)),
                (p + "mlp.c_fc.weight", (C, 4 * C)), (p + "mlp.c_fc.bias", (4 * C,)),
                (p + "mlp.c_proj.weight", (4 * C, C)), (p + "mlp.c_proj.bias", (C,))]
    out += [("transformer.ln_f.weight", (C,)), ("transformer.ln_f.bias", (C,))]
    return out


def check_export_names(export, c, path):
    exp = expected_params(c)
    names = {n for n, _ in exp}
    for n in export:
        if n.startswith("pe."):
            raise RefError("export %s holds %s, a parameter of a positional scheme this reference does not "
                           "know; extend tests/torch_ref.py for it" % (path, n))
        if n not in names:
            raise RefError("export %s holds an unexpected tensor %s for this config" % (path, n))
    for n, shape in exp:
        if n not in export:
            raise RefError("export %s lacks %s (needed for input_pe=%s, n_layer=%d)" % (path, n, c["input_pe"], c["n_layer"]))
        if tuple(export[n].shape) != shape or export[n].dtype.kind != "f":
            raise RefError("export %s: %s is %s %s, expected float %s"
                           % (path, n, export[n].dtype, list(export[n].shape), list(shape)))


# ----------------------------------------------------------------------------------------------
# Positional pieces

def alibi_slopes(n):
    """ALiBi head slopes m_1..m_n (Press et al.): 2^(-8h/n) for n a power of two; otherwise the
    slopes of the nearest lower power of two c, then every other slope of 2c, the first n-c."""
    def pow2(m):
        return [2.0 ** (-8.0 * h / m) for h in range(1, m + 1)]
    if n & (n - 1) == 0:
        return pow2(n)
    c = 2 ** int(math.floor(math.log2(n)))
    return pow2(c) + pow2(2 * c)[0::2][:n - c]


def sinusoidal_table(T, C):
    """PE[pos, 2i] = sin(pos / 10000^(2i/C)), PE[pos, 2i+1] = cos(same), float64 [T, C]."""
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    ch = torch.arange(C)
    two_i = (ch - ch % 2).to(torch.float64)
    ang = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / C)
    return torch.where(ch % 2 == 0, torch.sin(ang), torch.cos(ang))


def rope_pairs(d_rot, pairing):
    half = d_rot // 2
    if pairing == "split":
        return list(range(half)), [j + half for j in range(half)]
    return [2 * j for j in range(half)], [2 * j + 1 for j in range(half)]


def rope_rotate(x, pos, d_rot, base, pairing):
    """x [..., T, hs] float64; rotate pair j of the token at position m by m * base^(-2j/d_rot)."""
    if d_rot == 0:
        return x
    half = d_rot // 2
    theta = torch.pow(torch.tensor(base, dtype=torch.float64), -2.0 * torch.arange(half, dtype=torch.float64) / d_rot)
    ang = pos.to(torch.float64)[:, None] * theta[None, :]  # [T, half]
    cos, sin = torch.cos(ang), torch.sin(ang)
    ia, ib = rope_pairs(d_rot, pairing)
    a, b = x[..., ia], x[..., ib]
    out = x.clone()
    out[..., ia] = a * cos - b * sin
    out[..., ib] = a * sin + b * cos
    return out


def gelu_tanh(u):
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3)))


# ----------------------------------------------------------------------------------------------
# The model

def forward(P, c, tokens, targets):
    """P: name -> float64 tensor; tokens, targets LongTensor [B, T]. Returns (logits, loss)."""
    B, T = tokens.shape
    C, NH = c["n_embd"], c["n_head"]
    hs = C // NH
    pos = torch.arange(T)
    x = P["transformer.wte.weight"][tokens]  # [B, T, C]
    if c["input_pe"] == "learned":
        x = x + P["transformer.wpe.weight"][pos][None]
    elif c["input_pe"] == "sinusoidal":
        x = x + sinusoidal_table(T, C)[None]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    dist = (pos[:, None] - pos[None, :]).to(torch.float64)  # i - j
    for i in range(c["n_layer"]):
        p = "transformer.h.%d." % i
        scheme = c["layer_pe"][i]
        h = F.layer_norm(x, (C,), P[p + "ln_1.weight"], P[p + "ln_1.bias"], LN_EPS)
        qkv = h @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"]
        q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
        q, k, v = (t.reshape(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))  # [B, NH, T, hs]
        if scheme == "rope":
            q = rope_rotate(q, pos, c["d_rot"], c["rope_base"], c["rope_pairing"])
            k = rope_rotate(k, pos, c["d_rot"], c["rope_base"], c["rope_pairing"])
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        if scheme == "alibi":
            m = torch.tensor(alibi_slopes(NH), dtype=torch.float64)
            att = att - m[:, None, None] * dist[None]
        att = att.masked_fill(~causal, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + (y @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"])
        h2 = F.layer_norm(x, (C,), P[p + "ln_2.weight"], P[p + "ln_2.bias"], LN_EPS)
        u = h2 @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"]
        x = x + (gelu_tanh(u) @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), P["transformer.ln_f.weight"], P["transformer.ln_f.bias"], LN_EPS)
    logits = x @ P["transformer.wte.weight"].t()
    loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), reduction="mean")
    return logits, loss


def reference(export, c, tokens_np, targets_np):
    """Returns (logits, loss, grads) as float64 numpy, grads keyed by export name."""
    P = {n: torch.tensor(a.astype(np.float64), requires_grad=True) for n, a in export.items()}
    tokens = torch.tensor(tokens_np.astype(np.int64))
    targets = torch.tensor(targets_np.astype(np.int64))
    logits, loss = forward(P, c, tokens, targets)
    loss.backward()
    grads = {n: (t.grad if t.grad is not None else torch.zeros_like(t)).numpy() for n, t in P.items()}
    return logits.detach().numpy(), float(loss.item()), grads


# ----------------------------------------------------------------------------------------------
# Comparison

def compare(name, got, ref, rtol, lines):
    """Scale-aware check of one tensor; appends a report line; returns True when it passes."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        lines.append("  %-44s FAIL shape %s in dump, %s expected" % (name, list(got.shape), list(ref.shape)))
        return False
    if not np.all(np.isfinite(got)):
        lines.append("  %-44s FAIL %d non-finite values in dump" % (name, int(np.sum(~np.isfinite(got)))))
        return False
    err = float(np.max(np.abs(got - ref))) if got.size else 0.0
    mref = float(np.max(np.abs(ref))) if ref.size else 0.0
    tol = rtol * mref + ATOL
    ok = err <= tol
    lines.append("  %-44s %s max_abs_err %.3e max_abs_ref %.3e tol %.3e" % (name, "ok  " if ok else "FAIL", err, mref, tol))
    return ok


def check_dump(export_path, dump_path, rtol, write_ref=None, out=sys.stdout):
    """Runs the whole comparison; returns True when everything matches."""
    export, meta = read_safetensors(export_path)
    c = parse_config(meta, export_path)
    check_export_names(export, c, export_path)
    dump, _ = read_safetensors(dump_path)
    for n in ("tokens", "targets", "logits", "loss"):
        if n not in dump:
            raise RefError("dump %s lacks the tensor %s" % (dump_path, n))
    tokens, targets = dump["tokens"], dump["targets"]
    if tokens.dtype != np.int32 or targets.dtype != np.int32 or tokens.ndim != 2 or targets.shape != tokens.shape:
        raise RefError("dump %s: tokens and targets must be I32 [B, T] of one shape, got %s %s and %s %s"
                       % (dump_path, tokens.dtype, list(tokens.shape), targets.dtype, list(targets.shape)))
    B, T = tokens.shape
    V = c["vocab_size"]
    if B == 0 or T == 0:
        raise RefError("dump %s has an empty batch [%d, %d]" % (dump_path, B, T))
    for n, a in (("tokens", tokens), ("targets", targets)):
        if a.min() < 0 or a.max() >= V:
            raise RefError("dump %s: %s hold ids outside 0..%d" % (dump_path, n, V - 1))
    if c["input_pe"] == "learned" and T > c["max_seq_len"]:
        raise RefError("dump %s: T = %d exceeds max_seq_len %d of the learned position table"
                       % (dump_path, T, c["max_seq_len"]))

    print("torch_ref: export %s, dump %s: B=%d T=%d V=%d C=%d L=%d NH=%d input_pe=%s layer_pe=%s%s"
          % (export_path, dump_path, B, T, V, c["n_embd"], c["n_layer"], c["n_head"], c["input_pe"],
             ",".join(c["layer_pe"]),
             (" rope(base=%g, d_rot=%d, %s)" % (c["rope_base"], c["d_rot"], c["rope_pairing"])) if "d_rot" in c else ""),
          file=out)
    if c["ignored_keys"]:
        print("torch_ref: note: config keys not used by this reference: %s" % ", ".join(c["ignored_keys"]), file=out)

    logits, loss, grads = reference(export, c, tokens, targets)

    if write_ref:
        items = [("tokens", tokens), ("targets", targets), ("loss", np.array(loss, dtype=np.float32)),
                 ("logits", logits.astype(np.float32))]
        items += [("grad." + n, grads[n].astype(np.float32)) for n in export]
        write_safetensors(write_ref, items, {"format": "pt", "source": "tests/torch_ref.py"})
        print("torch_ref: wrote the float32 reference to %s" % write_ref, file=out)

    lines = []
    passed = failed = 0

    def tally(ok):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1

    tally(compare("loss", dump["loss"], np.array(loss), rtol, lines))
    tally(compare("logits", dump["logits"], logits, rtol, lines))
    for n in export:
        g = "grad." + n
        if g not in dump:
            lines.append("  %-44s FAIL missing from the dump" % g)
            tally(False)
            continue
        tally(compare(g, dump[g], grads[n], rtol, lines))
    for n in dump:
        if n.startswith("grad.") and n[5:] not in export:
            lines.append("  %-44s FAIL gradient of a parameter the export does not hold" % n)
            tally(False)
    for l in lines:
        print(l, file=out)
    print("torch_ref: %d passed, %d failed (rtol %g, atol %g)" % (passed, failed, rtol, ATOL), file=out)
    return failed == 0


# ----------------------------------------------------------------------------------------------
# HF transformers config.json for GPT2LMHeadModel

def check_hf_config(config_path, export_path, out=sys.stdout):
    _, meta = read_safetensors(export_path)
    c = parse_config(meta, export_path)
    problems = []
    if c["input_pe"] != "learned" or any(s != "nope" for s in c["layer_pe"]):
        problems.append("the export uses input_pe=%s, layer_pe=%s; GPT2LMHeadModel represents only learned "
                        "positions with no per-layer scheme, so no GPT-2 config.json should describe it"
                        % (c["input_pe"], ",".join(c["layer_pe"])))
    try:
        with open(config_path, "r", encoding="utf-8") as fp:
            hf = json.load(fp)
    except (OSError, ValueError) as e:
        raise RefError("cannot read HF config %s: %s" % (config_path, e))
    if not isinstance(hf, dict):
        raise RefError("HF config %s is not a JSON object" % config_path)

    def want(key, value, required=True):
        if key not in hf:
            if required:
                problems.append("%s is missing (expected %r)" % (key, value))
            return
        got = hf[key]
        if isinstance(value, float):
            same = isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - value) <= 1e-12
        else:
            same = type(got) is type(value) and got == value
        if not same:
            problems.append("%s is %r, expected %r" % (key, got, value))

    want("model_type", "gpt2")
    want("vocab_size", c["vocab_size"])
    want("n_positions", c["max_seq_len"])
    want("n_embd", c["n_embd"])
    want("n_layer", c["n_layer"])
    want("n_head", c["n_head"])
    want("layer_norm_epsilon", 1e-5)
    want("activation_function", "gelu_new")
    want("tie_word_embeddings", True)
    # optional keys that, when present, must not change the architecture
    want("n_ctx", c["max_seq_len"], required=False)
    want("scale_attn_weights", True, required=False)
    want("scale_attn_by_inverse_layer_idx", False, required=False)
    want("add_cross_attention", False, required=False)
    if hf.get("n_inner") is not None and hf["n_inner"] != 4 * c["n_embd"]:
        problems.append("n_inner is %r, expected null or %d" % (hf["n_inner"], 4 * c["n_embd"]))
    if "architectures" in hf and "GPT2LMHeadModel" not in (hf["architectures"] or []):
        problems.append("architectures is %r, expected to include GPT2LMHeadModel" % (hf["architectures"],))
    for p in problems:
        print("  hf config %s: FAIL %s" % (config_path, p), file=out)
    print("torch_ref: HF config %s %s" % (config_path, "ok" if not problems else "has %d problem(s)" % len(problems)), file=out)
    return not problems


# ----------------------------------------------------------------------------------------------
# Self-test

class _Sink:
    def __init__(self):
        self.text = []

    def write(self, s):
        self.text.append(s)

    def flush(self):
        pass


def naive_forward(P, c, tokens):
    """A second, loop-by-loop numpy implementation of the forward pass, written independently of
    forward() (explicit per-token, per-head, per-pair loops), used only to cross-check it."""
    V, C, NH = c["vocab_size"], c["n_embd"], c["n_head"]
    hs = C // NH
    B, T = tokens.shape

    def ln(v, w, b):
        mu = sum(v) / len(v)
        var = sum((t - mu) ** 2 for t in v) / len(v)
        return np.array([(v[j] - mu) / math.sqrt(var + LN_EPS) * w[j] + b[j] for j in range(len(v))])

    def gelu(u):
        return 0.5 * u * (1 + math.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))

    def rot(vec, m):
        vec = list(vec)
        d = c["d_rot"]
        for j in range(d // 2):
            th = c["rope_base"] ** (-2.0 * j / d)
            a_i, b_i = (j, j + d // 2) if c["rope_pairing"] == "split" else (2 * j, 2 * j + 1)
            a, b = vec[a_i], vec[b_i]
            vec[a_i] = a * math.cos(m * th) - b * math.sin(m * th)
            vec[b_i] = a * math.sin(m * th) + b * math.cos(m * th)
        return np.array(vec)

    out = np.zeros((B, T, V))
    for bi in range(B):
        xs = []
        for t in range(T):
            x = P["transformer.wte.weight"][tokens[bi, t]].copy()
            if c["input_pe"] == "learned":
                x = x + P["transformer.wpe.weight"][t]
            elif c["input_pe"] == "sinusoidal":
                x = x + np.array([math.sin(t / 10000 ** ((ch - ch % 2) / C)) if ch % 2 == 0
                                  else math.cos(t / 10000 ** ((ch - ch % 2) / C)) for ch in range(C)])
            xs.append(x)
        for li in range(c["n_layer"]):
            p = "transformer.h.%d." % li
            scheme = c["layer_pe"][li]
            W, bias = P[p + "attn.c_attn.weight"], P[p + "attn.c_attn.bias"]
            qkv = [ln(x, P[p + "ln_1.weight"], P[p + "ln_1.bias"]) @ W + bias for x in xs]
            ys = [np.zeros(C) for _ in range(T)]
            slopes = alibi_slopes(NH)
            for hh in range(NH):
                lo, hi = hh * hs, (hh + 1) * hs
                for i in range(T):
                    q = qkv[i][lo:hi]
                    if scheme == "rope":
                        q = rot(q, i)
                    scores = []
                    for j in range(i + 1):
                        k = qkv[j][C + lo:C + hi]
                        if scheme == "rope":
                            k = rot(k, j)
                        s = float(np.dot(q, k)) / math.sqrt(hs)
                        if scheme == "alibi":
                            s -= slopes[hh] * (i - j)
                        scores.append(s)
                    mx = max(scores)
                    e = [math.exp(s - mx) for s in scores]
                    z = sum(e)
                    for j in range(i + 1):
                        ys[i][lo:hi] += e[j] / z * qkv[j][2 * C + lo:2 * C + hi]
            xs = [xs[t] + ys[t] @ P[p + "attn.c_proj.weight"] + P[p + "attn.c_proj.bias"] for t in range(T)]
            new = []
            for x in xs:
                u = ln(x, P[p + "ln_2.weight"], P[p + "ln_2.bias"]) @ P[p + "mlp.c_fc.weight"] + P[p + "mlp.c_fc.bias"]
                g = np.array([gelu(v) for v in u])
                new.append(x + g @ P[p + "mlp.c_proj.weight"] + P[p + "mlp.c_proj.bias"])
            xs = new
        for t in range(T):
            out[bi, t] = P["transformer.wte.weight"] @ ln(xs[t], P["transformer.ln_f.weight"], P["transformer.ln_f.bias"])
    return out


def _make_case(cfg, B, T, seed):
    """A random export (float32 parameters) and a dump computed by torch from it."""
    rng = np.random.default_rng(seed)
    c = parse_config({"config": json.dumps(cfg)}, "(self-test)")
    export = {}
    for n, shape in expected_params(c):
        if n.endswith("ln_1.weight") or n.endswith("ln_2.weight") or n.endswith("ln_f.weight"):
            a = 1.0 + 0.1 * rng.standard_normal(shape)
        elif n.endswith(".bias"):
            a = 0.05 * rng.standard_normal(shape)
        else:
            a = 0.3 * rng.standard_normal(shape)
        export[n] = a.astype(np.float32)
    tokens = rng.integers(0, c["vocab_size"], size=(B, T)).astype(np.int32)
    targets = rng.integers(0, c["vocab_size"], size=(B, T)).astype(np.int32)
    logits, loss, grads = reference(export, c, tokens, targets)
    dump = [("tokens", tokens), ("targets", targets), ("logits", logits.astype(np.float32)),
            ("loss", np.array(loss, dtype=np.float32))]
    dump += [("grad." + n, grads[n].astype(np.float32)) for n in export]
    return c, export, dump


def self_test(prefix):
    torch.manual_seed(0)
    results = []

    def check(ok, what):
        results.append(bool(ok))
        print("  %-72s %s" % (what, "ok" if ok else "FAIL"))

    # ALiBi slopes against REFERENCE.md's table (log2 of the slopes).
    table = {4: [-2, -4, -6, -8], 6: [-2, -4, -6, -8, -1, -3], 8: [-1, -2, -3, -4, -5, -6, -7, -8],
             12: [-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5]}
    for n, want in table.items():
        got = [math.log2(s) for s in alibi_slopes(n)]
        check(len(got) == n and all(abs(a - b) < 1e-12 for a, b in zip(got, want)), "ALiBi slopes n=%d match REFERENCE.md" % n)

    # Sinusoidal table against REFERENCE.md (d=6, positions 0..3, 4 decimals).
    want = [[0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000],
            [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0000],
            [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0000],
            [0.1411, -0.9900, 0.1388, 0.9903, 0.0065, 1.0000]]
    pe = sinusoidal_table(4, 6).numpy()
    check(np.max(np.abs(pe - np.array(want))) <= 0.5e-4 + 1e-12, "sinusoidal table d=6 matches REFERENCE.md")

    # Split and interleaved RoPE are the same rotation up to a permutation of channels:
    # interleaved(x[perm]) == split(x)[perm] with perm = [0, h, 1, h+1, ...] on the rotated part.
    for hs, d_rot in ((8, 8), (12, 4), (16, 8)):
        x = torch.randn(2, 3, 7, hs, dtype=torch.float64)
        pos = torch.arange(7) * 5 + 3
        half = d_rot // 2
        perm = [v for j in range(half) for v in (j, j + half)] + list(range(d_rot, hs))
        a = rope_rotate(x, pos, d_rot, 10000.0, "split")[..., perm]
        b = rope_rotate(x[..., perm], pos, d_rot, 10000.0, "interleaved")
        check(torch.max(torch.abs(a - b)).item() < 1e-12 and torch.equal(a[..., d_rot:], x[..., perm][..., d_rot:]),
              "RoPE split == interleaved up to a permutation (hs=%d, d_rot=%d)" % (hs, d_rot))
    # RoPE relative property: <R(m)q, R(n)k> depends only on n - m.
    q, k = torch.randn(1, 1, 1, 8, dtype=torch.float64), torch.randn(1, 1, 1, 8, dtype=torch.float64)
    dots = []
    for m in (3, 10, 101):
        rq = rope_rotate(q, torch.tensor([m]), 8, 10000.0, "interleaved")
        rk = rope_rotate(k, torch.tensor([m + 2]), 8, 10000.0, "interleaved")
        dots.append(float((rq * rk).sum()))
    check(max(dots) - min(dots) < 1e-9, "RoPE scores depend only on the offset")

    cases = [
        ("learned, rope split full / alibi / nope", dict(vocab_size=11, n_layer=3, n_head=4, n_embd=16, max_seq_len=8,
         input_pe="learned", layer_pe=["rope", "alibi", "nope"], rope_base=10000.0, rope_fraction=1.0, rope_pairing="split"), 2, 5),
        ("sinusoidal, rope interleaved 25%, alibi 6 heads", dict(vocab_size=9, n_layer=2, n_head=6, n_embd=48, max_seq_len=16,
         input_pe="sinusoidal", layer_pe=["rope", "alibi"], rope_base=100.0, rope_fraction=0.25, rope_pairing="interleaved"), 2, 6),
        ("none, alibi 3 heads, nope", dict(vocab_size=7, n_layer=2, n_head=3, n_embd=12, max_seq_len=4,
         input_pe="none", layer_pe=["alibi", "nope"], rope_base=10000.0, rope_fraction=0.5, rope_pairing="split"), 1, 4),
        ("gpt-2: learned, all nope", dict(vocab_size=13, n_layer=2, n_head=2, n_embd=8, max_seq_len=6,
         input_pe="learned", layer_pe=["nope", "nope"], rope_base=10000.0, rope_fraction=1.0, rope_pairing="split"), 3, 6),
    ]
    ex_path, dump_path, ref_path = prefix + ".export.safetensors", prefix + ".dump.safetensors", prefix + ".ref.safetensors"
    for ci, (label, cfg, B, T) in enumerate(cases):
        c, export, dump = _make_case(cfg, B, T, 100 + ci)
        # forward() against the loop-by-loop implementation
        P64 = {n: a.astype(np.float64) for n, a in export.items()}
        d = dict(dump)
        t_logits, _ = forward({n: torch.tensor(a) for n, a in P64.items()}, c,
                              torch.tensor(d["tokens"].astype(np.int64)), torch.tensor(d["targets"].astype(np.int64)))
        nv = naive_forward(P64, c, d["tokens"])
        check(np.max(np.abs(t_logits.detach().numpy() - nv)) < 1e-10, "[%s] forward == loop-by-loop forward" % label)

        write_safetensors(ex_path, list(export.items()), {"format": "pt", "config": json.dumps(cfg)})
        write_safetensors(dump_path, dump)
        sink = _Sink()
        ok = check_dump(ex_path, dump_path, 1e-4, write_ref=ref_path, out=sink)
        check(ok, "[%s] a torch-made dump passes" % label)
        if not ok:
            print("".join(sink.text))
        ref, ref_meta = read_safetensors(ref_path)
        check(all(np.array_equal(ref[n], a) for n, a in dump) and len(ref) == len(dump) and ref_meta.get("format") == "pt",
              "[%s] --write-ref writes the same float32 results" % label)

        def variant(mutate, want_ok, what):
            items = [(n, a.copy()) for n, a in dump]
            items = mutate(items)
            write_safetensors(dump_path, items)
            s = _Sink()
            try:
                r = check_dump(ex_path, dump_path, 1e-4, out=s)
            except RefError as e:
                s.write(str(e))
                r = False
            check(r == want_ok, "[%s] %s" % (label, what))

        def perturb(target, scale):
            def f(items):
                for n, a in items:
                    if n == target:
                        i = np.unravel_index(np.argmax(np.abs(a)), a.shape) if a.ndim else ()
                        a[i] = a[i] + scale * max(float(np.max(np.abs(a))), 1e-3)
                return items
            return f
        some_grad = "grad.transformer.h.%d.attn.c_attn.weight" % (c["n_layer"] - 1)
        variant(perturb(some_grad, 1e-3), False, "a gradient perturbed by 1e-3 of its scale fails")
        variant(perturb("grad.transformer.ln_f.bias", 1e-3), False, "grad of ln_f.bias perturbed fails")
        variant(perturb(some_grad, 1e-6), True, "a gradient perturbed by 1e-6 of its scale passes")
        variant(perturb("logits", 1e-3), False, "perturbed logits fail")
        variant(perturb("loss", 1e-3), False, "perturbed loss fails")
        variant(lambda items: [(n, a) for n, a in items if n != "grad.transformer.wte.weight"], False,
                "a missing gradient fails")
        if c["input_pe"] == "learned":
            # a gradient in a wpe row past T must be zero: any value there is a bug
            def wpe_row(items):
                for n, a in items:
                    if n == "grad.transformer.wpe.weight":
                        a[T:] = 0.01
                return items
            if T < c["max_seq_len"]:
                variant(wpe_row, False, "gradient in unused wpe rows fails")

    # An unknown positional-scheme parameter is refused.
    c, export, dump = _make_case(cases[0][1], 1, 3, 7)
    export["pe.t5.table"] = np.zeros((32, 4), dtype=np.float32)
    write_safetensors(ex_path, list(export.items()), {"config": json.dumps(cases[0][1])})
    write_safetensors(dump_path, dump)
    try:
        check_dump(ex_path, dump_path, 1e-4, out=_Sink())
        check(False, "an unknown pe.* tensor in the export is refused")
    except RefError as e:
        check("pe.t5.table" in str(e), "an unknown pe.* tensor in the export is refused")
    # An unknown layer scheme is refused.
    bad = dict(cases[0][1], layer_pe=["rope", "t5", "nope"])
    try:
        parse_config({"config": json.dumps(bad)}, "(self-test)")
        check(False, "an unknown layer scheme is refused")
    except RefError as e:
        check("t5" in str(e), "an unknown layer scheme is refused")
    # A truncated file is refused.
    write_safetensors(dump_path, dump)
    with open(dump_path, "rb") as fp:
        raw = fp.read()
    with open(dump_path, "wb") as fp:
        fp.write(raw[:-3])
    try:
        read_safetensors(dump_path)
        check(False, "a truncated safetensors file is refused")
    except RefError as e:
        check(dump_path in str(e), "a truncated safetensors file is refused")

    # HF config.json check.
    gcfg = cases[3][1]
    write_safetensors(ex_path, list(_make_case(gcfg, 1, 2, 5)[1].items()), {"config": json.dumps(gcfg)})
    hf_path = prefix + ".config.json"
    good = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 13, "n_positions": 6,
            "n_ctx": 6, "n_embd": 8, "n_layer": 2, "n_head": 2, "n_inner": None, "layer_norm_epsilon": 1e-5,
            "activation_function": "gelu_new", "tie_word_embeddings": True}
    for mod, want_ok, what in ((lambda h: h, True, "a correct GPT-2 config.json passes"),
                               (lambda h: dict(h, layer_norm_epsilon=1e-6), False, "wrong layer_norm_epsilon fails"),
                               (lambda h: dict(h, activation_function="gelu"), False, "activation gelu fails"),
                               (lambda h: {k: v for k, v in h.items() if k != "tie_word_embeddings"}, False,
                                "missing tie_word_embeddings fails"),
                               (lambda h: dict(h, n_positions=1024), False, "wrong n_positions fails")):
        with open(hf_path, "w") as fp:
            json.dump(mod(dict(good)), fp)
        check(check_hf_config(hf_path, ex_path, out=_Sink()) == want_ok, "HF config: " + what)
    rcfg = cases[0][1]
    write_safetensors(ex_path, list(_make_case(rcfg, 1, 2, 5)[1].items()), {"config": json.dumps(rcfg)})
    with open(hf_path, "w") as fp:
        json.dump(dict(good, vocab_size=11, n_positions=8, n_ctx=8, n_embd=16, n_layer=3, n_head=4), fp)
    check(not check_hf_config(hf_path, ex_path, out=_Sink()), "HF config: a RoPE/ALiBi export cannot claim GPT-2")

    npass = sum(results)
    print("torch_ref self-test: %d passed, %d failed (scratch files %s.*)" % (npass, len(results) - npass, prefix))
    return npass == len(results)


# ----------------------------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description="Independent float64 PyTorch reference for the C GPT trainer.")
    ap.add_argument("export", nargs="?", help="EXPORT.safetensors (parameters, HF GPT-2 names, config metadata)")
    ap.add_argument("dump", nargs="?", help="DUMP.safetensors (tokens, targets, logits, loss, grad.NAME)")
    ap.add_argument("--write-ref", metavar="OUT", help="also write torch's float32 loss, logits and grad.NAME here")
    ap.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance, scaled by each tensor's max |ref| (default 1e-4)")
    ap.add_argument("--check-hf-config", metavar="CONFIG.json", help="check a transformers GPT2LMHeadModel config.json against the export")
    ap.add_argument("--self-test", action="store_true", help="test this script on torch-made models and dumps")
    ap.add_argument("--tmp-prefix", default="/tmp/torch_ref_selftest", help="scratch file prefix for --self-test")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.self_test:
        return 0 if self_test(args.tmp_prefix) else 1
    if not args.export or (not args.dump and not args.check_hf_config):
        ap.print_usage(sys.stderr)
        print("torch_ref: error: need EXPORT and DUMP (or EXPORT with --check-hf-config), or --self-test", file=sys.stderr)
        return 2
    if not (args.rtol >= 0):
        print("torch_ref: error: --rtol must be non-negative", file=sys.stderr)
        return 2
    ok = True
    try:
        if args.dump:
            ok = check_dump(args.export, args.dump, args.rtol, args.write_ref) and ok
        if args.check_hf_config:
            ok = check_hf_config(args.check_hf_config, args.export) and ok
    except RefError as e:
        print("torch_ref: error: %s" % e, file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
