"""Command line of the pipeline: python -m gpumm STEP ...; each Snakemake rule calls one step."""

import argparse
import json
import sys
import time
from pathlib import Path

from gpumm import catalog, paths

# pandas, CuPy and the measuring modules are imported by the steps that use them: a replay step copies a few
# files, and the pipeline starts about a hundred of them


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _shapes(text: str) -> list[list[int]]:
    return [[int(d) for d in s.split("x")] for s in text.split(",") if s]


def cmd_build(a):
    from gpumm import build

    v = catalog.from_id(a.variant)
    if v.kind == "cpu":
        report = build.build_host(v, Path(a.out_dir))
        print(f"built {a.variant} with {report['compiler']} ({report['flags']})")
        return
    report = build.build(v, a.arch, Path(a.out_dir))
    print(
        f"built {a.variant} for {a.arch}: {report['registers']} registers, {report['smem_bytes']} B shared, "
        f"{report['spill_store_bytes']} B spill stores"
    )


def cmd_measure(a):
    from gpumm import measure

    v = catalog.from_id(a.variant)
    plan = measure.Plan(
        shapes=measure.shapes_from(_ints(a.sizes), _shapes(a.shapes)),
        modes=a.modes.split(","),
        warmups=a.warmups,
        repeats=a.repeats,
        budget_s=a.budget,
        seed=a.seed,
        cpu_max_mnk=a.cpu_max_mnk,
        cpu_repeats=a.cpu_repeats,
        cold_repeats=a.cold_repeats,
        end_to_end_max_size=a.end_to_end_max_size,
    )
    started = time.time()
    df = measure.run(v, Path(a.binary) if a.binary else None, plan)
    measure.write(df, measure.meta_for(v, plan, started, df), Path(a.out_dir))
    shapes = df.drop_duplicates(["M", "N", "K", "memory_mode"])
    print(f"{a.variant}: " + ", ".join(f"{s} {n}" for s, n in shapes["status"].value_counts().items()))
    failed = shapes[shapes["status"] == "failed"]
    for _, r in failed.iterrows():
        print(f"  FAILED {r.M}x{r.N}x{r.K} {r.memory_mode}: {r.reason}", file=sys.stderr)


def cmd_profile(a):
    from gpumm import columns, profile

    v = catalog.from_id(a.variant)
    sizes = _ints(a.sizes)
    if a.disabled:
        columns.write_missing_profile(v.id, max(sizes), profile.DISABLED, Path(a.out_dir))
        return
    if not v.on_gpu:
        columns.write_missing_profile(v.id, max(sizes), "a CPU variant: no GPU kernel to profile", Path(a.out_dir))
        return
    binary = Path(a.binary) if a.binary else None
    df = profile.run(v, binary, sizes, a.seed, a.metrics.split(","), Path(a.out_dir))
    print(f"profile {a.variant} at {sizes}: {df['status'].iloc[0]} ({len(df)} rows)")


def cmd_profile_target(a):
    """One product of a variant at each size, smallest first, for ncu to catch (no verification)."""
    import cupy

    from gpumm import memory, operations
    from gpumm.launch import Launcher

    v = catalog.from_id(a.variant)
    op = operations.get(v.op)
    mode = memory.get("device")
    launcher = Launcher(v, Path(a.binary) if a.binary else None)
    for n in sorted(_ints(a.sizes)):
        inputs = [mode.place(h) for h in op.profile_arrays(a.seed, n)]
        out = mode.empty(op.output_shape(n, n, n))
        launcher.bind(*inputs, out)()
        cupy.cuda.Device().synchronize()
        del inputs, out


def cmd_provenance(a):
    from gpumm import provenance

    digests = {vid: catalog.from_id(vid).digest() for vid in a.variants.split(",")}
    config = json.loads(a.config) if a.config else None
    provenance.write(provenance.collect(a.config_digest, digests, a.why, config), Path(a.out))


def _archive(path: str) -> Path:
    """An archive folder, given as the folder or as its raw/provenance.json."""
    p = Path(path)
    return p.parent.parent if p.is_file() else p


def cmd_replay(a):
    from gpumm import replay

    print(replay.step(catalog.from_id(a.variant), a.part, _archive(a.archive)))


