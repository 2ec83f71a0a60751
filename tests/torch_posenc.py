"""tests/torch_posenc.py: the positional schemes of tests/torch_ref.py in float64 PyTorch, written
from their specification (tests/torch_ref.py's docstring, and the papers each scheme cites): input tables, the
RoPE family's frequencies and rotations, and the additive score biases."""
import math

import numpy as np
import torch

from torch_io import FIRE_WIDTH, RefError


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


def sinusoidal_table(T, C, halves=False):
    """PE[pos, 2i] = sin(pos / 10000^(2i/C)), PE[pos, 2i+1] = cos(same), float64 [T, C]. halves: the
    NoPE paper's layout, torch.cat((sin, cos), dim=-1) of the same angles (its
    FixedAbsolutePositionalEmbedding, src/models/custom_t5_decoder_only.py)."""
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    if halves:
        two_i = torch.arange(0, C, 2, dtype=torch.float64)
        ang = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / C)
        return torch.cat((torch.sin(ang), torch.cos(ang)), dim=-1)
    ch = torch.arange(C)
    two_i = (ch - ch % 2).to(torch.float64)
    ang = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / C)
    return torch.where(ch % 2 == 0, torch.sin(ang), torch.cos(ang))


def rope_pairs(d_rot, pairing):
    half = d_rot // 2
    if pairing == "split":
        return list(range(half)), [j + half for j in range(half)]
    return [2 * j for j in range(half)], [2 * j + 1 for j in range(half)]


def longrope_attention(s, L0, given=0.0):
    """LongRoPE's factor on cos and sin: given when > 0, else sqrt(1 + ln(s)/ln(L0)) for s > 1, else 1."""
    if given > 0:
        return given
    return math.sqrt(1.0 + math.log(s) / math.log(L0)) if s > 1 else 1.0


def rope_theta(d, base, scaling="none", s=1.0, L0=None, L=None, beta_fast=32.0, beta_slow=1.0,
               low_ff=1.0, high_ff=4.0, short=None, long=None, attention=0.0):
    """The RoPE frequencies theta'_k, k = 0..d/2-1, of d rotated channels after context-extension
    scaling. Returns (theta float64 tensor [d/2], attention factor multiplying cos and sin, info)
    where info holds the intermediate numbers (dynamic: base'; yarn: low, high; longrope: which
    list). longrope: short and long are the d/2 factors, the long ones for L > L0 (HF's choice by
    the sequence length)."""
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
    elif scaling == "longrope":
        use_long = L > L0
        f = np.array(long if use_long else short, dtype=np.float64)
        if f.shape != (half,):
            raise RefError("longrope needs d/2 = %d factors per list, got %d" % (half, f.shape[0]))
        info["list"] = "long" if use_long else "short"
        theta = 1.0 / (f * base ** (2.0 * k / d))
        attn = longrope_attention(s, L0, attention)
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
                      c["llama3_high_freq_factor"], c["longrope_short"], c["longrope_long"], c["longrope_attention"])


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
