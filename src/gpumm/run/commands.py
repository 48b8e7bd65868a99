"""The steps that run on the GPU: measure one variant, the races paired, a model's layers, the coalescing,
bandwidth, launch-overhead and hierarchy studies, and the GPU worker that serves them in a measured run.

Each step is ``python -m gpumm STEP``; ``gpumm.cli`` collects every stage's steps (:func:`register`).
"""

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from gpumm.setup import catalog, options


def _plan(text: str) -> dict:
    """--plan: the config's coalescing section as JSON, defaults filled in, checked as the config's is."""
    import argparse

    from gpumm.setup import config

    given = _json_object("the config's coalescing section")(text)
    plan = config.defaults("coalescing") | given
    problem = config.explain_sections(coalescing=plan)
    if problem:
        raise argparse.ArgumentTypeError(problem.replace("config: coalescing.", "", 1))
    return plan


def _coalescing_plan(args):
    from gpumm.run import coalescing

    p = args.plan
    rule, warmup = _rule_and_warmup(args.timing)
    return coalescing.Plan(
        sizes=p["sizes"],
        count=p["count"],
        strides=p["strides"],
        offsets=p["offsets"],
        seed=args.seed,
        warmup=warmup,
        rule=rule,
    )


def _rule_and_warmup(text: str):
    """(stopping rule, warm-up) of a step's --timing (the config's timing section as JSON)."""
    from gpumm.run import measure, timing
    from gpumm.setup import config

    t = config.timing_settings(text)
    return measure.rule_from(t), timing.Warmup(count=t["warmups"], seconds=t["warmup_s"])


def _measure_settings(args) -> dict:
    """The step's settings: --settings (the config's keys, as the workflow hands them), then each option given."""
    from gpumm.run import settings
    from gpumm.setup import config

    def parsed(text: str, what: str) -> dict:
        try:
            return json.loads(text) if text and text.strip() else {}
        except json.JSONDecodeError as exc:
            raise config.ConfigError(f"{what}: not JSON ({exc})") from None

    given = parsed(args.settings, "--settings")
    if args.sizes is not None or args.shapes is not None:
        given["shapes"] = [[n, n, n] for n in args.sizes or []] + (args.shapes or [])
    if args.modes is not None:
        given["memory_modes"] = args.modes.split(",")
    if args.timing is not None:
        mine = parsed(args.timing, "--timing")
        try:
            config.timing_settings(mine)  # its own faults named as the option
        except config.ConfigError as exc:
            raise config.ConfigError(str(exc).replace("config: timing.", "--timing: ", 1)) from None
        given["timing"] = {**given.get("timing", {}), **mine}
    if args.mode_max_size is not None:
        given["memory_study_max_size"] = args.mode_max_size
    if args.seed is not None:
        given["seed"] = args.seed
    if args.cpu_max_mnk is not None:
        given["verify"] = {"cpu_reference_max_mnk": args.cpu_max_mnk}
    checked = settings.checked(given)
    if not checked["shapes"]:
        raise config.ConfigError("nothing to measure: give --sizes or --shapes (or shapes in --settings)")
    return checked


def cmd_measure(args):
    from gpumm.run import measure, memo

    v = catalog.from_id(args.variant)
    plan = measure.Plan.from_settings(_measure_settings(args))
    started = time.time()
    hits, misses = memo.STORE.hits, memo.STORE.misses
    df = measure.run(v, Path(args.binary) if args.binary else None, plan)
    measure.write(df, measure.meta_for(v, plan, started, df), Path(args.out_dir))
    shapes = df.drop_duplicates(["M", "N", "K", "memory_mode"])
    print(f"{args.variant}: " + ", ".join(f"{s} {n}" for s, n in shapes["status"].value_counts().items()))
    failed = shapes[shapes["status"] == "failed"]
    for _, r in failed.iterrows():
        print(f"  FAILED {r.M}x{r.N}x{r.K} {r.memory_mode}: {r.reason}", file=sys.stderr)
    slow = sorted(df.attrs.get("sets", []), key=lambda x: -x[-1])[:5]
    if slow:
        print("  slowest sets: " + ", ".join(f"{m} {M}x{N}x{K} {sec:.1f} s" for m, M, N, K, sec in slow))
    print(
        f"  inputs and references: {memo.STORE.hits - hits} kept from an earlier variant or mode, "
        f"{memo.STORE.misses - misses} made"
    )


