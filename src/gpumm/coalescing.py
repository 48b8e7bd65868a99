"""The coalescing micro-benchmark (DC-COAL, S0-T2): access patterns verified, then timed.

- rows / cols: seed 000's two micro-kernels, thread t summing row t (the naive
  kernel's reads of A: uncoalesced) or column t (its reads of B: coalesced) of
  an n x n matrix; bytes = n^2 floats read.
- strided: out[i] = in[i * stride + offset] for ``count`` threads; useful bytes
  = count floats read + count written. Stride 1, offset 0 is a copy: the
  ceiling. The share of the device-to-device copy bandwidth of the same run is
  computed when the tables are collected.

Inputs are random (uniform in [0.5, 1.5), never zero), outputs are poisoned with
NaN first, and each pattern is checked against CuPy's own reduction or gather
before it is timed.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm import timing

COLUMNS = [
    "pattern",
    "n",
    "stride",
    "offset",
    "repeat",
    "ms",
    "bytes",
    "gbs",
    "max_rel_err",
    "verified",
    "status",
    "reason",
]
BLOCK = 256


@dataclass(frozen=True)
class Plan:
    sizes: list[int]
    count: int
    strides: list[int]
    offsets: list[int]
    warmups: int
    repeats: int
    seed: int


def strided_index(count: int, stride: int, offset: int) -> tuple[int, int]:
    """(first, last) element read by the strided pattern, and so the input length it needs (last + 1)."""
    return offset, (count - 1) * stride + offset


def configurations(plan: Plan) -> list[dict]:
    """Every pattern the plan measures, in order: rows and cols per size, then strides, then offsets."""
    out = [{"pattern": p, "n": n, "stride": 0, "offset": 0} for n in plan.sizes for p in ("rows", "cols")]
    out += [{"pattern": "strided", "n": plan.count, "stride": s, "offset": 0} for s in plan.strides]
    out += [{"pattern": "strided", "n": plan.count, "stride": 1, "offset": o} for o in plan.offsets if o != 0]
    return out


def useful_bytes(cfg: dict) -> int:
    if cfg["pattern"] in ("rows", "cols"):
        return 4 * cfg["n"] * cfg["n"]
    return 8 * cfg["n"]


class Kernels:
    def __init__(self, cubin: Path):
        import cupy

        module = cupy.RawModule(path=str(cubin))
        self.fn = {name: module.get_function(f"read_{name}") for name in ("rows", "cols", "strided")}

    def bind(self, cfg: dict, inp, out):
        fn = self.fn[cfg["pattern"]]
        if cfg["pattern"] == "strided":
            count = cfg["n"]
            args = (inp, out, np.int64(count), np.int32(cfg["stride"]), np.int32(cfg["offset"]))
        else:
            count = cfg["n"]
            args = (inp, out, np.int32(cfg["n"]))
        grid = ((count + BLOCK - 1) // BLOCK,)
        return lambda: fn(grid, (BLOCK,), args)


def inputs(cfg: dict, seed: int):
    """Device input and output of a configuration: random input, NaN-poisoned output."""
    import cupy

    rng = cupy.random.default_rng([seed, cfg["n"], cfg["stride"], cfg["offset"]])
    if cfg["pattern"] in ("rows", "cols"):
        length, out_len = cfg["n"] * cfg["n"], cfg["n"]
    else:
        length, out_len = strided_index(cfg["n"], cfg["stride"], cfg["offset"])[1] + 1, cfg["n"]
    inp = rng.random(length, dtype=cupy.float32) + 0.5
    out = cupy.full(out_len, cupy.nan, dtype=cupy.float32)
    return inp, out


def expected(cfg: dict, inp):
    """The reference: CuPy's own float64 reduction, or its gather."""
    import cupy

    if cfg["pattern"] == "rows":
        return inp.reshape(cfg["n"], cfg["n"]).astype(cupy.float64).sum(axis=1), cfg["n"]
    if cfg["pattern"] == "cols":
        return inp.reshape(cfg["n"], cfg["n"]).astype(cupy.float64).sum(axis=0), cfg["n"]
    first, last = strided_index(cfg["n"], cfg["stride"], cfg["offset"])
    return inp[first : last + 1 : cfg["stride"]].astype(cupy.float64), 1


def run(cubin: Path, plan: Plan, progress: bool = True) -> pd.DataFrame:
    import cupy
    from tqdm import tqdm

    kernels = Kernels(cubin)
    rows = []
    for cfg in tqdm(configurations(plan), desc="access patterns", disable=not progress):
        inp, out = inputs(cfg, plan.seed)
        launch = kernels.bind(cfg, inp, out)
        launch()
        ref, terms = expected(cfg, inp)
        # sums of positive terms: relative error of a float32 sum of `terms` terms is below terms * 2^-24
        tol = 2 * terms * 2.0**-24
        finite = bool(cupy.isfinite(out).all())
        err = float(cupy.max(cupy.abs(out.astype(cupy.float64) - ref) / ref)) if finite else float("inf")
        base = {**cfg, "bytes": useful_bytes(cfg), "max_rel_err": err, "verified": finite and err <= tol}
        if not base["verified"]:
            why = "NaN in the output (not written?)" if not finite else f"max relative error {err:.3g} > {tol:.3g}"
            rows.append({**base, "status": "failed", "reason": why})
            continue
        samples = timing.time_launches(launch, plan.warmups, plan.repeats)
        rows += [
            {**base, "repeat": i, "ms": ms, "gbs": base["bytes"] / (ms * 1e-3) / 1e9, "status": "ok", "reason": ""}
            for i, ms in enumerate(samples)
        ]
        del inp, out, ref
        cupy.get_default_memory_pool().free_all_blocks()
    return pd.DataFrame(rows, columns=COLUMNS)


def profile_target(cubin: Path, plan: Plan) -> None:
    """One launch of every configuration, in order, for ncu (which numbers them 0, 1, ...)."""
    import cupy

    kernels = Kernels(cubin)
    for cfg in configurations(plan):
        inp, out = inputs(cfg, plan.seed)
        kernels.bind(cfg, inp, out)()
        cupy.cuda.Device().synchronize()
        del inp, out
