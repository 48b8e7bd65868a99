"""Command line of the pipeline: python -m gpumm STEP ...; each Snakemake rule calls one step."""

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from gpumm.setup import catalog, paths

# pandas, CuPy and the measuring modules are imported by the steps that use them: a replay step copies a few
# files, and the pipeline starts about a hundred of them


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _shapes(text: str) -> list[list[int]]:
    return [[int(d) for d in s.split("x")] for s in text.split(",") if s]


def cmd_build(a):
    from gpumm.build import nvcc as build

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
    from gpumm.run import measure
    from gpumm.setup import config

    v = catalog.from_id(a.variant)
    plan = measure.Plan.from_config(
        config.timing_settings(a.timing),
        shapes=measure.shapes_from(_ints(a.sizes), _shapes(a.shapes)),
        modes=a.modes.split(","),
        seed=a.seed,
        cpu_max_mnk=a.cpu_max_mnk,
        mode_max_size={m: int(n) for m, _, n in (x.partition("=") for x in a.mode_max_size.split(",") if x)},
    )
    started = time.time()
    df = measure.run(v, Path(a.binary) if a.binary else None, plan)
    measure.write(df, measure.meta_for(v, plan, started, df), Path(a.out_dir))
    shapes = df.drop_duplicates(["M", "N", "K", "memory_mode"])
    print(f"{a.variant}: " + ", ".join(f"{s} {n}" for s, n in shapes["status"].value_counts().items()))
    failed = shapes[shapes["status"] == "failed"]
    for _, r in failed.iterrows():
        print(f"  FAILED {r.M}x{r.N}x{r.K} {r.memory_mode}: {r.reason}", file=sys.stderr)
    slow = sorted(df.attrs.get("sets", []), key=lambda x: -x[-1])[:5]
    if slow:
        print("  slowest sets: " + ", ".join(f"{m} {M}x{N}x{K} {sec:.1f} s" for m, M, N, K, sec in slow))


def cmd_profile(a):
    from gpumm.profile import session as profile

    plan = json.loads(Path(a.plan[1:]).read_text() if a.plan.startswith("@") else a.plan)
    metrics = [m for m in a.metrics.split(",") if m]
    status = profile.session(plan, metrics, a.seed, Path(a.results), disabled=a.disabled)
    counts: dict[str, int] = {}
    for st in status.values():
        counts[st] = counts.get(st, 0) + 1
    print("profiles: " + ", ".join(f"{n} {st}" for st, n in sorted(counts.items())))


def cmd_profile_target(a):
    """One product of each planned variant at each size, smallest first, then each access pattern, for ncu to
    catch (no verification: the measurements verified them); writes what it launched, in order."""
    import cupy

    from gpumm.run import coalescing, memory, operations
    from gpumm.run.launch import Launcher

    plan = json.loads(Path(a.plan).read_text())
    mode = memory.get("device")
    launched: list[dict] = []
    marker = None
    if plan.get("marker"):
        fn = cupy.RawModule(path=plan["marker"]).get_function("empty_kernel")

        def marker():
            fn((1,), (32,), ())

    for item in plan["items"]:
        v = catalog.from_id(item["variant"])
        op = operations.get(v.op)
        launcher = Launcher(v, Path(item["binary"]) if item.get("binary") else None)
        for n in sorted(item["sizes"]):
            inputs = [mode.place(h) for h in op.profile_arrays(plan["seed"], n)]
            out = mode.empty(op.output_shape(n, n, n))
            launcher.bind(*inputs, out, scratch=mode.empty)()
            cupy.cuda.Device().synchronize()
            kind = "kernel" if v.is_cuda else "library"
            launched.append({"name": v.id, "kind": kind, "kernel": v.entry if v.is_cuda else "", "size": n})
            if kind == "library":
                if marker is None:
                    raise RuntimeError("a library variant needs the marker kernel (plan: marker)")
                marker()
                cupy.cuda.Device().synchronize()
                launched.append({"name": "", "kind": "marker"})
            del inputs, out
            cupy.get_default_memory_pool().free_all_blocks()
    c = plan.get("coalescing")
    if c:
        cp = c["plan"]
        cplan = coalescing.Plan(
            sizes=cp["sizes"], count=cp["count"], strides=cp["strides"], offsets=cp["offsets"], seed=plan["seed"]
        )
        for cfg in coalescing.profile_target(Path(c["cubin"]), cplan):
            launched.append(
                {
                    "name": "access_patterns",
                    "kind": "kernel",
                    "kernel": coalescing.KERNEL_NAMES[cfg["pattern"]],
                    "config": {k: cfg[k] for k in coalescing.LABEL_KEYS},
                }
            )
    Path(a.launched).write_text(json.dumps(launched))


