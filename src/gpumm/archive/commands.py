"""The steps that record and replay runs: the provenance, replaying an archived variant or study, archiving.

Each step is ``python -m gpumm STEP``; ``gpumm.cli`` collects every stage's steps (:func:`register`).
"""

import contextlib
import json
import sys
import time
from pathlib import Path

from gpumm.setup import catalog, paths


def _archive(path: str) -> Path:
    """An archive folder, given as the folder or as its raw/provenance.json (ArchiveError where it is neither)."""
    from gpumm.archive import reference

    p = Path(path)
    p = p.parent.parent if p.is_file() else p
    if not (p / "raw" / "provenance.json").is_file():
        raise reference.ArchiveError(f"{path}: not an archive (no raw/provenance.json); the archives: data/reference/*")
    return p


def cmd_provenance(args):
    from gpumm.archive import provenance

    digests = {vid: catalog.from_id(vid).digest() for vid in args.variants.split(",")}
    config = json.loads(args.config) if args.config else None
    provenance.write(provenance.collect(args.config_digest, digests, args.why, config), Path(args.out))


def cmd_replay(args):
    from gpumm.archive import replay

    print(replay.step(catalog.from_id(args.variant), args.part, _archive(args.archive)))


def cmd_replay_provenance(args):
    from gpumm.archive import replay

    current = {vid: catalog.from_id(vid).digest() for vid in args.variants.split(",")}
    config = json.loads(args.config) if args.config else None
    prov = replay.provenance(
        _archive(args.archive), args.why, current, current_config=config, config_digest=args.config_digest
    )
    differs = prov["data_source"].get("config_differs")
    if differs:
        print(
            "gpumm: the archived run was made with another configuration: "
            + "; ".join(differs)
            + ". The report shows the archived run's settings, not these.",
            file=sys.stderr,
        )


def cmd_replay_study(args):
    from gpumm.archive import replay

    print(replay.study(args.study, _archive(args.archive)))


def cmd_archive(args):
    from gpumm.archive import reference

    dest = reference.write(args.results, name=args.name)
    print(f"archived {args.results} into {dest}")


def cmd_pack_archive(args):
    from gpumm.archive import reference

    n = reference.pack(_archive(str(args.archive)))
    print(f"packed {n} PTX and SASS files of {args.archive} (gzip, lossless); wrote its {reference.MANIFEST}")


RUN_LOG_ENV = "GPUMM_RUN_LOG"  # the workflow's record of every step (results/run/steps.jsonl): gpumm.archive.runrecord


def record_step(log: Path, argv: list[str], started: float, rc: int) -> None:
    """One line of the run record for a step that ended (a CPU baseline's measurement leaves the GPU idle)."""
    from gpumm.archive import runrecord

    gpu = None
    if argv and argv[0] == "measure":
        with contextlib.suppress(Exception):
            gpu = catalog.from_id(runrecord.target(argv)).on_gpu
    runrecord.append(log, argv, started, time.time(), rc, gpu)


def cmd_certify(args):
    from gpumm.archive import certify, reference

    archives = [_archive(p) for p in args.archive] if args.archive else reference.available()
    ids = [v for v in args.variants.split(",") if v] if args.variants else None
    for archive in archives:
        held = sorted(
            {p.parent.name for p in (archive / "raw").glob("*/meta.json")}
            | set(reference.step_digests(archive / "raw"))
        )
        variants = []
        for vid in ids or held:
            try:
                variants.append(catalog.from_id(vid))
            except catalog.CatalogError:
                continue  # a study's folder, or a variant the catalog no longer has
        lines = certify.certify(archive, variants)
        for line in lines:
            print(f"{archive.name}: {line}")
        print(f"{archive.name}: {len(variants) - len(lines)} current, {len(lines)} checked")
    return 0


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
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

    s = sub.add_parser(
        "replay-study", help="copy an archived study (coalescing, bandwidth, overhead, hierarchy, paired, model)"
    )
    s.add_argument(
        "--study",
        choices=["coalescing", "bandwidth", "overhead", "hierarchy", "paired", "model"],
        required=True,
        help="which study",
    )
    s.add_argument("--archive", required=True)
    s.set_defaults(fn=cmd_replay_study)

    s = sub.add_parser("certify", help="certify archives for today's code where its SASS is the archived one")
    s.add_argument("--archive", action="append", help="an archive (default: every one under data/reference/)")
    s.add_argument("--variants", default="", help="comma-separated variant names (default: every one it holds)")
    s.set_defaults(fn=cmd_certify)

    s = sub.add_parser("archive", help="copy a measured results/ into data/reference/<gpu>/")
    s.add_argument("--results", type=Path, default=paths.RESULTS, help="the measured results folder (default results/)")
    s.add_argument(
        "--name",
        help="the archive's folder under data/reference/ (default: the GPU's name, e.g. h100-80gb-hbm3); "
        "letters, digits, dots and dashes",
    )
    s.set_defaults(fn=cmd_archive)

    s = sub.add_parser(
        "pack-archive",
        help="gzip the PTX and SASS of an archive made before they were kept packed, and write its manifest",
    )
    s.add_argument("archive", type=Path, help="the archive's folder, e.g. data/reference/h200")
    s.set_defaults(fn=cmd_pack_archive)
