"""tests/torch_selftest.py: tests/torch_ref.py --self-test: the reference checked on torch-made
models (every scheme and every RoPE scaling), against a second loop-by-loop forward pass, against
worked numbers of the specification, and on malformed inputs it must refuse."""
import json
import math

import numpy as np
import torch

from torch_io import (FIRE_WIDTH, ROPE_FAMILY, RefError, expected_params, parse_config, read_safetensors,
                      write_safetensors)
from torch_model import LN_EPS, check_dump, check_hf_config, forward, reference
from torch_posenc import (alibi_slopes, longrope_attention, prope_kept, rope_pairs, rope_qk_tables, rope_rotate, rope_theta,
                          rotate_pairs, sinusoidal_table, t5_bucket, xpos_zeta)


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
                if c["sinusoidal_scale"] == "sqrt":
                    x = x * math.sqrt(C)
                if c["sinusoidal_scale"] == "paper":      # the NoPE paper's halves: sin of every frequency, then cos
                    x = x + np.array([math.sin(t / 10000 ** (2 * ch / C)) for ch in range(C // 2)] +
                                     [math.cos(t / 10000 ** (2 * ch / C)) for ch in range(C // 2)])
                else:
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
        head = C ** -0.5 if c["input_pe"] == "sinusoidal" and c["sinusoidal_scale"] == "paper" else 1.0
        for t in range(T):
            out[bi, t] = P["transformer.wte.weight"] @ (head * ln(xs[t], P["transformer.ln_f.weight"], P["transformer.ln_f.bias"]))
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

    # ALiBi slopes against the published table (Press et al. 2021's code) (log2 of the slopes).
    table = {4: [-2, -4, -6, -8], 6: [-2, -4, -6, -8, -1, -3], 8: [-1, -2, -3, -4, -5, -6, -7, -8],
             12: [-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5]}
    for n, want in table.items():
        got = [math.log2(s) for s in alibi_slopes(n)]
        check(len(got) == n and all(abs(a - b) < 1e-12 for a, b in zip(got, want)), "ALiBi slopes n=%d match the published table" % n)

    # Sinusoidal table against Vaswani et al.'s formula worked by hand (d=6, positions 0..3, 4 decimals).
    want = [[0.0000, 1.0000, 0.0000, 1.0000, 0.0000, 1.0000],
            [0.8415, 0.5403, 0.0464, 0.9989, 0.0022, 1.0000],
            [0.9093, -0.4161, 0.0927, 0.9957, 0.0043, 1.0000],
            [0.1411, -0.9900, 0.1388, 0.9903, 0.0065, 1.0000]]
    pe = sinusoidal_table(4, 6).numpy()
    check(np.max(np.abs(pe - np.array(want))) <= 0.5e-4 + 1e-12, "sinusoidal table d=6 matches the worked values")

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
    check(close_sf(longrope_attention(32.0, 4096), "1.190238") and close_sf(longrope_attention(8.0, 64), "1.224745")
          and longrope_attention(1.0, 64) == 1.0, "longrope attention factor: 1.190238 (L0 4096, s 32), 1.224745 (L0 64, s 8)")
    sf, lf = [1.0, 1.0, 1.5, 2.0], [2.0, 3.0, 4.0, 5.0]
    th_s, fa, info_s = rope_theta(8, 1e4, "longrope", 4.0, 16, 16, short=sf, long=lf)
    th_l, _, info_l = rope_theta(8, 1e4, "longrope", 4.0, 16, 17, short=sf, long=lf)
    check(info_s["list"] == "short" and info_l["list"] == "long" and abs(fa - math.sqrt(1.5)) < 1e-15
          and torch.max(torch.abs(th_s / torch.tensor([1.0, 0.1, 0.01 / 1.5, 5e-4], dtype=torch.float64) - 1)).item() < 1e-12
          and torch.max(torch.abs(th_l / torch.tensor([0.5, 0.1 / 3, 2.5e-3, 2e-4], dtype=torch.float64) - 1)).item() < 1e-12,
          "longrope: theta / short factors up to L0, / long factors past it; a = sqrt(1.5) for s 4, L0 16")

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
        ("sinusoidal x sqrt(C), xpos / p-rope / rope interleaved", dict(vocab_size=8, n_layer=3, n_head=2, n_embd=32,
         max_seq_len=16, input_pe="sinusoidal", sinusoidal_scale="sqrt", layer_pe=["xpos", "p-rope", "rope"], rope_base=100.0,
         rope_fraction=1.0, rope_pairing="interleaved", p_rope_fraction=0.5, xpos_scale_base=8.0), 2, 7),
        ("the NoPE paper's APE (halves, unscaled, head x C^-0.5), t5 / alibi", dict(vocab_size=8, n_layer=2, n_head=2,
         n_embd=16, max_seq_len=16, input_pe="sinusoidal", sinusoidal_scale="paper", layer_pe=["t5", "alibi"],
         t5_num_buckets=8, t5_max_distance=8), 2, 7),
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
