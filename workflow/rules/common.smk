# Config validation, the mode decision and the variant list: everything the
# rules share. Work here runs when Snakemake reads the workflow, and only reads.
import json
import os
import shlex
import sys
import uuid
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

_SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, _SRC)

from gpumm.setup import catalog as gpumm_catalog
from gpumm.setup import config as gpumm_config
from gpumm.run import settings as gpumm_settings
from gpumm.run import gpu
from gpumm.run import devices as gpumm_devices
from gpumm.run import races as gpumm_races
from gpumm.archive import reference
from gpumm.setup import guard as gpumm_guard
from gpumm.run import operations as gpumm_operations
from gpumm.profile import session as gpumm_profile
from gpumm.report.pages import names as page_names
from gpumm.setup.paths import TABLE_NAMES

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
        if ARCHIVE is not None:
            reference.check(ARCHIVE)  # every file as the archive's manifest records it
            # a replay shows the tuning search's candidates whenever the archive holds them (`tune` off here)
            VARIANT_LIST = gpumm_config.with_archived_candidates(
                VARIANT_LIST, config, Path(ARCHIVE)
            )
    except (gpumm_config.ConfigError, gpumm_catalog.CatalogError, RuntimeError) as exc:
        _problem = str(exc)
if _problem is not None:
    raise WorkflowError(f"{_problem}\nNothing was run.")

MODE = DECISION.mode
ARCH = DECISION.arch
# a variant that needs another GPU (sm_90a: a Hopper) is left out before any build, and said so
NOT_HERE = [v.id for v in VARIANT_LIST if not gpumm_catalog.runs_on(v, ARCH)]
NOTICES = []
if NOT_HERE:
    NOTICES.append(
        f"not on this GPU ({ARCH}), left out: {', '.join(NOT_HERE)} (they need sm_90a, a Hopper GPU)"
    )
    VARIANT_LIST = [v for v in VARIANT_LIST if v.id not in NOT_HERE]
VARIANTS = {v.id: v for v in VARIANT_LIST}
CUDA_IDS = [v.id for v in VARIANT_LIST if v.is_cuda]
HOST_BUILT_IDS = [v.id for v in VARIANT_LIST if v.kind == "cpu" and v.is_built]
ALL_IDS = list(VARIANTS)
# A real model's layers (config `model`, workflow/rules/model.smk): the builds its step loads, built like the
# others but measured only there (they are not in ALL_IDS: no set of their own, no profile).
# A replay shows the model whenever the archive holds its step (it changes no other number).
MODEL_ON = config["model"]["enabled"] or (
    ARCHIVE is not None and (Path(ARCHIVE) / "raw" / "model" / "meta.json").is_file()
)
_MODEL = [
    v
    for v in gpumm_config.model_builds(config, fp32=False)
    if gpumm_catalog.runs_on(v, ARCH)
]
_MODEL_FP32 = [
    v
    for v in gpumm_config.model_builds(config, fp32=True)
    if gpumm_catalog.runs_on(v, ARCH)
]
MODEL_IDS = [v.id for v in _MODEL]
MODEL_FP32_IDS = [v.id for v in _MODEL_FP32]
for _v in _MODEL + _MODEL_FP32:
    VARIANTS.setdefault(_v.id, _v)
BUILD_IDS = CUDA_IDS + [
    v
    for v in dict.fromkeys(MODEL_IDS + MODEL_FP32_IDS)
    if VARIANTS[v].is_cuda and v not in CUDA_IDS
]
try:  # --report, --lint and the like set no cores
    _cores = workflow.cores
except WorkflowError:
    _cores = None
# The run's GPUs (gpumm.run.devices): every visible one of the first one's kind, or config gpus of them. The
# gpu resource is their number, so that as many GPU jobs run at once, each claiming a device of its own.
DEVICES = []
if MODE == "measure":
    try:
        DEVICES, _left_out = gpumm_devices.choose(list(DECISION.gpus), config["gpus"])
    except gpumm_devices.DeviceError as exc:
        raise WorkflowError(f"{exc}\nNothing was run.")
    NOTICES += _left_out
