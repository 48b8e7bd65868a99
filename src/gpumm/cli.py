"""Command line of the pipeline: python -m gpumm STEP ...; each Snakemake rule calls one step.

Each stage's steps, their options and their bodies live with the stage (``<stage>/commands.py``); this module
only assembles them, hands a GPU step to the GPU worker where the workflow asks for one, records the step for
``run.json``, and turns a user's mistake into one line.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from gpumm.analyse import commands as analyse_steps
from gpumm.archive import commands as archive_steps
from gpumm.build import commands as build_steps
from gpumm.profile import commands as profile_steps
from gpumm.report import commands as report_steps
from gpumm.run import commands as run_steps
from gpumm.setup import commands as setup_steps
from gpumm.setup import records

# pandas, CuPy and the measuring modules are imported by the steps that use them (a replay step copies a few files)
STAGES = (setup_steps, build_steps, run_steps, profile_steps, archive_steps, analyse_steps, report_steps)

# Help of the options every step shares; an option not here has its own help where it is added.
OPTION_HELP = {
    "--variant": "variant name from kernels/catalog.yaml, e.g. tiled_tile16",
    "--variants": "comma-separated variant names",
    "--arch": "nvcc architecture, e.g. sm_90 (host for a C baseline)",
    "--out-dir": "folder the outputs are written to (created if missing)",
    "--out": "file the output is written to",
    "--binary": "the built kernel: kernel.cubin, or libkernel.so for a compiled CPU baseline",
    "--cubin": "the built cubin of the micro-benchmark",
    "--modes": "comma-separated memory modes: device, zero_copy, managed, managed_prefetch",
    "--warmups": "untimed samples before the timed ones",
    "--repeats": "timed samples, every one kept",
    "--timing": "the config's timing section as JSON (warm-ups, the stopping rule, the budget); missing keys take "
    "the schema's defaults",
    "--seed": "seed of the random inputs",
    "--cpu-max-mnk": "largest M*N*K checked against float64 on the CPU (beyond: float64 cuBLAS on the GPU)",
    "--metrics": "comma-separated Nsight Compute metric names",
    "--disabled": "write a profile table saying profiling is disabled, and profile nothing",
    "--sizes": "comma-separated square sizes",
    "--config-digest": "digest of the effective configuration",
    "--why": "why the run measures or replays (for the report)",
    "--archive": "an archived run: data/reference/<gpu> or its raw/provenance.json",
    "--part": "raw: samples, metadata, profile; build: resource report, PTX and SASS; all: both",
    "--tables": "folder of the tidy tables (results/tables)",
    "--name": "micro-benchmark name from the catalog's microbenchmarks",
    "--bytes": "bytes per copy",
}


class _Parser(argparse.ArgumentParser):
    """A parser whose error is one line naming the step and the option (exit 2), as every user error is."""

    def error(self, message: str):
        step = self.prog.replace("python -m ", "", 1)
        self.exit(2, f"{step}: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m gpumm", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for stage in STAGES:
        stage.register(sub)
    for step in sub.choices.values():
        for action in step._actions:
            if not action.help and action.option_strings:
                action.help = OPTION_HELP.get(action.option_strings[0])
    return p


MISSING = {  # a module a step needs that this installation lacks: what it is and how to get it
    "cupy": "CuPy is not installed: on a machine with an NVIDIA GPU, pip install -e '.[cuda13]' (or .[cuda12])",
    "pynvml": "nvidia-ml-py is not installed: pip install -e '.[cuda13]' (or .[cuda12]) brings it",
    "threadpoolctl": "threadpoolctl is not installed: pip install -e . brings it",
}


# errors that describe a user's input or setup: one line, exit 2, no traceback (module.Class)
USER_ERRORS = """gpumm.setup.catalog.CatalogError gpumm.setup.config.ConfigError gpumm.setup.manifest.Damaged
gpumm.setup.values.ValueProblem gpumm.build.nvcc.BuildError gpumm.run.gpulock.Busy gpumm.profile.nvprof.NvprofError
gpumm.archive.reference.ArchiveError gpumm.analyse.tables.MixedRun gpumm.report.execute.Unreadable
gpumm.archive.provenance.ProvenanceError""".split()


def _user_error(exc: Exception) -> bool:
    """Whether ``exc`` is one of USER_ERRORS (or a missing file); a module not imported raised none of its own."""
    kinds = [FileNotFoundError]
    found = [e.rsplit(".", 1) for e in USER_ERRORS]
    kinds += [getattr(sys.modules[m], name) for m, name in found if m in sys.modules]
    return isinstance(exc, tuple(kinds))


def main(argv: list[str] | None = None) -> int:
    # the workflow's steps seal what they wrote when they end well (gpumm.setup.records)
    outputs, argv, also = records.outputs_to_seal(sys.argv[1:] if argv is None else list(argv))
    started, rc = time.time(), 1
    try:
        rc = _main(argv)
        if rc == 0:
            records.seal(outputs, also=Path(also) if also else None)
        return rc
    finally:
        log = os.environ.get(archive_steps.RUN_LOG_ENV)
        if log and not os.environ.get("GPUMM_IN_WORKER"):  # the client of a worker records its step, once
            archive_steps.record_step(Path(log), argv, started, rc)


def _main(argv: list[str]) -> int:
    from gpumm.run import devices, worker

    # a GPU step of a run on several GPUs claims one of them first (gpumm.run.devices); the worker's steps, whose
    # client claimed it, and a request for help do not
    step = argv[0] if argv and not os.environ.get(worker.ENV_INSIDE) and not {"-h", "--help"} & set(argv) else ""
    with devices.for_step(step):
        return _step(argv)


def _step(argv: list[str]) -> int:
    from gpumm.run import worker

    if worker.wanted(argv):
        return worker.request(argv)
    args = parser().parse_args(argv)
    try:
        with run_steps.gpu_lock(args):
            rc = args.fn(args)
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in MISSING:
            raise
        print(f"gpumm {args.cmd}: {MISSING[root]}", file=sys.stderr)
        return 2
    except Exception as exc:
        if _user_error(exc):
            print(f"gpumm {args.cmd}: {exc}", file=sys.stderr)
            return 2
        # CUDA reports a missing or unusable GPU as its own error types
        if type(exc).__module__.startswith(("cupy", "cupy_backends")):
            print(f"gpumm {args.cmd}: no usable CUDA GPU ({type(exc).__name__}: {exc})", file=sys.stderr)
            return 2
        raise
    return rc or 0
