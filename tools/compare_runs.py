"""Compare two runs' summaries (results/tables/summary.csv): do they agree within their spread?

    python tools/compare_runs.py RUN_A/summary.csv RUN_B/summary.csv

For every variant, shape, memory mode and kind of timing measured in both:
the ratio of B's median GFLOP/s (or time) to A's, and whether the two medians
differ by less than the larger of the two interquartile ranges. Prints a table
and one line of totals; exits 1 when any pair disagrees beyond 3 times that
spread, so that a script can stop on it.
"""

import sys

import pandas as pd

KEYS = ["variant", "M", "N", "K", "memory_mode", "timed"]


def compare(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    a, b = a[a.status == "ok"], b[b.status == "ok"]
    m = a.merge(b, on=KEYS, suffixes=("_a", "_b"))
    m["ratio"] = m.median_ms_a / m.median_ms_b  # > 1: B faster
    m["spread_ms"] = pd.concat([m.q75_ms_a - m.q25_ms_a, m.q75_ms_b - m.q25_ms_b], axis=1).max(axis=1)
    m["gap_ms"] = (m.median_ms_b - m.median_ms_a).abs()
    m["within_spread"] = m.gap_ms <= m.spread_ms
    return m[[*KEYS, "median_ms_a", "median_ms_b", "ratio", "spread_ms", "gap_ms", "within_spread"]]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    m = compare(pd.read_csv(argv[0]), pd.read_csv(argv[1]))
    pd.set_option("display.width", 200)
    print(m.round(4).to_string(index=False))
    far = m.gap_ms > 3 * m.spread_ms
    print(
        f"{len(m)} pairs; B/A speed ratio median {m.ratio.median():.3f}, min {m.ratio.min():.3f}, "
        f"max {m.ratio.max():.3f}; {int(m.within_spread.sum())} within the spread, {int(far.sum())} beyond 3x it"
    )
    return 1 if far.any() else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