_limits = {k: getattr(r, "value", r) for k, r in workflow.global_resources.items()}
_gpu_problem = gpu.parallel_problem(
    MODE,
    _limits,
    _cores,
    cluster=workflow.remote_exec,  # a job inside a cluster allocation: its GPU is its own
    devices=len(DEVICES),
)
if _gpu_problem:
    raise WorkflowError(f"{_gpu_problem}\nNothing was run.")
if MODE == "measure" and _limits.get("gpu") is None and not workflow.remote_exec:
    workflow.register_resource("gpu", len(DEVICES))


def op_of(wildcards):
    """The operation (gpumm/operations.py) a variant computes."""
    return gpumm_operations.get(VARIANTS[wildcards.variant].op)


def measure_shapes(wildcards):
    """The shapes a variant is measured at, as MxNxK,...: its operation's sizes (up to its max_size) and shapes."""
    return ",".join(
        "x".join(map(str, s))
        for s in gpumm_settings.shapes_for(VARIANTS[wildcards.variant], config)
    )


def profile_sizes(variant_id):
    """The square sizes a variant is profiled at: from its operation's footprint and the GPU's L2."""
    cached = gpumm_config.names_in(
        config["profile"]["cached_variants"], VARIANTS[variant_id]
    )
    return gpumm_profile.sizes(
        config["profile"]["size"],
        config["profile"]["cached_size"] if cached else 0,
        DECISION.l2_bytes,
        gpumm_operations.get(VARIANTS[variant_id].op).footprint,
    )


# Jobs run `python -m gpumm ...` with the interpreter running Snakemake and this checkout's package, installed
# or not. Every command runs under `set -euo pipefail` (Snakemake's own prefix, which a prefix of ours would
# otherwise replace): a rule that pipes its step through `tee` fails with the step's own status. Each step
# records its start and end for results/run.json (gpumm.archive.runrecord); in measure mode the GPU steps go to one
# worker process that stays up for the run (gpumm.run.worker; config gpu_worker).
RUN_ID = os.environ.get("GPUMM_RUN_ID") or uuid.uuid4().hex[:12]
RUN_LOG = Path.cwd() / "results" / "run" / "steps.jsonl"
USE_WORKER = MODE == "measure" and config["gpu_worker"] and not workflow.remote_exec
_env = {
    "PATH": f"{Path(sys.executable).parent}:$PATH",
    "PYTHONPATH": f"{_SRC}${{{{PYTHONPATH:+:$PYTHONPATH}}}}",
    "GPUMM_RUN_ID": RUN_ID,
    "GPUMM_RUN_LOG": str(RUN_LOG),
}
if len(DEVICES) > 1:  # each GPU job claims one of them (gpumm.run.devices)
    _env[
        "GPUMM_DEVICES"
    ] = (  # JSON, quoted for the shell, braces doubled for Snakemake's formatting
        json.dumps(DEVICES, separators=(",", ":"))
        .replace('"', '\\"')
        .replace("{", "{{")
        .replace("}", "}}")
    )
if USE_WORKER:
    _env.update(
        GPUMM_WORKER="1",
        GPUMM_WORKER_LOG=str(Path.cwd() / "results" / "logs" / "gpu-worker.log"),
    )
# A step that writes its output to its log and fails says why on the console too: `STEP > LOG 2>&1 || said LOG`
# prints the log's last lines naming the cause (`gpumm STEP: ...`: the file, row and column of a value that
# cannot be, nvcc's first error line), else its last line, and ends with the step's status.
SAID = (
    "said() {{ rc=$?; grep -E '^gpumm[ :]' \"$1\" | tail -n 3 >&2"
    ' || tail -n 1 "$1" | sed \'s/^/gpumm: /\' >&2; echo "gpumm: (the step\'s whole output: $1)" >&2;'
    " return $rc; }}; "
)
shell.prefix(
    "set -euo pipefail; export "
    + " ".join(f'{k}="{v}"' for k, v in _env.items())
    + "; "
    + SAID
)


