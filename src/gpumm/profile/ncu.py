"""Parse Nsight Compute CSV (``--csv --page raw --print-units base``) into a tidy table.

The raw page has one row per profiled launch and one column per metric. The
first row names the columns, the second gives units (empty for the
identification columns); numbers may carry thousands separators
("4,197,376") and missing values read "n/a". Lines ncu prints outside the
table ("==PROF==", "==WARNING==") are ignored.
"""

import csv
import io
import math

ID_COLUMNS = ("ID", "Kernel Name", "Block Size", "Grid Size", "Device", "CC")


def number(text: str) -> float:
    """'4,197,376' -> 4197376.0; 'n/a' or '' -> nan."""
    t = text.strip().replace(",", "")
    if t in ("", "n/a", "N/A", "nan"):
        return math.nan
    try:
        return float(t)
    except ValueError:
        return math.nan


def parse(text: str, metrics: list[str] | None = None) -> list[dict]:
    """Rows of (launch, kernel, metric, value, unit) from ncu's raw CSV page.

    The raw page also carries every device attribute and the other roll-ups
    (.avg, .min, .max) of each metric; with ``metrics`` only those columns are
    kept, and a metric asked for but absent is a row with value nan.
    """
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    header, body = table[0], table[1:]
    units = {}
    if body and all(body[0][i] == "" for i, h in enumerate(header) if h in ID_COLUMNS and i < len(body[0])):
        units = dict(zip(header, body[0]))
        body = body[1:]
    wanted = [c for c in header if "__" in c] if metrics is None else list(metrics)
    out = []
    for row in body:
        rec = dict(zip(header, row))
        for col in wanted:
            out.append(
                {
                    "launch": rec.get("ID", ""),
                    "kernel": rec.get("Kernel Name", ""),
                    "metric": col,
                    "value": number(rec.get(col, "")),
                    "unit": units.get(col, ""),
                }
            )
    return out
