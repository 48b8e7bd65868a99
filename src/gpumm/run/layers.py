"""The model step: a real model's linear layers timed on one GPU, every kernel against cuBLAS BF16 (issue 40).

For each shape of the plan (a layer's weight, N x K, against M tokens; gpumm.analyse.model.shapes) and each member
that takes it (its build's ``MAX_M`` at least M; the TMA's rule on K):

1. **checks**: fresh inputs, C poisoned with NaN, the exact check (small integers: exact in BF16 and in FP32 sums)
   and the rounding check (random BF16 values) against the float64 product on the GPU, one reference per shape for
   every member; a member that fails is a row with its reason and is not timed;
2. **weights cold**: the weight is copied until the copies hold at least ``cold_factor`` times the L2 (two at
   least), and the launches of one sample take the copies in turn, so no launch finds its weight in the L2, as a
   model streams each layer's weights once per step; **warm** too (one copy, read again and again) where the
   weight fits in the L2, the number a benchmark of one buffer would show;
3. **rounds**: one sample of every member (a CUDA graph of ``batch`` launches, at least ``sample_ms`` long) per
   round, back to back, the order reversed every other round, ``warmup`` rounds not kept then ``samples`` kept:
   every member is timed in the same power state as the reference (paired, as the race), whatever M is. At
   ``heat_from_tokens`` tokens or more (the prefill end, where the products reach the power cap) rounds of heat
   come first, ``heat_s`` seconds of them not kept (``heat``), as the paired step's: its sustained state; where
   the card is then near its power cap and not yet held there, on until it is, ``heat_max_s`` at most.

The plan's ``op`` is ``matmul_bf16`` (the model's own: A the tokens, Bt the weight N x K, cuBLAS BF16 the
reference) or ``matmul`` (FP32 through the same steps, the ladder's kernels and cuBLAS SGEMM: B = the weight as
K x N); in both the second operand is the weight that is copied cold. ``dispatch`` in the plan adds a member of
that name: for each shape, the kernel the fitted rule
(gpumm.analyse.dispatch) picks, checked and timed like the others. Measured before the shapes
(gpumm.run.reads): the card's read rate, the DRAM bound's, and each layer's weight read alone, its ceiling.
"""

import itertools
import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.run import clocks, operations, pairing, timing, verify
from gpumm.run.rule import pick

SETTINGS = {"samples": 10, "warmup": 2, "sample_ms": 2.0, "max_batch": 200, "cold_factor": 3.0}
# the prefill shapes' rounds in the sustained state: heat_s of rounds first, and on to heat_max_s until at the cap
SETTINGS |= {"heat_s": 0.5, "heat_max_s": 2.0, "heat_from_tokens": 1024}
SAMPLE_COLUMNS = ["layer", "M", "N", "K", "kernel", "picks", "weights", "copies", "round", "batch", "us"]
CHECK_COLUMNS = ["layer", "M", "N", "K", "kernel", "picks", "status", "check", "max_rel_err", "tolerance", "reason"]


@dataclass
class Member:
    id: str  # a catalog variant, or "dispatch"
    launcher: object = None  # gpumm.run.launch.Launcher (None for dispatch: it borrows the pick's)
    max_m: int | None = None  # the most tokens its build takes (MAX_M), None for any


def max_m(variant) -> int | None:
    """The most rows of A a build takes: its ``MAX_M`` define (the weight-streaming kernels), else None."""
    return dict(variant.defines).get("MAX_M")


def takes(member: Member, M: int, K: int) -> str:
    """'' where the member takes the shape, else why not (more tokens than its build holds; K against the TMA)."""
    if member.max_m is not None and M > member.max_m:
        return f"M = {M} > MAX_M = {member.max_m}"
    geom = getattr(member.launcher, "geometry", None)
    if geom:
        from gpumm.run import hopper

        return hopper.supports(geom, M, 0, K) or ""
    return ""


def copies_for(weight_bytes: int, l2_bytes: int, factor: float) -> int:
    """How many copies of a weight hold at least ``factor`` times the L2 (two at least: a launch never reads the
    copy the one before it read)."""
    return max(2, math.ceil(factor * l2_bytes / weight_bytes))


def batch_for(launch_ms: float, copies: int, sample_ms: float, max_batch: int) -> int:
    """Launches in one sample: enough for ``sample_ms`` (gpumm.run.timing.batch_size), at least one pass over the
    copies, at most ``max_batch``."""
    return min(max_batch, max(copies, timing.batch_size(launch_ms, sample_ms, max_batch)))


