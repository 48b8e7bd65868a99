"""The analyse step: the run's raw files into the tidy tables the pages read.

Each step is ``python -m gpumm STEP``; ``gpumm.cli`` collects every stage's steps (:func:`register`).
"""

from pathlib import Path

from gpumm.setup import catalog, paths


def cmd_collect(args):
    from gpumm.analyse import tables
    from gpumm.setup import values

    variants = [catalog.from_id(v) for v in args.variants.split(",")]
    values.check_folder(paths.RESULTS)  # no table is made from a value that cannot be (the file, row, column)
    tables.collect(variants, paths.RESULTS, Path(args.out))


def cmd_model_rule(args):
    """The dispatcher's rule from the model step's samples and checks (gpumm.analyse.dispatch.fit)."""
    import pandas as pd

    from gpumm.analyse import dispatch, layers
    from gpumm.setup import files, values

    raw = Path(args.raw)
    samples, checks = pd.read_csv(raw / "samples.csv"), pd.read_csv(raw / "checks.csv")
    reference = args.reference or ("cublas" if args.fp32 else "cublas_bf16")
    if reference not in set(samples.kernel):
        timed = ", ".join(sorted(set(samples.kernel))) or "none"
        raise values.ValueProblem(
            f"model-rule: the reference {reference!r} is not among the kernels {raw / 'samples.csv'} timed ({timed}):"
            " name it with --reference"
        )
    if args.fp32:
        kernels = sorted(set(samples.kernel) - {reference})
        meta = layers.step_meta(raw)
        # the GPU's SMs as the step recorded them (a step before that: the tiles' fill alone)
        blocks = dispatch.blocks_of(kernels) if meta.get("sm_count") else None
        rule = dispatch.fit_fp32(samples, checks, reference, dispatch.tiles_of(kernels), blocks, meta.get("sm_count"))
    else:
        rule = dispatch.fit(samples, checks, reference)
    files.write_text(Path(args.out), files.json_text(rule, indent=1))
    winners = sorted({p["ranking"][0] for p in rule["points"] if p["ranking"]})
    print(f"model-rule: {len(rule['points'])} fitted shapes; fastest somewhere: {', '.join(winners)}")


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
    s = sub.add_parser("collect", help="tidy tables for the notebooks")
    s.add_argument("--variants", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_collect)

    s = sub.add_parser("model-rule", help="fit the dispatcher's rule on the model step's shapes")
    s.add_argument("--raw", required=True, help="the model step's folder (samples.csv, checks.csv)")
    s.add_argument(
        "--reference",
        default=None,
        help="the kernel every other is held to, never picked (default: cublas_bf16; with --fp32, cublas)",
    )
    s.add_argument(
        "--fp32",
        action="store_true",
        help="the FP32 rule (model.fp32's fit step): every side of a shape counts alike (no tokens axis), and a "
        "pick weighs how fully each build's tiles cover the shape",
    )
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_model_rule)
