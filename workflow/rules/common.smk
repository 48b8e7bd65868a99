# Config validation, the mode decision and the variant list: everything the
# rules share. Work here runs once, when Snakemake reads the workflow.
import json
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

_SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, _SRC)
# Jobs run `python -m gpumm ...` with the interpreter running Snakemake and
# this checkout's package, installed or not.
shell.prefix(
    f'export PATH="{Path(sys.executable).parent}:$PATH"'
    f' PYTHONPATH="{_SRC}${{{{PYTHONPATH:+:$PYTHONPATH}}}}"; '
)

from gpumm import catalog as gpumm_catalog, config as gpumm_config, gpu, reference
from gpumm import (
    locks as gpumm_locks,
    operations as gpumm_operations,
    profile as gpumm_profile,
)
from gpumm.pages import names as page_names
from gpumm.paths import TABLE_NAMES

ENV = "../envs/gpumm.yaml"

gpumm_config.coerce(
    config
)  # --config sizes=[16,32] gives strings: make them the integers the schema asks
_problem = gpumm_config.explain(config)
if _problem is None:
    validate(config, "../schemas/config.schema.yaml")  # fills the defaults
    try:
        VARIANT_LIST = gpumm_config.check(config)
        DECISION = gpu.decide(config["mode"], config["gpu_arch"])
        ARCHIVE = (
            reference.choose(config["replay_from"])
            if DECISION.mode == "replay"
            else None
        )
    except (gpumm_config.ConfigError, RuntimeError) as exc:
        _problem = str(exc)
if _problem is not None:
    raise WorkflowError(f"{_problem}\nNothing was run.")

MODE = DECISION.mode
ARCH = DECISION.arch
VARIANTS = {v.id: v for v in VARIANT_LIST}
CUDA_IDS = [v.id for v in VARIANT_LIST if v.is_cuda]
HOST_BUILT_IDS = [v.id for v in VARIANT_LIST if v.kind == "cpu" and v.is_built]
ALL_IDS = list(VARIANTS)
try:  # --report, --lint and the like set no cores
    _cores = workflow.cores
except WorkflowError:
    _cores = None
_gpu_problem = gpu.parallel_problem(
    MODE,
    {k: getattr(r, "value", r) for k, r in workflow.global_resources.items()},
    _cores,
    cluster=workflow.remote_exec,  # a job inside a cluster allocation: its GPU is its own
)
if _gpu_problem:
    raise WorkflowError(f"{_gpu_problem}\nNothing was run.")


def op_of(wildcards):
    """The operation (gpumm/operations.py) a variant computes."""
    return gpumm_operations.get(VARIANTS[wildcards.variant].op)


def measure_shapes(wildcards):
    """The shapes a variant is measured at, as MxNxK,...: its operation's sizes and shapes."""
    return ",".join("x".join(map(str, s)) for s in op_of(wildcards).shapes(config))


def profile_sizes(wildcards):
    """The square sizes a variant is profiled at: from its operation's footprint and the GPU's L2."""
    sizes = gpumm_profile.sizes(
        config["profile"]["size"],
        config["profile"]["cached_size"],
        DECISION.l2_bytes,
        op_of(wildcards).footprint,
    )
    return ",".join(map(str, sizes))


PAGE_NAMES = page_names()
MICRO = gpumm_catalog.microbenchmarks()
PROFILE_METRICS = ",".join(
    config["profile"].get("metric_sets", {}).get(config["profile"]["metric_set"], [])
)
_stale = gpumm_locks.clear_stale(Path.cwd())
if _stale:
    print(
        f"gpumm: removed {len(_stale)} lock(s) a killed run left in .snakemake/locks; resuming",
        file=sys.stderr,
    )
print(
    f"gpumm: {DECISION.why}; {len(ALL_IDS)} variants"
    + (f"; replaying {ARCHIVE}" if ARCHIVE else f"; nvcc -arch={ARCH}"),
    file=sys.stderr,
)

RAW = "results/raw/{variant}"
# What every GPU job asks for: one GPU (the profiles cap how many run at once; on
# SLURM the executor requests it with --gpus), of cluster.gpu_model when set.
GPU_RESOURCES = {"gpu": 1}
if config.get("cluster", {}).get("gpu_model"):
    GPU_RESOURCES["gpu_model"] = config["cluster"]["gpu_model"]


wildcard_constraints:
    variant="|".join(ALL_IDS),


def kernel_source(wildcards):
    """The kernel file of a CUDA variant and what it includes; nothing for the others."""
    return [
        str(p.relative_to(workflow.basedir))
        for p in VARIANTS[wildcards.variant].inputs()
    ]


def binary(wildcards):
    """The built binary a variant runs (a cubin, or a shared object for a compiled CPU baseline); nothing
    for library variants."""
    v = VARIANTS[wildcards.variant]
    return [f"results/build/{v.id}/{v.binary_name}"] if v.is_built else []


def binary_arg(wildcards, input):
    return f"--binary {input.binary[0]}" if input.binary else ""


def collected_inputs(wildcards):
    """Every per-variant file the tables are made from."""
    return {
        "samples": expand(f"{RAW}/samples.csv", variant=ALL_IDS),
        "meta": expand(f"{RAW}/meta.json", variant=ALL_IDS),
        "profiles": expand(f"{RAW}/profile.csv", variant=ALL_IDS),
        "resources": expand("results/build/{variant}/resources.json", variant=CUDA_IDS),
        "ptx": expand("results/build/{variant}/kernel.ptx", variant=CUDA_IDS),
        "sass": expand("results/build/{variant}/kernel.sass", variant=CUDA_IDS),
        "provenance": "results/raw/provenance.json",
        "coalescing": "results/raw/coalescing/samples.csv",
        "coalescing_profile": "results/raw/coalescing/profile.csv",
        "micro": expand(
            "results/build/access_patterns/{f}",
            f=["resources.json", "kernel.ptx", "kernel.sass"],
        ),
        "bandwidth": "results/raw/bandwidth/samples.csv",
        "overhead": "results/raw/overhead/samples.csv",
        "hierarchy": "results/raw/hierarchy/samples.csv",
    }
