#!/usr/bin/python3
"""tests/torch_ref.py: an independent PyTorch (float64) reference for the C GPT trainer.

Usage:
  /usr/bin/python3 tests/torch_ref.py EXPORT.safetensors DUMP.safetensors
        [--write-ref OUT.safetensors] [--rtol 1e-4] [--check-hf-config CONFIG.json]
  /usr/bin/python3 tests/torch_ref.py EXPORT.safetensors --check-hf-config CONFIG.json
  /usr/bin/python3 tests/torch_ref.py --self-test [--tmp-prefix /tmp/torch_ref_selftest]

EXPORT holds the model parameters under HF GPT-2 names (Conv1D convention: linear weights are
stored (in, out) and y = x @ W + b), the parameters of the positional schemes under pe.* names, and
a "__metadata__" entry "config": a JSON string with vocab_size, n_layer, n_head, n_embd,
max_seq_len, input_pe ("none" | "learned" | "sinusoidal"), layer_pe (one scheme per layer: "nope",
"rope", "alibi", "t5", "kerple", "fire", "xpos", "p-rope"), rope_base, rope_fraction, rope_pairing
("split" | "interleaved"), and (each optional, default in brackets) rope_scaling ("none" | "linear"
| "dynamic" | "yarn" | "llama3") [none], rope_factor [1], rope_original_context [max_seq_len],
yarn_beta_fast [32], yarn_beta_slow [1], llama3_low_freq_factor [1], llama3_high_freq_factor [4],
xpos_scale_base [512], p_rope_fraction [0.25], t5_num_buckets [32], t5_max_distance [128].
DUMP holds tokens I32 [B,T], targets I32 [B,T], logits F32 [B,T,V], loss F32 scalar and grad.NAME
for every exported NAME (pe.* included), all computed by the C code with positions 0..T-1 and loss
weights 1.

Positional schemes (i = query position, j = key position, j <= i; score biases are added after the
1/sqrt(hs) scaling):
  rope     rotate pair k of the first d_rot = int(hs*rope_fraction) channels of q and k (pairs
           (k, k+d_rot/2) "split" or (2k, 2k+1) "interleaved") by pos*theta_k,
           theta_k = rope_base^(-2k/d_rot), modified by rope_scaling (s = rope_factor,
           L0 = rope_original_context): linear theta/s; dynamic (NTK, with L = max_seq_len > L0)
           base' = base*(s*L/L0 - (s-1))^(d/(d-2)); yarn (ramp between low/high from
           yarn_beta_fast/slow, cos and sin times 0.1*ln(s)+1); llama3 (by wavelength against
           L0/llama3_high_freq_factor and L0/llama3_low_freq_factor).
  p-rope   rope in which only the kept = floor(p_rope_fraction*d_rot/2) highest frequencies
           (k < kept) rotate; the other pairs get angle 0 (Barbero et al. 2024).
  xpos     rope, then pair k of q at m times zeta_k^(m/gamma) and of k at n times
           zeta_k^(-n/gamma), zeta_k = (2k + 0.4 d_rot)/(1.4 d_rot), gamma = xpos_scale_base
           (Sun et al. 2022; positions not centred).
  alibi    score -= m_h (i - j), the head slopes of Press et al.
  t5       score += pe.t5.weight[bucket(i - j), h], one [t5_num_buckets, n_head] table shared by
           every t5 layer; decoder (one-sided) buckets of Raffel et al. 2020, computed in float64.
  kerple   score -= r1_h * log(1 + r2_h (i - j)), pe.h.{l}.kerple.weight [2, n_head] = [r1; r2]
           (Chi et al. 2022, log variant); the trainer keeps r1, r2 >= 0.01 by clamping the
           parameters after each step, so a value below 0.01 is refused here.
  fire     score += w2[h] . relu(w1 u + b1) + b2[h], u = psi(i-j) / (psi(max(L, i)) + 1e-6),
           psi(x) = log(|c| x + 1), L = exp(lambda); pe.h.{l}.fire.weight is 1-D [w1 (32), b1 (32),
           w2 (n_head x 32), b2 (n_head), c, lambda] (Li et al. 2023).

This script rebuilds the model in float64 from the exported parameters, recomputes logits, the
mean cross-entropy loss and its gradient w.r.t. every exported parameter, and compares each with
the dump using a scale-aware tolerance: max|got - ref| <= rtol * max|ref| + 1e-6 per tensor.
It prints one line per tensor and exits 1 on any mismatch, any missing gradient or any malformed
file. It is written from the model's specification, not from the C code, and imports nothing but
torch, numpy, json, struct, sys, argparse and math. --self-test checks the script on torch-made
models (every scheme and every RoPE scaling), against a second loop-by-loop forward pass and
against worked numbers of the specification (ALiBi slopes, sinusoidal table, T5 buckets, the
dynamic / yarn / llama3 frequencies).
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

ATOL = 1e-8
LN_EPS = 1e-5
KNOWN_INPUT_PE = ("none", "learned", "sinusoidal")
KNOWN_LAYER_PE = ("nope", "rope", "alibi", "t5", "kerple", "fire", "xpos", "p-rope")
ROPE_FAMILY = ("rope", "p-rope", "xpos")
KNOWN_ROPE_SCALING = ("none", "linear", "dynamic", "yarn", "llama3")
FIRE_WIDTH = 32


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
    if any(s in ROPE_FAMILY for s in lp):
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

    # Keys added later: a missing (or null) key takes its default, a present one must be well-formed.
    def opt(key, kind, default):
        if cfg.get(key) is None:
            return default
        v = cfg[key]
        if kind is int and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            raise RefError("export %s: config %s must be a positive integer, got %r" % (path, key, v))
        if kind is float and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
            raise RefError("export %s: config %s must be a finite number, got %r" % (path, key, v))
        if kind is str and not isinstance(v, str):
            raise RefError("export %s: config %s must be a string, got %r" % (path, key, v))
        return float(v) if kind is float else v

    c["rope_scaling"] = opt("rope_scaling", str, "none")
    if c["rope_scaling"] not in KNOWN_ROPE_SCALING:
        raise RefError("export %s: rope_scaling %r is not one of %s; this reference does not know it"
                       % (path, c["rope_scaling"], ", ".join(KNOWN_ROPE_SCALING)))
    c["rope_factor"] = opt("rope_factor", float, 1.0)
    c["rope_original_context"] = opt("rope_original_context", int, c["max_seq_len"])
    c["yarn_beta_fast"] = opt("yarn_beta_fast", float, 32.0)
    c["yarn_beta_slow"] = opt("yarn_beta_slow", float, 1.0)
    c["llama3_low_freq_factor"] = opt("llama3_low_freq_factor", float, 1.0)
    c["llama3_high_freq_factor"] = opt("llama3_high_freq_factor", float, 4.0)
    c["xpos_scale_base"] = opt("xpos_scale_base", float, 512.0)
    c["p_rope_fraction"] = opt("p_rope_fraction", float, 0.25)
    c["t5_num_buckets"] = opt("t5_num_buckets", int, 32)
    c["t5_max_distance"] = opt("t5_max_distance", int, 128)

    def bad(why):
        raise RefError("export %s: %s" % (path, why))

    if "d_rot" in c:
        sc, fac = c["rope_scaling"], c["rope_factor"]
        if sc != "none" and not fac > 0:
            bad("rope_scaling %s needs rope_factor > 0, got %r" % (sc, fac))
        if sc == "dynamic" and c["max_seq_len"] > c["rope_original_context"] and c["d_rot"] <= 2:
            bad("rope_scaling dynamic needs d_rot > 2 (the exponent is d/(d-2)), got d_rot = %d" % c["d_rot"])
        if sc == "yarn":
            if c["rope_base"] == 1.0:
                bad("rope_scaling yarn divides by ln(rope_base); rope_base must not be 1")
            if not (c["yarn_beta_fast"] > 0 and c["yarn_beta_slow"] > 0):
                bad("yarn_beta_fast and yarn_beta_slow must be positive, got %r, %r"
                    % (c["yarn_beta_fast"], c["yarn_beta_slow"]))
        if sc == "llama3" and not (0 < c["llama3_low_freq_factor"] < c["llama3_high_freq_factor"]):
            bad("llama3 needs 0 < llama3_low_freq_factor < llama3_high_freq_factor, got %r, %r"
                % (c["llama3_low_freq_factor"], c["llama3_high_freq_factor"]))
        if "xpos" in lp and not c["xpos_scale_base"] > 0:
            bad("xpos_scale_base must be positive, got %r" % c["xpos_scale_base"])
        if "p-rope" in lp and not (0 <= c["p_rope_fraction"] <= 1):
            bad("p_rope_fraction must be in [0, 1], got %r" % c["p_rope_fraction"])
    if "t5" in lp and not (c["t5_num_buckets"] >= 2 and c["t5_max_distance"] > c["t5_num_buckets"] // 2):
        bad("t5 needs t5_num_buckets >= 2 and t5_max_distance > t5_num_buckets // 2, got %d, %d"
            % (c["t5_num_buckets"], c["t5_max_distance"]))
    known = {"vocab_size", "n_layer", "n_head", "n_embd", "max_seq_len", "input_pe", "layer_pe",
             "rope_base", "rope_fraction", "rope_pairing", "rope_scaling", "rope_factor",
             "rope_original_context", "yarn_beta_fast", "yarn_beta_slow", "llama3_low_freq_factor",
             "llama3_high_freq_factor", "xpos_scale_base", "p_rope_fraction", "t5_num_buckets",
             "t5_max_distance"}
    c["ignored_keys"] = sorted(k for k in cfg if k not in known)
    return c


def expected_params(c):
    """Ordered (name, shape) of every parameter the export must hold."""
    V, C, L = c["vocab_size"], c["n_embd"], c["n_layer"]
    out = [("transformer.wte.weight", (V, C))]
    if c["input_pe"] == "learned":
        out.append(("transformer.wpe.weight", (c["max_seq_len"], C)))
    NH = c["n_head"]
    if "t5" in c["layer_pe"]:
        out.append(("pe.t5.weight", (c["t5_num_buckets"], NH)))
    for i in range(L):
        p = "transformer.h.%d." % i
        out += [(p + "ln_1.weight", (C,)), (p + "ln_1.bias", (C,)),
                (p + "attn.c_attn.weight", (C, 3 * C)), (p + "attn.c_attn.bias", (3 * C,)),
                (p + "attn.c_proj.weight", (C, C)), (p + "attn.c_proj.bias", (C,)),
                (p + "ln_2.weight", (C,)), (p + "ln_2.bias", (C,)),
                (p + "mlp.c_fc.weight", (C, 4 * C)), (p + "mlp.c_fc.bias", (4 * C,)),
                (p + "mlp.c_proj.weight", (4 * C, C)), (p + "mlp.c_proj.bias", (C,))]
        if c["layer_pe"][i] == "kerple":
            out.append(("pe.h.%d.kerple.weight" % i, (2, NH)))
        elif c["layer_pe"][i] == "fire":
            out.append(("pe.h.%d.fire.weight" % i, (fire_len(NH),)))
    out += [("transformer.ln_f.weight", (C,)), ("transformer.ln_f.bias", (C,))]
    return out


def fire_len(NH):
    """Length of a FIRE layer's parameter vector [w1 (W), b1 (W), w2 (NH x W), b2 (NH), c, L]."""
    return 2 * FIRE_WIDTH + NH * FIRE_WIDTH + NH + 2


