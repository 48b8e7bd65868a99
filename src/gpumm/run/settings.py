"""What each variant measures, from the config: its shapes (up to its max_size), its memory modes, its timing,
and all of it as the one value the measure step takes (``--settings``), checked by the config's schema."""

import json

from gpumm.run import operations
from gpumm.setup import config as setup_config


def shapes_for(variant, config: dict) -> list[tuple[int, int, int]]:
    """The shapes ``variant`` is measured at in device memory: its operation's square sizes up to its max_size,
    and every extra shape. (The other memory modes take those whose largest side is at most
    memory_study_max_size: :func:`gpumm.run.measure.work_list`.)"""
    op = operations.get(variant.op)
    if op.name != "matmul":
        return op.shapes(config)
    limit = setup_config.max_size_of(variant, config)
    square = {(n, n, n) for n in config.get("sizes", [])}
    return [s for s in op.shapes(config) if s not in square or s[0] <= limit]


def modes_for(variant_id: str, config: dict, op: str = "matmul") -> list[str]:
    """The memory modes a variant runs under: device, plus the others when it is in memory_study_variants
    and its operation runs under memory modes at all (the transposes run in device memory only)."""
    if not operations.get(op).memory_modes:
        return ["device"]
    modes = config.get("memory_modes", ["device"])
    study = config.get("memory_study_variants", "all")
    chosen = [m for m in modes if m == "device" or study == "all" or variant_id in study]
    return chosen if "device" in chosen else ["device", *chosen]


def timing_for(variant, config: dict) -> dict:
    """The config's timing section as a variant's measurement takes it: end-to-end timing only for the
    variants of ``end_to_end_variants``."""
    t = dict(config.get("timing", {}))
    if not setup_config.names_in(config.get("end_to_end_variants", "all"), variant):
        t["end_to_end_max_size"] = 0
    return t


MEASURE_KEYS = ("seed", "timing", "verify", "memory_modes", "memory_study_max_size")  # config keys a measurement reads


def measure_settings(variant, config: dict) -> dict:
    """Everything one variant's measurement reads from the config, as one value: the config's own keys (its
    timing as :func:`timing_for` gives it), its shapes and its memory modes."""
    return {
        "seed": config["seed"],
        "timing": timing_for(variant, config),
        "verify": dict(config["verify"]),
        "memory_modes": modes_for(variant.id, config, variant.op),
        "memory_study_max_size": dict(config.get("memory_study_max_size") or {}),
        "shapes": [list(s) for s in shapes_for(variant, config)],
    }


def checked(given: dict | str | None) -> dict:
    """A measurement's settings (a mapping or its JSON) with the schema's defaults filled in, checked by the config
    schema (ConfigError naming the key). Shapes default to none."""
    if isinstance(given, str):
        try:
            given = json.loads(given) if given.strip() else {}
        except json.JSONDecodeError as exc:
            raise setup_config.ConfigError(f"settings: not JSON ({exc})") from None
    given = dict(given or {})
    unknown = sorted(set(given) - {*MEASURE_KEYS, "shapes"})
    if unknown:
        raise setup_config.ConfigError(
            f"settings: {', '.join(unknown)}: not a measurement setting; allowed: shapes, {', '.join(MEASURE_KEYS)}"
        )
    sch = setup_config.schema()["properties"]
    out = {}
    for key in MEASURE_KEYS:
        default = sch[key].get("default")
        if isinstance(default, dict) or sch[key].get("type") == "object":
            out[key] = setup_config.defaults(key) | dict(given.get(key) or {})
        else:
            out[key] = given.get(key, default)
    out["memory_modes"] = out["memory_modes"] or ["device"]
    shapes = given.get("shapes", [])
    problem = setup_config.explain_sections(shapes=shapes, **out)
    if problem:
        raise setup_config.ConfigError(problem.replace("config: ", "settings: ", 1))
    out["timing"] = setup_config.timing_settings(out["timing"])
    out["shapes"] = shapes
    return out
