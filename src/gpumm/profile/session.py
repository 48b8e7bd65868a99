"""Profile every variant with Nsight Compute at the sizes the report explains; never fail the pipeline.

One ``ncu`` session per run: it starts ``python -m gpumm profile-target``
once, which makes one product of each variant at each profile size (smallest
first), then one launch of each access pattern of the coalescing study, and
ncu catches the kernels under test among them (for the variants that
transpose B first, the multiply, not the transpose). Starting ncu, Python and
a CUDA context once instead of once per variant is what keeps the profiles
from dominating the study's time. The target writes the list of what it
launched; :func:`assign` matches ncu's launches to it in order (cuBLAS may
run more than one kernel per product, so each cuBLAS product is followed by
an empty marker kernel). ncu runs with the chosen metrics and
``--clock-control none``, exports a ``.ncu-rep`` for users to open, then
imports it to CSV and parses it. When ncu is missing, lacks permission for
the counters (ERR_NVGPUCTRPERM) or profiles no kernel, every output says so
in its ``status`` and ``reason`` and the run carries on.

**Per-variant reuse.** The session writes one ``profile.csv`` per variant,
and keeps a copy under ``results/cache/profile/<variant>/<key>/``, the key a
digest of what decides the profile: the variant's digest (code, catalog
entry, method version), its built binary, the sizes, the metrics, the seed and
the GPU's UUID. A variant whose key is there is not profiled again: an edit
to one kernel re-profiles that kernel alone. Remove ``results/cache`` to
profile everything afresh.

The sizes: a working set well beyond the L2 (the DRAM regime: the smallest
power of two whose three matrices fill at least ``DRAM_FACTOR`` times the
L2, 4096 on an H100 or H200), where the report explains its results, and
optionally a small one whose matrices fit in the L2 (the cached regime),
which the pages label as such. :func:`regime` names the regime of a size.
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from gpumm.profile import ncu
from gpumm.setup import catalog, columns, files, regimes
from gpumm.setup.catalog import Variant

COLUMNS = columns.PROFILE
DISABLED = "profiling disabled in the config (profile.enabled: false)"
DRAM_FACTOR = regimes.DRAM_FACTOR  # the DRAM-regime profile's three matrices fill at least this many times the L2


def dram_size(l2_bytes: int, factor: int = DRAM_FACTOR, footprint: int = 12) -> int:
    """The smallest power of two n (at least 256) whose arrays (``footprint``·n² bytes: 12 for A, B and C of a
    matrix multiply, 8 for a transpose's input and output) fill ``factor`` times the L2."""
    n = 256
    while footprint * n * n < factor * l2_bytes:
        n *= 2
    return n


def sizes(setting, cached, l2_bytes: int, footprint: int = 12) -> list[int]:
    """The profile's square sizes, ascending: the DRAM-regime size (``auto``: from the L2) and the cached one."""
    big = dram_size(l2_bytes, footprint=footprint) if setting == "auto" else int(setting)
    return sorted({big, *([int(cached)] if cached else [])})


def regime(n: int, l2_bytes: float, footprint: int = 12) -> str:
    """The regime of the arrays at size n (``footprint``·n² bytes) by the one rule of
    :mod:`gpumm.setup.regimes`: 'dram', 'cached' or 'mixed'."""
    return regimes.regime(footprint * n * n, l2_bytes)


# cuBLAS picks its kernel at run time; its names contain one of these (nvjet: its Hopper kernels for BF16, such
# as nvjet_sm90_tss_256x128_64x4_...; a library kernel the filter misses leaves the session's launches unmatched)
LIBRARY_KERNELS = "regex:gemm|xmma|cutlass|nvjet"


def find_ncu() -> str | None:
    """ncu on PATH, else where CUDA and Nsight Compute install it."""
    found = shutil.which("ncu")
    if found:
        return found
    candidates = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")) + ["/usr/local/cuda/bin/ncu"]
    return next((c for c in reversed(candidates) if Path(c).is_file()), None)


def kernel_filter(variant: Variant) -> str:
    return f"regex:{variant.entry}" if variant.is_cuda else LIBRARY_KERNELS


def diagnose(log: str, returncode: int, rows: list) -> str:
    """'' when the profile is usable, else one line saying why not."""
    if "ERR_NVGPUCTRPERM" in log:
        return "ncu has no permission to read the GPU performance counters (ERR_NVGPUCTRPERM)"
    if "No kernels were profiled" in log:
        return "ncu profiled no kernel (the kernel filter matched no launch)"
    if returncode != 0:
        last = [ln for ln in log.splitlines() if ln.strip()][-1:] or ["no output"]
        return f"ncu exited with status {returncode}: {last[0][:200]}"
    if not rows:
        return "ncu wrote no metrics"
    return ""


class Mismatch(RuntimeError):
    """ncu's launches do not line up with what the target says it launched."""


MARKER = "empty_kernel"  # launched after each library product: where its kernels end


def assign(kernels: list[str], launched: list[dict]) -> list[int | None]:
    """For each launch ncu profiled (its kernel names, in order), the index of the item of ``launched`` it belongs
    to, None for a marker. An item is ``{"kind": "kernel", "kernel": name}`` (exactly one launch of that name),
    ``{"kind": "library"}`` (one or more launches, up to the marker that follows it) or ``{"kind": "marker"}``."""
    out: list[int | None] = []
    i = 0
    for j, item in enumerate(launched):
        kind = item["kind"]
        if kind == "marker":
            if i >= len(kernels) or kernels[i] != MARKER:
                raise Mismatch(
                    f"launch {i}: expected the marker kernel, found {kernels[i] if i < len(kernels) else 'none'}"
                )
            out.append(None)
            i += 1
        elif kind == "library":
            start = i
            while i < len(kernels) and kernels[i] != MARKER:
                out.append(j)
                i += 1
            if i == start:
                raise Mismatch(f"launch {i}: expected a library kernel, found none")
        else:
            if i >= len(kernels) or kernels[i] != item["kernel"]:
                found = kernels[i] if i < len(kernels) else "none"
                raise Mismatch(f"launch {i}: expected {item['kernel']}, found {found}")
            out.append(j)
            i += 1
    if i != len(kernels):
        raise Mismatch(f"{len(kernels) - i} launches more than the target made")
    return out


def kernel_regex(entries: set[str], library: bool) -> str:
    """ncu's kernel filter: the entry points under test (whole names), the marker, and cuBLAS's kernels."""
    names = "|".join(sorted({*entries, MARKER}))
    return f"regex:^({names})$" + (f"|{LIBRARY_KERNELS.removeprefix('regex:')}" if library else "")


def _hash_file(path) -> str:
    if not path or not Path(path).is_file():
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def cache_key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _ncu_version(exe: str | None) -> str:
    if not exe:
        return ""
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.strip().splitlines() or [""])[-1]


