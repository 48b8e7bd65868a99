"""Several GPUs side by side (issue 12): the headline numbers of every archived run, and of this run.

Read straight from each run's raw files (``raw/provenance.json`` and the
samples), so that any archive compares, whatever code rendered the rest of
the report. Seed 000 compared its 8800 GTX and Tesla C870 this way: the same
kernels, and the difference read against the hardware's numbers.
"""

import json
import math
from pathlib import Path

import pandas as pd

from gpumm.analyse import paired, rates, tensor
from gpumm.setup import catalog
from gpumm.setup import hardware as peaks

SIZE = rates.LADDER_SIZE
# the kernels compared; "family*": the fastest of a tuning search's candidates (family_key) in that run
RATE_VARIANTS = ["naive", "unrolled", "double_buffer", "interior*", "streamk", "cublas"]
# each race's rates, by the hardware number they track, and the library each is a share of
RACES = {"fp32_tflops": "cublas", "bf16_tflops": "cublas_bf16"}
COLUMNS = ["run", "gpu", "date", "what", "value", "unit", "hardware", "method"]
TRACKS = {
    "dram_gbs": "specified DRAM bandwidth",
    "fp32_tflops": "FP32 peak",
    "bf16_tflops": "BF16 tensor-core peak",
    "l2_mib": "L2",
}


def bf16_variants() -> list[str]:
    """The race on the tensor cores, every rung and cuBLAS BF16: the catalog's families of op matmul_bf16, in its
    order (an archive that predates one has empty cells)."""
    return [name for name, fam in catalog.load().items() if fam.get("op") == tensor.OP]


def hardware(gpu: dict) -> dict:
    """The numbers a difference is read against: DRAM bandwidth (2 x memory clock x bus), FP32 and BF16
    tensor-core peaks, L2, SMs."""
    return {
        "dram_gbs": peaks.dram_bandwidth(gpu) / 1e9,
        "fp32_tflops": peaks.fp32_peak(gpu) / 1e12,
        "bf16_tflops": peaks.tensor_bf16_peak(gpu) / 1e12,
        "l2_mib": float(gpu.get("l2_bytes") or 0) / 2**20 or math.nan,
        "sms": float(gpu.get("sm_count") or 0) or math.nan,
    }


def _median_gflops(samples: Path, n: int) -> tuple[float, str]:
    """GFLOP/s of the median kernel time at n³ (device memory), and the timing method its samples record
    ("graph": batched in CUDA graphs; "" where the run predates the record)."""
    if not samples.is_file():
        return math.nan, ""
    s = pd.read_csv(samples)
    s = s[(s.M == n) & (s.N == n) & (s.K == n) & (s.timed == "kernel") & (s.memory_mode == "device")]
    s = s[s.status == "ok"]
    if not len(s):
        return math.nan, ""
    method = s["method"].dropna().mode() if "method" in s else pd.Series(dtype=str)
    gflops = 2.0 * n**3 / (float(s.ms.median()) * 1e-3) / 1e9  # as the summary: flops / median
    return gflops, str(method.iloc[0]) if len(method) else ""


def _rate(raw: Path, name: str) -> tuple[float, str]:
    """(GFLOP/s, timing method) of variant ``name`` at SIZE³; for "family*", of the family's fastest candidate."""
    if not name.endswith("*"):
        return _median_gflops(raw / name / "samples.csv", SIZE)
    found = [_median_gflops(p / "samples.csv", SIZE) for p in sorted(raw.glob(f"{name[:-1]}_*")) if p.is_dir()]
    found = [f for f in found if f[0] == f[0]]
    return max(found) if found else (math.nan, "")


PAIRED = " paired share at "  # a row's words: "<family> paired share at 4096³"


