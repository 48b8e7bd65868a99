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


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
    s = sub.add_parser("collect", help="tidy tables for the notebooks")
    s.add_argument("--variants", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_collect)
