"""Profile a variant with Nsight Compute at the sizes the report explains; never fail the pipeline.

One ``ncu`` session per variant runs ``python -m gpumm profile-target``,
which makes exactly one product at each profile size, smallest first, and
catches the first kernel of each (for the variants that transpose B first,
the multiply). ncu runs with a named metric set and ``--clock-control
none``, exports a ``.ncu-rep`` for users to open, then imports it to CSV and
parses it. When ncu is missing, lacks permission for the counters
(ERR_NVGPUCTRPERM) or profiles no kernel, the output says so in its
``status`` and ``reason`` and the run carries on.

The sizes: a working set well beyond the L2 (the DRAM regime: the smallest
power of two whose three matrices fill at least ``DRAM_FACTOR`` times the
L2, 4096 on an H100 or H200), where the report explains its results, and
optionally a small one whose matrices fit in the L2 (the cached regime),
which the pages label as such. :func:`regime` names the regime of a size.
"""

import glob
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from gpumm import columns, files, ncu
from gpumm.catalog import Variant

COLUMNS = columns.PROFILE
DISABLED = "profiling disabled in the config (profile.enabled: false)"
DRAM_FACTOR = 3  # the DRAM-regime profile's three matrices fill at least this many times the L2


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
    """'dram' when the arrays at size n are at least DRAM_FACTOR times the L2, 'cached' when they fit in half
    of it, else 'mixed'."""
    if not l2_bytes or l2_bytes != l2_bytes:
        return "unknown"
    ratio = footprint * n * n / l2_bytes
    return "dram" if ratio >= DRAM_FACTOR else ("cached" if ratio <= 0.5 else "mixed")


# cuBLAS picks its kernel at run time; its names contain one of these.
LIBRARY_KERNELS = "regex:gemm|xmma|cutlass"


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


def run(
    variant: Variant, binary: Path | None, sizes: list[int], seed: int, metrics: list[str], out_dir: Path
) -> pd.DataFrame:
    """Profile one product of a variant at each size; write out_dir/profile.csv (and report.ncu-rep, ncu.log)."""
    sizes = sorted(sizes)
    target = [
        sys.executable,
        "-m",
        "gpumm",
        "profile-target",
        "--variant",
        variant.id,
        "--sizes",
        ",".join(map(str, sizes)),
        "--seed",
        str(seed),
    ]
    if binary is not None:
        target += ["--binary", str(binary)]
    df = run_target(target, kernel_filter(variant), len(sizes), metrics, out_dir, {"variant": variant.id})
    if (df.status == "ok").all():  # ncu numbers the launches 0, 1, ... in the target's order: one per size
        launch = pd.to_numeric(df.launch, errors="coerce").astype(int)
        for d in "MNK":
            df[d] = launch.map(dict(enumerate(sizes)))
    else:
        df = df.assign(M=sizes[-1], N=sizes[-1], K=sizes[-1])
    files.write_csv(df[COLUMNS], out_dir / "profile.csv")
    return df[COLUMNS]


def run_target(
    target: list[str], kfilter: str, count: int, metrics: list[str], out_dir: Path, base: dict
) -> pd.DataFrame:
    """Profile the first ``count`` launches matching ``kfilter`` of the command ``target``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    exe = find_ncu()
    log, rows, reason = "", [], ""
    if exe is None:
        reason = "ncu (Nsight Compute) not found on PATH"
    else:
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
            "-c",
            str(count),
            "-f",
            "-o",
            str(report),
            *target,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        log = proc.stdout + proc.stderr
        code = proc.returncode
        if code == 0 and report.with_suffix(".ncu-rep").is_file():
            imp = subprocess.run(
                [
                    exe,
                    "--import",
                    str(report.with_suffix(".ncu-rep")),
                    "--csv",
                    "--page",
                    "raw",
                    "--print-units",
                    "base",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            (out_dir / "ncu.csv").write_text(imp.stdout)
            log += imp.stderr
            code = imp.returncode
            rows = ncu.parse(imp.stdout, metrics)
        reason = diagnose(log, code, rows)
        (out_dir / "ncu.log").write_text(" ".join(cmd) + "\n" + log)
    cols = [*base, *(c for c in COLUMNS if c not in base)]
    if reason:
        print(f"profile {out_dir.name}: no profile: {reason}", file=sys.stderr)
        df = pd.DataFrame([{**base, "status": "missing", "reason": reason}], columns=cols)
    else:
        df = pd.DataFrame([{**base, **r, "status": "ok", "reason": ""} for r in rows], columns=cols)
    files.write_csv(df, out_dir / "profile.csv")
    return df
