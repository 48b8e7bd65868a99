"""One table from model steps' raw folders (samples.csv of `python -m gpumm layers`): per folder, shape, weights and
kernel, the median time and the median over the rounds of the reference's time over the kernel's in the same round
(its paired share, as the model page's). For explorations (data/checks/*): `python tools/model/rounds.py OUT.csv
NAME=FOLDER ...` (the reference from --reference, cublas by default)."""

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
from gpumm.analyse.dispatch import round_ratios  # noqa: E402


def table(folders: dict[str, Path], reference: str) -> pd.DataFrame:
    rows = []
    for name, folder in folders.items():
        s = pd.read_csv(folder / "samples.csv")
        at = ["layer", "M", "N", "K", "weights"]
        share = round_ratios(s, reference, at).groupby(level=at).median().stack().rename("share")
        med = s.groupby([*at, "kernel"]).us.median().rename("median_us")
        picks = s.groupby([*at, "kernel"]).picks.first()
        t = pd.concat([med, share, picks], axis=1).reset_index()
        rows.append(t.assign(call=name))
    out = pd.concat(rows, ignore_index=True)
    out["share_pct"] = (100 * out.share).round(1)
    out["median_us"] = out.median_us.round(2)
    return out[["call", "layer", "M", "N", "K", "weights", "kernel", "picks", "median_us", "share_pct"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("folders", nargs="+", help="NAME=FOLDER")
    ap.add_argument("--reference", default="cublas")
    args = ap.parse_args(argv)
    folders = {f.split("=", 1)[0]: Path(f.split("=", 1)[1]) for f in args.folders}
    table(folders, args.reference).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