def cmd_replay_provenance(a):
    from gpumm import replay

    current = {vid: catalog.from_id(vid).digest() for vid in a.variants.split(",")}
    config = json.loads(a.config) if a.config else None
    prov = replay.provenance(_archive(a.archive), a.why, current, current_config=config, config_digest=a.config_digest)
    differs = prov["data_source"].get("config_differs")
    if differs:
        print(
            "gpumm: the archived run was made with another configuration: "
            + "; ".join(differs)
            + ". The report shows the archived run's settings, not these.",
            file=sys.stderr,
        )


def cmd_collect(a):
    from gpumm import tables

    variants = [catalog.from_id(v) for v in a.variants.split(",")]
    tables.collect(variants, paths.RESULTS, Path(a.out))


def cmd_pages(a):
    from gpumm import execute

    notebooks = [paths.ROOT / "notebooks" / f"{page}.ipynb" for page in a.pages.split(",") if page]
    for nb in notebooks:
        if not nb.is_file():
            raise FileNotFoundError(f"no page notebook {nb}")
    try:
        times = execute.run(notebooks, Path(a.notebooks_out), Path(a.out), {"tables_dir": a.tables})
    except execute.PageError as exc:
        print(exc.__cause__, file=sys.stderr)  # the failing cell's traceback
        print(f"gpumm pages: {exc}", file=sys.stderr)
        return 1
    print(f"{len(times)} pages in {sum(t for _, t in times):.1f} s")
    return 0


def cmd_index(a):
    import pandas as pd

    from gpumm import report

    t = Path(a.tables)
    report.index(
        json.loads((t / "source.json").read_text()),
        pd.read_csv(t / "variants.csv"),
        pd.read_csv(t / "profiles.csv"),
        Path(a.out),
        pd.read_csv(paths.STUDIES),
    )


def _coalescing_plan(a):
    from gpumm import coalescing

    p = json.loads(a.plan)
    return coalescing.Plan(
        sizes=p["sizes"],
        count=p["count"],
        strides=p["strides"],
        offsets=p["offsets"],
        warmups=a.warmups,
        repeats=a.repeats,
        seed=a.seed,
    )


def cmd_build_micro(a):
    from gpumm import build

    m = catalog.microbenchmarks()[a.name]
    report = build.build_file(paths.KERNELS / m["file"], m["entries"], a.arch, Path(a.out_dir))
    print(f"built {a.name} for {a.arch}: " + ", ".join(f"{r['entry']} {r['registers']} registers" for r in report))


def cmd_coalescing(a):
    from gpumm import coalescing, files

    df = coalescing.run(Path(a.cubin), _coalescing_plan(a))
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    failed = df[df.status == "failed"]
    for r in failed.itertuples():
        print(f"  FAILED {r.pattern} n={r.n} stride={r.stride} offset={r.offset}: {r.reason}", file=sys.stderr)
    print(
        f"access patterns: {df.drop_duplicates(['pattern', 'n', 'stride', 'offset']).status.value_counts().to_dict()}"
    )


def cmd_coalescing_target(a):
    from gpumm import coalescing

    launched = coalescing.profile_target(Path(a.cubin), _coalescing_plan(a))
    if a.launched:
        Path(a.launched).write_text(json.dumps(launched))


def cmd_overhead(a):
    from gpumm import files, overhead

    df = overhead.run(Path(a.cubin), a.warmups, a.repeats)
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    med = df.groupby(["what", "method"]).ms.median() * 1e3
    print("launch overhead, µs per launch (median):\n" + med.round(2).to_string())


def cmd_hierarchy(a):
    from gpumm import files, hierarchy

    plan = hierarchy.Plan(warmups=a.warmups, repeats=a.repeats, seed=a.seed)
    df = hierarchy.run(Path(a.cubin), plan)
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    ok = df[df.status == "ok"]
    print(f"memory hierarchy: {df.drop_duplicates(['kind', 'level', 'bytes']).status.value_counts().to_dict()}")
    print(ok[ok.kind == "bandwidth"].groupby("level").gbs.median().round(0).to_string())


