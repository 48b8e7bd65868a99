"""Checks of config.yaml beyond what Snakemake's validate() reports.

Snakemake's ``validate()`` checks the config against the JSON schema and fills
defaults; its message on failure is long. :func:`explain` turns the first
schema error into one line naming the key and what is allowed, and
:func:`check` adds the checks a schema cannot express (variants against the
catalog, the chosen metric set).
"""

import hashlib
import json
import math
from pathlib import Path

from gpumm.setup import catalog, paths


class ConfigError(ValueError):
    """A config value is not allowed; the message names the key."""


def schema() -> dict:
    return catalog.read_yaml(paths.CONFIG_SCHEMA.read_text(), paths.shown(paths.CONFIG_SCHEMA))


def _key(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def coerce(config, sch: dict | None = None):
    """Turn the strings Snakemake's ``--config`` makes of list items ('[16,32]' gives ['16', '32']) into the
    integers, numbers and booleans the schema asks for, in place, following every keyword that gives a value's
    type (``properties``, ``additionalProperties``, ``items``, ``prefixItems``, ``oneOf`` and ``anyOf``); anything
    else is left for the schema check.
    """
    sch = schema() if sch is None else sch
    if isinstance(config, dict):
        props, extra = sch.get("properties", {}), sch.get("additionalProperties")
        for key in list(config):
            sub = props.get(key, extra if isinstance(extra, dict) else {})
            config[key] = coerce(config[key], sub)
        return config
    if isinstance(config, list):
        first = sch.get("prefixItems", [])  # a tuple's positions have their own types ([M, N, K] of a bf16 shape)
        items = sch.get("items", {})
        for i, item in enumerate(config):
            config[i] = coerce(item, first[i] if i < len(first) else items if isinstance(items, dict) else {})
        return config
    if isinstance(config, str):
        types = _types(sch)
        try:
            if "integer" in types:
                return int(config)
        except ValueError:
            pass
        try:
            if "integer" in types or "number" in types:  # '16.0' for an integer: the float, which the check refuses
                return float(config)  # as it refuses 16.0 in a file (the same verdict)
        except ValueError:
            return config
        if "boolean" in types and config.lower() in ("true", "false"):
            return config.lower() == "true"
    return config


def _types(sch: dict) -> set:
    t = sch.get("type")
    out = set(t) if isinstance(t, list) else ({t} if t else set())
    for alt in sch.get("oneOf", []) + sch.get("anyOf", []):
        out |= _types(alt)
    return out


def explain(config: dict) -> str | None:
    """One line for the most relevant schema error, or None if the config is valid."""
    sch = schema()
    import jsonschema  # a tenth of a second to import: only where a configuration is checked

    error = jsonschema.exceptions.best_match(_validator(sch).iter_errors(config))
    if error is None:
        return None
    key = _key(error.absolute_path)
    desc = _description(sch, list(error.absolute_path))
    value = json.dumps(error.instance) if not isinstance(error.instance, dict) else "this mapping"
    if isinstance(error.instance, float) and not math.isfinite(error.instance):
        return f"config: {key} = {value} is not allowed: not a finite number" + (f". Allowed: {desc}" if desc else "")
    if error.validator == "additionalProperties":
        return f"config: {key}: {error.message}" + (f"; allowed keys: {', '.join(_keys_at(sch, error.absolute_path))}")
    line = f"config: {key} = {value} is not allowed: {error.message}"
    return line + (f". Allowed: {desc}" if desc else "")


def _validator(sch: dict):
    """The schema's validator, with integers that are integers: JSON Schema counts 16.0 as one, and a size of
    16.0 or a tile of 8.0 would pass the check and fail (or name a variant tiled_tile8.0) much later."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    strict = base.TYPE_CHECKER.redefine("integer", lambda _, x: isinstance(x, int) and not isinstance(x, bool))
    # NaN and infinity pass every minimum and maximum (each comparison is false): they are no numbers here
    strict = strict.redefine("number", lambda _, x: _finite(x))
    return jsonschema.validators.extend(base, type_checker=strict)(sch)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def read_files(files) -> str | None:
    """Read each config file (``config.yaml``, every ``--configfile``) strictly before Snakemake does: a key given
    twice or a YAML error is one line naming the file, the line and the column. None where all are fine."""
    from gpumm.setup import yamlfile

    for f in files:
        if not Path(f).is_file():
            continue  # Snakemake names a missing file itself
        try:
            yamlfile.load(Path(f), paths.shown(f))
        except yamlfile.YamlFileError as exc:
            return f"config file {exc}"
    return None


def _keys_at(sch: dict, path) -> list[str]:
    node = sch
    for p in path:
        node = (
            node.get("properties", {}).get(p, node.get("additionalProperties", {}))
            if isinstance(p, str)
            else node.get("items", {})
        )
    return sorted(node.get("properties", {}))


def _description(sch: dict, path: list) -> str:
    """The schema description nearest to ``path`` (walking down as far as it goes)."""
    node, desc = sch, ""
    for p in path:
        if isinstance(p, int):
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(p) or node.get("additionalProperties") or {}
        if not isinstance(node, dict):
            break
        desc = node.get("description", desc)
    return desc


def check(config: dict) -> list[catalog.Variant]:
    """Checks a schema cannot express; returns the expanded variants.

    Raises ConfigError (message: key, value, what is allowed).
    """
    families = catalog.load()  # a fault in the catalog itself is a CatalogError naming the catalog, not the config
    variants = _selected(config, families)
    _memory_study(config, variants, families)
    _metric_sets(config.get("profile", {}))
    _names(config, {v.id for v in variants} | {v.family for v in variants}, families)
    _paired_and_timing(config, families)
    _model(config.get("model", {}), families)
    return variants


def with_archived_candidates(variants: list[catalog.Variant], config: dict, archive) -> list[catalog.Variant]:
    """``variants`` and, where ``tune`` is off, the tuning candidates the config left out whose measurement the
    ``archive`` holds (``raw/<id>/samples.csv``), each after its family's others: a replay shows the search its
    archived run made."""
    if config.get("tune", False):
        return list(variants)
    have = {v.id: v for v in variants}
    tuned = _selected({**config, "tune": True}, catalog.load())
    out = [have.get(v.id, v) for v in tuned if v.id in have or (Path(archive) / "raw" / v.id / "samples.csv").is_file()]
    placed = {v.id for v in out}
    return out + [v for v in variants if v.id not in placed]


def _selected(config: dict, families: dict) -> list[catalog.Variant]:
    """The variants the config selects (``only`` narrowing ``variants``), expanded."""
    only, selection = config.get("only"), config["variants"]
    if only:
        unknown = [f for f in only if f not in families]
        if unknown:
            raise ConfigError(
                f"config: only: {', '.join(unknown)} is not a variant family; allowed: {', '.join(families)}"
            )
        selection = {f: selection.get(f) or {} for f in only}
    try:
        return catalog.expand(selection, tune=config.get("tune", False))
    except catalog.CatalogError as exc:
        raise ConfigError(f"config: {exc}") from exc


def _memory_study(config: dict, variants: list, families: dict) -> None:
    """``memory_study_variants``: names of variants; those this config does not run are dropped (in place)."""
    study = config.get("memory_study_variants", "all")
    if study == "all":
        return
    ids = {v.id for v in variants}
    unknown = [v for v in study if v not in ids and not _is_variant_name(v, families)]
    if unknown:
        raise ConfigError(
            f"config: memory_study_variants: {', '.join(unknown)} is not a variant name; "
            f"allowed: all, or names of variants (this config runs {', '.join(sorted(ids))})"
        )
    # a variant this config does not run (its family left out by `only`, or narrowed, e.g. tiled: {TILE: [8]}
    # leaves tiled_tile16 out) takes its memory-study entry with it, as in every other list of variant names
    config["memory_study_variants"] = [s for s in study if s in ids]


def _metric_sets(prof: dict) -> None:
    """The metric set(s) a profile uses are defined (where profiling is on)."""
    sets, chosen = prof.get("metric_sets", {}), prof.get("metric_set", "memory")
    for name in [chosen] if isinstance(chosen, str) else chosen:
        if prof.get("enabled", True) and name not in sets:
            allowed = ", ".join(sorted(sets)) or "none defined under profile.metric_sets"
            raise ConfigError(f"config: profile.metric_set = {name!r} is not allowed; allowed: {allowed}")


def _names(config: dict, known: set, families: dict) -> None:
    """Every key that names variants or families (max_size, end_to_end_variants, the profile's lists) names them."""
    prof = config.get("profile", {})
    sets = prof.get("metric_sets", {})
    for name in config.get("max_size", {}):
        if name != "default" and name not in known and name not in families and not _is_variant_name(name, families):
            raise ConfigError(
                f"config: max_size.{name}: not a variant family or variant name; allowed: default, "
                f"{', '.join(sorted(families))} or their variants (e.g. tiled_tile16)"
            )
    named = [
        ("end_to_end_variants", config.get("end_to_end_variants", "all")),
        ("profile.cached_variants", prof.get("cached_variants", "all")),
    ]
    for set_name, names in prof.get("extra_metric_sets", {}).items():
        if set_name not in sets:
            raise ConfigError(
                f"config: profile.extra_metric_sets.{set_name}: no such metric set; allowed: {', '.join(sorted(sets))}"
            )
        named.append((f"profile.extra_metric_sets.{set_name}", names))
    for key, names in named:
        for name in [] if names == "all" else names:
            if name not in known and not _is_variant_name(name, families) and name not in families:
                raise ConfigError(
                    f"config: {key}: {name} is not a variant family or variant name; allowed: all, "
                    f"{', '.join(sorted(families))} or their variants (e.g. tiled_tile16)"
                )


def _paired_and_timing(config: dict, families: dict) -> None:
    """The paired races name families; no minimum above its maximum (rounds, samples)."""
    pair = config.get("paired", {})
    for race, r in (pair.get("races") or {}).items():
        for key in ("reference", "down_to"):
            if key in r and r[key] not in families:
                raise ConfigError(
                    f"config: paired.races.{race}.{key}: {r[key]} is not a variant family; allowed: "
                    f"{', '.join(families)}"
                )
    if pair.get("min_rounds", 2) > pair.get("max_rounds", 10**9):
        raise ConfigError(
            f"config: paired.min_rounds = {pair['min_rounds']} is not allowed: more than paired.max_rounds "
            f"({pair['max_rounds']}). Allowed: at most max_rounds"
        )
    t = config.get("timing", {})
    if t.get("min_samples", 1) > t.get("max_samples", 10**9):
        raise ConfigError(
            f"config: timing.min_samples = {t['min_samples']} is not allowed: more than timing.max_samples "
            f"({t['max_samples']}). Allowed: at most max_samples"
        )


def _model(model: dict, families: dict) -> None:
    """``model.name`` is one of ``model.models`` (where the model is on, or models are given: a config without
    the section, such as tools/parallel-check.yaml, takes the schema's defaults, no model and a default name); its
    kernels and reference are families of the tensor cores' operation (matmul_bf16), and ``model.fp32``'s of the
    FP32 matrix multiply on the GPU (matmul, CUDA or cuBLAS)."""
    name, models = model.get("name"), model.get("models", {})
    if (model.get("enabled") or models) and name not in models:
        allowed = ", ".join(sorted(models)) or "none: model.models is empty"
        raise ConfigError(f"config: model.name = {name!r} is not a model of model.models; allowed: {allowed}")
    if not model.get("enabled"):
        return
    bf16 = [f for f, x in families.items() if x.get("op") == "matmul_bf16"]
    for key, names in (("kernels", model.get("kernels", [])), ("reference", [model.get("reference")])):
        for f in names:
            if f not in bf16:
                raise ConfigError(
                    f"config: model.{key}: {f!r} is not a family of the tensor cores (op matmul_bf16); "
                    f"allowed: {', '.join(bf16)}"
                )
    fp32 = model.get("fp32", {})
    gpu32 = [f for f, x in families.items() if x.get("op", "matmul") == "matmul" and x["kind"] in ("cuda", "cublas")]
    for key, names in (("kernels", fp32.get("kernels", [])), ("reference", [fp32.get("reference", "cublas")])):
        for f in names:
            if f not in gpu32:
                raise ConfigError(
                    f"config: model.fp32.{key}: {f!r} is not an FP32 matrix multiply on the GPU (op matmul); "
                    f"allowed: {', '.join(gpu32)}"
                )


def model_builds(config: dict, fp32: bool) -> list[catalog.Variant]:
    """The builds the model's BF16 steps load (``fp32`` false: every build of ``model.kernels`` and the reference,
    cuBLAS BF16) or its FP32 steps' (``model.fp32.kernels`` and cuBLAS SGEMM), as the catalog expands them: every
    candidate of a family's ``tune``, whatever the config's ``tune`` (the ladder's searches), since the dispatcher's
    rule chooses among them per shape; none while the model is off."""
    model = config.get("model", {})
    if not model.get("enabled"):
        return []
    spec = model.get("fp32", {}) if fp32 else model
    names = [*spec.get("kernels", []), spec.get("reference", "cublas" if fp32 else "cublas_bf16")]
    return catalog.expand({f: {} for f in dict.fromkeys(names)}, tune=True)


def _is_variant_name(name: str, families: dict) -> bool:
    try:
        catalog.from_id(name, families)
    except catalog.CatalogError:
        return False
    return True


def metrics(config: dict) -> list[str]:
    """The Nsight Compute metrics of the chosen metric set(s), in order, each once."""
    prof = config.get("profile", {})
    chosen = prof.get("metric_set", "memory")
    out: list[str] = []
    for name in [chosen] if isinstance(chosen, str) else chosen:
        out += [m for m in prof.get("metric_sets", {}).get(name, []) if m not in out]
    return out


def metric_sets_for(variant, config: dict) -> list[str]:
    """The names of a variant's metric sets: the chosen one(s), and every extra metric set that names it."""
    prof = config.get("profile", {})
    chosen = prof.get("metric_set", "memory")
    out = [chosen] if isinstance(chosen, str) else list(chosen)
    out += [name for name, names in prof.get("extra_metric_sets", {}).items() if names_in(names, variant)]
    return list(dict.fromkeys(out))


def max_size_of(variant, config: dict) -> int:
    """The largest square size ``variant`` is timed at: its own entry in ``max_size``, its family's, or the
    default (no limit when the config has no ``max_size``)."""
    limits = config.get("max_size") or {}
    for key in (variant.id, variant.family):
        if key in limits:
            return int(limits[key])
    return int(limits.get("default", 1 << 30))


# Keys that decide how the report is made, not what is measured: left out of the digest.
NOT_MEASURED_KEYS = ("mode", "replay_from", "cluster", "gpus")  # where and how a run happens, not what it measures


def measured(config: dict) -> dict:
    """The effective config without the keys that do not change the study's measurements, and without the model
    section: the model step is an addition that changes no other number, and it records its own section in its
    meta.json (the model page shows the one it ran with)."""
    return {k: v for k, v in config.items() if k not in NOT_MEASURED_KEYS and k != "model"}


def digest(config: dict) -> str:
    """A stable digest of the effective config (after defaults), without the keys of NOT_MEASURED_KEYS."""
    return hashlib.sha256(json.dumps(measured(config), sort_keys=True).encode()).hexdigest()[:16]


def names_in(selection, variant) -> bool:
    """Whether ``variant`` is in a config list of variant and family names (or the word all)."""
    return selection == "all" or variant.id in selection or variant.family in selection


def defaults(section: str) -> dict:
    """The schema's defaults of the keys of a config section (timing, coalescing, verify, ...)."""
    props = schema()["properties"][section].get("properties", {})
    return {k: v["default"] for k, v in props.items() if "default" in v}


def explain_sections(**sections) -> str | None:
    """:func:`explain` for some sections of a config alone (a step's own settings), beside the keys the schema
    requires of a whole config."""
    return explain({"variants": {"naive": {}}, "sizes": [1], **sections})


def timing_settings(given: dict | str | None = None) -> dict:
    """The ``timing`` section: the schema's defaults, overridden by ``given`` (a mapping or its JSON), checked
    against the schema (ConfigError naming the key)."""
    if isinstance(given, str):
        try:
            given = json.loads(given) if given.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"timing: not JSON ({exc})") from None
    out = defaults("timing") | (given or {})
    problem = explain_sections(timing=out)
    if problem:
        raise ConfigError(problem)
    if out["min_samples"] > out["max_samples"]:
        raise ConfigError(
            f"config: timing.min_samples = {out['min_samples']} is not allowed: more than timing.max_samples "
            f"({out['max_samples']})"
        )
    return out
