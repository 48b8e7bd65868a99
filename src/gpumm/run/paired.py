"""The paired step: every comparison of a race timed in alternation, in one process, on one GPU.

The per-variant sets (:mod:`gpumm.run.measure`) time each kernel alone, minutes
apart. At the races' largest sizes that compares two power states: an H100
multiplying BF16 at 8192³ reaches its 700 W cap in about 50 ms, and then its
clock falls by up to a quarter. This step takes, for each race of the config's
``paired`` section and each of its sizes, one *group*: the reference (cuBLAS,
cuBLAS BF16, the copy kernel) and every rung of the race, each family by its
fastest verified build at that shape in this run's own sets. For each group:

1. **checks**: every member verified again at the shape (C poisoned, the exact
   and the rounding check of its operation); a member that fails is a row with
   its reason and is not timed;
2. **heat**: rounds of every paired member for ``sustained_after_s``, not
   counted, so that what follows finds the card in its sustained state (at its
   power cap, where the race's kernels reach it);
3. **energy**: each member alone, back to back, for ``energy_s``, while a
   thread polls NVML: its board power is the mean of NVML's power samples in
   its span (:func:`gpumm.run.pairing.power_per_member`), the energy counter's
   whole updates the cross-check;
4. **sustained**: rounds of one block (``block_ms`` of back-to-back launches,
   a CUDA graph) of every paired member, back to back on the GPU, the order
   reversed every other round, until every share's 95% interval is at most
   ``ci_points`` wide, or ``max_s`` or ``max_rounds`` (:class:`gpumm.run.pairing.Rule`).

A member whose one launch takes longer than ``max_launch_ms`` is left out with
the reason, and one slower than ``min_share`` of the reference in its own set
is timed for its energy only (at the cap, a kernel far slower and cooler than
the others lets the clock rise for the kernels after it: seen on an H100, a
15% swing within a round): their comparisons stay unpaired, and the report
marks them where their power states differ. Every block is a row of ``samples.csv``; NVML's clock,
power and violation counters are recorded for the sustained rounds of each
group and for each member's energy span.
"""

import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from gpumm.run import clocks, nvml_poll, pairing, races
from gpumm.setup import catalog, columns

COLUMNS = columns.PAIRED


@dataclass
class Member:
    variant: object  # gpumm.setup.catalog.Variant
    role: str
    rung_below: str
    run: object = None  # one block: a CUDA graph of ``batch`` launches, replayed
    batch: int = 1
    work: float = 0.0  # flops (or bytes) per launch
    keep: list = field(default_factory=list)  # the arrays the launch reads and writes, alive while it is timed
    binary: Path | None = None
    ms_hint: float = 0.0  # its per-launch time in this run's own set at the shape
    in_rounds: bool = True  # paired in the rounds (else its energy alone: min_share)

    @property
    def id(self) -> str:
        return self.variant.id


def _events(k: int):
    import cupy

    return [cupy.cuda.Event() for _ in range(k)]


