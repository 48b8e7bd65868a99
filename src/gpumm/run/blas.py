"""What NumPy's BLAS runs on: its library, version and thread count, for the CPU baselines' records.

``cpu_blas`` means NumPy's SGEMM on every core and ``cpu_blas1`` on one
(:func:`gpumm.run.launch.Launcher.bind` sets the limit). A limit can also
come from the environment the process started in: Snakemake sets
``OPENBLAS_NUM_THREADS`` and its kin to each job's thread count, and a BLAS
library reads them once, when NumPy loads it. A process that outlives the job
that started it (the GPU worker) would keep that job's limit for every later
job, and a multi-threaded baseline would run on one thread with nothing to
show it. So the worker starts without those variables
(:data:`THREAD_VARIABLES`), and every BLAS measurement records the library
and the threads it actually ran on, read back from the library itself.
"""

import os

# the variables through which a job's thread count reaches a BLAS library (those Snakemake sets for a shell job)
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def without_thread_limits(env: dict) -> dict:
    """``env`` less the variables that would fix a BLAS library's thread count at start-up."""
    return {k: v for k, v in env.items() if k not in THREAD_VARIABLES}


def in_use() -> tuple[str, int]:
    """(library and version, threads) of the BLAS NumPy calls now; ("", 0) where none is found."""
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not blas:
        return "", 0
    first = blas[0]
    name = " ".join(str(first.get(k) or "") for k in ("internal_api", "version")).strip()
    return name, int(first.get("num_threads") or 0)


def describe() -> str:
    """One line for a measurement's ``library`` field: library, version, threads of the cores available."""
    name, threads = in_use()
    if not name:
        return "NumPy BLAS (library not identified)"
    return f"NumPy BLAS: {name}, {threads} of {cores()} cores"