def check_export_names(export, c, path):
    exp = expected_params(c)
    names = {n for n, _ in exp}
    for n in export:
        if n.startswith("pe.") and n not in names:
            raise RefError("export %s holds %s, a positional-scheme parameter that layer_pe=%s does not use "
                           "(this reference knows pe.t5.weight, pe.h.N.kerple.weight and pe.h.N.fire.weight); "
                           "fix the export or extend tests/torch_ref.py" % (path, n, ",".join(c["layer_pe"])))
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


def rope_theta(d, base, scaling="none", s=1.0, L0=None, L=None, beta_fast=32.0, beta_slow=1.0,
               low_ff=1.0, high_ff=4.0):
    """The RoPE frequencies theta'_k, k = 0..d/2-1, of d rotated channels after context-extension
    scaling. Returns (theta float64 tensor [d/2], attention factor multiplying cos and sin, info)
    where info holds the intermediate numbers (dynamic: base'; yarn: low, high)."""
    half = d // 2
    k = np.arange(half, dtype=np.float64)
    theta = base ** (-2.0 * k / d) if half else np.zeros(0)
    attn, info = 1.0, {}
    if scaling == "none":
        pass
    elif scaling == "linear":
        theta = theta / s
    elif scaling == "dynamic":
        if L > L0:
            base2 = base * (s * L / L0 - (s - 1.0)) ** (d / (d - 2.0))
            info["base"] = base2
            theta = base2 ** (-2.0 * k / d)
    elif scaling == "yarn":
        def dim(r):
            return d * math.log(L0 / (2.0 * math.pi * r)) / (2.0 * math.log(base))
        low = max(math.floor(dim(beta_fast)), 0)
        high = min(math.ceil(dim(beta_slow)), d - 1)
        if low == high:
            high += 0.001
        info["low"], info["high"] = low, high
        ramp = np.clip((k - low) / (high - low), 0.0, 1.0)
        ext = 1.0 - ramp
        theta = (theta / s) * (1.0 - ext) + theta * ext
        attn = 0.1 * math.log(s) + 1.0
    elif scaling == "llama3":
        wavelen = 2.0 * math.pi / theta
        out = theta.copy()
        for i in range(half):
            if wavelen[i] < L0 / high_ff:
                pass
            elif wavelen[i] > L0 / low_ff:
                out[i] = theta[i] / s
            else:
                smooth = (L0 / wavelen[i] - low_ff) / (high_ff - low_ff)
                out[i] = (1.0 - smooth) * theta[i] / s + smooth * theta[i]
        theta = out
    else:
        raise RefError("unknown rope_scaling %r" % scaling)
    return torch.tensor(theta, dtype=torch.float64), attn, info