def finish(success: bool) -> None:
    """When the workflow ends: stop the GPU worker; after a successful run, write results/run.json."""
    if USE_WORKER:
        from gpumm.run import worker as gpumm_worker

        gpumm_worker.stop()
        for _device in DEVICES if len(DEVICES) > 1 else []:  # one worker per device
            gpumm_worker.stop(
                gpumm_worker.socket_path(gpumm_worker.key(_device["uuid"]))
            )
    if not success:
        return
    from gpumm.archive import runrecord

    prov = Path("results/raw/provenance.json")
    prov = json.loads(prov.read_text()) if prov.is_file() else {}
    gpu_info = {**prov.get("gpu", {}), "uuid": prov.get("device", {}).get("uuid")}
    try:
        cores = workflow.cores
    except WorkflowError:
        cores = None
    record = runrecord.write(
        RUN_LOG,
        RUN_ID,
        Path("results/run.json"),
        {
            "mode": MODE,
            "gpu": {
                k: gpu_info.get(k)
                for k in ("name", "uuid", "sm_count", "max_sm_clock_mhz", "driver")
            },
            "cores": cores,
            "gpu_worker": USE_WORKER,
            "config_digest": gpumm_config.digest(config),
        },
    )
    if record:
        print(
            f"gpumm: {record['steps']} steps in {record['wall_s']} s, GPU busy {record['gpu_busy_s']} s"
            " (results/run.json)",
            file=sys.stderr,
        )


# Lines said when a run (or a dry run) starts, not while the workflow is read: a --lint or a cluster job's own
# reading says nothing, and a run another one's lock refuses says one line (gpumm.setup.guard).
NOTICES = NOTICES + [
    f"archive {_name} left out: {_why}" for _name, _why in reference.damaged().items()
]  # an archive that is not replayed and cannot be read stops nothing: the comparison page does without it
NOTICES.append(
    f"{DECISION.why}; {len(ALL_IDS)} variants"
    + (f"; replaying {ARCHIVE}" if ARCHIVE else f"; nvcc -arch={ARCH}")
    + (
        f"; {len(DEVICES)} GPUs side by side ({', '.join(str(d['index']) for d in DEVICES)})"
        if len(DEVICES) > 1
        else ""
    )
)
# What the record check finds (a damaged, missing or unrecorded result) is acted on only by a run: its steps
# are forced, so that a dry run lists them and only a run that holds the lock replaces a file.
gpumm_guard.install(workflow, NOTICES)

PAGE_NAMES = page_names()
MICRO = gpumm_catalog.microbenchmarks()
PROFILE_METRICS = ",".join(gpumm_config.metrics(config))

RAW = "results/raw/{variant}"
# the races' comparisons timed in alternation (gpumm.run.paired): which families at which sizes, and the variants
# (each family's builds) whose samples choose the build that races
PAIRED_PLAN = gpumm_races.plan(config, VARIANTS)
PAIRED_IDS = gpumm_races.inputs_of(PAIRED_PLAN)
PAIRED_SETTINGS = {
    k: v for k, v in config["paired"].items() if k not in ("races", "enabled")
}
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
        "paired": "results/raw/paired/samples.csv",
        "model": MODEL_RAW if MODEL_ON else [],
    }


# the model steps' files (gpumm.run.layers): the fitted shapes, the dispatcher on every shape, then FP32's fit
# shapes and its dispatcher on the held-out shapes and the layers
MODEL_STEP_RAW = {
    step: [
        f"results/raw/{step}/{f}" for f in ("samples.csv", "checks.csv", "shapes.csv")
    ]
    + (
        ["results/raw/model/read.csv", "results/raw/model/ceiling.csv"]
        if step == "model"
        else []
    )
    + [f"results/raw/{step}/meta.json"]
    for step in ("model", "model-dispatch", "model-fp32", "model-fp32-dispatch")
}
MODEL_RAW = [f for files in MODEL_STEP_RAW.values() for f in files]


def archived(*prefixes):
    """A replay job's `archived` parameter: the digest of the archive's files under ``prefixes`` ({variant}
    filled in per job), so that a changed archive replays those files again."""
    return lambda w: reference.digest(
        ARCHIVE, [p.format(variant=getattr(w, "variant", "")) for p in prefixes]
    )