def cmd_paired(args):
    import pandas as pd

    from gpumm.run import paired, races
    from gpumm.setup import files, paths

    ids = races.inputs_of(args.plan)
    samples, binaries = {}, {}
    for vid in ids:
        f = paths.raw_dir(vid) / "samples.csv"
        samples[vid] = pd.read_csv(f) if f.is_file() else pd.DataFrame()
        v = catalog.from_id(vid)
        if v.is_cuda:
            binaries[vid] = str(paths.build_dir(vid) / v.binary_name)
    started = time.time()
    df = paired.run(args.plan, args.settings, args.seed, args.cpu_max_mnk, samples, binaries, order=args.order)
    out = Path(args.out_dir)
    files.write_csv(df, out / "samples.csv")
    fields = {"order": args.order, "settings": {**races.SETTINGS, **args.settings}, "plan": args.plan}
    fields |= {"seed": args.seed, "cpu_max_mnk": args.cpu_max_mnk}
    _step_meta(out, "paired", started, ids, ["samples.csv"], fields)
    checks = df[df.phase == "check"]
    print(f"paired: {checks.status.value_counts().to_dict()} checks; {len(df[df.phase == 'sustained'])} blocks timed")
    for r in checks[checks.status == "failed"].itertuples():
        print(f"  FAILED {r.variant} at {r.M}x{r.N}x{r.K}: {r.reason}", file=sys.stderr)


def _step_meta(out: Path, step: str, started: float, ids: list[str], names: list[str], fields: dict) -> None:
    """A step's meta.json: its own fields, then what every GPU step records (the digest of each variant it ran,
    the device and its limits, when it started and for how long, the files it wrote as written)."""
    from gpumm.run import measure
    from gpumm.setup import files, manifest

    meta = {"step": step, **fields, "digests": {vid: catalog.from_id(vid).digest() for vid in ids}}
    meta |= {"device": measure.device_identity(), **_limits()}
    meta |= {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started))}
    meta |= {"seconds": round(time.time() - started, 2), "origin": "measured"}
    meta["files"] = {name: manifest.entry(out / name) for name in names}
    files.write_text(out / "meta.json", files.json_text(meta, indent=1))


def _limits() -> dict:
    """The GPU's power limit and highest SM clock (NVML), for the paired step's record."""
    from gpumm.run import clocks, measure

    w = clocks.Watch(pci_bus_id=measure._bus_id())
    return {"power_limit_w": w.power_limit_w(), "max_sm_mhz": w.max_sm_mhz}


def _json_object(what: str):
    def parse(text: str) -> dict:
        import argparse

        try:
            got = json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
        if not isinstance(got, dict):
            raise argparse.ArgumentTypeError(f"not allowed: {what}, a JSON object")
        return got

    return parse


def cmd_coalescing(args):
    from gpumm.run import coalescing
    from gpumm.setup import files

    df = coalescing.run(Path(args.cubin), _coalescing_plan(args))
    files.write_csv(df, Path(args.out_dir) / "samples.csv")
    failed = df[df.status == "failed"]
    for r in failed.itertuples():
        print(f"  FAILED {r.pattern} n={r.n} stride={r.stride} offset={r.offset}: {r.reason}", file=sys.stderr)
    print(
        f"access patterns: {df.drop_duplicates(['pattern', 'n', 'stride', 'offset']).status.value_counts().to_dict()}"
    )


def cmd_overhead(args):
    from gpumm.run import overhead
    from gpumm.setup import files

    df = overhead.run(Path(args.cubin), args.warmups, args.repeats)
    files.write_csv(df, Path(args.out_dir) / "samples.csv")
    med = df.groupby(["what", "method"]).ms.median() * 1e3
    print("launch overhead, µs per launch (median):\n" + med.round(2).to_string())


def cmd_hierarchy(args):
    from gpumm.run import hierarchy
    from gpumm.setup import files

    plan = hierarchy.Plan(warmups=args.warmups, repeats=args.repeats, seed=args.seed)
    df = hierarchy.run(Path(args.cubin), plan)
    files.write_csv(df, Path(args.out_dir) / "samples.csv")
    ok = df[df.status == "ok"]
    print(f"memory hierarchy: {df.drop_duplicates(['kind', 'level', 'bytes']).status.value_counts().to_dict()}")
    print(ok[ok.kind == "bandwidth"].groupby("level").gbs.median().round(0).to_string())


def cmd_bandwidth(args):
    from gpumm.run import bandwidth
    from gpumm.setup import files

    rule, warmup = _rule_and_warmup(args.timing)
    df = bandwidth.run(args.bytes, warmup, rule)
    files.write_csv(df, Path(args.out_dir) / "samples.csv")
    print(df.groupby("transfer").gbs.median().round(1).to_string())