def config_theta(c):
    return rope_theta(c["d_rot"], c["rope_base"], c["rope_scaling"], c["rope_factor"], c["rope_original_context"],
                      c["max_seq_len"], c["yarn_beta_fast"], c["yarn_beta_slow"], c["llama3_low_freq_factor"],
                      c["llama3_high_freq_factor"])


def prope_kept(p_fraction, d_rot):
    """p-rope: how many of the d_rot/2 frequencies (the highest, k = 0..kept-1) keep rotating."""
    return int(math.floor(p_fraction * (d_rot // 2) + 1e-9))  # the C code guards 0.29*100 = 28.99... the same way


def xpos_zeta(d_rot):
    k = torch.arange(d_rot // 2, dtype=torch.float64)
    return (2.0 * k + 0.4 * d_rot) / (1.4 * d_rot)


def rotate_pairs(x, cos, sin, d_rot, pairing):
    """x [..., T, hs]; cos, sin [T, d_rot/2]: pair k of the token at row t becomes
    (a cos - b sin, a sin + b cos); channels >= d_rot pass unchanged."""
    if d_rot == 0:
        return x
    ia, ib = rope_pairs(d_rot, pairing)
    a, b = x[..., ia], x[..., ib]
    out = x.clone()
    out[..., ia] = a * cos - b * sin
    out[..., ib] = a * sin + b * cos
    return out


def rope_qk_tables(c, scheme, pos):
    """(cos_q, sin_q, cos_k, sin_k), each [T, d_rot/2], for a layer of the RoPE family at the
    positions pos: the angles pos*theta'_k (0 for the frequencies p-rope drops), times the yarn
    factor, times the xpos scales zeta_k^(+-pos/gamma)."""
    d_rot = c["d_rot"]
    theta, attn, _ = config_theta(c)
    if scheme == "p-rope":
        keep = torch.arange(d_rot // 2) < prope_kept(c["p_rope_fraction"], d_rot)
        theta = torch.where(keep, theta, torch.zeros_like(theta))
    pf = pos.to(torch.float64)[:, None]
    ang = pf * theta[None, :]
    cos, sin = attn * torch.cos(ang), attn * torch.sin(ang)
    if scheme != "xpos":
        return cos, sin, cos, sin
    zeta = xpos_zeta(d_rot)[None, :]
    sq = torch.pow(zeta, pf / c["xpos_scale_base"])
    sk = torch.pow(zeta, -pf / c["xpos_scale_base"])
    return cos * sq, sin * sq, cos * sk, sin * sk


def rope_rotate(x, pos, d_rot, base, pairing):
    """x [..., T, hs] float64; rotate pair j of the token at position m by m * base^(-2j/d_rot)."""
    theta = rope_theta(d_rot, base)[0]
    ang = pos.to(torch.float64)[:, None] * theta[None, :]  # [T, half]
    return rotate_pairs(x, torch.cos(ang), torch.sin(ang), d_rot, pairing)


def t5_bucket(n, num_buckets, max_distance):
    """T5 decoder (one-sided) bucket of the distance n = i - j >= 0, in float64."""
    exact = num_buckets // 2
    if n < exact:
        return n
    return min(num_buckets - 1, exact + int(math.floor(math.log(n / exact) / math.log(max_distance / exact)
                                                      * (num_buckets - exact))))


def fire_split(wvec, NH):
    """The FIRE parameter vector as (w1 [W], b1 [W], w2 [NH, W], b2 [NH], c, L = exp(lambda))."""
    W = FIRE_WIDTH
    w1, b1 = wvec[0:W], wvec[W:2 * W]
    w2 = wvec[2 * W:2 * W + NH * W].reshape(NH, W)
    b2 = wvec[2 * W + NH * W:2 * W + NH * W + NH]
    return w1, b1, w2, b2, wvec[2 * W + NH * W + NH], torch.exp(wvec[2 * W + NH * W + NH + 1])


def score_bias(P, c, li, scheme, pos):
    """The additive score bias [NH, T, T] (query row i, key column j) of layer li, or None. Entries
    with j > i are finite and masked later."""
    NH = c["n_head"]
    T = pos.shape[0]
    dist = (pos[:, None] - pos[None, :]).clamp(min=0)  # i - j, 0 above the diagonal
    nd = dist.to(torch.float64)
    if scheme == "alibi":
        m = torch.tensor(alibi_slopes(NH), dtype=torch.float64)
        return -m[:, None, None] * nd[None]
    if scheme == "t5":
        nb, md = c["t5_num_buckets"], c["t5_max_distance"]
        buckets = torch.tensor([[t5_bucket(int(dist[i, j]), nb, md) for j in range(T)] for i in range(T)])
        return P["pe.t5.weight"][buckets].permute(2, 0, 1)  # [T, T, NH] -> [NH, T, T]
    if scheme == "kerple":
        w = P["pe.h.%d.kerple.weight" % li]
        if float(w.min()) < 0.01 - 1e-7:
            raise ValueError("pe.h.%d.kerple.weight holds %g < 0.01: r1, r2 are kept >= 0.01" % (li, float(w.min())))
        r1, r2 = w[0], w[1]
        return -r1[:, None, None] * torch.log(1.0 + r2[:, None, None] * nd[None])
    if scheme == "fire":
        w1, b1, w2, b2, cc, Lt = fire_split(P["pe.h.%d.fire.weight" % li], NH)
        qf = pos.to(torch.float64)

        def psi(x):
            return torch.log(torch.abs(cc) * x + 1.0)
        thr = torch.where(Lt > qf, Lt, qf)  # max(L, i): the gradient reaches L where L > i
        u = psi(nd) / (psi(thr)[:, None] + 1e-6)  # [T, T]
        hidden = torch.relu(u[..., None] * w1 + b1)  # [T, T, W]
        return (hidden @ w2.t() + b2).permute(2, 0, 1)
    return None


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
    for i in range(c["n_layer"]):
        p = "transformer.h.%d." % i
        scheme = c["layer_pe"][i]
        h = F.layer_norm(x, (C,), P[p + "ln_1.weight"], P[p + "ln_1.bias"], LN_EPS)
        qkv = h @ P[p + "attn.c_attn.weight"] + P[p + "attn.c_attn.bias"]
        q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
        q, k, v = (t.reshape(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))  # [B, NH, T, hs]
        if scheme in ROPE_FAMILY:
            cq, sq, ck, sk = rope_qk_tables(c, scheme, pos)
            q = rotate_pairs(q, cq, sq, c["d_rot"], c["rope_pairing"])
            k = rotate_pairs(k, ck, sk, c["d_rot"], c["rope_pairing"])
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        bias = score_bias(P, c, i, scheme, pos)
        if bias is not None:
            att = att + bias[None]
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


def rope_desc(c):
    if "d_rot" not in c:
        return ""
    out = " rope(base=%g, d_rot=%d, %s" % (c["rope_base"], c["d_rot"], c["rope_pairing"])
    if c["rope_scaling"] != "none":
        out += ", %s x%g from %d" % (c["rope_scaling"], c["rope_factor"], c["rope_original_context"])
    if "p-rope" in c["layer_pe"]:
        out += ", p-rope keeps %d" % prope_kept(c["p_rope_fraction"], c["d_rot"])
    if "xpos" in c["layer_pe"]:
        out += ", xpos gamma %g" % c["xpos_scale_base"]
    return out + ")"


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
             rope_desc(c)),
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

    def theta_k(kk):
        """Scalar re-derivation of the scaled frequency of pair kk (and the yarn factor)."""
        d, base, sc, sf, L0 = c["d_rot"], c["rope_base"], c["rope_scaling"], c["rope_factor"], c["rope_original_context"]
        th = 1.0 / base ** (2.0 * kk / d)
        if sc == "linear":
            return th / sf, 1.0
        if sc == "dynamic":
            L = c["max_seq_len"]
            if L <= L0:
                return th, 1.0
            nb = base * (sf * L / L0 - sf + 1.0) ** (d / (d - 2.0))
            return 1.0 / nb ** (2.0 * kk / d), 1.0
        if sc == "yarn":
            lo = max(math.floor(d * math.log(L0 / (2 * math.pi * c["yarn_beta_fast"])) / (2 * math.log(base))), 0)
            hi = min(math.ceil(d * math.log(L0 / (2 * math.pi * c["yarn_beta_slow"])) / (2 * math.log(base))), d - 1)
            if hi == lo:
                hi = hi + 0.001
            r = min(max((kk - lo) / (hi - lo), 0.0), 1.0)
            return (1.0 - r) * th + r * th / sf, 1.0 + 0.1 * math.log(sf)
        if sc == "llama3":
            lf, hf = c["llama3_low_freq_factor"], c["llama3_high_freq_factor"]
            wl = 2 * math.pi / th
            if wl < L0 / hf:
                return th, 1.0
            if wl > L0 / lf:
                return th / sf, 1.0
            sm = (L0 / wl - lf) / (hf - lf)
            return sm * th + (1.0 - sm) * th / sf, 1.0
        return th, 1.0

    def rot(vec, m, scheme, is_key):
        vec = list(vec)
        d = c["d_rot"]
        for j in range(d // 2):
            th, a_f = theta_k(j)
            if scheme == "p-rope" and j >= math.floor(c["p_rope_fraction"] * (d // 2) + 1e-9):
                th = 0.0
            scale = a_f
            if scheme == "xpos":
                zeta = (2.0 * j + 0.4 * d) / (1.4 * d)
                scale *= zeta ** ((-m if is_key else m) / c["xpos_scale_base"])
            a_i, b_i = (j, j + d // 2) if c["rope_pairing"] == "split" else (2 * j, 2 * j + 1)
            a, b = vec[a_i], vec[b_i]
            vec[a_i] = scale * (a * math.cos(m * th) - b * math.sin(m * th))
            vec[b_i] = scale * (a * math.sin(m * th) + b * math.cos(m * th))
        return np.array(vec)

    def bias_of(scheme, li, hh, i, j):
        n = i - j
        if scheme == "alibi":
            return -alibi_slopes(NH)[hh] * n
        if scheme == "t5":
            nb, md = c["t5_num_buckets"], c["t5_max_distance"]
            ex = nb // 2
            bk = n if n < ex else min(nb - 1, ex + int(math.log(n / ex) / math.log(md / ex) * (nb - ex)))
            return P["pe.t5.weight"][bk, hh]
        if scheme == "kerple":
            w = P["pe.h.%d.kerple.weight" % li]
            return -w[0, hh] * math.log(1 + w[1, hh] * n)
        if scheme == "fire":
            w = P["pe.h.%d.fire.weight" % li]
            Wd = FIRE_WIDTH
            cc, Lf = w[-2], math.exp(w[-1])
            u = math.log(abs(cc) * n + 1) / (math.log(abs(cc) * max(Lf, i) + 1) + 1e-6)
            tot = w[2 * Wd + NH * Wd + hh]
            for q in range(Wd):
                tot += w[2 * Wd + hh * Wd + q] * max(0.0, w[q] * u + w[Wd + q])
            return tot
        return 0.0

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
            for hh in range(NH):
                lo, hi = hh * hs, (hh + 1) * hs
                for i in range(T):
                    q = qkv[i][lo:hi]
                    if scheme in ROPE_FAMILY:
                        q = rot(q, i, scheme, False)
                    scores = []
                    for j in range(i + 1):
                        k = qkv[j][C + lo:C + hi]
                        if scheme in ROPE_FAMILY:
                            k = rot(k, j, scheme, True)
                        s = float(np.dot(q, k)) / math.sqrt(hs)
                        s += bias_of(scheme, li, hh, i, j)
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
        if n == "pe.t5.weight":
            a = 0.5 * rng.standard_normal(shape)
        elif n.endswith(".kerple.weight"):
            # r1, r2 in the paper's ranges, one of each at the 0.01 floor
            a = np.stack([rng.uniform(0.2, 2.0, shape[1]), rng.uniform(0.1, 1.0, shape[1])])
            a[0, 0], a[1, -1] = 0.01, 0.01
        elif n.endswith(".fire.weight"):
            a = 0.5 * rng.standard_normal(shape)
            a[-2] = -1.7  # c: |c| is used
            a[-1] = math.log(3.5)   # lambda: L = 3.5, so max(L, i) switches from L to i inside the batch
        elif n.endswith("ln_1.weight") or n.endswith("ln_2.weight") or n.endswith("ln_f.weight"):
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

    # T5 decoder buckets (32 buckets, max_distance 128): the first distance of each bucket from 16 on.
    want_first = [16, 19, 21, 24, 27, 31, 35, 40, 46, 52, 59, 67, 77, 87, 99, 113]
    bk = [t5_bucket(n, 32, 128) for n in range(1000)]
    first = [bk.index(b) if b in bk else -1 for b in range(16, 32)]
    check(bk[:16] == list(range(16)) and first == want_first and all(b == 31 for b in bk[113:])
          and all(x <= y for x, y in zip(bk, bk[1:])), "T5 buckets (32, 128): first distances 16 19 ... 113, >= 113 -> 31")

    # RoPE scaling worked examples (d=64, base=1e4, L0=1024, s=4; llama3 d=128, base=5e5, s=8, L0=8192).
    def close_sf(got, want):  # within half a unit of the last significant digit written
        mant = want.lower().split("e")[0].replace("-", "").replace(".", "").lstrip("0")
        w = float(want)
        return abs(got - w) <= 0.5 * 10.0 ** (math.floor(math.log10(abs(w))) - (len(mant) - 1)) + 1e-15
    th, fa, info = rope_theta(64, 1e4, "dynamic", 4.0, 1024, 4096)
    check(close_sf(info.get("base", 0.0), "141214") and fa == 1.0
          and torch.max(torch.abs(th / torch.pow(torch.tensor(info["base"], dtype=torch.float64),
                                                 -2.0 * torch.arange(32, dtype=torch.float64) / 64) - 1)).item() < 1e-12,
          "dynamic NTK (L=4096): base' = 141214 and theta'_k = base'^(-2k/d)")
    th2, _, _ = rope_theta(64, 1e4, "dynamic", 4.0, 1024, 1024)
    check(torch.equal(th2, rope_theta(64, 1e4)[0]), "dynamic NTK with L <= L0 leaves theta unchanged")
    th, fa, info = rope_theta(64, 1e4, "yarn", 4.0, 1024, 4096, 32.0, 1.0)
    want = {0: "1.00000000", 5: "0.237137371", 10: "0.0400127481", 18: "0.00140585331", 31: "3.33380358e-05"}
    check(info["low"] == 5 and info["high"] == 18 and close_sf(fa, "1.138629")
          and all(close_sf(float(th[k]), v) for k, v in want.items()),
          "yarn: low 5, high 18, factor 1.138629, theta'[0,5,10,18,31] as specified")
    th, fa, _ = rope_theta(128, 5e5, "llama3", 8.0, 8192, 8192, low_ff=1.0, high_ff=4.0)
    want = {0: "1.00000", 20: "0.0165604", 40: "3.4281e-05", 63: "3.06893e-07"}
    check(fa == 1.0 and all(close_sf(float(th[k]), v) for k, v in want.items()),
          "llama3: theta'[0,20,40,63] = 1, 0.0165604, 3.4281e-05, 3.06893e-07")
    th, _, _ = rope_theta(16, 100.0, "linear", 2.5)
    check(torch.max(torch.abs(th * 2.5 - rope_theta(16, 100.0)[0])).item() < 1e-15, "linear scaling divides theta by s")

    def small_cfg(**kw):
        base = dict(vocab_size=5, n_layer=1, n_head=1, n_embd=16, max_seq_len=64, input_pe="none",
                    layer_pe=["rope"], rope_base=10000.0, rope_fraction=1.0, rope_pairing="split")
        base.update(kw)
        return parse_config({"config": json.dumps(base)}, "(self-test)")

    # p-rope: the pairs of the dropped (lowest) frequencies and the channels past d_rot pass unchanged.
    for pairing in ("split", "interleaved"):
        c = small_cfg(layer_pe=["p-rope"], rope_fraction=0.75, p_rope_fraction=0.5, rope_pairing=pairing)
        kept = prope_kept(0.5, 12)
        x = torch.randn(1, 2, 9, 16, dtype=torch.float64)
        pos = torch.arange(9) * 7
        cq, sq, ck, sk = rope_qk_tables(c, "p-rope", pos)
        y = rotate_pairs(x, cq, sq, 12, pairing)
        ia, ib = rope_pairs(12, pairing)
        dropped = [ch for kk in range(kept, 6) for ch in (ia[kk], ib[kk])] + list(range(12, 16))
        moved = [ch for kk in range(kept) for ch in (ia[kk], ib[kk])]
        full = rope_rotate(x, pos, 12, 10000.0, pairing)
        check(kept == 3 and torch.equal(y[..., dropped], x[..., dropped])
              and bool(torch.all(torch.abs(y[..., 1:, moved] - x[..., 1:, moved]) > 0))
              and torch.max(torch.abs(y[..., moved] - full[..., moved])).item() < 1e-12,
              "p-rope (%s, keep 3 of 6): dropped-frequency channels unchanged, kept ones = rope" % pairing)

    # xpos: <q at m, k at m+2> depends only on the offset, and the scales do act.
    c = small_cfg(layer_pe=["xpos"], rope_fraction=0.5, xpos_scale_base=16.0, rope_pairing="interleaved")
    q, k = torch.randn(1, 16, dtype=torch.float64), torch.randn(1, 16, dtype=torch.float64)
    dots, plain = [], []
    for m in (0, 3, 10, 57):
        cq, sq, ck, sk = rope_qk_tables(c, "xpos", torch.tensor([m, m + 2]))
        rq = rotate_pairs(q, cq[0:1], sq[0:1], 8, "interleaved")
        rk = rotate_pairs(k, ck[1:2], sk[1:2], 8, "interleaved")
        dots.append(float((rq * rk).sum()))
        pr = rope_rotate(q[None], torch.tensor([m]), 8, 10000.0, "interleaved")[0]
        pk = rope_rotate(k[None], torch.tensor([m + 2]), 8, 10000.0, "interleaved")[0]
        plain.append(float((pr * pk).sum()))
    cq, sq, _, _ = rope_qk_tables(c, "xpos", torch.tensor([40]))
    zeta = xpos_zeta(8)
    check(max(dots) - min(dots) < 1e-9 * max(1.0, abs(dots[0])) and abs(dots[0] - plain[0]) > 1e-6
          and torch.max(torch.abs(cq ** 2 + sq ** 2 - zeta ** (80.0 / 16.0))).item() < 1e-12,
          "xpos scores depend only on the offset (q at m, k at m+2) and are scaled by zeta^(offset/gamma)")

    cases = [
        ("learned, rope split full / alibi / nope", dict(vocab_size=11, n_layer=3, n_head=4, n_embd=16, max_seq_len=8,
         input_pe="learned", layer_pe=["rope", "alibi", "nope"], rope_base=10000.0, rope_fraction=1.0, rope_pairing="split"), 2, 5),
        ("sinusoidal, rope interleaved 25%, alibi 6 heads", dict(vocab_size=9, n_layer=2, n_head=6, n_embd=48, max_seq_len=16,
         input_pe="sinusoidal", layer_pe=["rope", "alibi"], rope_base=100.0, rope_fraction=0.25, rope_pairing="interleaved"), 2, 6),
        ("none, alibi 3 heads, nope", dict(vocab_size=7, n_layer=2, n_head=3, n_embd=12, max_seq_len=4,
         input_pe="none", layer_pe=["alibi", "nope"], rope_base=10000.0, rope_fraction=0.5, rope_pairing="split"), 1, 4),
        ("gpt-2: learned, all nope", dict(vocab_size=13, n_layer=2, n_head=2, n_embd=8, max_seq_len=6,
         input_pe="learned", layer_pe=["nope", "nope"], rope_base=10000.0, rope_fraction=1.0, rope_pairing="split"), 3, 6),
        ("t5 (shared by two layers) / kerple / fire", dict(vocab_size=9, n_layer=4, n_head=3, n_embd=12, max_seq_len=16,
         input_pe="none", layer_pe=["t5", "kerple", "t5", "fire"], t5_num_buckets=8, t5_max_distance=8), 1, 9),
        ("sinusoidal, xpos / p-rope / rope interleaved", dict(vocab_size=8, n_layer=3, n_head=2, n_embd=32, max_seq_len=16,
         input_pe="sinusoidal", layer_pe=["xpos", "p-rope", "rope"], rope_base=100.0, rope_fraction=1.0,
         rope_pairing="interleaved", p_rope_fraction=0.5, xpos_scale_base=8.0), 2, 7),
    ]
    rope_common = dict(vocab_size=7, n_layer=2, n_head=2, n_embd=32, input_pe="none", rope_base=100.0,
                       rope_fraction=1.0, rope_pairing="split")
    scaled = [("none", dict(max_seq_len=16, layer_pe=["rope", "nope"], rope_fraction=0.5)),
              ("linear", dict(max_seq_len=16, layer_pe=["rope", "xpos"], rope_factor=2.5, xpos_scale_base=16.0)),
              ("dynamic", dict(max_seq_len=32, layer_pe=["rope", "p-rope"], rope_factor=3.0, rope_original_context=8)),
              ("yarn", dict(max_seq_len=16, layer_pe=["rope", "xpos"], rope_factor=4.0, rope_original_context=64,
                            xpos_scale_base=16.0)),
              ("llama3", dict(max_seq_len=16, layer_pe=["rope", "p-rope"], rope_factor=8.0, rope_original_context=64,
                              llama3_low_freq_factor=1.0, llama3_high_freq_factor=4.0, p_rope_fraction=0.75))]
    for name, kw in scaled:
        cases.append(("rope scaling %s, %s" % (name, "/".join(kw["layer_pe"])),
                      dict(rope_common, rope_scaling=name, **kw), 1, 6))
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
        if c["rope_scaling"] != "none":
            plain_c = dict(c, rope_scaling="none")
            p_logits, _ = forward({n: torch.tensor(a) for n, a in P64.items()}, plain_c,
                                  torch.tensor(d["tokens"].astype(np.int64)), torch.tensor(d["targets"].astype(np.int64)))
            check(np.max(np.abs(t_logits.detach().numpy() - p_logits.detach().numpy())) > 1e-6,
                  "[%s] the scaling changes the logits" % label)

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
        for n in export:
            if n.startswith("pe."):
                variant(perturb("grad." + n, 1e-3), False, "grad of %s perturbed fails" % n)
                variant(lambda items, g="grad." + n: [(m, a) for m, a in items if m != g], False,
                        "a missing grad of %s fails" % n)
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
    for extra in ("pe.cope.weight", "pe.t5.weight", "pe.h.1.kerple.weight"):
        ex2 = dict(export)
        ex2[extra] = np.zeros((32, 4), dtype=np.float32)
        write_safetensors(ex_path, list(ex2.items()), {"config": json.dumps(cases[0][1])})
        write_safetensors(dump_path, dump)
        try:
            check_dump(ex_path, dump_path, 1e-4, out=_Sink())
            check(False, "a pe.* tensor the config does not use (%s) is refused" % extra)
        except RefError as e:
            check(extra in str(e), "a pe.* tensor the config does not use (%s) is refused" % extra)
    # A pe.* tensor of the wrong shape is refused.
    tcfg = cases[4][1]
    c, export, dump = _make_case(tcfg, 1, 3, 7)
    export["pe.t5.weight"] = np.zeros((32, 3), dtype=np.float32)
    write_safetensors(ex_path, list(export.items()), {"config": json.dumps(tcfg)})
    try:
        check_dump(ex_path, dump_path, 1e-4, out=_Sink())
        check(False, "a pe.t5.weight of the wrong shape is refused")
    except RefError as e:
        check("pe.t5.weight" in str(e), "a pe.t5.weight of the wrong shape is refused")
    # Unknown schemes and scalings, and bad parameters of known ones, are refused.
    for mod, word, what in ((dict(layer_pe=["rope", "cope", "nope"]), "cope", "an unknown layer scheme"),
                            (dict(rope_scaling="ntk"), "ntk", "an unknown rope_scaling"),
                            (dict(rope_scaling="yarn", rope_factor=0.0), "rope_factor", "yarn with rope_factor 0"),
                            (dict(layer_pe=["t5", "t5", "nope"], t5_num_buckets=8, t5_max_distance=4),
                             "t5_max_distance", "t5 with max_distance <= num_buckets/2"),
                            (dict(rope_scaling="llama3", llama3_low_freq_factor=4.0), "llama3",
                             "llama3 with low_freq_factor >= high_freq_factor"),
                            (dict(layer_pe=["xpos", "nope", "nope"], xpos_scale_base=-1.0), "xpos_scale_base",
                             "xpos with a negative scale base"),
                            (dict(rope_factor="2"), "rope_factor", "a non-numeric rope_factor")):
        try:
            parse_config({"config": json.dumps(dict(cases[0][1], **mod))}, "(self-test)")
            check(False, what + " is refused")
        except RefError as e:
            check(word in str(e), what + " is refused")
    # A config from before the scaling keys reads with their defaults.
    c = parse_config({"config": json.dumps(cases[0][1])}, "(self-test)")
    check(c["rope_scaling"] == "none" and c["rope_factor"] == 1.0 and c["rope_original_context"] == 8
          and c["yarn_beta_fast"] == 32.0 and c["yarn_beta_slow"] == 1.0 and c["llama3_low_freq_factor"] == 1.0
          and c["llama3_high_freq_factor"] == 4.0 and c["xpos_scale_base"] == 512.0 and c["p_rope_fraction"] == 0.25
          and c["t5_num_buckets"] == 32 and c["t5_max_distance"] == 128 and not c["ignored_keys"],
          "a config without the new keys takes their defaults")
    c, export, dump = _make_case(cases[0][1], 1, 3, 7)
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
