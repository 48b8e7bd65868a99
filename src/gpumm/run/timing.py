"""Time launches with CUDA events after warm-ups, keeping every sample.

Two ways, for two regimes:

- **batched** (every kernel time in the report): each sample is ``batch``
  launches back to back between one event pair (a CUDA graph of up to
  ``CHUNK`` launches, replayed as often as the batch needs), and the sample
  is the per-launch time (the pair's time over ``batch``). The
  batch is chosen so that a sample lasts at least ``TARGET_MS``; a kernel
  longer than that runs one launch per sample. Without the graph, a short
  kernel is timed at the rate the host can launch it (about 5 µs per launch
  from Python on an H100, 25 µs for ``cupy.matmul``), not at its own
  duration. Where a launch cannot be captured, the launches are queued
  directly between the events and the samples say so (method ``stream``).
- **single** (end-to-end products and cold managed runs, where each run must
  start from a state the host prepares): one launch between each event pair.

How many samples: :mod:`gpumm.run.sampling`'s rule (at least a minimum, then
until the set is quiet, full or out of time), or a fixed count where a
caller passes an integer. Warm-ups (:class:`Warmup`): up to ``count``
untimed samples, fewer when they, with the launches made just before (the
checks of the same shape), have run for ``seconds``: a 1.8 s kernel just
launched twice by its checks needs no more.

What remains at the smallest sizes is the launch-overhead floor of
back-to-back graph launches, measured on its own with an empty kernel
(:mod:`gpumm.run.overhead`) and drawn on the pages: no per-launch time can fall
below it.
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from gpumm.run import sampling

TARGET_MS = 2.0  # shortest sample of the batched method
MAX_BATCH = 4096  # most launches in one sample
CHUNK = 128  # launches captured in one graph; a sample replays the graph batch / CHUNK times back to back


def batch_size(single_ms: float, target_ms: float = TARGET_MS, max_batch: int = MAX_BATCH) -> int:
    """Launches per sample so that a sample lasts at least ``target_ms``; 1 for long kernels."""
    if not single_ms > 0 or math.isinf(single_ms):
        return max_batch if single_ms == 0 else 1
    return int(min(max_batch, max(1, math.ceil(target_ms / single_ms))))


def per_launch(total_ms: list[float], batch: int) -> list[float]:
    """Per-launch milliseconds of samples that each timed ``batch`` launches."""
    return [t / batch for t in total_ms]


@dataclass(frozen=True)
class Warmup:
    """Untimed samples before the timed ones: at most ``count``, fewer once ``seconds`` of launches ran."""

    count: int = 3
    seconds: float = 0.05

    def count_for(self, sample_ms: float = 0.0, already_s: float = 0.0) -> int:
        """Warm-ups for samples of ``sample_ms`` (0: unknown) after ``already_s`` seconds of launches of the same
        work (the checks): none once those ran ``seconds``, else enough to reach it, at most ``count``."""
        if self.count <= 0:
            return 0
        if math.isinf(self.seconds):  # a fixed count
            return self.count
        left = self.seconds - already_s
        if left <= 0:
            return 0
        if not sample_ms > 0:
            return self.count
        return min(self.count, max(1, math.ceil(left * 1e3 / sample_ms)))


@dataclass(frozen=True)
class Timed:
    samples: list[float]  # per-launch milliseconds, one per sample
    batch: int  # launches per sample
    method: str  # graph | stream | single | host
    stop: str = ""  # why sampling stopped (gpumm.run.sampling.STOPS)
    warmups: int = 0  # untimed samples taken first


def _warmup(w) -> Warmup:
    return w if isinstance(w, Warmup) else Warmup(count=int(w), seconds=math.inf)


def _rule(r) -> sampling.Rule:
    return r if isinstance(r, sampling.Rule) else sampling.fixed(int(r))


def _pairs(run: Callable[[], None], k: int) -> list[float]:
    """Milliseconds of ``k`` runs, each between its own event pair on the current stream; one wait at the end, so
    the host never stalls the queue between samples."""
    import cupy

    pairs = []
    for _ in range(k):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        run()
        end.record()
        pairs.append((start, end))
    pairs[-1][1].synchronize()
    return [cupy.cuda.get_elapsed_time(s, e) for s, e in pairs]


def time_launches(launch: Callable[[], None], warmups: int, repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` launches, each between its own event pair (a fixed count)."""
    for _ in range(warmups):
        launch()
    return _pairs(launch, repeats)


