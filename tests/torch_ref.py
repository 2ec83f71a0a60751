#!/usr/bin/python3
"""tests/torch_ref.py: an independent PyTorch (float64) reference for the C GPT trainer.

Usage:
  /usr/bin/python3 tests/torch_ref.py EXPORT.safetensors DUMP.safetensors
        [--write-ref OUT.safetensors] [--rtol 1e-4] [--check-hf-config CONFIG.json]
  /usr/bin/python3 tests/torch_ref.py EXPORT.safetensors --check-hf-config CONFIG.json
  /usr/bin/python3 tests/torch_ref.py --self-test [--tmp-prefix /tmp/torch_ref_selftest]
  /usr/bin/python3 tests/torch_ref.py --list LIST [--rtol 1e-4]

--list runs many checks in one process (torch's import, about 2 s, once): each line of LIST is
"dump EXPORT DUMP OUT" (the check of EXPORT DUMP) or "hf EXPORT CONFIG.json OUT" (--check-hf-config);
each check's report goes to OUT, ending "status: ok" or "status: failed". The exit status is 1 if any
check failed. The whole list is read first: a malformed line stops it (exit 1) before any check runs.
EXPORT, DUMP, --write-ref and --check-hf-config are refused beside --list (exit 2).

EXPORT holds the model parameters under HF GPT-2 names (Conv1D convention: linear weights are
stored (in, out) and y = x @ W + b), the parameters of the positional schemes under pe.* names, and
a "__metadata__" entry "config": a JSON string with vocab_size, n_layer, n_head, n_embd,
max_seq_len, input_pe ("none" | "learned" | "sinusoidal"), layer_pe (one scheme per layer: "nope",
"rope", "alibi", "t5", "kerple", "fire", "xpos", "p-rope"), rope_base, rope_fraction, rope_pairing
("split" | "interleaved"), and (each optional, default in brackets) rope_scaling ("none" | "linear"
| "dynamic" | "yarn" | "llama3" | "longrope") [none], rope_factor [1], rope_original_context
[max_seq_len], yarn_beta_fast [32], yarn_beta_slow [1], llama3_low_freq_factor [1],
llama3_high_freq_factor [4], longrope_short and longrope_long (lists of d_rot/2 positive numbers)
[[]], longrope_attention [0], xpos_scale_base [512], p_rope_fraction [0.25], t5_num_buckets [32], t5_max_distance [128],
sinusoidal_scale ("none" | "sqrt": with input_pe sinusoidal, the token embeddings times sqrt(n_embd) before the
table is added; the LM head is not scaled | "paper": the NoPE paper's APE, the table concat(sin, cos) added to
the unscaled embeddings, and ln_f's output times n_embd^-0.5 before the LM head) [none: exports written before
the key existed were unscaled].
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
           L0/llama3_high_freq_factor and L0/llama3_low_freq_factor); longrope
           theta_k / f_k with f = longrope_long when L = max_seq_len > L0, else longrope_short,
           cos and sin times longrope_attention if > 0, else sqrt(1 + ln s/ln L0) when s > 1.
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
torch, numpy, json, struct, sys, argparse, math and its own modules: tests/torch_io.py (safetensors,
the configuration, the parameter names), tests/torch_posenc.py (the positional schemes),
tests/torch_model.py (the model and the comparisons) and tests/torch_selftest.py (the self-test).
--self-test checks the script on torch-made
models (every scheme and every RoPE scaling), against a second loop-by-loop forward pass and
against worked numbers of the specification (ALiBi slopes, sinusoidal table, T5 buckets, the
dynamic / yarn / llama3 frequencies).
"""
import argparse
import sys

import torch

from torch_io import RefError
from torch_model import check_dump, check_hf_config
from torch_selftest import self_test


def run_list(path, rtol):
    """The checks listed in path (see the usage above), each reported to its own file."""
    all_ok = True
    with open(path) as f:
        lines = [line.split() for line in f if line.strip()]
    for fields in lines:        # every line's form first: a malformed list runs no check
        if len(fields) != 4 or fields[0] not in ("dump", "hf"):
            raise RefError("%s: a line must be 'dump EXPORT DUMP OUT' or 'hf EXPORT CONFIG.json OUT', not %r"
                           % (path, " ".join(fields)))
    for kind, export, arg, out in lines:
        with open(out, "w") as rep:
            try:
                ok = check_dump(export, arg, rtol, None, out=rep) if kind == "dump" else check_hf_config(arg, export, out=rep)
            except (RefError, OSError) as e:
                print("torch_ref: error: %s" % e, file=rep)
                ok = False
            print("status: %s" % ("ok" if ok else "failed"), file=rep)
        all_ok = all_ok and ok
    return all_ok


def main(argv):
    ap = argparse.ArgumentParser(description="Independent float64 PyTorch reference for the C GPT trainer.")
    ap.add_argument("export", nargs="?", help="EXPORT.safetensors (parameters, HF GPT-2 names, config metadata)")
    ap.add_argument("dump", nargs="?", help="DUMP.safetensors (tokens, targets, logits, loss, grad.NAME)")
    ap.add_argument("--write-ref", metavar="OUT", help="also write torch's float32 loss, logits and grad.NAME here")
    ap.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance, scaled by each tensor's max |ref| (default 1e-4)")
    ap.add_argument("--check-hf-config", metavar="CONFIG.json", help="check a transformers GPT2LMHeadModel config.json against the export")
    ap.add_argument("--self-test", action="store_true", help="test this script on torch-made models and dumps")
    ap.add_argument("--tmp-prefix", default="/tmp/torch_ref_selftest", help="scratch file prefix for --self-test")
    ap.add_argument("--list", metavar="LIST", help="many checks in one process, each line 'dump EXPORT DUMP OUT' or 'hf EXPORT CONFIG.json OUT'")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.self_test:
        return 0 if self_test(args.tmp_prefix) else 1
    if not (args.rtol >= 0):
        print("torch_ref: error: --rtol must be non-negative", file=sys.stderr)
        return 2
    if args.list:
        if args.export or args.dump or args.write_ref or args.check_hf_config:
            print("torch_ref: error: --list takes every check from LIST: give no EXPORT, DUMP, --write-ref or "
                  "--check-hf-config beside it", file=sys.stderr)
            return 2
        try:
            return 0 if run_list(args.list, args.rtol) else 1
        except (RefError, OSError) as e:
            print("torch_ref: error: %s" % e, file=sys.stderr)
            return 1
    if not args.export or (not args.dump and not args.check_hf_config):
        ap.print_usage(sys.stderr)
        print("torch_ref: error: need EXPORT and DUMP (or EXPORT with --check-hf-config), --list or --self-test", file=sys.stderr)
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
