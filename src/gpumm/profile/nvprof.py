"""Import nvprof CSV output (``nvprof --csv``) into the same tidy profile table as Nsight Compute's.

nvprof profiles GPUs older than Nsight Compute supports (it does not run on
compute capability 8.0 and newer). Its CSV output comes in four layouts, each
after a few lines beginning with ``==PID==``:

- metrics (``--metrics ...``): one row per kernel and metric, with
  ``"Metric Name","Metric Description","Min","Max","Avg"``; values may carry
  units (``85.2%``, ``12.5GB/s``, ``976.5KB/s``) or be levels (``"High (7)"``);
- events (``--events ...``): the same with ``"Event Name"`` and raw counts;
- GPU trace (``--print-gpu-trace``): one row per launch or copy, a row of
  units under the header (``ms,us,,...``), names ending in ``[correlation id]``;
- summary (the default): time per kernel, a units row, then maybe an API table.

Each value is kept under its nvprof name (``nvprof:<name>``), and where
nvprof measures what an Nsight Compute metric of the report measures, also
under that metric's name (``MAPPING``, documented in docs/method.md):

| nvprof | Nsight Compute | conversion |
| --- | --- | --- |
| gld_transactions | l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum | 32-byte transactions = sectors |
| gld_transactions / gld_transactions_per_request | l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum | requests |
| gst_transactions (and per request) | l1tex__t_sectors/requests_pipe_lsu_mem_global_op_st.sum | as loads |
| dram_read_bytes, or 32 x dram_read_transactions | dram__bytes_read.sum | bytes |
| dram_write_bytes, or 32 x dram_write_transactions | dram__bytes_write.sum | bytes |
| shared_ld/st_bank_conflict | l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st.sum | counts |
| achieved_occupancy | sm__warps_active.avg.pct_of_peak_sustained_active | fraction x 100 |
| flop_count_sp_fma / _add / _mul | smsp__sass_thread_inst_executed_op_ffma/fadd/fmul_pred_on.sum | counts |
| trace Duration, summary Avg | gpu__time_duration.sum | to nanoseconds |
| trace Registers Per Thread | launch__registers_per_thread | as is |

Metrics and events are nvprof's aggregates over a kernel's invocations; the
value kept is the average (Avg), and the row says how many invocations it
covers.
"""

import csv
import io
import math
import re
from pathlib import Path

import pandas as pd

_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]*)\s*$")
_LEVEL = re.compile(r"^\s*\w+\s*\((\d+)\)\s*$")  # "High (7)"
_RATE = {"B/s": 1.0, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12}
_TIME_NS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}

# nvprof metric or event -> (Nsight Compute metric, factor)
MAPPING = {
    "gld_transactions": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1.0),
    "gst_transactions": ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1.0),
    "dram_read_bytes": ("dram__bytes_read.sum", 1.0),
    "dram_write_bytes": ("dram__bytes_write.sum", 1.0),
    "dram_read_transactions": ("dram__bytes_read.sum", 32.0),
    "dram_write_transactions": ("dram__bytes_write.sum", 32.0),
    "shared_ld_bank_conflict": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 1.0),
    "shared_st_bank_conflict": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 1.0),
    "achieved_occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active", 100.0),
    "flop_count_sp_fma": ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 1.0),
    "flop_count_sp_add": ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 1.0),
    "flop_count_sp_mul": ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 1.0),
}
# requests derived from transactions and transactions per request
REQUESTS = {
    "gld": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "gst": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
}
EXPECTED = (
    'nvprof --csv output: a metrics table ("Metric Name"), an events table ("Event Name"), '
    'a GPU trace ("Start","Duration",...) or a summary ("Time(%)","Time",...)'
)


class NvprofError(ValueError):
    """The file is not nvprof CSV output; the message names the file and what was expected."""


class NvprofValueError(NvprofError):
    """nvprof's layout, but a value no profiler writes; the message names the file, the row and the metric."""


RATIO_PCT_MAX = 1000  # the most an nvprof *_efficiency (requested over required throughput) is taken to reach


def value(text: str) -> tuple[float, str]:
    """(number, unit) of an nvprof value: '85.2%' -> (85.2, '%'); '12.5GB/s' -> (12.5e9, 'byte/second');
    '"High (7)"' -> (7, 'level'); '8.192000e+03' -> (8192.0, ''); '' -> (nan, '')."""
    t = text.strip()
    level = _LEVEL.match(t)
    if level:
        return float(level.group(1)), "level"
    m = _NUM.match(t)
    if not m:
        return math.nan, ""
    number, unit = float(m.group(1)), m.group(2)
    if unit in _RATE:
        return number * _RATE[unit], "byte/second"
    return number, unit


