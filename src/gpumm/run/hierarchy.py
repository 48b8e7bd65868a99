"""The memory hierarchy of the run's GPU, measured (S3-MEM beyond the lecture): latency and bandwidth per level.

- **latency**: one thread chases pointers through a buffer swept from a few
  KiB to several times the L2 (``kernels/memory/hierarchy.cu``, ``chase``);
  nodes one 128-byte line apart, in one random cycle, so that no prefetch
  or coalescing helps. Before timing, the buffer is read once by the whole
  GPU (it is then in the L2 where it fits) and the chain is walked once (in
  L1 where it fits). The time per step (clock64 cycles counted inside the
  kernel; nanoseconds from the launch's events, which also hold its few µs of
  launch overhead) is the latency of the level the buffer lives in;
  :func:`gpumm.analyse.memory_levels.latency_plateaus` finds the levels. The chain is
  checked: its final index must be the one the host's cycle predicts.
- **bandwidth**: shared memory (every block re-reading 16 KiB), L2-resident
  reads (a quarter of the L2, re-read with loads that bypass L1) and DRAM
  reads (several times the L2, read once); each sums what it read, and the
  sum must be exact (the inputs are all 1.0). The device-to-device copy of
  the bandwidth study is the DRAM copy.
"""

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.run import timing

COLUMNS = ["kind", "level", "bytes", "steps", "repeat", "ms", "ns_per_step", "cycles_per_step", "gbs"]
COLUMNS += ["verified", "status", "reason"]
LINE = 128  # bytes between two nodes of the chain
NODE = LINE // 4  # in 4-byte words
BLOCK = 256


@dataclass(frozen=True)
class Plan:
    min_bytes: int = 4 << 10
    l2_multiple: int = 4  # the sweep ends at this many times the L2
    per_octave: int = 2  # sizes per doubling
    steps: int = 20000
    repeats: int = 5
    warmups: int = 2
    seed: int = 0