def cmd_provenance(a):
    from gpumm.archive import provenance

    digests = {vid: catalog.from_id(vid).digest() for vid in a.variants.split(",")}
    config = json.loads(a.config) if a.config else None
    provenance.write(provenance.collect(a.config_digest, digests, a.why, config), Path(a.out))


def _archive(path: str) -> Path:
    """An archive folder, given as the folder or as its raw/provenance.json."""
    p = Path(path)
    return p.parent.parent if p.is_file() else p


def cmd_replay(a):
    from gpumm.archive import replay

    print(replay.step(catalog.from_id(a.variant), a.part, _archive(a.archive)))


def cmd_replay_provenance(a):
    from gpumm.archive import replay

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
    from gpumm.analyse import tables

    variants = [catalog.from_id(v) for v in a.variants.split(",")]
    tables.collect(variants, paths.RESULTS, Path(a.out))


def cmd_pages(a):
    from gpumm.report import execute

    notebooks = [paths.ROOT / "notebooks" / f"{page}.ipynb" for page in a.pages.split(",") if page]
    for nb in notebooks:
        if not nb.is_file():
            raise FileNotFoundError(f"no page notebook {nb}")
    if a.jobs > 1 and len(notebooks) > 1:
        return _pages_side_by_side(a, [nb.stem for nb in notebooks])
    try:
        times = execute.run(notebooks, Path(a.notebooks_out), Path(a.out), {"tables_dir": a.tables})
    except execute.PageError as exc:
        print(exc.__cause__, file=sys.stderr)  # the failing cell's traceback
        print(f"gpumm pages: {exc}", file=sys.stderr)
        return 1
    print(f"{len(times)} pages in {sum(t for _, t in times):.1f} s")
    return 0


