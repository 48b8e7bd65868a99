"""Collect the per-variant raw files of a run into tidy tables for the notebooks."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm import paths
from gpumm.catalog import Variant

SHAPE = ["variant", "family", "defines", "kind", "M", "N", "K", "memory_mode", "timed"]


def summarise(samples: pd.DataFrame) -> pd.DataFrame:
    """One row per variant x shape x mode: status, median and spread of the samples."""
    keys = SHAPE
    df = samples.copy()
    df[["M", "N", "K"]] = df[["M", "N", "K"]].astype("Int64")
    out = []
    for key, g in df.groupby(keys, dropna=False, sort=False):
        ok = g[g["status"] == "ok"]
        ms = ok["ms"].to_numpy(dtype=float)
        first = g.iloc[0]
        row = dict(zip(keys, key))
        row.update(
            status=first["status"] if ok.empty else "ok",
            reason="" if not ok.empty else (first["reason"] if isinstance(first["reason"], str) else ""),
            samples=len(ms),
            median_ms=np.median(ms) if len(ms) else np.nan,
            q25_ms=np.percentile(ms, 25) if len(ms) else np.nan,
            q75_ms=np.percentile(ms, 75) if len(ms) else np.nan,
            min_ms=ms.min() if len(ms) else np.nan,
            max_ms=ms.max() if len(ms) else np.nan,
            max_rel_err=first["max_rel_err"],
            verified=first["verified"],
        )
        out.append(row)
    summary = pd.DataFrame(out)
    m, n, k = (pd.to_numeric(summary[d], errors="coerce").astype(float) for d in "MNK")
    flops = 2.0 * m * n * k
    summary["gflops"] = flops / (summary["median_ms"] * 1e-3) / 1e9
    return summary


def collect(variants: list[Variant], results: Path, out: Path) -> None:
    """Write samples, summary, resources, profiles, variants, source and published tables."""
    out.mkdir(parents=True, exist_ok=True)
    samples = pd.concat(
        [pd.read_csv(paths.raw_dir(v.id, results) / "samples.csv") for v in variants], ignore_index=True
    )
    profiles = pd.concat(
        [pd.read_csv(paths.raw_dir(v.id, results) / "profile.csv") for v in variants], ignore_index=True
    )
    resources = [
        json.loads((paths.build_dir(v.id, results) / "resources.json").read_text()) for v in variants if v.is_cuda
    ]
    rows = []
    for v in variants:
        meta = json.loads((paths.raw_dir(v.id, results) / "meta.json").read_text())
        rows.append(
            {
                "variant": v.id,
                "family": v.family,
                "defines": v.defines_text(),
                "kind": v.kind,
                "label": v.label,
                "studies": " ".join(v.studies),
                "origin": meta.get("origin", ""),
                "stale": bool(meta.get("stale", False)),
                "digest": v.digest(),
                "archived_digest": meta.get("archived_digest", ""),
            }
        )
    prov = json.loads((results / "raw" / "provenance.json").read_text())
    tables = {
        "samples": samples,
        "summary": summarise(samples),
        "profiles": profiles,
        "resources": pd.DataFrame(resources),
        "variants": pd.DataFrame(rows),
    }
    for name, df in tables.items():
        df.to_csv(out / f"{name}.csv.tmp", index=False)
    shutil.copy2(paths.PUBLISHED, out / "published.csv.tmp")
    (out / "source.json.tmp").write_text(json.dumps(prov, indent=1))
    for name in [*tables, "published"]:
        (out / f"{name}.csv.tmp").replace(out / f"{name}.csv")
    (out / "source.json.tmp").replace(out / "source.json")