def _energy_phase(members: list[Member], settings: dict, watch: clocks.Watch) -> list[dict]:
    """Each member alone for ``energy_s``, back to back: its board power (NVML's power samples in its span, after
    ``settle_s``), its energy over the counter's whole updates, its median per-launch time, clock, reasons and
    capped share over its span: a row per member."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    ref = cupy.cuda.Event()
    ref.record(stream)
    ref.synchronize()
    t_ref = time.perf_counter()
    plan = []  # (member, [events]) in the order run
    with nvml_poll.Poll(watch) as poll:
        for m in members:
            per_block = max(m.batch * m.ms_hint, 1e-3)
            k = max(2, math.ceil(settings["energy_s"] * 1e3 / per_block))
            evs = _events(k + 1)
            evs[0].record(stream)
            for i in range(k):
                m.run()
                evs[i + 1].record(stream)
            plan.append((m, evs))
            if len(plan) >= 2:  # at most two members queued: the host keeps up, the GPU never waits
                plan[-2][1][-1].synchronize()
        plan[-1][1][-1].synchronize()
        poll.until_stamped(int(time.time() * 1e6))  # the last member's power samples in the buffer
    spans, blocks, times, at_of = {}, [], {}, {}
    for m, evs in plan:
        at = [t_ref + cupy.cuda.get_elapsed_time(ref, e) / 1e3 for e in evs]
        at_of[m.id] = at
        spans[m.id] = (at[0], at[-1])
        times[m.id] = [(b - a) * 1e3 / m.batch for a, b in zip(at, at[1:])]
        blocks += [(m.id, a, b, m.work * m.batch) for a, b in zip(at, at[1:])]
    settle = settings["settle_s"]
    readings = [(t, e) for t, e, *_ in poll.rows if e is not None]
    energy = pairing.energy_per_member(spans, blocks, readings, settle)
    power = pairing.power_per_member(spans, poll.samples(), settle)
    rows = []
    for m, _ in plan:
        settled = [t for t, a in zip(times[m.id], at_of[m.id]) if a >= spans[m.id][0] + settle]
        rows.append(
            _energy_row(m, spans[m.id], energy[m.id], power[m.id], poll.rows, settle, watch)
            | {"ms": statistics.median(settled or times[m.id]), "t_s": round(spans[m.id][0] - t_ref, 6)}
        )
    return rows


def _energy_row(m: Member, span: tuple, e, p, polled: list, settle: float, watch: clocks.Watch) -> dict:
    """One member's energy row: its energy and power (``e``, ``p``: gpumm.run.pairing), and the clock, reasons and
    capped share of NVML's readings in its span after ``settle`` seconds."""
    s0, s1 = span
    inside = [r for r in polled if s0 + settle <= r[0] <= s1 and r[5]]
    sm = [r[2] for r in inside if r[2] is not None]
    reasons = 0
    for r in inside:
        reasons |= r[3] or 0
    reasons &= clocks.SLOWDOWN | 0x10
    viol = [(r[0], r[4]) for r in inside if r[4] is not None]
    width = viol[-1][0] - viol[0][0] if len(viol) > 1 else 0.0
    capped = min(100.0, 100 * (viol[-1][1] - viol[0][1]) / 1e9 / width) if width > 0 else math.nan
    return {
        "phase": "energy",
        "variant": m.id,
        "batch": m.batch,
        "window_s": e.seconds,
        "energy_j": e.joules,
        "window_work": e.work,
        "power_mean_w": p.mean_w,
        "power_peak_w": p.peak_w,
        "power_samples": p.samples,
        "sm_clock_mhz": statistics.median(sm) if sm else math.nan,
        "sm_clock_min_mhz": min(sm) if sm else math.nan,
        "clock_reasons": hex(reasons) if inside else "",
        "power_capped_pct": capped,
        "throttled": clocks.throttled(reasons, capped, min(sm) if sm else None, watch.max_sm_mhz),
    }


def _pairs(members: list[Member]) -> list[tuple[str, str]]:
    """The comparisons the rounds' stopping rule watches: each rung against the reference and the rung below."""
    reference = next(m for m in members if m.role == "reference")
    by_family = {m.variant.family: m for m in members}
    pairs = [(m.id, reference.id) for m in members if m is not reference]
    pairs += [(m.id, by_family[m.rung_below].id) for m in members if m.rung_below in by_family and m is not reference]
    return pairs


def _round_rows(entry: tuple, origin, per_round: dict) -> list[dict]:
    """A finished round's rows (its events read once the last is done); a sustained round's times join
    ``per_round``."""
    import cupy

    index, phase, order, evs = entry
    evs[-1].synchronize()
    rows = []
    for pos, m in enumerate(order):
        ms = cupy.cuda.get_elapsed_time(evs[pos], evs[pos + 1]) / m.batch
        t_s = round(cupy.cuda.get_elapsed_time(origin, evs[pos]) / 1e3, 6)
        rows.append(
            {"phase": phase, "variant": m.id, "round": index, "position": pos, "batch": m.batch, "ms": ms, "t_s": t_s}
        )
        if phase == "sustained":
            per_round[m.id].append(ms)
    return rows


