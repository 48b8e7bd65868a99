"""Several GPUs of one machine: which devices a run uses, and which one each GPU job gets.

The workflow's ``gpu`` resource is the number of devices a run uses, so that
Snakemake starts that many GPU jobs at once; each job then claims a device of
its own here before it runs: an exclusive ``flock`` on
``<lock dir>/claim-<UUID>.lock`` of the first free device in the list the
workflow hands it (``$GPUMM_DEVICES``), held until the job ends, and its
``CUDA_VISIBLE_DEVICES`` set to that device's UUID (a UUID, not an index, so
that a user's own ``CUDA_VISIBLE_DEVICES`` is honoured). Two jobs never share
a device: the claim keeps them apart, and the per-device timing lock
(:mod:`gpumm.run.gpulock`) would serialise them even if they did. The GPU
worker is per device already (its socket's name covers
``CUDA_VISIBLE_DEVICES``), so each device gets a worker of its own.

A run uses devices of one kind only (the first visible device's name): the
tables compare kernels by their rates, and rates from an H100 and an A100 in
one table would mean nothing. Devices of another kind are left out, and said
so. With one device nothing here changes a job's environment.
"""

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator

from gpumm.run import gpulock

ENV = "GPUMM_DEVICES"  # JSON list of the run's devices ({index, name, uuid}), set by the workflow when there are 2+
CHOSEN_ENV = "GPUMM_DEVICE"  # JSON of the device a job claimed, for its records
STEPS = (
    "measure",
    "paired",
    "layers",
    "coalescing",
    "bandwidth",
    "overhead",
    "hierarchy",
    "provenance",
    "profile",
)  # the GPU jobs


class DeviceError(ValueError):
    """The devices asked for are not there; the message names the config key."""


def choose(gpus: list[dict], wanted) -> tuple[list[dict], list[str]]:
    """The devices a run uses, from the visible ones (``gpus``, in order) and the config's ``gpus`` (auto: every
    device of the first one's kind; N: the first N of that kind); and one line for each device left out."""
    if not gpus:
        return [], []
    kind = gpus[0].get("name", "")
    same = [g for g in gpus if g.get("name", "") == kind]
    notes = [
        f"GPU {g.get('index')} ({g.get('name')}) left out: a run measures on one kind of GPU ({kind})"
        for g in gpus
        if g.get("name", "") != kind
    ]
    if wanted == "auto":
        return same, notes
    n = int(wanted)
    if n > len(same):
        raise DeviceError(
            f"config: gpus = {n} is not allowed: this machine has {len(same)} usable GPU(s) of the kind {kind}; "
            "allowed: auto, or 1 to " + str(len(same))
        )
    return same[:n], notes


def from_env() -> list[dict]:
    """The run's devices as the workflow handed them to this job ([] where it did not: one device)."""
    text = os.environ.get(ENV, "")
    try:
        devices = json.loads(text) if text else []
    except json.JSONDecodeError:
        return []
    return devices if isinstance(devices, list) else []


def _claim_path(device: dict):
    return gpulock.lock_path(str(device.get("uuid") or device.get("index")), kind="claim")


@contextlib.contextmanager
def claim(devices: list[dict], what: str, poll_s: float = 0.2, say=None) -> Iterator[dict]:
    """Hold the first free device of ``devices`` for the block; wait (saying so once) while all are held."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    told = False
    while True:
        for device in devices:
            fd = os.open(_claim_path(device), os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{what} (pid {os.getpid()})\n".encode(), 0)
                yield device
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        if not told:
            say(f"gpumm: {what}: every one of the run's {len(devices)} GPUs is taken; waiting for one")
            told = True
        time.sleep(poll_s)


@contextlib.contextmanager
def for_step(step: str) -> Iterator[dict | None]:
    """Around a GPU step of a run on several devices: claim one and make it this process's only visible device
    (for the step, and for a GPU worker it starts); elsewhere nothing."""
    devices = from_env()
    if step not in STEPS or len(devices) < 2:
        yield None
        return
    saved = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", CHOSEN_ENV)}
    with claim(devices, f"gpumm {step}") as device:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device.get("uuid") or device.get("index"))
        os.environ[CHOSEN_ENV] = json.dumps(device)
        try:
            yield device
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
