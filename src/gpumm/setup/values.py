"""What a raw number can be: every value of a run's raw files, measured now or archived, checked before any
table is made from it.

A time is positive and finite; a rate is finite, not negative, and no more than the card can do by more than
:data:`MARGIN` (a FLOP rate against its operation's peak, a byte rate against the DRAM bandwidth where the
working set is in DRAM, else against the on-chip bound, gpumm.setup.hardware); a count is a whole number; a
percentage lies in 0-100; every number of a JSON file is finite. An empty cell is a value not taken (a failed
set, a column another kind of row fills), except a time in a row whose status is ``ok``. The first value outside
stops the check, naming the file, row, column and what the value can be (:class:`ValueProblem`).

Called by ``collect`` on ``results/`` (every table is made from those files), and on every archive before it is
replayed or read (gpumm.archive.reference), with the card of each folder's own provenance.
"""

import csv
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path

from gpumm.setup import hardware, paths

MARGIN = 1.10  # a rate may exceed the card's bound by this much (clock and timer rounding), no more
MAX_COUNT = 2**53  # a count beyond this is no count a run makes (nor one a float holds exactly)
MAX_SIDE = 2**20  # a matrix side of this study: the config allows 32768

TIME, RATE_FLOPS, RATE_BYTES, COUNT, SHARE, NONNEG, REAL = "time", "flops", "bytes", "count", "pct", "nonneg", "real"
_CLOCK = {"sm_clock_mhz": NONNEG, "sm_clock_min_mhz": NONNEG, "mem_clock_mhz": NONNEG, "temperature_c": REAL}
_CLOCK |= {"window_s": NONNEG, "energy_j": NONNEG, "power_mean_w": NONNEG, "power_peak_w": NONNEG}
_CLOCK |= {"power_capped_pct": SHARE, "thermal_capped_pct": SHARE}
SIDE = "side"
_SHAPE = {"M": SIDE, "N": SIDE, "K": SIDE}

# the columns checked in each kind of raw CSV (gpumm.setup.columns names them all); the others are words
SPECS = {
    "samples": {
        **_SHAPE,
        "repeat": COUNT,
        "ms": TIME,
        "gflops": RATE_FLOPS,
        "gbs": RATE_BYTES,
        "work_flops": COUNT,
        "work_bytes": COUNT,
        "batch": COUNT,
        "warmups": COUNT,
        "max_rel_err": NONNEG,
        "tolerance": NONNEG,
        **_CLOCK,
    },
    "paired": {
        **_SHAPE,
        "round": COUNT,
        "position": COUNT,
        "batch": NONNEG,
        "ms": TIME,
        "work": NONNEG,
        "t_s": NONNEG,
        "window_work": NONNEG,
        "power_samples": COUNT,
        **_CLOCK,
    },
    "profile": {**_SHAPE, "launch": COUNT, "n": COUNT, "copies": COUNT, "stride": COUNT, "offset": COUNT},
    "coalescing": {
        "n": COUNT,
        "copies": COUNT,
        "stride": COUNT,
        "offset": COUNT,
        "threads": COUNT,
        "working_set_bytes": COUNT,
        "repeat": COUNT,
        "ms": TIME,
        "batch": COUNT,
        "bytes": COUNT,
        "gbs": RATE_BYTES,
        "max_rel_err": NONNEG,
    },
    "bandwidth": {"bytes": COUNT, "repeat": COUNT, "ms": TIME, "gbs": RATE_BYTES},
    "overhead": {"batch": COUNT, "repeat": COUNT, "ms": TIME},
    "hierarchy": {
        "bytes": COUNT,
        "steps": COUNT,
        "repeat": COUNT,
        "ms": TIME,
        "ns_per_step": NONNEG,
        "cycles_per_step": NONNEG,
        "gbs": RATE_BYTES,
    },
}
# (work, rate) columns a row's rate is made from, over its time ms: rate = work / (ms x 1e6), GFLOP/s or GB/s
RATES = {
    "samples": (("work_flops", "gflops"), ("work_bytes", "gbs")),
    "coalescing": (("bytes", "gbs"),),
    "bandwidth": (("bytes", "gbs"),),
}
AGREE = 1e-3  # a rate and its work over its time agree to 0.1% (the files keep 16 digits)
STUDIES = ("coalescing", "bandwidth", "overhead", "hierarchy", "paired")
# a profile's value by its unit: Nsight Compute's counts of bytes, sectors, nanoseconds and registers are whole
PROFILE_UNITS = {"%": SHARE, "byte": COUNT, "sector": COUNT, "ns": COUNT, "register/thread": COUNT}
WHAT = {
    TIME: "a time: positive and finite",
    COUNT: f"a count: a whole number, 0 to {MAX_COUNT:,}",
    SIDE: f"a matrix side: a whole number, 0 to {MAX_SIDE:,}",
    SHARE: "a percentage: 0 to 100",
    NONNEG: "finite and not negative",
    REAL: "finite",
}


class ValueProblem(ValueError):
    """A raw value that cannot be: the message is one line naming the file, row, column and value."""


