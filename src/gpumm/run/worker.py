"""The GPU worker: one process that stays up for a run and runs the GPU steps its jobs ask for.

Each GPU step of a measured run (a variant's measurement, the coalescing,
bandwidth, launch-overhead and hierarchy studies, the provenance) is its own
Snakemake job with its own outputs, so that an edit to one kernel re-measures
that variant alone. Started as a process each, every one of them paid for
Python, NumPy, CuPy, NVML and a CUDA context before its first kernel, about
fifty times a run. With ``gpu_worker: true`` (the default) a job's
``python -m gpumm STEP ...`` is a thin client instead: it hands its command
line to the worker over a Unix socket and relays the worker's output and exit
status, so the job's log, outputs and failure are the same as if it had run
the step itself. The worker runs one step at a time (the GPU lock,
:mod:`gpumm.run.gpulock`, held for each), keeps what the next step can reuse
(the CUDA context, the inputs and references of :mod:`gpumm.run.memo`), and
frees the rest between steps.

- **Started** by the first client that finds no worker, detached from it, in
  the client's environment less the BLAS thread limits Snakemake set for
  that job (:mod:`gpumm.run.blas`); its log is ``$GPUMM_WORKER_LOG`` (the workflow:
  ``results/logs/gpu-worker.log``).
- **Found** by a socket whose name is a digest of this checkout, the Python
  interpreter, ``CUDA_VISIBLE_DEVICES`` and the package's source: a changed
  ``src/gpumm`` is served by a new worker, never by one running the old code.
- **Stopped** when Snakemake finishes (``onsuccess`` and ``onerror`` ask it
  to), after ``$GPUMM_WORKER_IDLE_S`` seconds (60) without a request, or
  after a step that left the CUDA context unusable (an illegal address
  poisons a context for good: the next step gets a fresh worker).
- A client whose worker dies during its step fails with one line naming the
  worker's log.
"""

import contextlib
import gc
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

from gpumm.run import blas
from gpumm.setup import paths

# the steps that use the GPU (their seconds are the run's GPU-busy time: gpumm.archive.runrecord); all but the
# profile, whose Nsight Compute starts a process of its own, run in the worker when the workflow asks for one
GPU_STEPS = ("measure", "paired", "layers", "coalescing", "bandwidth", "overhead", "hierarchy", "provenance", "profile")
WORKER_STEPS = tuple(step for step in GPU_STEPS if step != "profile")
ENV_USE = "GPUMM_WORKER"  # "1": GPU steps go to the worker (the workflow sets it in measure mode)
ENV_INSIDE = "GPUMM_IN_WORKER"  # set in the worker: its steps run in process
ENV_LOG = "GPUMM_WORKER_LOG"
ENV_IDLE = "GPUMM_WORKER_IDLE_S"
ENV_DIR = "GPUMM_WORKER_DIR"
START_TIMEOUT_S = 180.0  # a worker's start: Python, CuPy, the CUDA context


