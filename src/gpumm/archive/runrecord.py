"""What a run cost: every step's start and end, then ``results/run.json`` when the workflow ends.

Each ``python -m gpumm STEP`` the workflow starts appends one line to
``$GPUMM_RUN_LOG`` (``results/run/steps.jsonl``): the step, what it worked
on, its start and end, its exit status, whether it used the GPU, and the run
it belongs to (``$GPUMM_RUN_ID``, one per Snakemake invocation). When the
workflow finishes, :func:`write` sums up this run's lines into ``run.json``:

- ``wall_s``: from the start of its first step to the end of its last (the
  report's index), the study's cost to a user;
- ``gpu_busy_s``: the seconds of the steps that used the GPU (they run one at
  a time), and their share of ``wall_s``;
- ``seconds_by_step`` and ``jobs``: every step with its seconds;
- the GPU it ran on, the cores Snakemake had, the commit and the mode.

``python -m gpumm archive`` keeps ``run.json`` with the archive, so the
report and the README can say what the whole study costs on each GPU.
"""

import json
import os
import time
from pathlib import Path

from gpumm.run.worker import GPU_STEPS
from gpumm.setup import files

RUN_ID_ENV = "GPUMM_RUN_ID"
LOG_ENV = "GPUMM_RUN_LOG"  # where the workflow appends every step's line (results/run/steps.jsonl)


def target(argv: list[str]) -> str:
    """What a step worked on: its --variant, --study or --name, else nothing."""
    for flag in ("--variant", "--study", "--name"):
        if flag in argv[:-1]:
            return argv[argv.index(flag) + 1]
    return ""


def append(log: Path, argv: list[str], start: float, end: float, rc: int, gpu: bool | None = None) -> None:
    """One line for one step (a single write in append mode: lines of steps run side by side never interleave)."""
    step = argv[0] if argv else ""
    if gpu is None:
        gpu = step in GPU_STEPS
    line = {
        "run": os.environ.get(RUN_ID_ENV, ""),
        "step": step,
        "target": target(argv),
        "start": round(start, 3),
        "end": round(end, 3),
        "seconds": round(end - start, 3),
        "rc": rc,
        "gpu": gpu,
    }
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (files.json_text(line) + "\n").encode())
    finally:
        os.close(fd)


def read(log: Path, run: str | None = None) -> list[dict]:
    """The lines of ``run`` (every run when None); a damaged line is skipped."""
    if not log.is_file():
        return []
    out = []
    for text in log.read_text().splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if run is None or line.get("run") == run:
            out.append(line)
    return out


def summarise(steps: list[dict]) -> dict:
    """wall_s, gpu_busy_s and its share, seconds per step kind, and each job, from one run's step lines."""
    if not steps:
        return {}
    first, last = min(s["start"] for s in steps), max(s["end"] for s in steps)
    wall = last - first
    gpu = sum(s["seconds"] for s in steps if s.get("gpu"))
    by_step: dict[str, float] = {}
    for s in steps:
        by_step[s["step"]] = round(by_step.get(s["step"], 0.0) + s["seconds"], 2)
    return {
        "wall_s": round(wall, 1),
        "gpu_busy_s": round(gpu, 1),
        "gpu_busy_share": round(gpu / wall, 3) if wall > 0 else None,
        "steps": len(steps),
        "failed_steps": sum(1 for s in steps if s.get("rc")),
        "first_step": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(first)),
        "seconds_by_step": dict(sorted(by_step.items(), key=lambda kv: -kv[1])),
        "jobs": [
            {k: s[k] for k in ("step", "target", "seconds", "gpu", "rc")}
            for s in sorted(steps, key=lambda s: s["start"])
        ],
    }


def write(log: Path, run: str, out: Path, extra: dict) -> dict | None:
    """Write ``out`` (run.json) for ``run`` from its step lines; None (nothing written) when it ran no step."""
    steps = read(log, run)
    if not steps:
        return None
    record = {"run": run, **extra, **summarise(steps)}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(files.json_text(record, indent=1))
    tmp.replace(out)
    return record
