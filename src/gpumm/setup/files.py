"""Writing outputs so that a file is either complete or absent, never half-written."""

import csv
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


def write_rows(rows: list[dict], columns: list[str], path: Path) -> None:
    """Write ``rows`` (dicts; a missing column is left empty) as ``write_csv`` would write their frame."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)