def run_ncu(target: list[str], kfilter: str, metrics: list[str], out_dir: Path) -> tuple[list[dict], str, str]:
    """Profile every launch of ``target`` that ``kfilter`` matches: (parsed rows, reason it failed or '', log)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = find_ncu()
    if exe is None:
        return [], "ncu (Nsight Compute) not found on PATH", ""
    report = out_dir / "report"
    cmd = [
        exe,
        "--clock-control",
        "none",
        "--kernel-name-base",
        "demangled",  # library kernels (cuBLAS's CUTLASS templates) are matched on their full names
        "--metrics",
        ",".join(metrics),
        "-k",
        kfilter,
        "-f",
        "-o",
        str(report),
        *target,
    ]
    env = {k: v for k, v in os.environ.items() if k != "GPUMM_RUN_LOG"}  # the target is part of this step
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    log = " ".join(cmd) + "\n" + proc.stdout + proc.stderr
    code, rows = proc.returncode, []
    if code == 0 and report.with_suffix(".ncu-rep").is_file():
        imp = subprocess.run(
            [exe, "--import", str(report.with_suffix(".ncu-rep")), "--csv", "--page", "raw", "--print-units", "base"],
            capture_output=True,
            text=True,
            check=False,
        )
        (out_dir / "ncu.csv").write_text(imp.stdout)
        log += imp.stderr
        code = imp.returncode
        rows = ncu.parse(imp.stdout, metrics)
    return rows, diagnose(log, code, rows), log


def _missing(variant: str, size: int, reason: str) -> pd.DataFrame:
    return pd.DataFrame([{"variant": variant, "M": size, "N": size, "K": size, "status": "missing", "reason": reason}])


def session(plan: dict, metrics: list[str], seed: int, results: Path, disabled: bool = False, say=print) -> dict:
    """Profile what ``plan`` names in one ncu session (reusing cached profiles); write each variant's
    ``raw/<variant>/profile.csv`` and the access patterns' ``raw/coalescing/profile.csv``. Returns
    {name: status}.

    ``plan``: ``{"variants": {id: {"binary": path or null, "sizes": [n, ...]}}, "coalescing": {"cubin": path,
    "plan": the config's coalescing section} or null, "marker": the empty kernel's cubin}``.
    """
    variants = {vid: catalog.from_id(vid) for vid in plan.get("variants", {})}
    coal = plan.get("coalescing")
    outputs: dict[str, pd.DataFrame] = {}
    for vid, v in variants.items():
        sizes_v = plan["variants"][vid]["sizes"]
        if disabled:
            outputs[vid] = _missing(vid, max(sizes_v), DISABLED)
        elif not v.on_gpu:
            outputs[vid] = _missing(vid, max(sizes_v), "a CPU variant: no GPU kernel to profile")
    if coal is not None and disabled:
        outputs["access_patterns"] = pd.DataFrame(
            [{"variant": "access_patterns", "status": "missing", "reason": DISABLED}]
        )
    todo = [vid for vid in variants if vid not in outputs]
    want_coal = coal is not None and not disabled
    if todo or want_coal:
        outputs.update(_profile(plan, variants, todo, want_coal, metrics, seed, results, say))
    status = {}
    for name, df in outputs.items():
        dest = results / "raw" / ("coalescing" if name == "access_patterns" else name) / "profile.csv"
        cols = [c for c in COLUMNS if c in df] + [c for c in df.columns if c not in COLUMNS]
        files.write_csv(df.reindex(columns=cols if name == "access_patterns" else COLUMNS), dest)
        status[name] = str(df["status"].iloc[0]) if len(df) else "missing"
    return status


def _metrics_of(plan: dict, name: str, base: list[str]) -> list[str]:
    """The metrics a plan item is profiled with: those of its ``metric_sets`` (names into the plan's
    ``metric_sets``) where the plan gives them, else ``base`` (the step's --metrics)."""
    item = plan["variants"].get(name, {}) if name != "access_patterns" else plan.get("coalescing") or {}
    names = item.get("metric_sets")
    if not names:
        return list(base)
    out: list[str] = []
    for n in names:
        out += [m for m in plan.get("metric_sets", {}).get(n, []) if m not in out]
    return out


def _profile(plan, variants, todo, want_coal, metrics, seed, results, say) -> dict[str, pd.DataFrame]:
    from gpumm.run import gpulock

    exe = find_ncu()
    cache = results / "cache" / "profile"
    device = gpulock.device_key()
    common = {"seed": seed, "gpu": device, "ncu": _ncu_version(exe)}
    keys, out = {}, {}
    for vid in todo:
        item = plan["variants"][vid]
        keys[vid] = cache_key(
            {
                **common,
                "metrics": _metrics_of(plan, vid, metrics),
                "digest": variants[vid].digest(),
                "binary": _hash_file(item.get("binary")),
                "sizes": item["sizes"],
            }
        )
    if want_coal:
        c = plan["coalescing"]
        keys["access_patterns"] = cache_key(
            {
                **common,
                "metrics": _metrics_of(plan, "access_patterns", metrics),
                "cubin": _hash_file(c["cubin"]),
                "plan": c["plan"],
            }
        )
    fresh = []
    for name, key in keys.items():
        hit = cache / name / key / "profile.csv"
        if hit.is_file():
            out[name] = pd.read_csv(hit)
        else:
            fresh.append(name)
    say(f"profile: {len(keys) - len(fresh)} reused from {cache}, {len(fresh)} to profile")
    groups: dict[tuple, list[str]] = {}  # one ncu session per list of metrics
    for name in fresh:
        groups.setdefault(tuple(_metrics_of(plan, name, metrics)), []).append(name)
    with gpulock.hold(device, f"gpumm profile ({len(fresh)} items)"):
        for i, (group_metrics, names) in enumerate(groups.items()):
            work = results / "raw" / "profile-session" / str(i)
            out.update(_session(plan, variants, names, list(group_metrics), seed, work, say))
    for name in fresh:
        if name in out and (out[name]["status"] == "ok").all():
            files.write_csv(out[name], cache / name / keys[name] / "profile.csv")
    return out


OUT_OF_RANGE = "out of range"


def _in_range(r: dict) -> dict:
    """The status of one profiled value: a percentage outside 0-100 is one Nsight Compute could not collect
    accurately (NVIDIA: its parts, such as an L2 hit rate's hits and queries, come from different replays of a
    kernel too short to reach a steady state, or other engines used the L2 meanwhile); it is kept, marked, and
    used by no table. Seen: lts__t_sector_hit_rate.pct 104.43 for cuBLAS SGEMM at 1024^3 on an H200."""
    value = r.get("value")
    if r.get("unit") == "%" and isinstance(value, float) and value == value and not 0 <= value <= 100:
        why = f"Nsight Compute gave {value:g}%, a percentage it could not collect accurately (outside 0-100)"
        return {"status": OUT_OF_RANGE, "reason": why}
    return {"status": "ok", "reason": ""}


def _records(name: str, per_launch: dict, owned, launched: list) -> list[dict]:
    """The profile rows of item ``name``: each metric of each launch ``owned`` (launch id, index into
    ``launched``) that the target made for it, labelled with its size (or the access pattern's settings)."""
    from gpumm.run import coalescing

    recs = []
    for launch_id, j in owned:
        if j is None or launched[j].get("name") != name:
            continue
        item = launched[j]
        for r in per_launch[launch_id]:
            rec = {"variant": name, **r, **_in_range(r)}
            if name == "access_patterns":
                rec.update({k: item["config"][k] for k in coalescing.LABEL_KEYS})
            else:
                rec.update(M=item["size"], N=item["size"], K=item["size"])
            recs.append(rec)
    return recs


def _session(plan, variants, fresh, metrics, seed, work, say) -> dict[str, pd.DataFrame]:
    """One ncu session over the items ``fresh`` (variant ids and 'access_patterns')."""
    from gpumm.run import coalescing

    out = {}
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    items = [
        {"variant": v, "binary": plan["variants"][v].get("binary"), "sizes": sorted(plan["variants"][v]["sizes"])}
        for v in fresh
        if v != "access_patterns"
    ]
    target_plan = {
        "items": items,
        "coalescing": plan["coalescing"] if "access_patterns" in fresh else None,
        "marker": plan.get("marker"),
        "seed": seed,
    }
    (work / "plan.json").write_text(files.json_text(target_plan, indent=1))
    launched_file = work / "launched.json"
    target = [sys.executable, "-m", "gpumm", "profile-target", "--plan", str(work / "plan.json")]
    target += ["--launched", str(launched_file)]
    entries = {variants[i["variant"]].entry for i in items if variants[i["variant"]].is_cuda}
    if target_plan["coalescing"]:
        entries |= set(coalescing.KERNEL_NAMES.values())
    library = any(not variants[i["variant"]].is_cuda for i in items)
    t0 = time.monotonic()
    rows, reason, log = run_ncu(target, kernel_regex(entries, library), metrics, work)
    say(f"profile: ncu session of {len(fresh)} items, {len(metrics)} metrics, in {time.monotonic() - t0:.1f} s")
    (work / "ncu.log").write_text(log)
    launched = json.loads(launched_file.read_text()) if launched_file.is_file() else []
    per_launch: dict[str, list[dict]] = {}
    for r in rows:
        per_launch.setdefault(r["launch"], []).append(r)
    order = list(per_launch)
    owners: list = []
    if not reason:
        try:
            owners = assign([per_launch[k][0]["kernel"] for k in order], launched)
        except Mismatch as exc:
            reason = f"ncu's launches did not match the target's ({exc})"
    for name in fresh:
        sizes_n = plan["variants"][name]["sizes"] if name != "access_patterns" else [0]
        recs = _records(name, per_launch, zip(order, owners), launched)
        why = reason or "ncu profiled no launch of it"
        if recs:
            out[name] = pd.DataFrame(recs)
        elif name == "access_patterns":
            out[name] = pd.DataFrame([{"variant": "access_patterns", "status": "missing", "reason": why}])
        else:
            out[name] = _missing(name, max(sizes_n), why)
        if name != "access_patterns":
            (work.parents[1] / name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(work / "ncu.log", work.parents[1] / name / "ncu.log")
    return out