def _pick(rule, shape, members: dict) -> str:
    M, N, K = shape
    return pick(rule, M, N, K, {i: m.max_m for i, m in members.items()})


def shapes(model: dict) -> list[dict]:
    """Every (layer, M) of the configuration's model section: layer, M, N, K and how many of that layer one token
    passes through, in the configuration's order of layers, M ascending."""
    spec = model["models"][model["name"]]
    return [
        {"layer": name, "M": m, "N": lay["n"], "K": lay["k"], "count": lay["count"]}
        for name, lay in spec["layers"].items()
        for m in sorted(model["tokens"])
    ]


def fp32_shapes(model: dict, held_out: bool) -> list[dict]:
    """The FP32 step's shapes (``model.fp32``): the fit shapes (layer ``fit``); with ``held_out``, instead the shapes
    the rule never saw (layer ``held-out``) and every layer of the model at ``fp32.tokens``."""
    spec = model.get("fp32", {})
    if not held_out:
        return [{"layer": "fit", "M": m, "N": n, "K": k, "count": 1} for m, n, k in spec.get("fit", [])]
    fitted = {tuple(s) for s in spec.get("fit", [])}
    out = [{"layer": "held-out", "M": m, "N": n, "K": k, "count": 1} for m, n, k in spec.get("held_out", [])]
    out = [s for s in out if (s["M"], s["N"], s["K"]) not in fitted]
    return out + (shapes({**model, "tokens": spec["tokens"]}) if spec.get("tokens") else [])


def check_shape(
    cupy, members: dict, picks: dict, shape, seed: int, op: str = "matmul_bf16"
) -> tuple[list[dict], object, object]:
    """Both checks of every member of ``picks`` (member -> the kernel it launches) at one shape, one float64
    reference of each check for all: the rows, and the rounding check's inputs (A and the weight), which are then
    timed. The inputs and references are the operation's, as every variant's checks make them."""
    M, N, K = shape
    op = operations.get(op)
    rows, failed = [], set()
    for exact in (True, False):
        A, W = op.inputs(exact, seed, M, N, K, cupy)
        ref, abs_ref, where = op.reference([A, W], 0, absolute=not exact)  # 0: on the GPU
        for mid in picks:
            if mid in failed:
                continue
            C = cupy.full((M, N), np.nan, dtype=cupy.float32)
            members[picks[mid]].launcher.bind(A, W, C)()
            cupy.cuda.Device().synchronize()
            c = verify.compare_exact(C, ref, where) if exact else verify.compare(C, ref, abs_ref, K, where)
            del C
            rows.append(
                {"kernel": mid, "picks": picks[mid], "status": "ok" if c.ok else "failed", "check": c.kind}
                | {"max_rel_err": c.max_rel_err, "tolerance": c.tolerance, "reason": c.reason}
            )
            if not c.ok:
                failed.add(mid)
        del ref, abs_ref
        if exact:
            del A, W
    return rows, A, W


def one_ms(cupy, launch, times: int = 1) -> float:
    """The time of ``times`` launches back to back (events), after one launch not counted."""
    launch()
    s, e = cupy.cuda.Event(), cupy.cuda.Event()
    s.record()
    for _ in range(times):
        launch()
    e.record()
    e.synchronize()
    return cupy.cuda.get_elapsed_time(s, e)


def launch_ms(cupy, launches: list, sample_ms: float = SETTINGS["sample_ms"]) -> float:
    """One launch's time, for the batch of a sample. One launch between two events counts the host's delay in
    sending it too, so a launch that reads shorter than ``sample_ms`` is timed again as a CUDA graph of about 1 ms
    of launches (the weights in turn), as the sample itself runs. The archives of 2026-11-27 counted launches from
    one launch where it read 0.25 ms or more: 6 launches of an 87 us kernel read at 0.33 ms, a sample of 0.52 ms;
    and before that from one launch at every length."""
    turn = itertools.cycle(launches)
    ms = one_ms(cupy, lambda: next(turn)())
    if ms >= sample_ms:
        return ms
    k = min(200, max(len(launches), math.ceil(1.0 / max(ms, 1e-3))))
    graph = timing.capture(lambda: next(turn)(), k)
    if graph is None:
        return one_ms(cupy, lambda: next(turn)(), k) / k
    stream = cupy.cuda.get_current_stream()
    return one_ms(cupy, lambda: graph.launch(stream)) / k


