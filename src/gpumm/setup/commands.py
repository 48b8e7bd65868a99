"""The setup step: check configuration files as the workflow would, before a run.

Snakemake reads a ``--configfile`` before it reads the workflow, and says of a YAML error only that the file is
not valid YAML; ``python -m gpumm check-config FILE ...`` names the file, line and column, then checks the
merged configuration (config.yaml, then each FILE over it, as Snakemake merges them) against the schema and the
catalog, as the workflow does. ``gpumm.cli`` collects every stage's steps (:func:`register`).
"""

from pathlib import Path

from gpumm.setup import paths


def _merge(base: dict, over: dict) -> dict:
    """``over`` merged into ``base`` key by key (mappings merged, anything else replaced), as Snakemake does."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def cmd_check_config(args):
    from gpumm.setup import config, yamlfile

    files = [paths.ROOT / "config.yaml", *map(Path, args.files)]
    merged = {}
    for f in files:
        if not f.is_file():
            raise config.ConfigError(f"config file {paths.shown(f)}: not a file")
        try:  # strictly, as the workflow reads config.yaml: a key given twice, a YAML error with its line
            data = yamlfile.load(f, paths.shown(f)) or {}
        except yamlfile.YamlFileError as exc:
            raise config.ConfigError(f"config file {exc}") from None
        if not isinstance(data, dict):
            raise config.ConfigError(f"config file {paths.shown(f)}: not a mapping of keys at its top level")
        merged = _merge(merged, data)
    config.coerce(merged)
    problem = config.explain(merged)
    if problem:
        raise config.ConfigError(problem)
    from snakemake.utils import validate

    validate(merged, str(paths.CONFIG_SCHEMA))  # fills the schema's defaults, as the workflow's reading does
    variants = config.check(merged)
    print(f"{' + '.join(paths.shown(f) for f in files)}: a valid configuration ({len(variants)} variants)")
    return 0


def register(sub) -> None:
    """Add this stage's steps to the command line's subparsers."""
    s = sub.add_parser("check-config", help="check config files as the workflow would (YAML line and column)")
    s.add_argument("files", nargs="*", help="config files given to snakemake with --configfile")
    s.set_defaults(fn=cmd_check_config)