def cmd_profile_coalescing(a):
    import pandas as pd

    from gpumm import coalescing, columns, files, profile

    if a.disabled:
        row = {"variant": "access_patterns", "status": "missing", "reason": profile.DISABLED}
        files.write_rows([row], columns.PROFILE, Path(a.out_dir) / "profile.csv")
        print(f"profile access patterns: missing ({profile.DISABLED})")
        return
    plan = _coalescing_plan(a)
    launched = Path(a.out_dir) / "launched.json"
    launched.unlink(missing_ok=True)
    target = [
        sys.executable,
        "-m",
        "gpumm",
        "coalescing-target",
        "--cubin",
        a.cubin,
        "--plan",
        a.plan,
        "--seed",
        str(a.seed),
        "--launched",
        str(launched),
    ]
    # at most every configuration of the plan (each size in both regimes); the target writes the configurations
    # it really launched, and the labels come from that list
    count = len(coalescing.configurations(plan, coalescing.Device(1, 1, 1 << 62, 1 << 62)))
    df = profile.run_target(
        target, "regex:read_|copy4", count, a.metrics.split(","), Path(a.out_dir), {"variant": "access_patterns"}
    )
    configs = json.loads(launched.read_text()) if launched.is_file() else []
    if (df.status == "ok").all() and configs:  # ncu numbers the launches 0, 1, ... in the target's order
        keys = ["pattern", "regime", "n", "copies", "stride", "offset"]
        labels = pd.DataFrame(configs)[keys].assign(launch=range(len(configs)))
        df = df.drop(columns=keys, errors="ignore")
        df = df.assign(launch=df.launch.astype(int)).merge(labels, on="launch", how="left")
        files.write_csv(df, Path(a.out_dir) / "profile.csv")
    print(f"profile access patterns: {df.status.iloc[0]} ({len(df)} rows)")


def cmd_bandwidth(a):
    from gpumm import bandwidth, files

    df = bandwidth.run(a.bytes, a.warmups, a.repeats)
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    print(df.groupby("transfer").gbs.median().round(1).to_string())


def cmd_replay_study(a):
    from gpumm import replay

    print(replay.study(a.study, _archive(a.archive)))


def cmd_import_profile(a):
    from gpumm import files, nvprof

    v = catalog.from_id(a.variant)  # an unknown variant stops here, naming the allowed ones
    df = nvprof.import_file(Path(a.file), v.id, a.size, a.kernel)
    dest = paths.IMPORTED / v.id / f"{Path(a.file).stem}.csv"
    files.write_csv(df, dest)
    mapped = df[~df.metric.str.startswith("nvprof:")].metric.nunique()
    print(
        f"imported {a.file} for {v.id}: {df.kernel.nunique()} kernel(s), {df.metric.nunique()} metrics "
        f"({mapped} mapped to Nsight Compute names) -> {dest}; the report's profiles page shows it, marked imported"
    )


def cmd_archive(a):
    from gpumm import reference

    dest = reference.write(a.results, name=a.name)
    print(f"archived {a.results} into {dest}")