def sweep(plan: Plan, l2_bytes: int) -> list[int]:
    """Buffer sizes of the latency sweep: from min_bytes to l2_multiple x the L2, per_octave per doubling,
    each a whole number of lines."""
    top = plan.l2_multiple * l2_bytes
    count = int(math.floor(math.log2(top / plan.min_bytes) * plan.per_octave)) + 1
    sizes = [plan.min_bytes * 2 ** (i / plan.per_octave) for i in range(count)] + [top]
    return sorted({max(LINE, int(s) // LINE * LINE) for s in sizes})


def chain(nbytes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(next, order): a buffer of nbytes / 4 words where word NODE·k of node k holds the word index of the
    next node of one random cycle through all nodes; ``order`` lists the nodes in the cycle's order."""
    nodes = nbytes // LINE
    rng = np.random.default_rng([seed, nodes])
    order = rng.permutation(nodes).astype(np.int64)
    nxt = np.zeros(nodes * NODE, dtype=np.uint32)
    nxt[order * NODE] = (np.roll(order, -1) * NODE).astype(np.uint32)
    return nxt, order


def after(order: np.ndarray, start_word: int, steps: int) -> int:
    """The word index a chase from ``start_word`` reaches after ``steps`` steps of the cycle ``order``."""
    i = int(np.flatnonzero(order == start_word // NODE)[0])
    return int(order[(i + steps) % len(order)]) * NODE


class Kernels:
    def __init__(self, cubin: Path):
        import cupy

        m = cupy.RawModule(path=str(cubin))
        self.chase, self.read_l2 = m.get_function("chase"), m.get_function("read_l2")
        self.read_dram, self.read_shared = m.get_function("read_dram"), m.get_function("read_shared")


def _grid() -> int:
    import cupy

    from gpumm.run.gpu import ATTRIBUTES

    return 8 * cupy.cuda.runtime.deviceGetAttribute(ATTRIBUTES["sm_count"], cupy.cuda.Device().id)


def latency(k: Kernels, nbytes: int, plan: Plan) -> list[dict]:
    import cupy

    nxt_host, order = chain(nbytes, plan.seed)
    nxt = cupy.asarray(nxt_host)
    out = cupy.zeros(1, dtype=cupy.uint32)
    cycles = cupy.zeros(1, dtype=cupy.int64)
    scratch = cupy.empty(_grid() * BLOCK, dtype=cupy.float32)
    n4 = nxt.size // 4
    k.read_l2((_grid(),), (BLOCK,), (nxt, scratch, np.int64(n4), np.int32(1)))  # the buffer into the L2
    base = {"kind": "latency", "level": "", "bytes": nbytes, "steps": plan.steps}
    start, rows = 0, []
    for i in range(plan.warmups + plan.repeats):
        ms = timing.time_launches(
            lambda s=start: k.chase((1,), (1,), (nxt, out, cycles, np.int32(plan.steps), np.uint32(s))), 0, 1
        )[0]
        end = int(out.get()[0])
        expected = after(order, start, plan.steps)
        if end != expected:
            return [{**base, "verified": False, "status": "failed", "reason": f"chain ended at {end}, not {expected}"}]
        if i >= plan.warmups:
            c = int(cycles.get()[0])
            rows.append(
                {
                    **base,
                    "repeat": i - plan.warmups,
                    "ms": ms,
                    "ns_per_step": ms * 1e6 / plan.steps,
                    "cycles_per_step": c / plan.steps,
                    "verified": True,
                    "status": "ok",
                    "reason": "",
                }
            )
        start = end
    return rows


def bandwidth(k: Kernels, l2_bytes: int, plan: Plan) -> list[dict]:
    """Shared memory, L2-resident reads and DRAM reads: GB/s of each, the sums checked."""
    import cupy

    grid = _grid()
    out = cupy.empty(grid * BLOCK, dtype=cupy.float32)
    rows = []
    cases = []
    l2_n4 = max(1, l2_bytes // 4 // 16)
    l2_buf = cupy.ones(l2_n4 * 4, dtype=cupy.float32)
    passes = 16
    cases.append(
        (
            "L2",
            l2_n4 * 16 * passes,
            passes * l2_n4 * 4,
            lambda: k.read_l2((grid,), (BLOCK,), (l2_buf, out, np.int64(l2_n4), np.int32(passes))),
        )
    )
    dram_n4 = max(1, 8 * l2_bytes // 16)
    dram_buf = cupy.ones(dram_n4 * 4, dtype=cupy.float32)
    cases.append(
        ("DRAM", dram_n4 * 16, dram_n4 * 4, lambda: k.read_dram((grid,), (BLOCK,), (dram_buf, out, np.int64(dram_n4))))
    )
    s_passes = 1024
    s_bytes = grid * BLOCK * 4 * 16 * s_passes  # 4 float4 per thread per pass
    cases.append(("shared", s_bytes, s_bytes // 4, lambda: k.read_shared((grid,), (BLOCK,), (out, np.int32(s_passes)))))
    for level, nbytes, expected, launch in cases:
        out.fill(cupy.nan)
        launch()
        total = float(out.astype(cupy.float64).sum())
        base = {"kind": "bandwidth", "level": level, "bytes": nbytes}
        if total != expected:
            rows.append({**base, "verified": False, "status": "failed", "reason": f"sum {total:g}, not {expected:g}"})
            continue
        t = timing.calibrated(launch, plan.warmups, plan.repeats)
        rows += [
            {
                **base,
                "repeat": i,
                "ms": ms,
                "gbs": nbytes / (ms * 1e-3) / 1e9,
                "verified": True,
                "status": "ok",
                "reason": "",
            }
            for i, ms in enumerate(t.samples)
        ]
    return rows


def run(cubin: Path, plan: Plan, progress: bool = True) -> pd.DataFrame:
    import cupy
    from tqdm import tqdm

    from gpumm.run.gpu import ATTRIBUTES

    l2 = cupy.cuda.runtime.deviceGetAttribute(ATTRIBUTES["l2_bytes"], cupy.cuda.Device().id)
    k = Kernels(cubin)
    rows = []
    with cupy.cuda.Stream(non_blocking=True):
        for nbytes in tqdm(sweep(plan, l2), desc="latency", disable=not progress):
            rows += latency(k, nbytes, plan)
            cupy.get_default_memory_pool().free_all_blocks()
        rows += bandwidth(k, l2, plan)
    return pd.DataFrame(rows, columns=COLUMNS)
