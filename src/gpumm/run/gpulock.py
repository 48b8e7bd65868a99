"""One lock per GPU, keyed by its UUID: no two processes time or profile on one GPU at once.

Snakemake's ``gpu`` resource keeps one run's GPU jobs apart. It cannot see a
job that a killed run left running, a second run in another folder, or a
step started by hand: each of those would time its kernels beside the
other's, and both sets of numbers would be wrong. So every process that
times or profiles on a GPU (the GPU worker for each step it runs, a GPU step
run by hand, the profile step for the whole of its Nsight Compute session)
holds an exclusive ``flock`` on ``<lock dir>/gpu-<UUID>.lock`` meanwhile.
A second one waits and says so, naming the holder, or, with a deadline,
stops with one line. The kernel drops the lock when its holder exits, however
it exits, so a killed process never leaves the GPU locked.

The lock directory is ``$GPUMM_LOCK_DIR`` or ``/tmp/gpumm-locks`` (shared by
every user and checkout on the machine, as the GPU is). Within one process
the lock is re-entrant.
"""

import contextlib
import fcntl
import os
import sys
import threading
import time
from pathlib import Path

DEFAULT_DIR = "/tmp/gpumm-locks"
_HELD: dict[str, int] = {}  # keys this process holds, with their depth
_GUARD = threading.Lock()


class Busy(RuntimeError):
    """The GPU stayed locked by another process past the deadline."""


def lock_dir() -> Path:
    d = Path(os.environ.get("GPUMM_LOCK_DIR") or DEFAULT_DIR)
    if not d.is_dir():
        d.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            d.chmod(0o1777)  # every user of the machine shares its GPUs
    return d


def lock_path(key: str, kind: str = "gpu") -> Path:
    """The lock file of GPU ``key``: ``gpu-<key>.lock`` for timing on it, ``claim-<key>.lock`` for a job's claim
    on it (gpumm.run.devices)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
    return lock_dir() / f"{kind}-{safe}.lock"


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 400, 0).decode(errors="replace").strip() or "another process"
    except OSError:
        return "another process"


@contextlib.contextmanager
def hold(key: str, what: str, wait_s: float | None = None, say=None, poll_s: float = 0.2):
    """Hold the lock of GPU ``key`` (its UUID) while the block runs.

    ``what`` says who holds it (written into the lock file for a waiting process to name). Where another process
    holds it: wait, saying so once through ``say`` (stderr by default); with ``wait_s``, give up after that many
    seconds with :class:`Busy`.
    """
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    with _GUARD:
        if key in _HELD:
            _HELD[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _GUARD:
                _HELD[key] -= 1
        return
    path = lock_path(key)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"gpumm: GPU {key} is in use by {_holder(fd)}; waiting for it (two timings on one GPU corrupt both)")
            deadline = None if wait_s is None else time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if deadline is not None else 0))
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Busy(
                            f"GPU {key} stayed in use by {_holder(fd)} for {wait_s:g} s; nothing was run"
                        ) from None
                    time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({what}) since {time.strftime('%H:%M:%S')}".encode(), 0)
        with _GUARD:
            _HELD[key] = 1
        try:
            yield
        finally:
            with _GUARD:
                _HELD.pop(key, None)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def device_key() -> str:
    """The UUID of the current CUDA device (as NVML writes it, GPU-...), or its PCI bus id where no UUID is had."""
    import cupy

    dev = cupy.cuda.Device()
    try:
        raw = cupy.cuda.runtime.getDeviceProperties(dev.id).get("uuid")
        if raw:
            h = bytes(raw).hex() if not isinstance(raw, str) else raw
            if len(h) == 32:
                return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    except Exception:  # an older CuPy without the field: ask NVML below
        pass
    try:
        from gpumm.run import clocks

        uuid = clocks.Watch(pci_bus_id=dev.pci_bus_id).identity().get("uuid")
        if uuid:
            return uuid
    except Exception:
        pass
    return f"pci-{dev.pci_bus_id}"


@contextlib.contextmanager
def hold_current(what: str, wait_s: float | None = None):
    """Hold the lock of the current CUDA device (initialising CUDA if it is not yet)."""
    with hold(device_key(), what, wait_s):
        yield
