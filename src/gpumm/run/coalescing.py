"""The coalescing micro-benchmark (DC-COAL, S0-T2): access patterns verified, then timed.

- rows / cols: seed 000's two micro-kernels, a thread summing one row (the
  naive kernel's reads of A: uncoalesced) or one column (its reads of B:
  coalesced) of an n x n matrix. Seed 000 launched n threads on one matrix,
  which fills a few percent of a GPU with 132 SMs and, at n = 1024 or 2048,
  leaves the matrix in the L2 between repeats. Here ``copies`` matrices are
  read at once so that the reads fill the GPU (at least one thread for every
  thread slot of every SM), in two regimes:
  - ``dram``: distinct matrices, together several times the L2 (the
    working-set ratio is recorded): every repeat reads from device memory;
  - ``l2``: every copy reads the same matrix, which fits in half the L2: the
    same access pattern served by the cache (only where the matrix fits).
  Bytes counted = the floats read (copies x n^2 x 4); the time of one matrix
  is the launch's time over ``copies``.
- strided: out[i] = in[i * stride + offset] for ``count`` elements, 8 per
  thread; useful bytes = count floats read + count written. Stride 1, offset
  0 is a copy: the ceiling of the sweep.
- copy4: the same copy with 16-byte (float4) accesses, next to the
  device-to-device copy of the same run (:mod:`gpumm.run.bandwidth`).

Inputs are random (uniform in [0.5, 1.5), never zero), outputs are poisoned
with NaN first, and each pattern is checked before it is timed: the sums
against CuPy's float64 sums (a float32 sum of n positive terms is within
n·2^-24 relative), the copies exactly. Timing is batched (:mod:`gpumm.run.timing`).
"""

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.run import sampling, timing
from gpumm.setup import regimes

COLUMNS = [
    "pattern",
    "regime",
    "n",
    "copies",
    "stride",
    "offset",
    "threads",
    "working_set_bytes",
    "repeat",
    "ms",
    "batch",
    "stop",
    "bytes",
    "gbs",
    "max_rel_err",
    "verified",
    "status",
    "reason",
]
BLOCK = 256
ITEMS = 8  # elements per thread of read_strided and copy4 (the kernel's ITEMS)
DRAM_FACTOR = regimes.DRAM_FACTOR  # a DRAM-regime working set is at least this many times the L2
MAX_BYTES = 16 << 30  # largest input of one pattern (capped further by a quarter of free memory)


@dataclass(frozen=True)
class Plan:
    sizes: list[int]
    count: int
    strides: list[int]
    offsets: list[int]
    seed: int
    warmup: timing.Warmup = timing.Warmup()
    rule: sampling.Rule = sampling.Rule()