def _tables(text: str) -> list[list[list[str]]]:
    """The CSV tables of the text: runs of lines that are not ``==PID==`` lines, split at blank lines."""
    tables, cur = [], []
    for line in text.splitlines():
        if line.startswith("==") or not line.strip():
            if cur:
                tables.append(cur)
                cur = []
            continue
        cur.append(line)
    if cur:
        tables.append(cur)
    return [list(csv.reader(io.StringIO("\n".join(t)))) for t in tables]


# the headers nvprof writes, column for column, in each layout it has (the summary's Type column came with CUDA 9;
# newer event tables add Total)
HEADERS = {
    "metrics": [["Device", "Kernel", "Invocations", "Metric Name", "Metric Description", "Min", "Max", "Avg"]],
    "events": [
        ["Device", "Kernel", "Invocations", "Event Name", "Min", "Max", "Avg"],
        ["Device", "Kernel", "Invocations", "Event Name", "Min", "Max", "Avg", "Total"],
    ],
    "trace": [
        ["Start", "Duration", "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z", "Registers Per Thread",
         "Static SMem", "Dynamic SMem", "Size", "Throughput", "Device", "Context", "Stream", "Name"],
        ["Start", "Duration", "Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z", "Registers Per Thread",
         "Static SMem", "Dynamic SMem", "Size", "Throughput", "SrcMemType", "DstMemType", "Device", "Context",
         "Stream", "Name", "Correlation_ID"],
    ],
    "summary": [
        ["Type", "Time(%)", "Time", "Calls", "Avg", "Min", "Max", "Name"],
        ["Time(%)", "Time", "Calls", "Avg", "Min", "Max", "Name"],
    ],
}  # fmt: skip
_PREAMBLE = re.compile(r"^==\d+== (NVPROF is profiling process \d+|Profiling application: )")


def kind(text: str) -> str:
    """metrics | events | trace | summary; NvprofError for anything else: nvprof's preamble (``==PID== NVPROF is
    profiling process ...`` or ``==PID== Profiling application: ...``) and one of its headers, column for column."""
    head = text.splitlines()[:20]
    if any(line.startswith("==PROF==") for line in head):
        raise NvprofError("not nvprof output: Nsight Compute's ('==PROF==' lines), which the profile step reads itself")
    if not any(re.match(r"==\d+==", line) for line in head):
        raise NvprofError("not nvprof output: no '==PID==' header lines")
    if not any(_PREAMBLE.match(line) for line in head):
        raise NvprofError("not nvprof output: '==PID==' lines, but not nvprof's ('NVPROF is profiling process')")
    seen = []
    for table in _tables(text):
        header = table[0] if table else []
        for k, known in HEADERS.items():
            if header in known:
                return k
        seen.append(header)
    said = f" (its header: {','.join(seen[0][:6])}{',...' if len(seen[0]) > 6 else ''})" if seen and seen[0] else ""
    raise NvprofError("nvprof output, but with no table of a layout this importer reads" + said)


def _check(rows: list[dict], lines: dict) -> list[dict]:
    """Refuse a value nvprof does not write: missing or not a number, not finite, negative, past 2^63, a
    percentage above 100 (an efficiency above RATIO_PCT_MAX) (NvprofValueError naming the row of the file, the
    metric and the kernel)."""
    for r in rows:
        v, unit, name = r["value"], r.get("unit", ""), r["nvprof_metric"]
        where = f"row {lines.get(id(r), '?')} ({name}, kernel {r['kernel'][:60]!r})"
        if v != v or math.isinf(v) or v < 0 or v >= 2.0**63:
            raise NvprofValueError(
                f"{where}: {v!r} is not a value nvprof writes there (a time, count or rate: a finite number, 0 or more)"
            )
        # an efficiency is a ratio of requested to required throughput, which nvprof reports above 100% (shared
        # memory's 132% for the SDK's matrixMul on a GTX 1080 Ti); every other percentage is a share of a whole
        top = RATIO_PCT_MAX if name.endswith("_efficiency") else 100
        if unit == "%" and v > top:
            raise NvprofValueError(f"{where}: {v!r}% is not possible (a percentage of this kind is 0 to {top})")
    return rows


def _kernel(name: str) -> str:
    """A kernel's name without nvprof's trailing correlation id ('... [1073]')."""
    return re.sub(r"\s*\[\d+\]$", "", name).strip()


def parse(text: str) -> list[dict]:
    """Tidy rows (kernel, invocations, metric, value, unit, nvprof_metric) of nvprof CSV text, every value checked
    (:func:`_check`)."""
    k = kind(text)
    table = next(t for t in _tables(text) if t and t[0] in HEADERS[k])
    header, body = table[0], table[1:]
    first = _first_line(text, table)
    if k in ("metrics", "events"):
        rows = _aggregates(header, body, "Metric Name" if k == "metrics" else "Event Name")
        offset = 1
    else:
        units = dict(zip(header, body[0])) if body else {}
        rows = _trace(header, body[1:], units) if k == "trace" else _summary(header, body[1:], units)
        offset = 2
    lines = {id(r): first + offset + r.pop("_row") for r in rows}
    return _check(rows, lines)


