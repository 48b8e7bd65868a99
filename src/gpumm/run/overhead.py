"""The launch-overhead floor of each timing method, measured with an empty kernel.

Three ways to time a launch (:mod:`gpumm.run.timing`):

- ``single``: one launch between its own event pair, the method the report
  used before batching; the floor is the host's launch latency (about 6 µs
  on an H100 from Python);
- ``stream``: launches queued back to back from Python between one event
  pair; the floor is the rate the host can issue them;
- ``graph``: a CUDA graph of back-to-back launches between one event pair,
  the method every kernel time of the report now uses; the floor is the
  GPU's own launch cost (under 1 µs).

Also CuPy's ``cupy.matmul`` at 32 x 32 x 32, single and queued: the cost of
its Python dispatch, which is what the earlier cuBLAS times at small sizes
measured (CuPy refuses cuBLAS calls inside a graph capture, so the report's
cuBLAS calls cublasSgemm directly: :mod:`gpumm.run.cublas`).
"""

from pathlib import Path

import pandas as pd

from gpumm.run import timing

COLUMNS = ["what", "method", "batch", "repeat", "ms"]
BATCH = 1000


def run(cubin: Path, warmups: int, repeats: int) -> pd.DataFrame:
    """A fixed count of samples each: ``warmups`` untimed, ``repeats`` timed (the floor is cheap to measure, and a
    fixed count keeps the methods comparable)."""
    import cupy

    rows = []

    def add(what, method, batch, samples):
        rows.extend(
            {"what": what, "method": method, "batch": batch, "repeat": i, "ms": ms} for i, ms in enumerate(samples)
        )

    with cupy.cuda.Stream(non_blocking=True):
        fn = cupy.RawModule(path=str(cubin)).get_function("empty_kernel")

        def empty():
            fn((1,), (32,), ())

        add("empty kernel", "single", 1, timing.time_launches(empty, warmups, repeats))
        add("empty kernel", "stream", BATCH, _queued(empty, warmups, repeats, BATCH))
        t = timing.time_batched(empty, warmups, repeats, BATCH)
        add("empty kernel", t.method, t.batch, t.samples)
        a = cupy.random.default_rng(0).random((32, 32), dtype=cupy.float32) + 0.5
        c = cupy.empty_like(a)

        def matmul():
            cupy.matmul(a, a, out=c)

        add("cupy.matmul 32x32x32", "single", 1, timing.time_launches(matmul, warmups, repeats))
        add("cupy.matmul 32x32x32", "stream", 100, _queued(matmul, warmups, repeats, 100))
        if not bool(cupy.allclose(c, a @ a)):
            raise RuntimeError("cupy.matmul gave a wrong product")
    return pd.DataFrame(rows, columns=COLUMNS)


def _queued(launch, warmups: int, repeats: int, batch: int) -> list[float]:
    """Per-launch ms of ``batch`` launches queued from Python between one event pair (no graph)."""

    def many():
        for _ in range(batch):
            launch()

    return timing.per_launch(timing.time_launches(many, warmups, repeats), batch)