def cmd_worker(args):
    from gpumm.run import worker

    if args.stop:
        print("stopped the GPU worker" if worker.stop() else "no GPU worker was running")
        return 0
    return worker.serve(Path(args.socket) if args.socket else worker.socket_path(), args.idle)


# the steps that time or profile on the GPU: each holds the GPU's lock (gpumm.run.gpulock) while it runs
TIMING_STEPS = ("measure", "paired", "layers", "coalescing", "bandwidth", "overhead", "hierarchy")


def gpu_lock(args):
    """The GPU lock for a step that times on the GPU (a CPU variant's measurement does not), else nothing."""
    if args.cmd not in TIMING_STEPS or (args.cmd == "measure" and not catalog.from_id(args.variant).on_gpu):
        return contextlib.nullcontext()
    from gpumm.run import gpulock

    wait = os.environ.get("GPUMM_GPU_WAIT_S")
    what = f"gpumm {args.cmd}" + (f" {args.variant}" if getattr(args, "variant", None) else "")
    return gpulock.hold_current(what, float(wait) if wait else None)


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
    s = sub.add_parser("measure", help="verify and time one variant")
    s.add_argument("--variant", required=True)
    s.add_argument("--binary", help="the built kernel (kernel.cubin, or libkernel.so for a compiled CPU baseline)")
    s.add_argument(
        "--settings",
        default="",
        help="every setting as one JSON value, the config's own keys (seed, timing, verify, memory_modes, "
        "memory_study_max_size) and shapes ([[M, N, K], ...]): what the workflow passes; the options below "
        "override it",
    )
    s.add_argument("--sizes", type=options.integers("sizes"), help="comma-separated square sizes (M = N = K)")
    s.add_argument("--shapes", type=options.shapes, help="comma-separated MxNxK")
    s.add_argument("--modes", help="comma-separated memory modes (default device)")
    s.add_argument("--timing")
    s.add_argument(
        "--mode-max-size",
        type=options.mode_limits,
        help="MODE=N,...: a memory mode runs only the shapes whose largest side is at most N (e.g. zero_copy=2048)",
    )
    s.add_argument("--seed", type=options.integer(None, None, "seed"))
    s.add_argument("--cpu-max-mnk", type=options.integer(None, None, "verify", "cpu_reference_max_mnk"))
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_measure)
    _register_paired(sub)
    _register_layers(sub)
    _register_studies(sub)


def _register_paired(sub) -> None:
    s = sub.add_parser("paired", help="time each race's kernels in alternation: paired shares, energy")
    s.add_argument(
        "--plan", required=True, type=_json_object("the races"), help="the races, as JSON (gpumm.run.races.plan)"
    )
    s.add_argument(
        "--settings",
        default={},
        type=_json_object("the config's paired section"),
        help="the config's paired section less its races, as JSON (defaults: gpumm.run.races.SETTINGS)",
    )
    s.add_argument("--seed", type=options.integer(None, None, "seed"), default=0)
    s.add_argument(
        "--cpu-max-mnk", type=options.integer(None, None, "verify", "cpu_reference_max_mnk"), default=1 << 27
    )
    s.add_argument("--order", choices=["forward", "reverse"], default="forward", help="the members' order")
    s.add_argument("--out-dir", default="results/raw/paired")
    s.set_defaults(fn=cmd_paired)


def _register_layers(sub) -> None:
    s = sub.add_parser("layers", help="a real model's layers: every kernel against cuBLAS BF16, weights cold")
    s.add_argument("--model", required=True, type=_json_object("the config's model section"), help="as JSON")
    s.add_argument("--tokens", choices=["fitted", "all"], default="fitted", help="model.tokens, or with held_out")
    s.add_argument("--kernels", required=True, help="comma-separated variants, each loaded from results/build")
    s.add_argument("--timed", default="", help="comma-separated variants timed (default: every kernel)")
    s.add_argument("--rule", help="the dispatcher's rule (JSON file): adds the member dispatch")
    s.add_argument(
        "--read-cubin",
        help="the read_stream micro-benchmark: the card's read rate first (BF16: and each layer's weight read alone)",
    )
    s.add_argument(
        "--fp32",
        action="store_true",
        help="FP32 (op matmul, model.fp32): the fit shapes; with --tokens all, the held-out shapes and the layers "
        "at model.fp32.tokens",
    )
    s.add_argument("--seed", type=options.integer(None, None, "seed"), default=0)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_layers)


