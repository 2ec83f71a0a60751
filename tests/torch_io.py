"""tests/torch_io.py: the file formats of tests/torch_ref.py: safetensors read and written by hand
(struct + numpy), the export's configuration (its __metadata__ "config") and the parameter names
and shapes an export must hold. The specification of every key is in tests/torch_ref.py's docstring."""
import json
import math
import struct

import numpy as np

KNOWN_INPUT_PE = ("none", "learned", "sinusoidal")
KNOWN_LAYER_PE = ("nope", "rope", "alibi", "t5", "kerple", "fire", "xpos", "p-rope")
ROPE_FAMILY = ("rope", "p-rope", "xpos")
KNOWN_ROPE_SCALING = ("none", "linear", "dynamic", "yarn", "llama3", "longrope")
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
    c["longrope_attention"] = opt("longrope_attention", float, 0.0)
    for key in ("longrope_short", "longrope_long"):
        v = cfg.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                              and math.isfinite(x) and x > 0 for x in v):
            raise RefError("export %s: config %s must be a list of positive numbers, got %r" % (path, key, v))
        c[key] = [float(x) for x in v]
    c["xpos_scale_base"] = opt("xpos_scale_base", float, 512.0)
    c["p_rope_fraction"] = opt("p_rope_fraction", float, 0.25)
    c["t5_num_buckets"] = opt("t5_num_buckets", int, 32)
    c["t5_max_distance"] = opt("t5_max_distance", int, 128)
    # An export written before the key existed added the sinusoid to unscaled embeddings: "none"
    c["sinusoidal_scale"] = opt("sinusoidal_scale", str, "none")
    if c["sinusoidal_scale"] not in ("none", "sqrt", "paper"):
        raise RefError("export %s: sinusoidal_scale %r is not none, sqrt or paper" % (path, c["sinusoidal_scale"]))

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
        if sc == "longrope":
            for key in ("longrope_short", "longrope_long"):
                if len(c[key]) != c["d_rot"] // 2:
                    bad("rope_scaling longrope needs %s with d_rot/2 = %d factors, got %d"
                        % (key, c["d_rot"] // 2, len(c[key])))
            if c["longrope_attention"] < 0:
                bad("longrope_attention must be >= 0 (0: derived), got %r" % c["longrope_attention"])
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
             "t5_max_distance", "longrope_short", "longrope_long", "longrope_attention", "sinusoidal_scale"}
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