# Help of the options every step shares; an option not here has its own help where it is added.
OPTION_HELP = {
    "--variant": "variant name from kernels/catalog.yaml, e.g. tiled_tile16",
    "--variants": "comma-separated variant names",
    "--arch": "nvcc architecture, e.g. sm_90 (host for a C baseline)",
    "--out-dir": "folder the outputs are written to (created if missing)",
    "--out": "file the output is written to",
    "--binary": "the built kernel: kernel.cubin, or libkernel.so for a compiled CPU baseline",
    "--cubin": "the built cubin of the micro-benchmark",
    "--modes": "comma-separated memory modes: device, zero_copy, managed, managed_prefetch",
    "--warmups": "untimed samples before the timed ones",
    "--repeats": "timed samples, every one kept",
    "--budget": "seconds one shape may take; longer ones are skipped with the reason",
    "--seed": "seed of the random inputs",
    "--cpu-max-mnk": "largest M*N*K checked against float64 on the CPU (beyond: float64 cuBLAS on the GPU)",
    "--cpu-repeats": "timed calls of a CPU variant, after one warm-up",
    "--cold-repeats": "cold runs of the managed modes",
    "--end-to-end-max-size": "largest M, N and K also timed end to end (copies included)",
    "--metrics": "comma-separated Nsight Compute metric names",
    "--disabled": "write a profile table saying profiling is disabled, and profile nothing",
    "--sizes": "comma-separated square sizes",
    "--config-digest": "digest of the effective configuration",
    "--why": "why the run measures or replays (for the report)",
    "--archive": "an archived run: data/reference/<gpu> or its raw/provenance.json",
    "--part": "raw: samples, metadata, profile; build: resource report, PTX and SASS; all: both",
    "--tables": "folder of the tidy tables (results/tables)",
    "--name": "micro-benchmark name from the catalog's microbenchmarks",
    "--bytes": "bytes per copy",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gpumm", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("build", help="nvcc one variant: cubin, ptx, resource report")
    s.add_argument("--variant", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_build)

    s = sub.add_parser("measure", help="verify and time one variant")
    s.add_argument("--variant", required=True)
    s.add_argument("--binary", help="the built kernel (kernel.cubin, or libkernel.so for a compiled CPU baseline)")
    s.add_argument("--sizes", default="", help="comma-separated square sizes (M = N = K)")
    s.add_argument("--shapes", default="", help="comma-separated MxNxK")
    s.add_argument("--modes", default="device")
    s.add_argument("--warmups", type=int, default=3)
    s.add_argument("--repeats", type=int, default=20)
    s.add_argument("--budget", type=float, default=20.0)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--cpu-max-mnk", type=int, default=128**3)
    s.add_argument("--cpu-repeats", type=int, default=10)
    s.add_argument("--cold-repeats", type=int, default=10)
    s.add_argument("--end-to-end-max-size", type=int, default=2048)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_measure)

    s = sub.add_parser("profile", help="Nsight Compute on one product of one variant at each size")
    s.add_argument("--variant", required=True)
    s.add_argument("--binary")
    s.add_argument("--sizes", required=True, help="comma-separated square sizes")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--metrics", default="gpu__time_duration.sum")
    s.add_argument("--disabled", action="store_true")
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_profile)

    s = sub.add_parser("profile-target", help="one product at each size, for ncu")
    s.add_argument("--variant", required=True)
    s.add_argument("--binary")
    s.add_argument("--sizes", required=True)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(fn=cmd_profile_target)

    s = sub.add_parser("provenance", help="record where this run measures")
    s.add_argument("--variants", required=True)
    s.add_argument("--config-digest", required=True)
    s.add_argument("--config", default="", help="the effective configuration, as JSON")
    s.add_argument("--why", default="")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_provenance)

    s = sub.add_parser("replay", help="copy one variant's archived results")
    s.add_argument("--variant", required=True)
    s.add_argument("--archive", required=True)
    s.add_argument("--part", choices=["raw", "build", "all"], default="raw")
    s.set_defaults(fn=cmd_replay)

    s = sub.add_parser("replay-provenance", help="the archived run's provenance, marked replayed")
    s.add_argument("--archive", required=True)
    s.add_argument("--variants", required=True)
    s.add_argument("--why", default="")
    s.add_argument("--config", default="", help="this run's effective configuration, as JSON")
    s.add_argument("--config-digest", default="")
    s.set_defaults(fn=cmd_replay_provenance)

    s = sub.add_parser("collect", help="tidy tables for the notebooks")
    s.add_argument("--variants", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_collect)

    s = sub.add_parser(
        "pages", help="execute the page notebooks (papermill, one kernel) and render each to the report's HTML"
    )
    s.add_argument("--pages", required=True, help="page names in order, comma-separated (notebooks/<page>.ipynb)")
    s.add_argument("--tables", required=True, help="the tidy tables the notebooks read (results/tables)")
    s.add_argument("--notebooks-out", required=True, help="where the executed notebooks go (results/notebooks)")
    s.add_argument("--out", required=True, help="where the HTML pages go (results/report)")
    s.set_defaults(fn=cmd_pages)

    s = sub.add_parser("index", help="the report's front page")
    s.add_argument("--tables", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_index)

    s = sub.add_parser("build-micro", help="nvcc a memory micro-benchmark file")
    s.add_argument("--name", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_build_micro)

    for name, fn, help_ in (
        ("coalescing", cmd_coalescing, "verify and time the access patterns"),
        ("coalescing-target", cmd_coalescing_target, "one launch of each access pattern, for ncu"),
        ("profile-coalescing", cmd_profile_coalescing, "Nsight Compute on every access pattern"),
    ):
        s = sub.add_parser(name, help=help_)
        s.add_argument("--cubin", required=True)
        s.add_argument("--plan", required=True, help="the config's coalescing section, as JSON")
        s.add_argument("--warmups", type=int, default=3)
        s.add_argument("--repeats", type=int, default=20)
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--metrics", default="gpu__time_duration.sum")
        s.add_argument("--out-dir", default="results/raw/coalescing")
        s.add_argument("--launched", default="", help="coalescing-target: write the configurations launched here")
        s.add_argument("--disabled", action="store_true", help="profile-coalescing: profile nothing, say why")
        s.set_defaults(fn=fn)

    s = sub.add_parser("bandwidth", help="copy bandwidths: host to device and back, device to device")
    s.add_argument("--bytes", type=int, default=1 << 30)
    s.add_argument("--warmups", type=int, default=3)
    s.add_argument("--repeats", type=int, default=20)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_bandwidth)

    s = sub.add_parser("overhead", help="the launch-overhead floor of each timing method (an empty kernel)")
    s.add_argument("--cubin", required=True)
    s.add_argument("--warmups", type=int, default=3)
    s.add_argument("--repeats", type=int, default=20)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_overhead)

    s = sub.add_parser("hierarchy", help="latency and bandwidth of each memory level (S3-MEM)")
    s.add_argument("--cubin", required=True)
    s.add_argument("--warmups", type=int, default=2)
    s.add_argument("--repeats", type=int, default=5)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_hierarchy)

    s = sub.add_parser("replay-study", help="copy an archived study (coalescing, bandwidth, overhead, hierarchy)")
    s.add_argument(
        "--study", choices=["coalescing", "bandwidth", "overhead", "hierarchy"], required=True, help="which study"
    )
    s.add_argument("--archive", required=True)
    s.set_defaults(fn=cmd_replay_study)

    s = sub.add_parser(
        "import-profile",
        help="import an nvprof --csv file (metrics, events, GPU trace or summary) as a variant's profile",
        description="Read nvprof CSV output into data/imported/<variant>/, where the report picks it up, "
        "mapped to the Nsight Compute metrics the report uses (see src/gpumm/nvprof.py).",
    )
    s.add_argument("file", help="nvprof --csv output, as nvprof printed it")
    s.add_argument("--variant", required=True, help="the catalog variant the profiled kernel is (e.g. naive)")
    s.add_argument("--size", type=int, default=None, help="square size of the profiled product, if known")
    s.add_argument("--kernel", default=None, help="keep only kernels whose names match this regular expression")
    s.set_defaults(fn=cmd_import_profile)

    s = sub.add_parser("archive", help="copy a measured results/ into data/reference/<gpu>/")
    s.add_argument("--results", type=Path, default=paths.RESULTS, help="the measured results folder (default results/)")
    s.add_argument(
        "--name",
        help="the archive's folder under data/reference/ (default: the GPU's name, e.g. h100-80gb-hbm3); "
        "letters, digits, dots and dashes",
    )
    s.set_defaults(fn=cmd_archive)
    for step in sub.choices.values():
        for action in step._actions:
            if not action.help and action.option_strings:
                action.help = OPTION_HELP.get(action.option_strings[0])
    return p