def sample_graph(cupy, launcher, A, weights: list, C, settings: dict):
    """(run one sample, batch): a CUDA graph of launches taking the weights in turn (plain launches where a graph
    cannot be captured)."""
    bound = [launcher.bind(A, W, C) for W in weights]
    batch = batch_for(
        launch_ms(cupy, bound, settings["sample_ms"]), len(bound), settings["sample_ms"], settings["max_batch"]
    )
    turn = itertools.cycle(bound)

    def launch():
        next(turn)()

    graph = timing.capture(launch, batch)
    stream = cupy.cuda.get_current_stream()
    if graph is not None:
        return (lambda: graph.launch(stream)), batch

    def plain():
        for _ in range(batch):
            launch()

    return plain, batch


def time_shape(cupy, members: dict, picks: dict, ok: list[str], A, W, shape, l2: int, settings: dict):
    """The rounds of one shape: (sample rows, clocks of the rounds)."""
    M, N, _ = shape
    n_copies = copies_for(W.nbytes, l2, settings["cold_factor"])
    cold = [W] + [W.copy() for _ in range(n_copies - 1)]
    sets = [("cold", cold)] + ([("warm", [W])] if W.nbytes <= l2 else [])
    C = cupy.empty((M, N), dtype=cupy.float32)
    runs = []
    for weights, copies in sets:
        for mid in ok:
            run, batch = sample_graph(cupy, members[picks[mid]].launcher, A, copies, C, settings)
            runs.append((mid, weights, len(copies), run, batch))
    rows = []
    if not runs:  # every member failed its checks
        return rows, {}
    seconds = settings["heat_s"] if M >= settings["heat_from_tokens"] else 0.0
    bus = cupy.cuda.Device().pci_bus_id  # NVML's device indices need not be CUDA's
    cap = clocks.Cap(pci_bus_id=bus) if seconds > 0 else None
    heated = heat(cupy, [r[3] for r in runs], seconds, settings["heat_max_s"], cap)  # without NVML: "time"
    watch = clocks.Watch(pci_bus_id=bus)
    watch.start()
    for r in range(settings["warmup"] + settings["samples"]):
        events = []
        for mid, weights, n, run, batch in pairing.order(runs, r):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            s.record()
            run()
            e.record()
            events.append((mid, weights, n, batch, s, e))
        events[-1][-1].synchronize()
        if r < settings["warmup"]:
            continue
        for mid, weights, n, batch, s, e in events:
            us = cupy.cuda.get_elapsed_time(s, e) * 1e3 / batch
            rows.append({"kernel": mid, "picks": picks[mid], "weights": weights, "copies": n, "round": r})
            rows[-1] |= {"batch": batch, "us": us}
    state = watch.stop() | heated
    del cold, C, runs
    return rows, state


def heat(cupy, runs: list, seconds: float, most_s: float = 0.0, cap=None) -> dict:
    """Rounds of every member (``runs``: each one's sample), none kept, for ``seconds`` (none for 0): the rounds that
    follow find the card in its sustained state, at its power cap where the shape's kernels reach it, as the paired
    step's heat does. Without them a prefill shape's rounds fell in the card's first 100 ms or so under load, where
    the power controller moves the clock most: the h200 archive of 7903007 timed cuBLAS BF16 on the down layer at
    8192 tokens at 1,337-1,421 us in the fitted step and 1,175-1,229 us in the dispatch step, and bf16_pingpong at
    1.02 and 0.96 of it.

    Where ``cap`` (gpumm.run.clocks.Cap, asked after every round once ``seconds`` are spent) says the card is near
    its cap and not yet held there, the rounds go on until it is, ``most_s`` seconds in all at most: a cool chip
    draws less, and the first shape of a prompt could spend its ``seconds`` below the cap and time its rounds as
    the clock fell (the h200 archive of 4314ed5: cuBLAS BF16 on the down layer at 1,024 tokens at 150 us in 7
    rounds of the dispatch step, its rounds' median clock 1,860 MHz, then 168 us, against 169-180 us in the fitted
    step; the pick at 0.91-0.96 of it, then level). (heat_s, heat_rounds, heat_end): the seconds and rounds
    spent, and why they ended: "cap" (held at the cap), "below" (the board well below its power limit: the
    kernels do not reach it), "limit" (``most_s`` spent near it), "time" (``seconds`` spent, no ``cap`` to ask or
    NVML did not answer), "" (no heat)."""
    started, r = time.perf_counter(), 0
    stream = cupy.cuda.get_current_stream()
    most = max(seconds, most_s) if cap is not None and seconds > 0 else seconds
    end = "time" if seconds > 0 else ""
    while True:
        spent = time.perf_counter() - started
        if spent >= seconds:
            if cap is None or seconds <= 0:
                break
            state = cap()  # "time" where NVML failed to answer: the heat ends at its seconds
            if state:
                end = state
                break
            if spent >= most:
                end = "limit"
                break
        for run in pairing.order(runs, r):
            run()
        stream.synchronize()
        r += 1
    return {"heat_s": round(time.perf_counter() - started, 3) if r else 0.0, "heat_rounds": r, "heat_end": end}


