"""A real model's linear layers and the two bounds of each shape (issue 40).

Each layer multiplies M tokens (A: M x K, BF16) by its weight (N x K, BF16, held as the race holds Bt) into C
(M x N, FP32). A launch cannot take less than either

- the DRAM bound: the bytes it must move at least once (2·M·K + 2·N·K + 4·M·N) over the card's DRAM bandwidth (its
  read rate: the fastest read pattern the run measures, gpumm.analyse.layers.read_table), or
- the tensor bound: its flops (2·M·N·K) over the tensor cores' BF16 peak at the run's clock.

A shape is *DRAM-bound* where the first is the larger, *tensor-bound* where the second is; a kernel's time is read
as a share of the larger bound (1 is the bound reached). At M = 1 each weight byte is used once: the product is a
stream of the weights, and DRAM decides. The crossover M, where the two bounds meet, is where a layer turns from
one to the other (:func:`crossover`).

Pure functions on the configuration and the run's numbers, tested on the CPU.
"""

import math

import pandas as pd

from gpumm.run import layers

A_BYTES, W_BYTES, C_BYTES = 2, 2, 4  # BF16 activations and weights, FP32 output
COLUMNS = ["model", "layer", "M", "N", "K", "count", "bytes", "flops", "dram_us", "tensor_us", "bound_us", "regime"]


def shapes(model: dict) -> pd.DataFrame:
    """Every (layer, M) of the configuration's model (``config["model"]``): layer, M, N, K and how many of that
    layer one token passes through, in the configuration's order of layers, M ascending (as the model step
    takes them: gpumm.run.layers.shapes)."""
    rows = [{"model": model["name"], **s} for s in layers.shapes(model)]
    return pd.DataFrame(rows, columns=COLUMNS[:6])


def moved(m: int, n: int, k: int) -> int:
    """The bytes a product must move at least once: A and the weight read, C written."""
    return A_BYTES * m * k + W_BYTES * n * k + C_BYTES * m * n


def bounds(table: pd.DataFrame, dram_bytes_per_s: float, tensor_flops_per_s: float) -> pd.DataFrame:
    """``table`` (:func:`shapes`) with each shape's bytes, flops, the two bounds in µs, the larger and the regime
    it names; bounds unknown (a rate not measured, a peak the hardware table does not know) are NaN, and the
    regime 'unknown' where either is."""
    t = table.copy()
    t["bytes"] = [moved(m, n, k) for m, n, k in zip(t.M, t.N, t.K)]
    t["flops"] = 2.0 * t.M * t.N * t.K
    t["dram_us"] = t["bytes"] / dram_bytes_per_s * 1e6 if dram_bytes_per_s > 0 else math.nan
    t["tensor_us"] = t.flops / tensor_flops_per_s * 1e6 if tensor_flops_per_s > 0 else math.nan
    t["bound_us"] = t[["dram_us", "tensor_us"]].max(axis=1, skipna=False)
    known = t.dram_us.notna() & t.tensor_us.notna()
    t["regime"] = "unknown"
    t.loc[known, "regime"] = ["DRAM-bound" if d >= c else "tensor-bound" for d, c in zip(t.dram_us, t.tensor_us)]
    return t[COLUMNS]


def crossover(n: int, k: int, dram_bytes_per_s: float, tensor_flops_per_s: float) -> float:
    """The M at which a layer's two bounds meet: 2·M·N·K / P = (2·M·K + 2·N·K + 4·M·N) / B, solved for M; inf
    where the tensor bound never catches up (a layer too thin for any M), NaN where a rate is unknown."""
    if not (dram_bytes_per_s > 0 and tensor_flops_per_s > 0):
        return math.nan
    slope = 2.0 * n * k / tensor_flops_per_s - (A_BYTES * k + C_BYTES * n) / dram_bytes_per_s
    if slope <= 0:
        return math.inf
    return (W_BYTES * n * k / dram_bytes_per_s) / slope


def per_token(b: pd.DataFrame) -> pd.DataFrame:
    """The whole model's bound per step at each M: every layer's bound times how many of it a token passes
    through, summed (µs), and the share of it each regime takes."""
    w = b.assign(total_us=b.bound_us * b["count"], dram_total=(b.regime == "DRAM-bound") * b.bound_us * b["count"])
    g = w.groupby("M", sort=True)[["total_us", "dram_total"]].sum()
    return pd.DataFrame({"M": g.index, "bound_us": g.total_us.values, "dram_share": (g.dram_total / g.total_us).values})
