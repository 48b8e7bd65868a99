"""The build steps: nvcc on one variant, or on a memory micro-benchmark file.

Each step is ``python -m gpumm STEP``; ``gpumm.cli`` collects every stage's steps (:func:`register`).
"""

from pathlib import Path

from gpumm.setup import catalog, paths


def cmd_build(args):
    from gpumm.build import nvcc as build

    v = catalog.from_id(args.variant)
    if v.kind == "cpu":
        report = build.build_host(v, Path(args.out_dir))
        print(f"built {args.variant} with {report['compiler']} ({report['flags']})")
        return
    report = build.build(v, args.arch, Path(args.out_dir))
    print(
        f"built {args.variant} for {args.arch}: {report['registers']} registers, {report['smem_bytes']} B shared, "
        f"{report['spill_store_bytes']} B spill stores"
    )


def cmd_build_micro(args):
    from gpumm.build import nvcc as build

    m = catalog.microbenchmarks()[args.name]
    report = build.build_file(paths.KERNELS / m["file"], m["entries"], args.arch, Path(args.out_dir))
    print(
        f"built {args.name} for {args.arch}: " + ", ".join(f"{r['entry']} {r['registers']} registers" for r in report)
    )


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
    s = sub.add_parser("build", help="nvcc one variant: cubin, ptx, resource report")
    s.add_argument("--variant", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_build)

    s = sub.add_parser("build-micro", help="nvcc a memory micro-benchmark file")
    s.add_argument("--name", required=True)
    s.add_argument("--arch", required=True)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(fn=cmd_build_micro)