def _sample(run, method: str, batch: int, warmup, rule, sample_ms: float, already_s: float, timer) -> Timed:
    n_warm = _warmup(warmup).count_for(sample_ms, already_s)
    for _ in range(n_warm):
        run()
    got = sampling.collect(lambda k: per_launch(timer(run, k), batch), _rule(rule).for_sample(sample_ms))
    return Timed(got.samples, batch, method, got.stop, n_warm)


def time_single(launch: Callable[[], None], warmup, rule, single_ms: float = 0.0, already_s: float = 0.0) -> Timed:
    """One launch per event pair (end-to-end products, cold runs), as many as the rule asks."""
    return _sample(launch, "single", 1, warmup, rule, single_ms, already_s, _pairs)


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


def _runner(launch: Callable[[], None], batch: int, graph=None) -> tuple[Callable[[], None], str, int, object]:
    """One sample's work for ``batch`` launches: a graph of up to CHUNK launches where they can be captured,
    replayed back to back as many times as the batch needs (capturing thousands of launches from Python costs
    tens of milliseconds a set; replays queue on the GPU faster than they run, so the GPU sees the launches back
    to back either way), else the launches queued. Returns (run, method, launches per sample, graph)."""
    chunk = min(batch, CHUNK)
    reps = max(1, math.ceil(batch / chunk))
    if graph is None or graph[1] != chunk:
        g = capture(launch, chunk)
        graph = (g, chunk) if g is not None else None
    if graph is not None:
        g = graph[0]
        if reps == 1:
            return g.launch, "graph", chunk, graph

        def replays():
            for _ in range(reps):
                g.launch()

        return replays, "graph", chunk * reps, graph

    def queued():
        for _ in range(batch):
            launch()

    return queued, "stream", batch, None


def time_batched(launch: Callable[[], None], warmup, rule, batch: int, sample_ms: float = 0.0) -> Timed:
    """Per-launch milliseconds of samples of ``batch`` back-to-back launches each.

    Call on a non-default stream (``with cupy.cuda.Stream(non_blocking=True):``), which capture needs.
    """
    run, method, batch, _ = _runner(launch, batch)
    return _sample(run, method, batch, warmup, rule, sample_ms, 0.0, _pairs)


def calibrated(
    launch: Callable[[], None], warmup, rule, single_ms: float | None = None, already_s: float = 0.0
) -> Timed:
    """Batched samples, the batch chosen from one launch (``single_ms``, timed by the caller where it has one)
    and, for a short kernel, once more from one replay of a graph of that first guess.

    A single launch between events includes the host's launch latency, so a
    first guess from it is too small for short kernels; one warmed-up graph
    of that guess gives the per-launch time the final batch is sized from.
    """
    single = time_launches(launch, 0, 1)[0] if single_ms is None else single_ms
    run, method, batch, graph = _runner(launch, batch_size(single))
    sample_ms = single
    if batch > 1:
        run()
        per = _pairs(run, 1)[0] / batch
        better = batch_size(per)
        if better != batch:
            run, method, batch, graph = _runner(launch, better, graph)
        sample_ms = per * batch
    return _sample(run, method, batch, warmup, rule, sample_ms, already_s, _pairs)


def _host_times(fn: Callable[[], None], k: int) -> list[float]:
    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def time_host(fn: Callable[[], None], warmup, rule, single_ms: float = 0.0, already_s: float = 0.0) -> Timed:
    """Milliseconds of calls of a host function (the CPU variants), as many as the rule asks."""
    return _sample(fn, "host", 1, warmup, rule, single_ms, already_s, _host_times)