def _rounds(members: list[Member], settings: dict, watch: clocks.Watch, heat_s: float, sustained: bool = True):
    """Heat rounds for ``heat_s`` seconds, then (``sustained``) sustained rounds until the rule stops them; a row
    per block."""
    import cupy

    rule = pairing.Rule(settings["min_rounds"], settings["max_rounds"], settings["ci_points"], settings["max_s"])
    pairs = _pairs(members)
    stream = cupy.cuda.get_current_stream()
    origin = cupy.cuda.Event()
    origin.record(stream)
    rows, per_round, inflight = [], {m.id: [] for m in members}, []
    heat_until = time.perf_counter() + max(0.0, heat_s)
    started = None
    stop = ""
    r = 0

    def finish(entry):
        rows.extend(_round_rows(entry, origin, per_round))

    while not stop:
        phase = "heat" if time.perf_counter() < heat_until else "sustained"
        if phase == "sustained" and not sustained:
            break
        if phase == "sustained" and started is None:
            started = time.perf_counter()
            watch.start()
        order = pairing.order(members, r)
        evs = _events(len(order) + 1)
        evs[0].record(stream)
        for i, m in enumerate(order):
            m.run()
            evs[i + 1].record(stream)
        inflight.append((r, phase, order, evs))
        r += 1
        if len(inflight) > 2:  # two rounds queued ahead of the host's reading
            finish(inflight.pop(0))
            if started is not None:
                stop = rule.verdict(per_round, pairs, time.perf_counter() - started)
    for entry in inflight:
        finish(entry)
    fields = watch.stop() if started is not None else dict.fromkeys(clocks.FIELDS)
    for row in rows:
        if row["phase"] == "sustained":
            row.update(fields, stop=stop)
    return rows


def _prepare(member: Member, op, shape, seed: int, cpu_max_mnk: int, block_ms: float, median_ms: float) -> dict:
    """Check one member at the shape and make its block; a row saying how the checks went."""
    from gpumm.run import memory, timing
    from gpumm.run.launch import Launcher

    v = member.variant
    launcher = Launcher(v, member.binary)
    checked = op.check(launcher, memory.get("device"), seed, cpu_max_mnk, shape)
    ok = checked.exact.ok and checked.rounding.ok
    row = {"phase": "check", "variant": v.id, "status": "ok" if ok else "failed"}
    if not ok:
        bad = checked.exact if not checked.exact.ok else checked.rounding
        row["reason"] = bad.reason
        return row
    inputs, out, _, launch = checked.arrays
    member.keep = [inputs, out, launch, launcher]
    batch = timing.batch_size(median_ms, target_ms=block_ms)
    run, method, batch, _ = timing._runner(launch, batch)
    member.run, member.batch = run, batch
    member.ms_hint = median_ms
    run()  # the graph's first replay (uploads, caches) before anything is timed
    flops, nbytes = v.work(*shape)
    member.work = flops or nbytes
    row.update(batch=batch, ms=median_ms, reason=f"verified; {method} of {batch} launches per block")
    return row


def run_group(
    race: dict,
    n: int,
    settings: dict,
    seed: int,
    cpu_max_mnk: int,
    samples: dict,
    binaries: dict,
    watch: clocks.Watch,
    order: str = "forward",
) -> list[dict]:
    """Every row of one group: checks, energy spans, heat and sustained rounds (or why a member was left out)."""
    from gpumm.run import operations

    op = operations.get(catalog.from_id(race["members"][-1]["variants"][0]).op)
    shape = races.square(op.name, n)
    base = {"race": race["race"], "group": f"{race['race']} {n}", "op": op.name}
    base.update(M=shape[0], N=shape[1], K=shape[2], order=order)
    rows, members = _check_members(race, shape, base, settings, seed, cpu_max_mnk, samples, binaries)
    if not any(m.role == "reference" for m in members) or sum(m.in_rounds for m in members) < 2:
        why = "its reference was not verified" if members else "no member was verified"
        not_timed = {"family": race["reference"], "variant": "", "phase": "check", "status": "skipped"}
        return rows + [{**base, **not_timed, "reason": f"group not timed: {why}"}]
    rows += _time_group(members[::-1] if order == "reverse" else members, base, settings, watch)
    for m in members:
        m.keep = []
    return rows