def _pages_side_by_side(a, pages: list[str]) -> int:
    """The pages in ``a.jobs`` groups, each a `gpumm pages` process with a kernel of its own, side by side (where
    the machine has the cores, a kernel's start and imports cost less than the pages after the first)."""
    import subprocess

    from gpumm.report import execute

    groups = execute.groups(pages, a.jobs)
    t0 = time.perf_counter()
    procs = []
    for group in groups:
        cmd = [sys.executable, "-m", "gpumm", "pages", "--pages", ",".join(group), "--tables", a.tables]
        cmd += ["--notebooks-out", a.notebooks_out, "--out", a.out, "--jobs", "1"]
        env = {k: v for k, v in os.environ.items() if k != RUN_LOG_ENV}  # the step is recorded once, here
        procs.append(subprocess.Popen(cmd, env=env))
    failed = [",".join(g) for g, p in zip(groups, procs) if p.wait() != 0]
    if failed:
        print(f"gpumm pages: the group of {'; '.join(failed)} failed (see above)", file=sys.stderr)
        return 1
    print(f"{len(pages)} pages in {len(groups)} kernels side by side in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_index(a):
    import pandas as pd

    from gpumm.report import index as report

    t = Path(a.tables)
    report.index(
        json.loads((t / "source.json").read_text()),
        pd.read_csv(t / "variants.csv"),
        pd.read_csv(t / "profiles.csv"),
        Path(a.out),
        pd.read_csv(paths.STUDIES),
        pd.read_csv(t / "study_cost.csv"),
    )


def _rule_and_warmup(text: str):
    """(stopping rule, warm-up) of a step's --timing (the config's timing section as JSON)."""
    from gpumm.run import measure, timing
    from gpumm.setup import config

    t = config.timing_settings(text)
    return measure.rule_from(t), timing.Warmup(count=t["warmups"], seconds=t["warmup_s"])


def _coalescing_plan(a):
    from gpumm.run import coalescing

    p = json.loads(a.plan)
    rule, warmup = _rule_and_warmup(a.timing)
    return coalescing.Plan(
        sizes=p["sizes"],
        count=p["count"],
        strides=p["strides"],
        offsets=p["offsets"],
        seed=a.seed,
        warmup=warmup,
        rule=rule,
    )


def cmd_build_micro(a):
    from gpumm.build import nvcc as build

    m = catalog.microbenchmarks()[a.name]
    report = build.build_file(paths.KERNELS / m["file"], m["entries"], a.arch, Path(a.out_dir))
    print(f"built {a.name} for {a.arch}: " + ", ".join(f"{r['entry']} {r['registers']} registers" for r in report))


def cmd_coalescing(a):
    from gpumm.run import coalescing
    from gpumm.setup import files

    df = coalescing.run(Path(a.cubin), _coalescing_plan(a))
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    failed = df[df.status == "failed"]
    for r in failed.itertuples():
        print(f"  FAILED {r.pattern} n={r.n} stride={r.stride} offset={r.offset}: {r.reason}", file=sys.stderr)
    print(
        f"access patterns: {df.drop_duplicates(['pattern', 'n', 'stride', 'offset']).status.value_counts().to_dict()}"
    )


def cmd_overhead(a):
    from gpumm.run import overhead
    from gpumm.setup import files

    df = overhead.run(Path(a.cubin), a.warmups, a.repeats)
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    med = df.groupby(["what", "method"]).ms.median() * 1e3
    print("launch overhead, µs per launch (median):\n" + med.round(2).to_string())


def cmd_hierarchy(a):
    from gpumm.run import hierarchy
    from gpumm.setup import files

    plan = hierarchy.Plan(warmups=a.warmups, repeats=a.repeats, seed=a.seed)
    df = hierarchy.run(Path(a.cubin), plan)
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    ok = df[df.status == "ok"]
    print(f"memory hierarchy: {df.drop_duplicates(['kind', 'level', 'bytes']).status.value_counts().to_dict()}")
    print(ok[ok.kind == "bandwidth"].groupby("level").gbs.median().round(0).to_string())


def cmd_bandwidth(a):
    from gpumm.run import bandwidth
    from gpumm.setup import files

    rule, warmup = _rule_and_warmup(a.timing)
    df = bandwidth.run(a.bytes, warmup, rule)
    files.write_csv(df, Path(a.out_dir) / "samples.csv")
    print(df.groupby("transfer").gbs.median().round(1).to_string())


def cmd_replay_study(a):
    from gpumm.archive import replay

    print(replay.study(a.study, _archive(a.archive)))


def cmd_import_profile(a):
    from gpumm.profile import nvprof
    from gpumm.setup import files

    v = catalog.from_id(a.variant)  # an unknown variant stops here, naming the allowed ones
    df = nvprof.import_file(Path(a.file), v.id, a.size, a.kernel)
    dest = paths.IMPORTED / v.id / f"{Path(a.file).stem}.csv"
    files.write_csv(df, dest)
    mapped = df[~df.metric.str.startswith("nvprof:")].metric.nunique()
    print(
        f"imported {a.file} for {v.id}: {df.kernel.nunique()} kernel(s), {df.metric.nunique()} metrics "
        f"({mapped} mapped to Nsight Compute names) -> {dest}; the report's profiles page shows it, marked imported"
    )


def cmd_worker(a):
    from gpumm.run import worker

    if a.stop:
        print("stopped the GPU worker" if worker.stop() else "no GPU worker was running")
        return 0
    return worker.serve(Path(a.socket) if a.socket else worker.socket_path(), a.idle)


def cmd_archive(a):
    from gpumm.archive import reference

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
    "--timing": "the config's timing section as JSON (warm-ups, the stopping rule, the budget); missing keys take "
    "the schema's defaults",
    "--seed": "seed of the random inputs",
    "--cpu-max-mnk": "largest M*N*K checked against float64 on the CPU (beyond: float64 cuBLAS on the GPU)",
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
    s.add_argument("--timing", default="")
    s.add_argument(
        "--mode-max-size",
        default="",
        help="MODE=N,...: a memory mode runs only the shapes whose largest side is at most N (e.g. zero_copy=2048)",
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--cpu-max-mnk", type=int, default=128**3)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_measure)

    s = sub.add_parser(
        "profile",
        help="Nsight Compute, one session, on one product of each variant at each size and each access pattern",
    )
    s.add_argument(
        "--plan",
        required=True,
        help='JSON (or @file): {"variants": {id: {"binary": path, "sizes": [n]}}, "coalescing": {"cubin": path, '
        '"plan": the config\'s coalescing section} or null, "marker": the empty kernel\'s cubin}',
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--metrics", default="gpu__time_duration.sum")
    s.add_argument("--disabled", action="store_true")
    s.add_argument("--results", default="results", help="the run's results folder (raw/ and cache/ under it)")
    s.set_defaults(fn=cmd_profile)

    s = sub.add_parser("profile-target", help="the launches ncu profiles (started by the profile step)")
    s.add_argument("--plan", required=True, help="the session's plan file")
    s.add_argument("--launched", required=True, help="where the list of launches, in order, is written")
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
    s.add_argument(
        "--jobs", type=int, default=1, help="kernels side by side, each running a group of the pages (default 1)"
    )
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

    s = sub.add_parser("coalescing", help="verify and time the access patterns")
    s.add_argument("--cubin", required=True)
    s.add_argument("--plan", required=True, help="the config's coalescing section, as JSON")
    s.add_argument("--timing", default="")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out-dir", default="results/raw/coalescing")
    s.set_defaults(fn=cmd_coalescing)

    s = sub.add_parser("bandwidth", help="copy bandwidths: host to device and back, device to device")
    s.add_argument("--bytes", type=int, default=1 << 30)
    s.add_argument("--timing", default="")
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
        "mapped to the Nsight Compute metrics the report uses (see src/gpumm/profile/nvprof.py).",
    )
    s.add_argument("file", help="nvprof --csv output, as nvprof printed it")
    s.add_argument("--variant", required=True, help="the catalog variant the profiled kernel is (e.g. naive)")
    s.add_argument("--size", type=int, default=None, help="square size of the profiled product, if known")
    s.add_argument("--kernel", default=None, help="keep only kernels whose names match this regular expression")
    s.set_defaults(fn=cmd_import_profile)

    s = sub.add_parser(
        "worker",
        help="serve GPU steps in one process that stays up (started by the steps themselves in a measured run)",
    )
    s.add_argument("--socket", default="", help="Unix socket to serve on (default: this checkout's)")
    s.add_argument("--idle", type=float, default=None, help="exit after this many seconds without a step (60)")
    s.add_argument("--stop", action="store_true", help="ask this checkout's running worker to exit")
    s.set_defaults(fn=cmd_worker)

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
    ("gpumm.setup.catalog", "CatalogError"),
    ("gpumm.setup.config", "ConfigError"),
    ("gpumm.build.nvcc", "BuildError"),
    ("gpumm.archive.reference", "ArchiveError"),
    ("gpumm.profile.nvprof", "NvprofError"),
    ("gpumm.run.gpulock", "Busy"),
)


def _user_error(exc: Exception) -> bool:
    """Whether ``exc`` is one of USER_ERRORS (or a missing file); a module not imported raised none of its own."""
    kinds = [FileNotFoundError]
    kinds += [getattr(sys.modules[m], name) for m, name in USER_ERRORS if m in sys.modules]
    return isinstance(exc, tuple(kinds))


# the steps that time or profile on the GPU: each holds the GPU's lock (gpumm.run.gpulock) while it runs
TIMING_STEPS = ("measure", "coalescing", "bandwidth", "overhead", "hierarchy")
RUN_LOG_ENV = "GPUMM_RUN_LOG"  # the workflow's record of every step (results/run/steps.jsonl): gpumm.archive.runrecord


def _gpu_lock(a):
    """The GPU lock for a step that times on the GPU (a CPU variant's measurement does not), else nothing."""
    if a.cmd not in TIMING_STEPS or (a.cmd == "measure" and not catalog.from_id(a.variant).on_gpu):
        return contextlib.nullcontext()
    from gpumm.run import gpulock

    wait = os.environ.get("GPUMM_GPU_WAIT_S")
    what = f"gpumm {a.cmd}" + (f" {a.variant}" if getattr(a, "variant", None) else "")
    return gpulock.hold_current(what, float(wait) if wait else None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    started = time.time()
    rc = 1
    try:
        rc = _main(argv)
        return rc
    finally:
        log = os.environ.get(RUN_LOG_ENV)
        if log and not os.environ.get("GPUMM_IN_WORKER"):  # the client of a worker records its step, once
            from gpumm.archive import runrecord

            gpu = None
            if argv and argv[0] == "measure":  # a CPU baseline's measurement leaves the GPU idle
                with contextlib.suppress(Exception):
                    gpu = catalog.from_id(runrecord.target(argv)).on_gpu
            runrecord.append(Path(log), argv, started, time.time(), rc, gpu)


def _main(argv: list[str]) -> int:
    from gpumm.run import worker

    if worker.wanted(argv):
        return worker.request(argv)
    a = parser().parse_args(argv)
    try:
        with _gpu_lock(a):
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
