"""Read what tools/l2_roof/run.sh counted (a folder of its CSVs) and print each kernel's L2 traffic per second,
counted four ways, beside its rate: python tools/l2_roof/report.py data/checks/l2-roof-h100"""

import io
import json
import sys
from pathlib import Path

import pandas as pd


def load(f: Path) -> pd.DataFrame:
    """ncu's --csv rows (one per launch and metric) as one row per launch, one column per metric."""
    lines = [line for line in f.read_text().splitlines() if line.startswith('"')]
    d = pd.read_csv(io.StringIO("\n".join(lines)))
    d["v"] = d["Metric Value"].astype(str).str.replace(",", "").astype(float)
    return d.pivot_table(index="ID", columns="Metric Name", values="v")


def rates(x: pd.DataFrame, flops: float | None) -> pd.DataFrame:
    s = x["gpu__time_duration.sum"] * 1e-9
    out = pd.DataFrame(
        {
            "us": s * 1e6,
            "lts_t_bytes_TBps": x["lts__t_bytes.sum"] / s / 1e12,
            "srcunit_tex_TBps": x["lts__t_sectors_srcunit_tex.sum"] * 32 / s / 1e12,
            "ltcfabric_TBps": x["lts__t_sectors_srcunit_ltcfabric.sum"] * 32 / s / 1e12,
            "xbar2l1tex_TBps": x["l1tex__m_xbar2l1tex_read_bytes.sum"] / s / 1e12,
            "dram_TBps": (x["dram__bytes_read.sum"] + x["dram__bytes_write.sum"]) / s / 1e12,
        }
    )
    if flops:
        out.insert(1, "TFLOPs", flops / s / 1e12)
    return out


def main(folder: str) -> None:
    d = Path(folder)
    r, w = load(d / "read_l2_ncu.csv"), load(d / "bf16_ncu.csv")
    r.index = [f"read_l2 #{i}" for i in range(len(r))]
    w.index = [x["name"] for x in json.loads((d / "launched.json").read_text()) if x.get("kind") == "kernel"][: len(w)]
    pd.set_option("display.width", 200)
    print("== read_l2 (the L2 roof's kernel), under ncu\n" + rates(r, None).round(3).to_string())
    print("== the BF16 rungs at 8192³, under ncu\n" + rates(w, 2 * 8192**3).round(3).to_string())


if __name__ == "__main__":
    main(sys.argv[1])
