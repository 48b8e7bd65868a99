"""Time launches with CUDA events, after warm-ups, keeping every sample."""

from collections.abc import Callable


def time_launches(launch: Callable[[], None], warmups: int, repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` launches, each between its own event pair.

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