def run(plan: dict, settings: dict, seed: int, log=print) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every shape of the plan: (samples, checks, one row per shape with its copies and the rounds' clocks)."""
    import cupy

    settings = {**SETTINGS, **settings}
    members = _members(plan)
    rule = plan.get("dispatch")
    timed = set(plan.get("timed") or members)  # the members timed (the dispatch step: the reference only)
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    samples, checks, shapes = [], [], []
    stream = cupy.cuda.Stream(non_blocking=True)
    for i, s in enumerate(plan["shapes"], 1):
        shape = (int(s["M"]), int(s["N"]), int(s["K"]))
        key = {"layer": s["layer"], "M": shape[0], "N": shape[1], "K": shape[2]}
        started = time.perf_counter()
        takers = {m: members[m] for m in members if m != "dispatch" and not takes(members[m], shape[0], shape[2])}
        picks = {m: m for m in takers if m in timed}
        if rule is not None:
            picks["dispatch"] = _pick(rule, shape, takers)
        rows, failed = [], set()
        try:
            with stream:
                rows, A, W = check_shape(cupy, members, picks, shape, seed, plan.get("op", "matmul_bf16"))
                failed = {r["kernel"] for r in rows if r["status"] == "failed"}
                ok = [m for m in picks if m not in failed]
                done, state = time_shape(cupy, members, picks, ok, A, W, shape, l2, settings)
        except cupy.cuda.memory.OutOfMemoryError as exc:  # a card too small for the references or the cold copies
            cupy.get_default_memory_pool().free_all_blocks()
            why = f"not timed: out of GPU memory ({exc})"
            rows += [
                {"kernel": m, "picks": picks[m], "status": "skipped", "reason": why} for m in picks if m not in failed
            ]
            checks += [key | r for r in rows]
            log(f"[{i}/{len(plan['shapes'])}] {s['layer']} M={shape[0]}: {why}")
            continue
        checks += [key | r for r in rows]
        samples += [key | r for r in done]
        shapes.append(key | {"members": len(picks), "failed": len(failed), "seconds": time.perf_counter() - started})
        keep = ("heat_s", "heat_rounds", "heat_end", "sm_clock_mhz", "sm_clock_min_mhz", "power_mean_w", "throttled")
        shapes[-1] |= {k: state.get(k) for k in keep}
        del A, W
        cupy.get_default_memory_pool().free_all_blocks()
        med = {m: statistics.median(r["us"] for r in done if r["kernel"] == m and r["weights"] == "cold") for m in ok}
        best = min(med, key=med.get) if med else "none"
        log(
            f"[{i}/{len(plan['shapes'])}] {s['layer']} M={shape[0]}: {len(ok)} of {len(picks)} checked and timed, "
            f"fastest {best} {med.get(best, math.nan):.1f} us"
            + (f", failed: {', '.join(sorted(failed))}" if failed else "")
        )
    return (
        pd.DataFrame(samples, columns=SAMPLE_COLUMNS),
        pd.DataFrame(checks, columns=CHECK_COLUMNS),
        pd.DataFrame(shapes),
    )


def _members(plan: dict) -> dict:
    from gpumm.run.launch import Launcher
    from gpumm.setup import catalog

    out = {}
    for vid, binary in plan["kernels"].items():
        v = catalog.from_id(vid)
        out[vid] = Member(vid, Launcher(v, Path(binary) if binary else None), max_m(v))
    if plan.get("dispatch") is not None:
        out["dispatch"] = Member("dispatch")
    return out
