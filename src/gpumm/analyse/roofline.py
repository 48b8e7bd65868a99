"""The roofline of a run's GPU and where each matrix-multiply kernel sits under it (issue 11).

A kernel doing F flops while moving D bytes to and from a memory level has an
arithmetic intensity I = F / D there. Under a compute roof P (flop/s) and a
bandwidth roof W (byte/s) it can reach at most min(P, I·W); the ridge point
P / W is the intensity where the two roofs meet. Left of it a kernel is
bound by that memory, right of it by arithmetic.

Here: F = 2·M·N·K (FFMA counted as two flops), D from Nsight Compute
(``dram__bytes_read.sum + dram__bytes_write.sum`` for DRAM, ``lts__t_bytes.sum``
for the L2 when the profile has it), P the FP32 peak of
:func:`gpumm.analyse.hardware.fp32_peak` (SMs x FP32 lanes x 2 x clock) and W the
DRAM bandwidth, both the copy this run measured and the one specified.
"""

import math

import pandas as pd

DRAM_READ, DRAM_WRITE, L2_BYTES = "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum"


def attainable(intensity: float, peak: float, bandwidth: float) -> float:
    """The roof at ``intensity`` (flop/byte): min(peak, intensity x bandwidth), in the units of ``peak``."""
    if not (intensity > 0 and peak > 0 and bandwidth > 0):
        return math.nan
    return min(peak, intensity * bandwidth)


def ridge(peak: float, bandwidth: float) -> float:
    """The intensity (flop/byte) where the bandwidth roof meets the compute roof."""
    return peak / bandwidth if peak > 0 and bandwidth > 0 else math.nan


def points(summary: pd.DataFrame, profiles: pd.DataFrame, peak: float, bandwidth: float) -> pd.DataFrame:
    """One point per matrix-multiply variant and profiled square size.

    ``summary``: the run's summary (median kernel GFLOP/s, device memory, status
    ok); ``profiles``: the tidy Nsight Compute table; ``peak`` in flop/s and
    ``bandwidth`` in byte/s. Columns: the achieved GFLOP/s at the profiled size,
    the DRAM and L2 intensities, the roof at the DRAM intensity, the share of
    that roof achieved, and which roof binds.
    """
    cols = ["variant", "size", "gflops", "dram_bytes", "flop_per_dram_byte", "flop_per_l2_byte"]
    cols += ["roof_gflops", "share_of_roof", "bound"]
    ok = profiles[(profiles.status == "ok") & (profiles.M == profiles.N) & (profiles.N == profiles.K)]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    wide = ok.pivot_table(index=["variant", "M"], columns="metric", values="value", aggfunc="sum")
    s = summary[(summary.timed == "kernel") & (summary.memory_mode == "device") & (summary.status == "ok")]
    s = s[(s.M == s.N) & (s.N == s.K)].set_index(["variant", "M"])["gflops"]
    rows = []
    for (variant, n), r in wide.iterrows():
        if (variant, n) not in s.index or DRAM_READ not in r:
            continue
        flops = 2.0 * n**3
        dram = r.get(DRAM_READ, math.nan) + r.get(DRAM_WRITE, 0.0)
        l2 = r.get(L2_BYTES, math.nan)
        ai = flops / dram if dram > 0 else math.nan
        roof = attainable(ai, peak, bandwidth) / 1e9
        g = float(s.loc[(variant, n)])
        rows.append(
            {
                "variant": variant,
                "size": int(n),
                "gflops": g,
                "dram_bytes": dram,
                "flop_per_dram_byte": ai,
                "flop_per_l2_byte": flops / l2 if l2 > 0 else math.nan,
                "roof_gflops": roof,
                "share_of_roof": g / roof if roof > 0 else math.nan,
                "bound": "memory" if ai < ridge(peak, bandwidth) else "compute",
            }
        )
    return pd.DataFrame(rows, columns=cols)
