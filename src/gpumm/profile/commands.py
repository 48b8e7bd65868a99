"""The profile steps: one Nsight Compute session for every variant and access pattern, the launches it profiles,
and nvprof imports.

Each step is ``python -m gpumm STEP``; ``gpumm.cli`` collects every stage's steps (:func:`register`).
"""

import json
from pathlib import Path

from gpumm.setup import catalog, files, paths


def cmd_profile(args):
    from gpumm.profile import session as profile

    plan = json.loads(Path(args.plan[1:]).read_text() if args.plan.startswith("@") else args.plan)
    metrics = [m for m in args.metrics.split(",") if m]
    status = profile.session(plan, metrics, args.seed, Path(args.results), disabled=args.disabled)
    counts: dict[str, int] = {}
    for st in status.values():
        counts[st] = counts.get(st, 0) + 1
    print("profiles: " + ", ".join(f"{n} {st}" for st, n in sorted(counts.items())))


def cmd_profile_target(args):
    """One product of each planned variant at each size, smallest first, then each access pattern, for ncu to
    catch (no verification: the measurements verified them); writes what it launched, in order."""
    import cupy

    from gpumm.run import coalescing, memory, operations
    from gpumm.run.launch import Launcher

    plan = json.loads(Path(args.plan).read_text())
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
            inputs = [mode.place(h) for h in op.profile_inputs(plan["seed"], n)]
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
    Path(args.launched).write_text(files.json_text(launched))


def cmd_import_profile(args):
    from gpumm.profile import nvprof
    from gpumm.setup import files

    v = catalog.from_id(args.variant)  # an unknown variant stops here, naming the allowed ones
    df = nvprof.import_file(Path(args.file), v.id, args.size, args.kernel)
    dest = paths.IMPORTED / v.id / f"{Path(args.file).stem}.csv"
    files.write_csv(df, dest)
    mapped = df[~df.metric.str.startswith("nvprof:")].metric.nunique()
    print(
        f"imported {args.file} for {v.id}: {df.kernel.nunique()} kernel(s), {df.metric.nunique()} metrics "
        f"({mapped} mapped to Nsight Compute names) -> {dest}; the report's profiles page shows it, marked imported"
    )


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
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