def _check_members(race, shape, base, settings, seed, cpu_max_mnk, samples, binaries) -> tuple[list[dict], list]:
    """Each family's fastest verified build of the run's own sets, checked again here: (the check rows, the
    members that take part). A member with no verified build, or a launch too long for a block, is skipped
    with its reason; one far below the reference is timed for its energy only; a CUDA error ends the group."""
    from gpumm.run import operations

    rows, members = [], []
    ref_ms = next(
        (races.best_build(samples, f["variants"], shape)[1] for f in race["members"] if f["role"] == "reference"),
        math.nan,
    )
    for fam in race["members"]:
        vid, ms, why = races.best_build(samples, fam["variants"], shape)
        common = {**base, "family": fam["family"], "role": fam["role"], "rung_below": fam["rung_below"]}
        if vid is None:
            rows.append({**common, "variant": fam["variants"][0], "phase": "check", "status": "skipped", "reason": why})
            continue
        if ms > settings["max_launch_ms"]:
            reason = f"one launch takes {ms:.1f} ms > max_launch_ms {settings['max_launch_ms']:g}: not paired"
            rows.append({**common, "variant": vid, "phase": "check", "status": "skipped", "reason": reason, "ms": ms})
            continue
        v = catalog.from_id(vid)
        m = Member(v, fam["role"], fam["rung_below"], binary=Path(binaries[vid]) if binaries.get(vid) else None)
        try:
            row = _prepare(m, operations.get(v.op), shape, seed, cpu_max_mnk, settings["block_ms"], ms)
        except Exception as exc:  # a CUDA error: this member is out; the context may be gone, so the group too
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            rows.append({**common, "variant": vid, "phase": "check", "status": "failed", "reason": reason})
            raise _Broken(rows) from exc
        if row["status"] == "ok" and fam["role"] != "reference" and ref_ms / ms < settings["min_share"]:
            # far below the reference, and at the cap its blocks swing the card's clock for the kernels after it
            m.in_rounds = False
            row["reason"] += (
                f"; energy only: {ref_ms / ms:.0%} of the reference's rate in its own set < min_share "
                f"{settings['min_share']:g}, not paired"
            )
        rows.append({**common, **row})
        if row["status"] == "ok":
            members.append(m)
    return rows, members


def _time_group(members: list, base: dict, settings: dict, watch: clocks.Watch) -> list[dict]:
    """The group's timed rows: heat first, so that every member's energy span and every sustained round finds the
    card in its sustained state (a first member measured on a cool card ran 150 MHz faster, at 20% more power,
    on an H100), then each member's energy span, then the sustained rounds of those paired."""
    info = {
        m.id: {"family": m.variant.family, "role": m.role, "rung_below": m.rung_below, "work": m.work} for m in members
    }
    paired = [m for m in members if m.in_rounds]
    heat = _rounds(paired, settings, watch, settings["sustained_after_s"], sustained=False)
    energy = _energy_phase(members, settings, watch)
    timed = _rounds(paired, settings, watch, 0.0)
    return [{**base, **info[r["variant"]], **r, "status": "ok"} for r in heat + energy + timed]


class _Broken(RuntimeError):
    def __init__(self, rows):
        super().__init__("a CUDA error")
        self.rows = rows


def run(
    p: dict,
    settings: dict,
    seed: int,
    cpu_max_mnk: int,
    samples: dict,
    binaries: dict,
    order: str = "forward",
    progress: bool = True,
) -> pd.DataFrame:
    """Every group of the plan ``p``, one after the other; a DataFrame of :data:`COLUMNS`."""
    import cupy

    settings = {**races.SETTINGS, **settings}
    bus = cupy.cuda.Device().pci_bus_id
    watch = clocks.Watch(pci_bus_id=bus)
    rows: list[dict] = []
    broken = ""
    with cupy.cuda.Stream(non_blocking=True):
        for race in p["races"]:
            for n in race["sizes"]:
                t0 = time.monotonic()
                if broken:
                    rows.append(
                        {
                            "race": race["race"],
                            "group": f"{race['race']} {n}",
                            "phase": "check",
                            "status": "failed",
                            "reason": f"not run: an earlier error ({broken})",
                        }
                    )
                    continue
                try:
                    got = run_group(race, n, settings, seed, cpu_max_mnk, samples, binaries, watch, order)
                except _Broken as exc:
                    got, broken = exc.rows, exc.rows[-1]["reason"]
                rows += got
                cupy.get_default_memory_pool().free_all_blocks()
                if progress:
                    timed = {r["variant"] for r in got if r.get("phase") == "sustained"}
                    stop = next((r.get("stop") for r in got if r.get("phase") == "sustained"), "")
                    print(
                        f"  {race['race']} {n}: {len(timed)} kernels paired, stopped {stop or '-'}, "
                        f"{time.monotonic() - t0:.1f} s",
                        flush=True,
                    )
    return pd.DataFrame(rows).reindex(columns=COLUMNS)