def cmd_layers(args):
    from gpumm.run import launch, layers, reads
    from gpumm.setup import files, paths

    spec = args.model
    if args.fp32:
        shapes = layers.fp32_shapes(spec, held_out=args.tokens == "all")
    else:
        held = [t for t in spec.get("held_out", []) if t not in spec["tokens"]] if args.tokens == "all" else []
        # fewest tokens first: the decode shapes before the prefill ones heat the card (the H100 archive of
        # 66a8a07 timed the output layer at one token after the logits at 8192: 7 of its 10 samples 15%
        # slower than the other 3, its SM clock down to 1,410 MHz)
        shapes = sorted(layers.shapes({**spec, "tokens": spec["tokens"] + held}), key=lambda s: s["M"])
    ids = [k for k in args.kernels.split(",") if k]
    kernels = {}
    for vid in ids:
        v = catalog.from_id(vid)
        kernels[vid] = str(paths.build_dir(vid) / v.binary_name) if v.is_cuda else None
    plan = {"kernels": kernels, "timed": [k for k in args.timed.split(",") if k] or ids}
    plan["shapes"] = [{k: s[k] for k in ("layer", "M", "N", "K")} for s in shapes]
    plan["op"] = "matmul" if args.fp32 else "matmul_bf16"
    if args.rule:
        plan["dispatch"] = json.loads(Path(args.rule).read_text())
    out = Path(args.out_dir)
    started = time.time()
    written = {}
    if args.read_cubin:
        written["read.csv"] = reads.read_rate(Path(args.read_cubin))
        if not args.fp32:  # each layer's weight read alone: the ceiling of its decode shapes
            weights = list(dict.fromkeys((s["layer"], s["N"], s["K"]) for s in plan["shapes"]))
            written["ceiling.csv"] = reads.ceiling(Path(args.read_cubin), weights, spec.get("timing", {}))
    samples, checks, per_shape = layers.run(plan, spec.get("timing", {}), args.seed)
    written = {"samples.csv": samples, "checks.csv": checks, "shapes.csv": per_shape} | written
    for name, df in written.items():
        files.write_csv(df, out / name)
    fields = {
        "tokens": args.tokens,
        "fp32": args.fp32,
        "model": spec,
        "plan": {k: v for k, v in plan.items() if k != "shapes"},
    }
    fields |= {"settings": {**layers.SETTINGS, **spec.get("timing", {})}, "seed": args.seed}
    fields["sm_count"] = launch.sm_count()  # the FP32 rule's waves (gpumm.run.rule.load)
    _step_meta(out, "layers", started, ids, list(written), fields)
    failed = checks[checks.status == "failed"]
    print(f"layers: {len(per_shape)} shapes, {len(samples)} samples, {len(failed)} failed checks")
    for r in failed.itertuples():
        print(f"  FAILED {r.kernel} ({r.picks}) at {r.layer} M={r.M}: {r.reason}", file=sys.stderr)


def _register_studies(sub) -> None:
    """The micro-benchmarks' steps and the GPU worker's."""
    s = sub.add_parser("coalescing", help="verify and time the access patterns")
    s.add_argument("--cubin", required=True)
    s.add_argument("--plan", required=True, type=_plan, help="the config's coalescing section, as JSON")
    s.add_argument("--timing", default="")
    s.add_argument("--seed", type=options.integer(None, None, "seed"), default=0)
    s.add_argument("--out-dir", default="results/raw/coalescing")
    s.set_defaults(fn=cmd_coalescing)

    s = sub.add_parser("bandwidth", help="copy bandwidths: host to device and back, device to device")
    s.add_argument("--bytes", type=options.integer(None, None, "bandwidth", "bytes"), default=1 << 30)
    s.add_argument("--timing", default="")
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_bandwidth)

    s = sub.add_parser("overhead", help="the launch-overhead floor of each timing method (an empty kernel)")
    s.add_argument("--cubin", required=True)
    s.add_argument("--warmups", type=options.integer(0), default=3)
    s.add_argument("--repeats", type=options.integer(1), default=20)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_overhead)

    s = sub.add_parser("hierarchy", help="latency and bandwidth of each memory level (S3-MEM)")
    s.add_argument("--cubin", required=True)
    s.add_argument("--warmups", type=options.integer(0), default=2)
    s.add_argument("--repeats", type=options.integer(1), default=5)
    s.add_argument("--seed", type=options.integer(None, None, "seed"), default=0)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_hierarchy)

    s = sub.add_parser(
        "worker",
        help="serve GPU steps in one process that stays up (started by the steps themselves in a measured run)",
    )
    s.add_argument("--socket", default="", help="Unix socket to serve on (default: this checkout's)")
    s.add_argument("--idle", type=float, default=None, help="exit after this many seconds without a step (60)")
    s.add_argument("--stop", action="store_true", help="ask this checkout's running worker to exit")
    s.set_defaults(fn=cmd_worker)