@dataclass(frozen=True)
class Device:
    """What the plan depends on: thread slots to fill, the L2 to outgrow, memory to stay inside."""

    sm_count: int
    max_threads_per_sm: int
    l2_bytes: int
    free_bytes: int

    @property
    def slots(self) -> int:
        return self.sm_count * self.max_threads_per_sm

    @property
    def max_bytes(self) -> int:
        return min(MAX_BYTES, self.free_bytes // 4)


def device() -> Device:
    import cupy

    from gpumm.run.gpu import ATTRIBUTES

    rt = cupy.cuda.runtime
    dev = cupy.cuda.Device().id
    return Device(
        sm_count=rt.deviceGetAttribute(ATTRIBUTES["sm_count"], dev),
        max_threads_per_sm=rt.deviceGetAttribute(ATTRIBUTES["max_threads_per_sm"], dev),
        l2_bytes=rt.deviceGetAttribute(ATTRIBUTES["l2_bytes"], dev),
        free_bytes=rt.memGetInfo()[0],
    )


def strided_index(count: int, stride: int, offset: int) -> tuple[int, int]:
    """(first, last) element read by the strided pattern, and so the input length it needs (last + 1)."""
    return offset, (count - 1) * stride + offset


def matrix_plan(n: int, regime: str, dev: Device) -> dict | None:
    """Copies and layout of the rows/cols patterns at size n in a regime; None where the regime cannot be had."""
    matrix = 4 * n * n
    copies = math.ceil(dev.slots / n)
    if regime == "l2":
        if matrix > dev.l2_bytes // 2:
            return None
        return {"copies": copies, "matrix_stride": 0, "working_set_bytes": matrix}
    copies = max(copies, math.ceil(DRAM_FACTOR * dev.l2_bytes / matrix))
    copies = min(copies, dev.max_bytes // matrix)
    if copies < 1:
        return None
    return {"copies": copies, "matrix_stride": n * n, "working_set_bytes": copies * matrix}


def configurations(plan: Plan, dev: Device) -> list[dict]:
    """Every pattern the plan measures, in order: rows and cols per size and regime, then strides, offsets, copy4."""
    out = []
    for n in plan.sizes:
        for regime in ("dram", "l2"):
            layout = matrix_plan(n, regime, dev)
            if layout is None:
                continue
            for p in ("rows", "cols"):
                out.append({"pattern": p, "regime": regime, "n": n, "stride": 0, "offset": 0, **layout})
    count = plan.count
    for s in plan.strides:
        out.append(_strided(count, s, 0))
    for o in plan.offsets:
        if o != 0:
            out.append(_strided(count, 1, o))
    if count >= 4:
        out.append({**_strided(count - count % 4, 1, 0), "pattern": "copy4"})
    return out


def fits(cfg: dict, dev: Device) -> bool:
    return 4 * input_length(cfg) <= dev.max_bytes


def _strided(count: int, stride: int, offset: int) -> dict:
    length = strided_index(count, stride, offset)[1] + 1
    return {
        "pattern": "strided",
        "regime": "dram",
        "n": count,
        "copies": 1,
        "matrix_stride": 0,
        "stride": stride,
        "offset": offset,
        "working_set_bytes": 4 * (length + count),
    }


def threads(cfg: dict) -> int:
    if cfg["pattern"] in ("rows", "cols"):
        return cfg["n"] * cfg["copies"]
    per = 4 * ITEMS if cfg["pattern"] == "copy4" else ITEMS
    return math.ceil(cfg["n"] / per)


def useful_bytes(cfg: dict) -> int:
    if cfg["pattern"] in ("rows", "cols"):
        return 4 * cfg["n"] * cfg["n"] * cfg["copies"]
    return 8 * cfg["n"]


def input_length(cfg: dict) -> int:
    if cfg["pattern"] in ("rows", "cols"):
        return cfg["n"] * cfg["n"] * (cfg["copies"] if cfg["matrix_stride"] else 1)
    return strided_index(cfg["n"], cfg["stride"], cfg["offset"])[1] + 1


def output_length(cfg: dict) -> int:
    return cfg["n"] * cfg["copies"] if cfg["pattern"] in ("rows", "cols") else cfg["n"]


KERNEL_NAMES = {"rows": "read_rows", "cols": "read_cols", "strided": "read_strided", "copy4": "copy4"}
LABEL_KEYS = ["pattern", "regime", "n", "copies", "stride", "offset"]  # what names a configuration in a profile


class Kernels:
    def __init__(self, cubin: Path):
        import cupy

        module = cupy.RawModule(path=str(cubin))
        self.fn = {p: module.get_function(name) for p, name in KERNEL_NAMES.items()}

    def bind(self, cfg: dict, inp, out):
        fn = self.fn[cfg["pattern"]]
        p = cfg["pattern"]
        if p == "strided":
            args = (inp, out, np.int64(cfg["n"]), np.int32(cfg["stride"]), np.int32(cfg["offset"]))
            blocks = math.ceil(cfg["n"] / (BLOCK * ITEMS))
        elif p == "copy4":
            args = (inp, out, np.int64(cfg["n"] // 4))
            blocks = max(1, math.ceil(cfg["n"] // 4 / (BLOCK * ITEMS)))
        else:
            args = (inp, out, np.int32(cfg["n"]), np.int32(cfg["copies"]), np.int64(cfg["matrix_stride"]))
            blocks = math.ceil(cfg["n"] * cfg["copies"] / BLOCK)
        return lambda: fn((blocks,), (BLOCK,), args)


def inputs(cfg: dict, seed: int):
    """Device input and output of a configuration: random input, NaN-poisoned output."""
    import cupy

    rng = cupy.random.default_rng([seed, cfg["n"], cfg["stride"], cfg["offset"], cfg["copies"]])
    inp = rng.random(input_length(cfg), dtype=cupy.float32) + 0.5
    out = cupy.full(output_length(cfg), cupy.nan, dtype=cupy.float32)
    return inp, out


def check(cfg: dict, inp, out) -> tuple[bool, float, str]:
    """(verified, max relative error, reason): sums against float64 sums, copies exactly."""
    import cupy

    if not bool(cupy.isfinite(out).all()):
        return False, float("inf"), "NaN in the output (not written?)"
    if cfg["pattern"] in ("strided", "copy4"):
        first, last = strided_index(cfg["n"], cfg["stride"], cfg["offset"])
        wrong = int(cupy.count_nonzero(out != inp[first : last + 1 : cfg["stride"]]))
        return (
            wrong == 0,
            0.0 if wrong == 0 else float("inf"),
            f"{wrong} elements not copied exactly" if wrong else "",
        )
    n, err = cfg["n"], 0.0
    distinct = cfg["copies"] if cfg["matrix_stride"] else 1
    axis = 1 if cfg["pattern"] == "rows" else 0
    for c in range(cfg["copies"]):
        m = inp[(c % distinct) * n * n : (c % distinct + 1) * n * n].reshape(n, n)
        ref = m.astype(cupy.float64).sum(axis=axis)
        got = out[c * n : (c + 1) * n].astype(cupy.float64)
        err = max(err, float(cupy.max(cupy.abs(got - ref) / ref)))
    tol = 2 * n * 2.0**-24  # a float32 sum of n positive terms
    return err <= tol, err, "" if err <= tol else f"max relative error {err:.3g} > {tol:.3g}"


def run(cubin: Path, plan: Plan, progress: bool = True) -> pd.DataFrame:
    import cupy
    from tqdm import tqdm

    kernels = Kernels(cubin)
    dev = device()
    rows = []
    with cupy.cuda.Stream(non_blocking=True):
        for cfg in tqdm(configurations(plan, dev), desc="access patterns", disable=not progress):
            base = {k: cfg[k] for k in COLUMNS if k in cfg}
            base.update(threads=threads(cfg), bytes=useful_bytes(cfg))
            if not fits(cfg, dev):
                reason = f"input of {4 * input_length(cfg) / 2**30:.1f} GiB > {dev.max_bytes / 2**30:.1f} GiB allowed"
                rows.append({**base, "status": "skipped", "reason": reason})
                continue
            inp, out = inputs(cfg, plan.seed)
            launch = kernels.bind(cfg, inp, out)
            launch()
            ok, err, why = check(cfg, inp, out)
            base.update(max_rel_err=err, verified=ok)
            if not ok:
                rows.append({**base, "status": "failed", "reason": why})
            else:
                t = timing.calibrated(launch, plan.warmup, plan.rule)
                rows += [
                    {
                        **base,
                        "repeat": i,
                        "ms": ms,
                        "batch": t.batch,
                        "stop": t.stop,
                        "gbs": base["bytes"] / (ms * 1e-3) / 1e9,
                        "status": "ok",
                        "reason": "",
                    }
                    for i, ms in enumerate(t.samples)
                ]
            del inp, out, launch  # the launch holds the arrays too
            cupy.get_default_memory_pool().free_all_blocks()
    return pd.DataFrame(rows, columns=COLUMNS)


def profile_target(cubin: Path, plan: Plan) -> list[dict]:
    """One launch of every configuration that fits, in order, for ncu (which numbers them 0, 1, ...);
    returns those configurations, so that the profile is labelled from what this process launched."""
    import cupy

    kernels = Kernels(cubin)
    dev = device()
    launched = [c for c in configurations(plan, dev) if fits(c, dev)]
    for cfg in launched:
        inp, out = inputs(cfg, plan.seed)
        kernels.bind(cfg, inp, out)()
        cupy.cuda.Device().synchronize()
        del inp, out
        cupy.get_default_memory_pool().free_all_blocks()
    return launched
