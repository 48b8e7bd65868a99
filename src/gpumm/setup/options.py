"""Command-line option types with the configuration schema's limits, for the steps run by hand.

A step run by hand (``python -m gpumm measure --sizes 0``) must refuse what
the workflow's config check refuses, with one line naming the option and what
is allowed, exit 2 and nothing written: ``--sizes 4k``, ``--sizes 16.0``,
``--bytes 5``, ``--repeats 0``. Each type here reads its limits from
``workflow/schemas/config.schema.yaml`` where the option is a config key, so
the two can never disagree.
"""

import argparse


def _node(*key: str) -> dict:
    from gpumm.setup import config

    node = config.schema()
    for k in key:
        node = node["properties"][k] if "properties" in node else node["items"]
    return node.get("items", node) if node.get("type") == "array" else node


def _limits(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"an integer {lo} to {hi}"
    return f"an integer of at least {lo}" if lo is not None else "an integer"


def _int(text: str, lo: int | None, hi: int | None) -> int:
    try:
        n = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; allowed: {_limits(lo, hi)}") from None
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise argparse.ArgumentTypeError(f"{n} is not allowed; allowed: {_limits(lo, hi)}")
    return n


def integer(lo: int | None = None, hi: int | None = None, *key: str):
    """An integer option within ``lo``..``hi``, or within the limits of the config key ``key`` (a path into the
    schema) where it is given."""
    if key:
        node = _node(*key)
        lo, hi = node.get("minimum", lo), node.get("maximum", hi)

    def parse(text: str) -> int:
        return _int(text, lo, hi)

    parse.__name__ = "integer"
    return parse


def integers(*key: str):
    """A comma-separated list of integers, each within the limits of the config key ``key`` (e.g. sizes)."""
    node = _node(*key)
    lo, hi = node.get("minimum"), node.get("maximum")

    def parse(text: str) -> list[int]:
        out = [_int(x, lo, hi) for x in text.split(",") if x.strip()]
        if not out:
            raise argparse.ArgumentTypeError(f"{text!r} gives no value; allowed: comma-separated {_limits(lo, hi)}s")
        return out

    parse.__name__ = "integers"
    return parse


def shapes(text: str) -> list[list[int]]:
    """Comma-separated MxNxK, each side within the limits of the config's shapes."""
    node = _node("shapes")
    node = node.get("items", node)
    lo, hi = node.get("minimum"), node.get("maximum")
    out = []
    for s in (x.strip() for x in text.split(",") if x.strip()):
        sides = s.lower().split("x")
        if len(sides) != 3:
            raise argparse.ArgumentTypeError(f"{s!r} is not allowed; allowed: MxNxK, each {_limits(lo, hi)}")
        out.append([_int(d, lo, hi) for d in sides])
    if not out:
        raise argparse.ArgumentTypeError(f"{text!r} gives no shape; allowed: comma-separated MxNxK")
    return out


def mode_limits(text: str) -> dict[str, int]:
    """MODE=N,...: the largest side each memory mode runs (config memory_study_max_size)."""
    props = _node("memory_study_max_size")["properties"]
    out = {}
    for item in (x.strip() for x in text.split(",") if x.strip()):
        mode, eq, n = item.partition("=")
        if not eq or mode not in props:
            raise argparse.ArgumentTypeError(
                f"{item!r} is not allowed; allowed: MODE=N with MODE one of {', '.join(props)}"
            )
        p = props[mode]
        out[mode] = _int(n, p.get("minimum"), p.get("maximum"))
    return out