def _paired(raw: Path) -> list[tuple]:
    """The run's paired shares of each race's reference at SIZE³ (its paired step, the forward pass), one row per
    rung: (what, value, unit, tracks, method); none where the run has no paired step."""
    f = raw / "paired" / "samples.csv"
    if not f.is_file():
        return []
    t = paired.shares(pd.read_csv(f))
    if t.empty:
        return []
    t = t[(t.kind == "reference") & (t.order == "forward") & (t.M == SIZE)]
    return [(f"{r.family}{PAIRED}{SIZE}³", float(r.share), "share", "", "paired") for r in t.itertuples()]


def headlines(run: Path, name: str) -> pd.DataFrame:
    """One row per headline number of the run in ``run`` (a folder holding raw/): GPU, value, unit, what it tracks."""
    raw = run / "raw"
    prov = json.loads((raw / "provenance.json").read_text())
    gpu = prov.get("gpu", {})
    hw, date = hardware(gpu), str(prov.get("date", ""))[:10]
    rows = [(f"{v.rstrip('*')} GFLOP/s at {SIZE}³", *_rate(raw, v), "GFLOP/s", "fp32_tflops") for v in RATE_VARIANTS]
    rows += [(f"{v} GFLOP/s at {SIZE}³", *_rate(raw, v), "GFLOP/s", "bf16_tflops") for v in bf16_variants()]
    rows = [(w, v, u, h, m) for w, v, m, u, h in rows]
    bw = raw / "bandwidth" / "samples.csv"
    if bw.is_file():
        b = pd.read_csv(bw)
        for transfer in ("device_to_device", "host_to_device_pinned"):
            g = b[b.transfer == transfer].gbs
            # a copy from the host crosses PCIe, whose speed no run records: it tracks no hardware number here
            tracks = "dram_gbs" if transfer == "device_to_device" else "pcie"
            median = float(g.median()) if len(g) else math.nan
            rows.append((f"copy {transfer.replace('_', ' ')}", median, "GB/s", tracks, "events"))
    rows += _paired(raw)
    rows += [
        ("specified DRAM bandwidth", hw["dram_gbs"], "GB/s", "dram_gbs", ""),
        ("FP32 peak", hw["fp32_tflops"], "TFLOP/s", "fp32_tflops", ""),
        ("BF16 tensor-core peak", hw["bf16_tflops"], "TFLOP/s", "bf16_tflops", ""),
        ("L2", hw["l2_mib"], "MiB", "l2_mib", ""),
    ]
    return pd.DataFrame(
        [
            {"run": name, "gpu": gpu.get("name", "?"), "date": date, "what": w, "value": v, "unit": u}
            | {"hardware": h, "method": m}
            for w, v, u, h, m in rows
        ],
        columns=COLUMNS,
    )


def table(runs: dict[str, Path]) -> pd.DataFrame:
    """Headlines of every run (name: folder), one row per run and number."""
    found = [headlines(p, n) for n, p in runs.items() if (p / "raw" / "provenance.json").is_file()]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=COLUMNS)


def wide(t: pd.DataFrame, unit: str | None = None, tracks: str | None = None) -> pd.DataFrame:
    """One row per number (only those in ``unit``, and tracking the hardware number ``tracks``, when given), one
    column per run in the order the runs come; a run without such numbers (a subset, sizes below 4096, an archive
    that predates the race on the tensor cores) keeps its column, empty."""
    runs = list(dict.fromkeys(t.run))
    rows = t if unit is None else t[t.unit == unit]
    rows = rows if tracks is None else rows[rows.hardware == tracks]
    return rows.pivot_table(index="what", columns="run", values="value").reindex(
        index=list(dict.fromkeys(rows.what)), columns=runs
    )


def label(t: pd.DataFrame, run: str) -> str:
    """A run as the compare page names it: 'this run (NVIDIA H100 80GB HBM3, 2026-11-27)' or 'archive h200
    (NVIDIA H200, 2026-11-27)', so that two runs of one GPU model read apart."""
    r = t[t.run == run].iloc[0]
    date = r.get("date", "") if isinstance(r.get("date", ""), str) else ""
    name = run if run == "this run" else f"archive {run}"
    return f"{name} ({r.gpu}{', ' + date if date else ''})"


