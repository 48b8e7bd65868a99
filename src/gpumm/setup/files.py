"""Writing outputs so that a file is either complete or absent, never half-written."""

import csv
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported by the steps that make frames; writing rows does without it
    import pandas as pd


def write_csv(df: "pd.DataFrame", path: Path) -> None:
    """Write ``df`` to ``path`` through a temporary file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(path)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed into place (the folder made if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_rows(rows: list[dict], columns: list[str], path: Path) -> None:
    """Write ``rows`` (dicts; a missing column is left empty) as ``write_csv`` would write their frame."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def _finite(obj):
    """``obj`` with every NaN or infinite float replaced by None (JSON's null)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def json_text(obj, indent: int | None = None, **kwargs) -> str:
    """Strict JSON (RFC 8259: no NaN, no Infinity) of ``obj``: a number that is not finite is written as null."""
    return json.dumps(_finite(obj), indent=indent, allow_nan=False, **kwargs)