def fingerprint() -> str:
    """Digest of the package's source: a worker serves only clients of the same code."""
    h = hashlib.sha256()
    pkg = Path(__file__).resolve().parents[1]
    for f in sorted(pkg.rglob("*.py")):
        h.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def key(visible: str | None = None) -> str:
    """The worker's name: this checkout, interpreter, code and visible devices (``visible``, by default this
    process's CUDA_VISIBLE_DEVICES): a run on several GPUs has one worker per device (gpumm.run.devices)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "") if visible is None else visible
    parts = [str(paths.ROOT), sys.executable, visible, fingerprint()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def socket_dir() -> Path:
    d = Path(os.environ.get(ENV_DIR) or f"/tmp/gpumm-worker-{os.getuid()}")
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def socket_path(k: str | None = None) -> Path:
    return socket_dir() / f"{k or key()}.sock"


def wanted(argv: list[str]) -> bool:
    """Whether this command line goes to the worker."""
    return (
        os.environ.get(ENV_USE) == "1"
        and not os.environ.get(ENV_INSIDE)
        and bool(argv)
        and argv[0] in WORKER_STEPS
        and "-h" not in argv
        and "--help" not in argv
    )


# ---------------------------------------------------------------- the client


def _connect(path: Path) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        return None
    return s


def _log_path() -> Path:
    return Path(os.environ.get(ENV_LOG) or socket_dir() / f"{key()}.log")


def _start(path: Path) -> None:
    """Start a worker on ``path`` unless another client is starting one (a lock beside the socket)."""
    import fcntl

    with open(path.with_suffix(".start"), "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        probe = _connect(path)
        if probe is not None:  # another client started it meanwhile
            probe.close()
            return
        path.unlink(missing_ok=True)
        log = _log_path()
        log.parent.mkdir(parents=True, exist_ok=True)
        # not the starting job's BLAS thread limit: the worker serves jobs of every thread count (gpumm.run.blas)
        env = {**blas.without_thread_limits(os.environ), ENV_INSIDE: "1"}
        with open(log, "a") as out:
            subprocess.Popen(
                [sys.executable, "-m", "gpumm", "worker", "--socket", str(path)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=os.getcwd(),
                start_new_session=True,  # it outlives this job, and Snakemake's signals to it
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            probe = _connect(path)
            if probe is not None:
                probe.close()
                return
            time.sleep(0.05)
        raise RuntimeError(f"the GPU worker did not start within {START_TIMEOUT_S:.0f} s; see {log}")


def request(argv: list[str], out=None, err=None) -> int:
    """Run ``argv`` (a GPU step) in the worker, relaying its output; its exit status."""
    out, err = out or sys.stdout, err or sys.stderr
    path = socket_path()
    conn = _connect(path)
    if conn is None:
        _start(path)
        conn = _connect(path)
        if conn is None:
            print(f"gpumm {argv[0]}: cannot reach the GPU worker at {path}; see {_log_path()}", file=err)
            return 1
    env = {k: v for k, v in os.environ.items() if k.startswith("GPUMM_") and k not in (ENV_USE,)}
    msg = {"argv": argv, "cwd": os.getcwd(), "env": env, "fingerprint": fingerprint(), "pid": os.getpid()}
    with conn, conn.makefile("rb") as frames:
        conn.sendall(json.dumps(msg).encode() + b"\n")
        for line in frames:
            frame = json.loads(line)
            if "out" in frame:
                out.write(frame["out"])
                out.flush()
            elif "err" in frame:
                err.write(frame["err"])
                err.flush()
            elif "rc" in frame:
                return int(frame["rc"])
    print(f"gpumm {argv[0]}: the GPU worker stopped during this step; see {_log_path()}", file=err)
    return 1


def stop(path: Path | None = None) -> bool:
    """Ask the worker on ``path`` (this checkout's, by default) to exit; whether one was there."""
    conn = _connect(path or socket_path())
    if conn is None:
        return False
    with conn, conn.makefile("rb") as frames:
        conn.sendall(b'{"stop": true}\n')
        for _ in frames:
            break
    return True


# ---------------------------------------------------------------- the worker


class _Frames(io.TextIOBase):
    """A text stream whose writes go to the client as frames; a client gone leaves the step running."""

    def __init__(self, conn: socket.socket, kind: str):
        self.conn, self.kind, self.gone = conn, kind, False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text and not self.gone:
            try:
                self.conn.sendall(json.dumps({self.kind: text}).encode() + b"\n")
            except OSError:  # the job was killed: finish the step (its outputs are written whole or not at all)
                self.gone = True
        return len(text)


def _context_ok() -> bool:
    if "cupy" not in sys.modules:  # no CUDA in this worker (a machine without a GPU): nothing to break
        return True
    try:
        import cupy

        cupy.cuda.Device().synchronize()
        return True
    except Exception:
        return False


def _tidy() -> None:
    gc.collect()
    with contextlib.suppress(Exception):
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


def _say(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} gpu worker {os.getpid()}: {text}", flush=True)


def serve(path: Path, idle_s: float | None = None) -> int:
    """Serve step requests on ``path`` until told to stop, idle for ``idle_s`` or the CUDA context breaks."""
    from gpumm import cli

    idle_s = float(os.environ.get(ENV_IDLE, 60)) if idle_s is None else idle_s
    os.environ[ENV_INSIDE] = "1"
    t0 = time.monotonic()
    try:  # the start-up every step would otherwise pay: CuPy and the CUDA context
        import cupy

        cupy.zeros(1).sum()
        _say(f"CUDA context ready in {time.monotonic() - t0:.2f} s; serving {path}")
    except Exception as exc:  # no GPU here: the steps say so themselves (a CPU baseline still runs)
        _say(f"no CUDA context ({type(exc).__name__}: {exc}); serving {path}")
    mine = fingerprint()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path.unlink(missing_ok=True)
    srv.bind(str(path))
    srv.listen(64)
    srv.settimeout(idle_s)
    served = 0
    try:
        while True:
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                _say(f"idle for {idle_s:g} s after {served} steps; exiting")
                return 0
            conn.settimeout(None)
            with conn:
                try:
                    req = json.loads(conn.makefile("rb").readline() or b"{}")
                except (OSError, ValueError):
                    continue
                if not req.get("argv") and not req.get("stop"):  # a client checking that the worker is up
                    continue
                if req.get("stop"):
                    _say(f"asked to stop after {served} steps")
                    with contextlib.suppress(OSError):
                        conn.sendall(b'{"rc": 0}\n')
                    return 0
                if req.get("fingerprint") != mine:
                    with contextlib.suppress(OSError):
                        conn.sendall(json.dumps({"err": "gpu worker: another version of the code\n", "rc": 1}).encode())
                    return 0
                rc = _run_step(conn, req, cli)
                served += 1
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({"rc": rc}).encode() + b"\n")
            if not _context_ok():
                _say(
                    "the CUDA context is no longer usable after that step; exiting (the next step starts a new worker)"
                )
                return 0
            _tidy()
    finally:
        srv.close()
        with contextlib.suppress(OSError):
            if path.is_socket():
                path.unlink()


def _run_step(conn, req: dict, cli) -> int:
    argv = list(req.get("argv", []))
    started = time.monotonic()
    out, err = _Frames(conn, "out"), _Frames(conn, "err")
    saved_env = {k: os.environ.get(k) for k in req.get("env", {})}
    os.environ.update(req.get("env", {}))
    here = os.getcwd()
    try:
        os.chdir(req.get("cwd") or here)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # the step's own failure: its traceback goes to the job's log
                traceback.print_exc()
                rc = 1
    finally:
        os.chdir(here)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _say(f"{' '.join(argv[:3])[:80]} ... exit {rc} in {time.monotonic() - started:.1f} s (client pid {req.get('pid')})")
    return rc