def pairs(t: pd.DataFrame) -> list[tuple[str, str, bool]]:
    """The comparisons the page makes: the first run (this run, when measured) against every other, those of
    another GPU model first; each (base, other, same GPU model)."""
    runs = list(dict.fromkeys(t.run))
    if len(runs) < 2:
        return []
    gpu = t.drop_duplicates("run").set_index("run").gpu
    base = runs[0]
    others = sorted(runs[1:], key=lambda r: gpu[r] == gpu[base])  # another model first, order kept within
    return [(base, r, bool(gpu[r] == gpu[base])) for r in others]


def sentences(t: pd.DataFrame, base: str, other: str) -> list[str]:
    """For each number both runs have: the ratio other/base, beside the ratio of the hardware number it tracks
    (a copy from the host: beside none, since it crosses PCIe, which no run records)."""
    a, b = (t[t.run == r].set_index("what") for r in (base, other))
    out = []
    for what in a.index.intersection(b.index):
        x, y, hw = a.at[what, "value"], b.at[what, "value"], a.at[what, "hardware"]
        if not (x > 0 and y > 0) or not isinstance(hw, str) or not hw or what in TRACKS.values():
            continue
        said = f"{what}: {other} {_num(y)} against {base} {_num(x)} {a.at[what, 'unit']} (×{y / x:.2f})"
        if hw not in TRACKS:
            out.append(
                f"{said}; it crosses the PCIe bus, not the GPU's memory, so no number of the GPUs' "
                "memory is set beside it."
            )
            continue
        ref = TRACKS[hw]
        hx, hy = a.at[ref, "value"], b.at[ref, "value"]
        if not (hx > 0 and hy > 0):  # a tensor-core peak of a GPU the hardware table does not know
            out.append(f"{said}; the {ref} of one of the GPUs is not known here, so nothing is set beside it.")
            continue
        ratio, hratio = y / x, hy / hx
        close = abs(math.log(ratio / hratio)) < math.log(1.1)
        out.append(
            f"{said}; the {ref} differs by ×{hratio:.2f}: the difference {'follows' if close else 'does not follow'} "
            "it (within 10%)."
        )
    return out


def _num(v: float) -> str:
    """Three significant digits at least, so that two numbers a ratio compares show it (55.4 against 54.9)."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def methods(t: pd.DataFrame) -> dict[str, str]:
    """Each run's method of timing kernels, as its samples record it ("graph", or "" where not recorded)."""
    rates = t[t.unit == "GFLOP/s"]
    if "method" not in rates:
        return {r: "" for r in dict.fromkeys(t.run)}
    found = rates.dropna(subset=["method"])
    found = found[found.method.astype(str) != ""]
    return {
        r: (found[found.run == r].method.mode().iloc[0] if (found.run == r).any() else "") for r in dict.fromkeys(t.run)
    }


def shares_of_cublas(t: pd.DataFrame) -> pd.DataFrame:
    """Each kernel's share of its race's cuBLAS per run at the comparison's size (each race's rates divided by
    its library's row: the FP32 kernels by cuBLAS SGEMM's, the BF16 rungs by cuBLAS BF16's); rows: the
    hand-written kernels, FP32 first, without 'GFLOP/s at n³' in their names."""
    found = []
    for tracks, library in RACES.items():
        rates = wide(t, "GFLOP/s", tracks)
        key = f"{library} GFLOP/s at {SIZE}³"
        if key in rates.index:
            found.append(rates.drop(index=key) / rates.loc[key])
    if not found:
        return pd.DataFrame()
    shares = pd.concat(found).dropna(how="all")  # a kernel no run has (a race no run measured) is no share
    shares.index = [w.replace(f" GFLOP/s at {SIZE}³", "") for w in shares.index]
    pair = t[t.unit == "share"]
    for r in pair.itertuples():  # a run's paired share replaces the ratio of its two own sets
        family = r.what.split(PAIRED)[0]
        if family in shares.index and r.run in shares.columns:
            shares.at[family, r.run] = r.value
    return shares
