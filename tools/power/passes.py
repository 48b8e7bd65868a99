"""The paired step twice in one GPU run, the members' order reversed the second time (issue 36's repeat).

    python tools/power/passes.py run [RESULTS]      the step again with --order reverse, from the plan, settings
                                                    and seed RESULTS/raw/paired/meta.json recorded (default
                                                    results), into RESULTS/raw/paired-reverse/
    python tools/power/passes.py compare [RESULTS]  both passes side by side: every rung's share of its race's
                                                    reference at every size, with its 95% interval, and the
                                                    checks of quiet data (whole blocks against their first five,
                                                    within 1.5 points; every compared kernel's spread at most 2%)

The compare prints a CSV to standard output and a summary to standard error.
"""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from gpumm.analyse import paired


def run(results: Path) -> int:
    meta = json.loads((results / "raw" / "paired" / "meta.json").read_text())
    cmd = [sys.executable, "-m", "gpumm", "paired", "--plan", json.dumps(meta["plan"]), "--settings",
           json.dumps(meta["settings"]), "--seed", str(meta["seed"]), "--order", "reverse",
           "--out-dir", str(results / "raw" / "paired-reverse")]  # fmt: skip
    if meta.get("cpu_max_mnk"):
        cmd += ["--cpu-max-mnk", str(meta["cpu_max_mnk"])]
    return subprocess.call(cmd)


def compare(results: Path) -> pd.DataFrame:
    raw = pd.concat(
        [pd.read_csv(results / "raw" / d / "samples.csv") for d in ("paired", "paired-reverse")], ignore_index=True
    )
    t = paired.shares(raw)
    t = t[t.kind == "reference"]
    keys = ["race", "M", "variant"]
    f = t[t.order == "forward"].set_index(keys)
    r = t[t.order == "reverse"].set_index(keys)
    both = f[["share", "low", "high", "whole_share", "first5_share", "iqr_pct", "against_iqr_pct"]].join(
        r[["share", "low", "high"]], rsuffix="_reverse", how="outer"
    )
    both["points_apart"] = 100 * (both.share_reverse - both.share)
    both["width_points"] = 100 * (both.high - both.low)
    both["width_points_reverse"] = 100 * (both.high_reverse - both.low_reverse)
    both["whole_vs_first5_points"] = 100 * (both.whole_share - both.first5_share)
    return both.reset_index()


def main(argv: list[str]) -> int:
    what = argv[1] if len(argv) > 1 else "compare"
    results = Path(argv[2] if len(argv) > 2 else "results")
    if what == "run":
        return run(results)
    both = compare(results)
    both.to_csv(sys.stdout, index=False, float_format="%.5g")
    for (race, n), g in both.groupby(["race", "M"]):
        top = g.loc[g.share.idxmax()]
        widest = g[["width_points", "width_points_reverse"]].max().max()
        print(
            f"{race} {n}: best {top.variant} {100 * top.share:.2f}% [{100 * top.low:.2f}, {100 * top.high:.2f}] "
            f"forward, {100 * top.share_reverse:.2f}% [{100 * top.low_reverse:.2f}, {100 * top.high_reverse:.2f}] "
            f"reverse ({top.points_apart:+.2f} points); largest gap over the race "
            f"{g.points_apart.abs().max():.2f} points, widest interval {widest:.2f}; "
            f"whole vs first five at most {g.whole_vs_first5_points.abs().max():.2f} points; "
            f"largest spread {g[['iqr_pct', 'against_iqr_pct']].max().max():.2f}%",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