def _first_line(text: str, table: list[list[str]]) -> int:
    """The line number (from 1) of a table's header in the file."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("==") and line.strip() and next(csv.reader([line])) == table[0]:
            return i + 1
    return 0


def _aggregates(header, body, name_col) -> list[dict]:
    rows, by_kernel = [], {}
    for at, rec in ((i, dict(zip(header, r))) for i, r in enumerate(body) if len(r) >= len(header)):
        name = rec[name_col]
        v, unit = value(rec.get("Avg", ""))
        kernel = _kernel(rec.get("Kernel", ""))
        inv = int(float(rec.get("Invocations") or 0))
        base = {
            "kernel": kernel,
            "device": rec.get("Device", ""),
            "invocations": inv,
            "nvprof_metric": name,
            "_row": at,
        }
        rows.append({**base, "metric": f"nvprof:{name}", "value": v, "unit": unit})
        by_kernel.setdefault(kernel, {})[name] = (v, base)
        if name in MAPPING:
            target, factor = MAPPING[name]
            rows.append({**base, "metric": target, "value": v * factor, "unit": ""})
    for found in by_kernel.values():
        for short, target in REQUESTS.items():
            tr, per = found.get(f"{short}_transactions"), found.get(f"{short}_transactions_per_request")
            if tr and per and per[0]:
                rows.append(
                    {
                        **tr[1],
                        "nvprof_metric": f"{short}_transactions / {short}_transactions_per_request",
                        "metric": target,
                        "value": tr[0] / per[0],
                        "unit": "",
                    }
                )
    return rows


def _trace(header, body, units) -> list[dict]:
    rows = []
    launch = 0
    for at, rec in ((i, dict(zip(header, r))) for i, r in enumerate(body) if len(r) >= len(header)):
        if not rec.get("Grid X", "").strip():  # a copy or a memset, not a kernel
            continue
        kernel = _kernel(rec.get("Name", ""))
        base = {"kernel": kernel, "device": rec.get("Device", ""), "invocations": 1, "launch": launch, "_row": at}
        duration, _ = value(rec.get("Duration", ""))
        scale = _TIME_NS.get(units.get("Duration", ""), math.nan)
        rows.append(
            {
                **base,
                "nvprof_metric": "Duration",
                "metric": "gpu__time_duration.sum",
                "value": duration * scale,
                "unit": "ns",
            }
        )
        regs, _ = value(rec.get("Registers Per Thread", ""))
        rows.append(
            {
                **base,
                "nvprof_metric": "Registers Per Thread",
                "metric": "launch__registers_per_thread",
                "value": regs,
                "unit": "",
            }
        )
        for col in ("Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z", "Static SMem", "Dynamic SMem"):
            v, _ = value(rec.get(col, ""))
            rows.append(
                {**base, "nvprof_metric": col, "metric": f"nvprof:{col}", "value": v, "unit": units.get(col, "")}
            )
        launch += 1
    return rows


def _summary(header, body, units) -> list[dict]:
    rows = []
    for at, rec in ((i, dict(zip(header, r))) for i, r in enumerate(body) if len(r) >= len(header)):
        name = rec.get("Name", "")
        if name.startswith("[CUDA") or rec.get("Type", "GPU activities") != "GPU activities":
            continue
        avg, _ = value(rec.get("Avg", ""))
        calls = int(float(rec.get("Calls") or 0))
        base = {"kernel": _kernel(name), "device": "", "invocations": calls, "nvprof_metric": "Avg", "_row": at}
        scale = _TIME_NS.get(units.get("Avg", ""), math.nan)
        rows.append({**base, "metric": "gpu__time_duration.sum", "value": avg * scale, "unit": "ns"})
    return rows


def import_file(path: Path, variant: str, size: int | None = None, kernel: str | None = None) -> pd.DataFrame:
    """The tidy profile table (gpumm.profile.session's columns, plus origin and source) of one nvprof file.

    ``kernel``, a regular expression, keeps the kernels whose names match it.
    """
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as exc:
        raise NvprofError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        rows = parse(text)
    except NvprofValueError as exc:
        raise NvprofValueError(f"{path}: {exc}") from None
    except NvprofError as exc:
        raise NvprofError(f"{path}: {exc}; expected {EXPECTED}") from None
    if kernel:
        rows = [r for r in rows if re.search(kernel, r["kernel"])]
        if not rows:
            raise NvprofError(f"{path}: no kernel matches {kernel!r}")
    df = pd.DataFrame(rows)
    if "launch" not in df:
        df["launch"] = pd.factorize(df.kernel)[0]
    df = df.assign(
        variant=variant, M=size, N=size, K=size, status="ok", reason="", origin="imported", source=Path(path).name
    )
    from gpumm.profile.session import COLUMNS

    return df[[*COLUMNS, "invocations", "nvprof_metric", "device", "origin", "source"]]
