"""Collect the per-variant raw files of a run into tidy tables for the notebooks."""

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.analyse import (
    access_patterns,
    claims,
    compare,
    counters,
    floor,
    fp32_dispatch,
    headlines,
    layers,
    memory_levels,
    paired,
    power,
    race,
    rates,
    ratios,
    roofline,
    seed000,
    tensor,
    transposes,
)
from gpumm.analyse.summary import summarise, verification
from gpumm.archive import reference
from gpumm.build import loops
from gpumm.run import operations
from gpumm.setup import catalog, files, hardware, manifest, paths, regimes
from gpumm.setup.catalog import Variant

# the columns the pages read from the tables built row by row: a run of a subset (config `only`) without a CUDA
# kernel, or with none the archive holds, still has them, empty
RESOURCE_COLUMNS = ["variant", "family", "entry", "arch", "registers", "stack_bytes", "spill_store_bytes"]
RESOURCE_COLUMNS += ["spill_load_bytes", "smem_bytes", "register_cap", "threads_per_block", "occupancy"]
LOOP_COLUMNS = ["variant", "family", "defines", *loops.COLUMNS, "ptx_tensor_core", "sass_tensor_core", "sass_ffma"]


def with_columns(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``df`` with every one of ``columns`` (a missing one added empty, after its own)."""
    return df.reindex(columns=[*df.columns, *(c for c in columns if c not in df.columns)])


def collect(variants: list[Variant], results: Path, out: Path) -> None:
    """Write every table the notebooks read, each whole or not at all."""
    tables = make(variants, results)
    out.mkdir(parents=True, exist_ok=True)
    prov = json.loads((results / "raw" / "provenance.json").read_text())
    for name, df in tables.items():
        df.to_csv(out / f"{name}.csv.tmp", index=False)
    shutil.copy2(paths.PUBLISHED, out / "published.csv.tmp")
    (out / "source.json.tmp").write_text(files.json_text(prov, indent=1))
    (out / manifest.NAME).unlink(missing_ok=True)  # no manifest vouches for tables half replaced
    for name in [*tables, "published"]:
        (out / f"{name}.csv.tmp").replace(out / f"{name}.csv")
    (out / "source.json.tmp").replace(out / "source.json")
    written = [out / f"{name}.csv" for name in [*tables, "published"]] + [out / "source.json"]
    manifest.write(out, written, writer="gpumm collect")  # last: what a reader checks the tables against


def _text(path: Path) -> str:
    """A compiler output's text, from ``path`` or, in an archive, from its packed ``path.gz``."""
    if not path.is_file() and path.with_name(path.name + ".gz").is_file():
        return gzip.decompress(path.with_name(path.name + ".gz").read_bytes()).decode()
    return path.read_text()


def make(variants: list[Variant], results: Path) -> dict[str, pd.DataFrame]:
    """Every table the notebooks read, from a run's folder ``results`` (``results/`` or an archive): the raw
    files read, the per-variant tables, the races' verdicts, the memory studies and transposes, the rooflines
    and claims, then what the catalog and the other archives say."""
    raw = _raw(variants, results)
    tables = _per_variant(variants, raw)
    tables.update(_verdicts(results, tables["summary"]))
    tables.update(_memory_and_transposes(results, raw["gpu"], tables))
    tables.update(_rooflines_and_claims(variants, raw, tables))
    tables.update(_beside_the_run(results, raw["prov"], tables["summary"]))
    certified = raw["prov"].get("variant_digests") or {}  # a replay's: as its archive certifies them now
    tables.update(layers.tables(results, raw["gpu"], certified))  # the model's layers (empty where not timed)
    tables.update(fp32_dispatch.tables(results, raw["gpu"], certified))  # FP32 through the model's steps (likewise)
    tables["headlines"] = headlines.headlines(tables)
    missing = set(paths.TABLE_NAMES) - set(tables) - {"published"}
    if missing:
        raise RuntimeError(f"collect: tables not made: {sorted(missing)}")
    return tables


def _raw(variants: list[Variant], results: Path) -> dict:
    """The run's raw files, each checked against its step's record: samples, profiles, provenance, metadata, and
    the build reports and loops of the CUDA variants."""
    for v in variants:  # never a table from samples that changed since their step wrote them
        found = manifest.recorded(paths.raw_dir(v.id, results) / "meta.json")
        if found:
            raise manifest.Damaged(manifest.first(found, "run snakemake again, which runs its step again"))
    samples = pd.concat(
        [pd.read_csv(paths.raw_dir(v.id, results) / "samples.csv") for v in variants], ignore_index=True
    )
    profiles = pd.concat(
        [pd.read_csv(paths.raw_dir(v.id, results) / "profile.csv") for v in variants], ignore_index=True
    )
    prov = json.loads((results / "raw" / "provenance.json").read_text())
    gpu = prov.get("gpu", {})
    resources, loop_rows = [], []
    for v in (v for v in variants if v.is_cuda):
        res = _json(paths.build_dir(v.id, results) / "resources.json")
        b = paths.build_dir(v.id, results)
        ptx, sass = _text(b / "kernel.ptx"), _text(b / "kernel.sass")
        loop = loops.analyse(ptx, sass, v.entry)
        resources.append({**_with_occupancy(res, v, gpu), "variant": v.id, "family": v.family})
        precision = loops.tensor_core_ops(ptx, sass)
        loop_rows.append({**loop, **precision, "variant": v.id, "family": v.family, "defines": v.defines_text()})
    metas = {v.id: _json(paths.raw_dir(v.id, results) / "meta.json") for v in variants}
    one_kind(metas)
    return {"samples": samples, "profiles": profiles, "prov": prov, "gpu": gpu} | {
        "resources": resources,
        "loops": loop_rows,
        "metas": metas,
    }


def _per_variant(variants: list[Variant], raw: dict) -> dict[str, pd.DataFrame]:
    """The samples, their summary, the build tables, the ladders, the checks, the counters and the crossover."""
    samples, profiles, gpu = raw["samples"], raw["profiles"], raw["gpu"]
    summary = summarise(samples)
    summary["op"] = summary.variant.map({v.id: v.op for v in variants})  # the FP32 pages read matmul's rows only
    summary["power_state"] = power.states(summary)  # full clock, or throttled and why (gpumm.analyse.power)
    loop_table = with_columns(pd.DataFrame(raw["loops"]), LOOP_COLUMNS)
    gpus = [v.id for v in variants if v.on_gpu]
    cpus = [v.id for v in variants if v.kind == "cpu"]
    return {
        "samples": samples,
        "summary": summary,
        "profiles": profiles,
        "resources": with_columns(pd.DataFrame(raw["resources"]), RESOURCE_COLUMNS),
        "variants": pd.DataFrame([_variant_row(v, raw["metas"][v.id]) for v in variants]),
        "loops": loop_table,
        "estimate": _estimates(loop_table, gpu),
        "ladder": rates.ladder(summary, _families(variants), rates.LADDER_SIZE),
        "bf16_ladder": tensor.ladder(summary, _families(variants, tensor.OP)),
        "verification": verification(summary),
        "profile_summary": counters.profile_summary(
            profiles, gpu.get("l2_bytes") or np.nan, {v.id: operations.get(v.op).footprint for v in variants}
        ),
        "crossover": rates.cpu_crossover(summary, gpus, cpus),
    }


def _verdicts(results: Path, summary: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The races' paired comparisons and the verdicts made from them (gpumm.analyse.paired)."""
    pairs = _paired_rows(results)
    out = {"paired": paired.shares(pairs, summary), "paired_members": paired.members(pairs, summary)}
    out["verdicts"] = paired.verdicts(out["paired"], out["paired_members"], summary)
    return out


def _memory_and_transposes(results: Path, gpu: dict, tables: dict) -> dict[str, pd.DataFrame]:
    """The memory studies (copy bandwidths, coalescing, overhead, hierarchy, device memory) and the transposes."""
    out = _memory_tables(results, tables["summary"], tables["resources"])
    d2d = out["bandwidth"].set_index("transfer").median_gbs.get("device_to_device", np.nan)
    out["transpose"] = transposes.transpose_summary(tables["summary"], tables["variants"], d2d)
    out["transpose_goal"] = pd.DataFrame([transposes.transpose_goal(out["transpose"], verdicts=tables["verdicts"])])
    hierarchy = pd.read_csv(results / "raw" / "hierarchy" / "samples.csv")
    out.update(memory_levels.hierarchy_tables(hierarchy, gpu))
    out["device_memory"] = memory_levels.device_memory_table(pd.read_csv(paths.PUBLISHED), gpu)
    return out


def _rooflines_and_claims(variants: list[Variant], raw: dict, tables: dict) -> dict[str, pd.DataFrame]:
    """The FP32 and BF16 rooflines (the measured device copy and L2 as memory roofs), the claims, CGMA."""
    summary, profiles, gpu = tables["summary"], raw["profiles"], raw["gpu"]
    d2d = tables["bandwidth"].set_index("transfer").median_gbs.get("device_to_device", np.nan)
    l2 = roofline.level_bandwidth(tables["hierarchy_bandwidth"])
    out, checks = {}, []
    for name, op, peak in (  # the race on the tensor cores under its own roof; a roof a kernel beats: a failed check
        ("roofline", "matmul", hardware.fp32_peak(gpu)),
        ("bf16_roofline", tensor.OP, hardware.tensor_bf16_peak(gpu)),
    ):
        ids = [v.id for v in variants if v.op == op]
        pts = roofline.points(summary[summary.variant.isin(ids)], profiles, peak, d2d * 1e9, l2)
        out[name], failed = roofline.split(pts)
        checks.append(failed.assign(table=name))
    out["roof_checks"] = pd.concat(checks, ignore_index=True)[["table", *roofline.CHECK_COLUMNS]]
    out["claim_cases"] = claims.cases(
        summary, tables["resources"], tables["transpose"], tables["estimate"], out["roofline"]
    )
    out["claim_verdicts"] = claims.verdicts(out["claim_cases"])
    out["cgma"] = ratios.cgma_table(tables["estimate"], tables["profile_summary"], profiles)
    return out


def _beside_the_run(results: Path, prov: dict, summary: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """What does not come from this run alone: nvprof imports, the archived runs (and this one when measured),
    what the study cost, the catalog's kernel notes, the tuning search."""
    out = {}
    imported = [pd.read_csv(f) for f in sorted(paths.IMPORTED.glob("*/*.csv"))]
    out["imported_profiles"] = pd.concat(imported, ignore_index=True) if imported else pd.DataFrame(columns=["variant"])
    out["imported_summary"] = counters.profile_summary(out["imported_profiles"], np.nan)
    runs = {p.name: p for p in reference.available()}  # every archived run, and this one when it was measured
    if prov.get("data_source", {}).get("mode") == "measure":
        runs = {"this run": results, **runs}
    out["compare"] = compare.table(runs)
    out["study_cost"] = pd.DataFrame(reference.costs(), columns=reference.COST_COLUMNS)
    families = catalog.load()
    out["kernel_notes"] = pd.DataFrame(
        [
            {"family": n, "file": f.get("file", ""), "label": f.get("label", ""), "says": catalog.header(n, families)}
            | {"flags": " ".join(f.get("nvcc_flags", [])), "op": f.get("op", "matmul"), "arch": f.get("arch", "")}
            | dict(zip(("excerpt", "excerpt_lines"), catalog.excerpt(n, families)))
            for n, f in families.items()
        ],
        columns=["family", "file", "label", "says", "flags", "op", "arch", "excerpt", "excerpt_lines"],
    )
    # the searches of the run's own rungs (not the model's families, whose candidates the dispatcher chooses among)
    ran = set(summary.variant) if "variant" in summary else set()
    tuned = {
        name: list(fam["tune"])
        for name, fam in families.items()
        if fam.get("tune") and any(f"{name}_{key}" in ran for key in fam["tune"])
    }
    out["tuning"] = race.tuning_search(summary, tuned)
    return out


def _paired_rows(results: Path) -> pd.DataFrame:
    """The paired step's rows (gpumm.run.paired), checked against what the step recorded; none where the run has
    no paired step (an archive from before it, or ``paired: {enabled: false}``)."""
    f = results / "raw" / "paired" / "samples.csv"
    if not f.is_file():
        return pd.DataFrame()
    found = manifest.recorded(f.parent / "meta.json")
    if found:
        raise manifest.Damaged(manifest.first(found, "run snakemake again, which runs its step again"))
    return pd.read_csv(f)


def _legacy_coalescing(df: pd.DataFrame, l2: float) -> pd.DataFrame:
    """Columns an access-pattern table from before the GPU-filling redesign lacks, from what it records.

    Those runs read one matrix with n threads (copies = 1) and launched one
    thread per strided element (no batching): the regime follows from the
    working set against the L2 ('l2' when it fits in half of it, 'dram' from
    3 times it, else 'mixed').
    """
    if "pattern" not in df or df.empty:
        return df
    df = df.copy()
    n = pd.to_numeric(df.n, errors="coerce")
    stride = pd.to_numeric(df.stride, errors="coerce").fillna(0)
    matrix = df.pattern.isin(["rows", "cols"])
    ws = np.where(matrix, 4 * n * n, 4 * (n * stride.clip(lower=1) + n))
    df["copies"] = 1
    df["threads"] = n
    df["working_set_bytes"] = ws
    df["batch"] = 1
    ratio = ws / l2 if l2 == l2 else np.full(len(df), np.nan)
    df["regime"] = np.select([ratio <= regimes.CACHED_FACTOR, ratio >= regimes.DRAM_FACTOR], ["l2", "dram"], "mixed")
    return df


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


class MixedRun(ValueError):
    """The measurements of one run come from GPUs of different kinds: no table mixes them."""


def one_kind(metas: dict[str, dict]) -> None:
    """Raise MixedRun (one line naming the kinds and a variant of each) where the GPU measurements (their
    ``device`` in meta.json) come from more than one kind of GPU; CPU baselines and older runs name none."""
    kinds: dict[str, list[str]] = {}
    for vid, meta in metas.items():
        name = (meta.get("device") or {}).get("name")
        if name:
            kinds.setdefault(name, []).append(vid)
    if len(kinds) > 1:
        said = "; ".join(f"{name}: {len(ids)} variants (e.g. {ids[0]})" for name, ids in sorted(kinds.items()))
        raise MixedRun(
            f"results/raw holds measurements from {len(kinds)} kinds of GPU ({said}); a table compares one kind: "
            "measure the others again on one kind (delete their results/raw/<variant> and rerun)"
        )


def _variant_row(v: Variant, meta: dict) -> dict:
    return {
        "variant": v.id,
        "family": v.family,
        "defines": v.defines_text(),
        "kind": v.kind,
        "op": v.op,
        "label": v.label,
        "studies": " ".join(v.studies),
        "origin": meta.get("origin", ""),
        "stale": bool(meta.get("stale", False)),
        "digest": v.digest(),
        "archived_digest": meta.get("archived_digest", ""),
    }


def _with_occupancy(res: dict, v: Variant, gpu: dict) -> dict:
    """The resource report plus threads per block and theoretical occupancy on the run's GPU."""
    if "registers" not in res:  # not in the archive
        return res
    x, y, _ = v.block_dims()
    return {**res, "threads_per_block": x * y, **seed000.occupancy(x * y, res["registers"], res["smem_bytes"], gpu)}


def _estimates(loops: pd.DataFrame, gpu: dict) -> pd.DataFrame:
    """Seed 000's PTX estimate for every variant whose loop was counted (S0-S37), and the same from SASS."""
    rows = []
    for r in loops.to_dict("records"):
        if r.get("status") != "ok":
            continue
        for level in ("ptx", "sass"):
            fma, n, loads = r[f"{level}_fma"], r[f"{level}_instructions"], r[f"{level}_global_loads"]
            rows.append(
                {
                    "variant": r["variant"],
                    "family": r["family"],
                    "level": level,
                    "instructions": n,
                    "fma": fma,
                    "global_loads": loads,
                    "cgma": ratios.cgma(fma, loads),
                    **seed000.ptx_estimate(fma, n, loads, gpu),
                }
            )
    columns = [
        "variant",
        "family",
        "level",
        "instructions",
        "fma",
        "global_loads",
        "cgma",
        "peak_gflops",
        "fma_share",
        "potential_gflops",
        "load_share",
        "required_gbs",
    ]
    return pd.DataFrame(rows, columns=columns)


def _families(variants: list[Variant], op: str = "matmul") -> list[dict]:
    """GPU families of ``op`` in catalog order, each with its rung below when that family runs too."""
    seen: dict[str, str | None] = {}
    for v in variants:
        if v.on_gpu and v.op == op:  # the CPU baselines are compared end to end, on the seed 002 page
            seen.setdefault(v.family, v.rung_below)
    return [{"family": f, "rung_below": b if b in seen else None} for f, b in seen.items()]


def _memory_tables(results: Path, summary: pd.DataFrame, resources: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The memory studies: bandwidths, access patterns with their profile, and claim S1-C2."""
    l2 = json.loads((results / "raw" / "provenance.json").read_text()).get("gpu", {}).get("l2_bytes") or np.nan
    bw = pd.read_csv(results / "raw" / "bandwidth" / "samples.csv")
    oh = pd.read_csv(results / "raw" / "overhead" / "samples.csv")
    co = pd.read_csv(results / "raw" / "coalescing" / "samples.csv")
    prof = pd.read_csv(results / "raw" / "coalescing" / "profile.csv")
    bandwidth = (
        bw.groupby("transfer")
        .gbs.agg(median_gbs="median", q25_gbs=lambda x: x.quantile(0.25), q75_gbs=lambda x: x.quantile(0.75))
        .reset_index()
        if "transfer" in bw
        else pd.DataFrame(columns=["transfer", "median_gbs", "q25_gbs", "q75_gbs"])
    )
    d2d = bandwidth.set_index("transfer").median_gbs.get("device_to_device", float("nan"))
    if "pattern" in co and "regime" not in co:
        co, prof = _legacy_coalescing(co, l2), _legacy_coalescing(prof, l2)
    if "pattern" in co:
        patterns = access_patterns.coalescing_summary(co, d2d, l2)
        spr = access_patterns.sectors_per_request(prof)
        if len(spr) and "pattern" in spr:
            patterns = patterns.merge(spr.drop(columns="launch"), on=access_patterns.COALESCING_KEYS, how="left")
        ratio = access_patterns.rows_over_cols(patterns)
    else:
        patterns = pd.DataFrame([{"status": "not measured", "reason": "not in this run"}])
        ratio = access_patterns.rows_over_cols(pd.DataFrame(columns=["pattern", "status"]))
    return {
        "bandwidth": bandwidth,
        "coalescing": co,
        "coalescing_summary": patterns,
        "coalescing_ratio": ratio,
        "coalescing_profile": prof,
        "overhead": floor.overhead_summary(oh),
    }
