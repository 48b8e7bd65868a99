"""Time launches with CUDA events after warm-ups, keeping every sample.

Two ways, for two regimes:

- **batched** (every kernel time in the report): each sample is one CUDA
  graph replaying ``batch`` launches back to back between one event pair, and
  the sample is the per-launch time (the pair's time over ``batch``). The
  batch is chosen so that a sample lasts at least ``TARGET_MS``; a kernel
  longer than that runs one launch per sample. Without the graph, a short
  kernel is timed at the rate the host can launch it (about 5 µs per launch
  from Python on an H100, 25 µs for ``cupy.matmul``), not at its own
  duration. Where a launch cannot be captured, the launches are queued
  directly between the events and the samples say so (method ``stream``).
- **single** (end-to-end products and cold managed runs, where each run must
  start from a state the host prepares): one launch between each event pair.

What remains at the smallest sizes is the launch-overhead floor of
back-to-back graph launches, measured on its own with an empty kernel
(:mod:`gpumm.overhead`) and drawn on the pages: no per-launch time can fall
below it.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

TARGET_MS = 2.0  # shortest sample of the batched method
MAX_BATCH = 4096  # most launches in one sample


def batch_size(single_ms: float, target_ms: float = TARGET_MS, max_batch: int = MAX_BATCH) -> int:
    """Launches per sample so that a sample lasts at least ``target_ms``; 1 for long kernels."""
    if not single_ms > 0 or math.isinf(single_ms):
        return max_batch if single_ms == 0 else 1
    return int(min(max_batch, max(1, math.ceil(target_ms / single_ms))))


def per_launch(total_ms: list[float], batch: int) -> list[float]:
    """Per-launch milliseconds of samples that each timed ``batch`` launches."""
    return [t / batch for t in total_ms]


@dataclass(frozen=True)
class Timed:
    samples: list[float]  # per-launch milliseconds, one per sample
    batch: int  # launches per sample
    method: str  # graph | stream | single | host


def time_launches(launch: Callable[[], None], warmups: int, repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` launches, each between its own event pair (single method).

    Events are recorded on the current stream around every launch; the host
    waits once at the end, so it never stalls the queue between samples.
    """
    import cupy

    for _ in range(warmups):
        launch()
    pairs = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launch()
        end.record()
        pairs.append((start, end))
    pairs[-1][1].synchronize()
    return [cupy.cuda.get_elapsed_time(s, e) for s, e in pairs]


def capture(launch: Callable[[], None], batch: int):
    """A CUDA graph of ``batch`` launches on the current (non-default) stream, or None if they cannot be captured."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    try:
        stream.begin_capture()
    except Exception:
        return None
    try:
        for _ in range(batch):
            launch()
    except Exception:  # e.g. a library call that refuses capture: end it and throw the graph away
        try:
            stream.end_capture()
        except Exception:
            pass
        return None
    try:
        graph = stream.end_capture()
        graph.upload()  # so that the first timed replay does not include moving the graph to the device
    except Exception:  # an invalidated capture, or a graph that cannot be instantiated
        return None
    return graph


def time_batched(launch: Callable[[], None], warmups: int, repeats: int, batch: int) -> Timed:
    """Per-launch milliseconds of ``repeats`` samples of ``batch`` back-to-back launches each.

    Call on a non-default stream (``with cupy.cuda.Stream(non_blocking=True):``),
    which capture needs.
    """
    import cupy

    graph = capture(launch, batch)
    if graph is not None:
        method = "graph"

        def run():
            graph.launch()
    else:
        method = "stream"

        def run():
            for _ in range(batch):
                launch()

    for _ in range(warmups):
        run()
    pairs = []
    for _ in range(repeats):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        run()
        end.record()
        pairs.append((start, end))
    pairs[-1][1].synchronize()
    return Timed(per_launch([cupy.cuda.get_elapsed_time(s, e) for s, e in pairs], batch), batch, method)


def calibrated(launch: Callable[[], None], warmups: int, repeats: int) -> Timed:
    """Batched samples, the batch chosen from one launch and then once more from one graph of a first guess.

    A single launch between events includes the host's launch latency, so a
    first guess from it is too small for short kernels; one warmed-up graph of
    that guess gives the per-launch time the final batch is sized from.
    """
    guess = batch_size(time_launches(launch, 0, 1)[0])
    if guess > 1:
        guess = batch_size(time_batched(launch, 1, 1, guess).samples[0])
    return time_batched(launch, warmups, repeats, guess)


def time_host(fn: Callable[[], None], warmups: int, repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` calls of a host function (the CPU variants)."""
    import time

    for _ in range(warmups):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples
