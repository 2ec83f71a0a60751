"""tests/torch_model.py: the float64 PyTorch model of tests/torch_ref.py (forward pass, loss and
gradients from an export) and the checks of a C dump and of a transformers config.json against it."""
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

from torch_io import ROPE_FAMILY, RefError, check_export_names, parse_config, read_safetensors, write_safetensors
from torch_posenc import prope_kept, rope_qk_tables, rotate_pairs, score_bias, sinusoidal_table

ATOL = 1e-8
LN_EPS = 1e-5


# ----------------------------------------------------------------------------------------------
# The model

def gelu_tanh(u):
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3)))


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
        # sinusoidal_scale "sqrt": the embeddings times sqrt(d_model) first (Vaswani et al. 2017,
        # section 3.4; fairseq's embed_scale); the LM head below uses wte unscaled. "paper": the NoPE
        # paper's APE, the table in halves added to the unscaled embeddings (and the head below)
        if c["sinusoidal_scale"] == "sqrt":
            x = x * math.sqrt(C)
        x = x + sinusoidal_table(T, C, halves=c["sinusoidal_scale"] == "paper")[None]
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
    if c["input_pe"] == "sinusoidal" and c["sinusoidal_scale"] == "paper":
        # T5's tied head (the NoPE paper's model): the final state times d_model^-0.5 before it
        x = x * C ** -0.5
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