def kind(path: Path) -> str | None:
    """The kind of raw CSV at ``path`` (raw/<variant or study>/samples.csv or profile.csv), or None."""
    folder = path.parent.name
    if path.name == "profile.csv":
        return "profile"
    if path.name == "samples.csv":
        return folder if folder in STUDIES else "samples"
    return None


class Card:
    """The bounds of one card's rates, from its provenance's ``gpu``: FLOP/s by operation, byte/s by level.
    ValueProblem where the provenance lacks a number the bounds need (a rate no bound checks is not checked)."""

    NEEDED = ("sm_count", "sm_clock_khz", "memory_clock_khz", "memory_bus_bits")

    def __init__(self, gpu: dict, where: str = "raw/provenance.json"):
        for key in self.NEEDED:
            value = gpu.get(key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueProblem(f"{where}: gpu.{key} is {value!r}: the card's bounds need it (a positive number)")
        if not re.fullmatch(r"\d+\.\d+", str(gpu.get("compute_capability", ""))):
            raise ValueProblem(f"{where}: gpu.compute_capability is {gpu.get('compute_capability')!r}: not MAJOR.MINOR")
        self.name = gpu.get("name") or "this GPU"
        self.fp32, self.bf16 = hardware.fp32_peak(gpu), hardware.tensor_bf16_peak(gpu)
        if not math.isfinite(self.fp32):  # FP32 lanes of a GPU the table does not know: the most any SM has
            self.fp32 = gpu["sm_count"] * max(hardware.FP32_LANES_PER_SM.values()) * 2 * gpu["sm_clock_khz"] * 1e3
        if not math.isfinite(self.bf16):  # no BF16 kernel runs on a GPU the table does not know (sm_90a)
            self.bf16 = self.fp32 * 32
        self.dram, self.on_chip = hardware.dram_bandwidth(gpu), hardware.on_chip_bandwidth(gpu)

    def flops(self, operation: str | None) -> tuple[float, str]:
        if operation == "matmul_bf16":
            return self.bf16, "BF16 tensor-core peak"
        return self.fp32, "FP32 peak"

    def bytes(self, row: dict, file_kind: str) -> tuple[float, str]:
        in_dram = file_kind == "bandwidth" or row.get("regime") == "dram" or row.get("level") == "DRAM"
        return (self.dram, "DRAM bandwidth") if in_dram else (self.on_chip, "on-chip bound")

    def counter(self, metric: str) -> tuple[float, str]:
        """The bound of a profiled byte or sector counter over its launch's duration."""
        return (self.dram, "DRAM bandwidth") if metric.startswith("dram__") else (self.on_chip, "on-chip bound")


def _number(text: str) -> float | None:
    """The number in a cell ('' -> None); ValueError for a word where a number must be."""
    return None if text.strip() == "" else float(text)


def _problem(value: float, how: str, bound: tuple[float, str] | None = None) -> str | None:
    """Why ``value`` cannot be a ``how``, or None."""
    if not math.isfinite(value):
        return f"not finite; it must be {WHAT.get(how, 'finite and not negative')}"
    if how == TIME and value <= 0:
        return f"must be {WHAT[TIME]}"
    if how in (COUNT, SIDE, NONNEG, SHARE, RATE_FLOPS, RATE_BYTES) and value < 0:
        return f"must be {WHAT.get(how, 'finite and not negative')}"
    if how in (COUNT, SIDE) and (value != int(value) or value > (MAX_SIDE if how == SIDE else MAX_COUNT)):
        return f"must be {WHAT[how]}"
    if how == SHARE and value > 100:
        return f"must be {WHAT[SHARE]}"
    if bound is not None and math.isfinite(bound[0]) and value * 1e9 > bound[0] * MARGIN:
        unit = "GFLOP/s" if how == RATE_FLOPS else "GB/s"
        return (
            f"is above the card's {bound[1]} ({bound[0] / 1e9:,.0f} {unit}) by more than "
            f"{(MARGIN - 1) * 100:.0f}%: not a rate this GPU can reach"
        )
    return None


def rows(path: Path) -> Iterator[tuple[int, dict]]:
    """(row number counting from 1, row) of a CSV file."""
    with path.open(newline="") as f:
        yield from enumerate(csv.DictReader(f), 1)


def check_csv(path: Path, card: Card, operation: str | None = None) -> None:
    """Raise ValueProblem for the first value of the raw CSV ``path`` that cannot be (``operation``: what its
    variant computes, for the FLOP bound)."""
    file_kind = kind(path)
    spec = SPECS.get(file_kind or "", {})
    numbered = list(rows(path))
    for n, row in numbered:
        ok = (row.get("status") or "ok") == "ok"
        for col, how in spec.items():
            _check_cell(path, n, row, col, how, card, operation, file_kind, required=(how == TIME and ok))
        for work, rate in RATES.get(file_kind or "", ()):
            _agree(path, n, row, work, rate)
        if file_kind == "profile" and row.get("status") == "ok":  # a profile's value, by its unit
            _check_cell(path, n, row, "value", PROFILE_UNITS.get(row.get("unit"), REAL), card, operation, file_kind)
    if file_kind == "profile":
        _counters_within_their_launch(path, numbered, card)


def _check_cell(path, n, row, col, how, card, operation, file_kind, required=False) -> None:
    text = row.get(col)
    if text is None:
        return
    try:
        value = _number(text)
    except ValueError:
        raise ValueProblem(f"{_where(path, n, col)}: {text!r} is not a number") from None
    if value is None:
        if required:
            raise ValueProblem(f"{_where(path, n, col)}: empty in a row whose status is ok; it must be {WHAT[TIME]}")
        return
    bound = card.flops(operation) if how == RATE_FLOPS else card.bytes(row, file_kind) if how == RATE_BYTES else None
    why = _problem(value, how, bound)
    if why:
        raise ValueProblem(f"{_where(path, n, col)}: {text} {why}")


DURATION = "gpu__time_duration.sum"
UNIT_BYTES = {"byte": 1, "sector": 32}  # a sector is 32 bytes


def _launch(row: dict) -> tuple:
    """What names one profiled launch: every column but the metric's own."""
    return tuple(v for k, v in row.items() if k not in ("metric", "value", "unit", "status", "reason"))


def _counters_within_their_launch(path: Path, numbered: list[tuple[int, dict]], card: Card) -> None:
    """Raise ValueProblem where a profiled launch's duration is not positive, or a byte or sector counter moved
    more than the card's bound over that duration (a DRAM counter against the DRAM bandwidth, any other
    against the on-chip bound); ``numbered``: the profile's rows, as :func:`rows` gives them."""
    ok = [(n, r) for n, r in numbered if r.get("status") == "ok"]
    ns = {_launch(r): float(r["value"]) for n, r in ok if r.get("metric") == DURATION and r.get("value")}
    for n, r in ok:
        if r.get("metric") == DURATION and not ns[_launch(r)] > 0:
            raise ValueProblem(f"{_where(path, n, 'value')}: {r['value']} ns must be {WHAT[TIME]}")
        if r.get("unit") not in UNIT_BYTES or not r.get("value") or _launch(r) not in ns:
            continue
        moved = float(r["value"]) * UNIT_BYTES[r["unit"]] / (ns[_launch(r)] * 1e-9)
        bound, what = card.counter(r["metric"])
        if moved > bound * MARGIN:
            raise ValueProblem(
                f"{_where(path, n, 'value')}: {r['metric']} = {r['value']} {r['unit']} in its launch's "
                f"{ns[_launch(r)]:g} ns is {moved / 1e9:,.0f} GB/s, above the card's {what} ({bound / 1e9:,.0f} "
                f"GB/s) by more than {(MARGIN - 1) * 100:.0f}%: not a count this GPU can reach"
            )


def _agree(path: Path, n: int, row: dict, work: str, rate: str) -> None:
    """Raise ValueProblem where a row's rate is not its work over its time (one of them was changed)."""
    try:
        w, r, ms = (_number(row.get(c) or "") for c in (work, rate, "ms"))
    except ValueError:
        return
    if w is None or r is None or ms is None:
        return
    made = w / (ms * 1e6)
    if abs(r - made) > AGREE * max(abs(r), abs(made)):
        raise ValueProblem(
            f"{_where(path, n, 'ms')}: {row['ms']} ms gives {made:.6g} for its {work} ({row[work]}) where the row "
            f"says {rate} {row[rate]}: the time and the rate disagree"
        )


def _where(path: Path, n: int, col: str) -> str:
    return f"{paths.shown(path)}: row {n} (line {n + 1}), column {col}"


def check_json(path: Path):
    """The data of a JSON file; ValueProblem where it cannot be read or holds a number that is not finite."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueProblem(f"{paths.shown(path)}: cannot be read ({type(exc).__name__}: {exc})") from None

    def walk(x, key: str) -> None:
        if isinstance(x, float) and not math.isfinite(x):
            raise ValueProblem(f"{paths.shown(path)}: {key or 'the value'} is {x}: not finite")
        for k, v in x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else []:
            walk(v, f"{key}.{k}" if key else str(k))

    walk(data, "")
    return data


def check_folder(root: Path) -> int:
    """Check every raw file of a run's folder (``results/`` or an archive: ``raw/*/samples.csv``, ``profile.csv``,
    ``meta.json`` and ``raw/provenance.json``) against the card its provenance names; the number of files
    checked. Raises ValueProblem at the first value that cannot be."""
    prov = root / "raw" / "provenance.json"
    gpu = {}
    if prov.is_file():
        found = check_json(prov)
        gpu = found.get("gpu") if isinstance(found, dict) and isinstance(found.get("gpu"), dict) else {}
    card, done = Card(gpu, paths.shown(prov)), 1
    for folder in sorted(p for p in (root / "raw").glob("*/") if p.is_dir()):
        meta, operation = folder / "meta.json", None
        if meta.is_file():
            found = check_json(meta)
            operation = found.get("operation") if isinstance(found, dict) else None
            done += 1
        for name in ("samples.csv", "profile.csv"):
            if (folder / name).is_file():
                check_csv(folder / name, card, operation)
                done += 1
    return done
