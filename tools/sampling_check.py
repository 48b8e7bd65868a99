"""Do the stopping rule's numbers agree with the fixed count it replaced? (issue 16; run on a GPU)

In one process, after a study has built its kernels (results/build/), each
listed variant is measured at each shape twice over in device memory: with
the default config's rule (gpumm.run.sampling) and with the old fixed count (3
warm-ups, 20 samples), the two alternating so that neither always runs first.
For each set it writes the median, the interquartile range over the median
and the samples taken by each method, their ratio, and whether the medians
agree within the spread (the larger of the two relative IQRs, and at least
0.5%, the rule's own noise threshold).

    python tools/sampling_check.py OUT.csv [--variants naive,cublas] [--sizes 256,1024,4096]
"""

import argparse
import dataclasses
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from gpumm.run import (
    measure,
    sampling,
    timing,  # noqa: E402
)
from gpumm.setup import catalog, config

VARIANTS = "naive,tiled_tile16,unrolled,double_buffer,cublas,transpose_padded"


def summary(df: pd.DataFrame, method: str) -> pd.DataFrame:
    k = df[(df.status == "ok") & (df.timed == "kernel")]
    g = k.groupby(["variant", "M", "N", "K"]).ms
    return pd.DataFrame(
        {
            f"{method}_median_ms": g.median(),
            f"{method}_iqr_pct": 100 * (g.quantile(0.75) - g.quantile(0.25)) / g.median(),
            f"{method}_samples": g.size(),
            f"{method}_stop": k.groupby(["variant", "M", "N", "K"]).stop.first(),
        }
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--variants", default=VARIANTS)
    p.add_argument("--sizes", default="256,1024,4096")
    a = p.parse_args()
    t = config.timing_settings({"end_to_end_max_size": 0})
    adaptive = measure.Plan.from_config(t, shapes=[], modes=["device"], seed=20261122, cpu_max_mnk=1 << 27)
    fixed = dataclasses.replace(adaptive, rule=sampling.fixed(20), warmup=timing.Warmup(3, float("inf")))
    rows = []
    for i, vid in enumerate(a.variants.split(",")):
        v = catalog.from_id(vid)
        n3 = [int(n) for n in a.sizes.split(",")]
        shapes = [(n, n, 1) for n in n3] if v.op != "matmul" else [(n, n, n) for n in n3]
        binary = Path("results/build") / vid / v.binary_name if v.is_built else None
        order = [("adaptive", adaptive), ("fixed", fixed)]
        if i % 2:
            order.reverse()
        got = {}
        for name, plan in order:
            got[name] = summary(measure.run(v, binary, dataclasses.replace(plan, shapes=shapes), progress=False), name)
        rows.append(got["adaptive"].join(got["fixed"]))
    out = pd.concat(rows).reset_index()
    out["ratio"] = out.adaptive_median_ms / out.fixed_median_ms
    spread = out[["adaptive_iqr_pct", "fixed_iqr_pct"]].max(axis=1).clip(lower=0.5)
    out["within_spread"] = (100 * (out.ratio - 1).abs()) <= spread
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(a.out, index=False)
    cols = ["variant", "M", "adaptive_median_ms", "fixed_median_ms", "ratio", "adaptive_iqr_pct", "fixed_iqr_pct"]
    cols += ["adaptive_samples", "adaptive_stop", "within_spread"]
    print(out[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