MISSING = {  # a module a step needs that this installation lacks: what it is and how to get it
    "cupy": "CuPy is not installed: on a machine with an NVIDIA GPU, pip install -e '.[cuda13]' (or .[cuda12])",
    "pynvml": "nvidia-ml-py is not installed: pip install -e '.[cuda13]' (or .[cuda12]) brings it",
    "threadpoolctl": "threadpoolctl is not installed: pip install -e . brings it",
}


USER_ERRORS = (  # errors that describe a user's input or setup: one line, exit 2, no traceback
    ("gpumm.catalog", "CatalogError"),
    ("gpumm.build", "BuildError"),
    ("gpumm.reference", "ArchiveError"),
    ("gpumm.nvprof", "NvprofError"),
)


def _user_error(exc: Exception) -> bool:
    """Whether ``exc`` is one of USER_ERRORS (or a missing file); a module not imported raised none of its own."""
    kinds = [FileNotFoundError]
    kinds += [getattr(sys.modules[m], name) for m, name in USER_ERRORS if m in sys.modules]
    return isinstance(exc, tuple(kinds))


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    try:
        rc = a.fn(a)
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in MISSING:
            raise
        print(f"gpumm {a.cmd}: {MISSING[root]}", file=sys.stderr)
        return 2
    except Exception as exc:
        if _user_error(exc):
            print(f"gpumm {a.cmd}: {exc}", file=sys.stderr)
            return 2
        # CUDA reports a missing or unusable GPU as its own error types
        if type(exc).__module__.startswith(("cupy", "cupy_backends")):
            print(f"gpumm {a.cmd}: no usable CUDA GPU ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
        raise
    return rc or 0
