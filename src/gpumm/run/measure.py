"""Verify, then time, one variant at every configured shape and memory mode.

For each shape (smallest work first) and memory mode, before any timing:

1. the exact check: inputs of small nonzero integers, C poisoned with NaN,
   one product, which must equal the float64 reference bit for bit;
2. the rounding check: fresh random inputs (uniform in [-1, 1)), C poisoned,
   one product, within the rounding tolerance of the float64 reference
   (:mod:`gpumm.run.verify` gives both rules and their reasons).

Only a variant that passes both is timed, on the random inputs. Every array
the product touches (A, B, C and the B^T of the variants that transpose B
first) lives in the memory mode under test, and the product's time includes
its preparation step, which is also timed on its own.

GPU kernel times are batched (:mod:`gpumm.run.timing`): each sample is the
per-launch time of a CUDA graph of back-to-back launches lasting at least
2 ms, so short kernels are not timed at the host's launch rate. The GPU's
clocks, temperature, power, energy and clock-event reasons during each timed
set are recorded (NVML, :mod:`gpumm.run.clocks`), and a set that any slowdown
reason touched (the power cap included, at full clock) or whose SM clock fell
below the maximum is marked throttled.

How many samples each set takes is :mod:`gpumm.run.sampling`'s rule: at least
a minimum, then until the set is quiet (its interquartile range a small share
of its median), full or out of time; each set records why it stopped. The
checks' two launches come first and count as warm-up: a kernel they already
ran for ``warmup_s`` gets no more. A shape whose predicted cost (the checks
and the minimum of samples, from the rate at the shape before, then from the
last check's own launch) exceeds the budget is skipped, and the skip is a
row in the output with its reason.
"""

import contextlib
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.run import blas, clocks, memory, operations, sampling, timing, verify
from gpumm.run.launch import Launcher
from gpumm.setup import columns, files, manifest
from gpumm.setup.catalog import Variant

COLUMNS = columns.SAMPLES
CHECK_LAUNCHES = 2  # the exact check and the rounding check each run the product once before any timing


@dataclass(frozen=True)
class Plan:
    shapes: list[tuple[int, int, int]]
    modes: list[str]
    seed: int
    cpu_max_mnk: int
    rule: sampling.Rule = field(default_factory=sampling.Rule)  # when a timed set has enough samples
    cold_rule: sampling.Rule = field(default_factory=lambda: cold_rule_from({}))  # the same, for a cold set
    warmup: timing.Warmup = field(default_factory=timing.Warmup)
    budget_s: float = 15.0  # longest one variant's timing at one shape may take (checks included)
    end_to_end_max_size: int = 2048  # GPU variants are also timed end to end up to this size
    mode_max_size: dict = field(
        default_factory=dict
    )  # a memory mode runs the shapes whose largest side is at most this

    @classmethod
    def from_settings(cls, s: dict) -> "Plan":
        """A plan from one variant's settings (:func:`gpumm.run.settings.measure_settings`: the config's own keys,
        checked by its schema), the one value the workflow hands the measure step."""
        return cls.from_config(
            s["timing"],
            shapes=shapes_from([], s["shapes"]),
            modes=list(s["memory_modes"]),
            seed=s["seed"],
            cpu_max_mnk=s["verify"]["cpu_reference_max_mnk"],
            mode_max_size=dict(s.get("memory_study_max_size") or {}),
        )

    @classmethod
    def from_config(cls, timing_cfg: dict, **kw) -> "Plan":
        """A plan from the config's ``timing`` section (defaults filled by the schema) and the rest by name."""
        t = timing_cfg
        return cls(
            rule=rule_from(t),
            cold_rule=cold_rule_from(t),
            warmup=timing.Warmup(count=t.get("warmups", 3), seconds=t.get("warmup_s", 0.05)),
            budget_s=t.get("budget_s", 15.0),
            end_to_end_max_size=t.get("end_to_end_max_size", 2048),
            **kw,
        )


def rule_from(t: dict) -> sampling.Rule:
    """The stopping rule the config's ``timing`` section sets."""
    return sampling.Rule(
        min_samples=t.get("min_samples", 5),
        max_samples=t.get("max_samples", 20),
        max_noise_pct=t.get("max_noise_pct", 0.5),
        timeout_s=t.get("timeout_s", 2.0),
        long_ms=1e3 * t.get("long_sample_s", math.inf),
        long_min_samples=t.get("long_min_samples", 3),
    )


def cold_rule_from(t: dict) -> sampling.Rule:
    """The rule of a cold set: at most ``cold_max_samples`` runs (page-fault-driven runs spread 10-30% run to
    run on an H100 and never stopped quiet in 190 sets: each ran to the 20 samples of the general rule)."""
    rule = rule_from(t)
    cold = t.get("cold_max_samples", 10)
    return replace(rule, min_samples=min(rule.min_samples, cold), max_samples=cold)


def inputs(seed: int, M: int, N: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Random A (M x K) and B (K x N), uniform in [-1, 1), float32; fresh per shape (the timed inputs)."""
    return verify.random_inputs(seed, M, N, K)


def shapes_from(sizes: list[int], extra: list[list[int]]) -> list[tuple[int, int, int]]:
    """Square sizes and extra shapes, without repeats, smallest work first."""
    shapes = {(s, s, s) for s in sizes} | {tuple(s) for s in extra}
    return sorted(shapes, key=lambda s: (s[0] * s[1] * s[2], s))


def _stream(variant: Variant):
    """A non-default stream for GPU variants (graph capture needs one), nothing for the CPU ones."""
    if not variant.on_gpu:
        return contextlib.nullcontext()
    import cupy

    return cupy.cuda.Stream(non_blocking=True)


def run(variant: Variant, binary, plan: Plan, progress: bool = True) -> pd.DataFrame:
    """All rows (samples, failures, skips) for one variant."""
    with _stream(variant):
        return _run(variant, binary, plan, progress)


def work_list(variant: Variant, plan: Plan) -> list[tuple[str, tuple[int, int, int]]]:
    """(memory mode, shape) pairs in the order they are measured: device memory at every shape, then each other
    mode at the shapes whose largest side is at most its ``mode_max_size`` (CPU variants: host memory)."""
    if not variant.on_gpu:
        return [("host", s) for s in plan.shapes]
    return [(m, s) for m in plan.modes for s in plan.shapes if max(s) <= plan.mode_max_size.get(m, 1 << 30)]


def predicted_s(single_s: float, plan: Plan, cold: bool = False, checks: int = CHECK_LAUNCHES) -> float:
    """Seconds a set whose launch takes ``single_s`` costs at least: its checks and its minimum of samples (and
    as many cold runs)."""
    return single_s * (checks + plan.rule.min_samples * (2 if cold else 1))


def _base(variant: Variant, mode_name: str, M: int, N: int, K: int) -> dict:
    """The fields every row of one set shares: the variant, the shape, the memory mode, what is timed, its work."""
    flops, nbytes = variant.work(M, N, K)
    return dict(
        variant=variant.id,
        family=variant.family,
        defines=variant.defines_text(),
        kind=variant.kind,
        M=M,
        N=N,
        K=K,
        memory_mode=mode_name,
        timed="kernel" if variant.on_gpu else "end_to_end",
        work_flops=flops,
        work_bytes=nbytes,
    )


def _not_run(variant: Variant, shape: tuple, plan: Plan, rate: float | None, cost: float, cold: bool, broken: str):
    """(status, reason) of a set that is not run: after a CUDA error, beyond the variant's max_size, or predicted
    over budget from the mode's rate at the last shape; None where it runs."""
    if broken:
        return "failed", f"not run: an earlier error ({broken})"
    if variant.max_size and max(shape) > variant.max_size:
        return "skipped", f"larger than this variant's max_size {variant.max_size} (catalog)"
    if rate is not None and predicted_s(cost / rate, plan, cold) > plan.budget_s:
        predicted = predicted_s(cost / rate, plan, cold)
        samples = f"{plan.rule.min_samples} samples"
        return "skipped", f"predicted {predicted:.0f} s for its checks and {samples} > budget {plan.budget_s:g} s"
    return None


def _run(variant: Variant, binary, plan: Plan, progress: bool) -> pd.DataFrame:
    from tqdm import tqdm

    launcher = Launcher(variant, binary)
    op = operations.get(variant.op)
    watch = clocks.Watch(pci_bus_id=_bus_id()) if variant.on_gpu else None
    rows: list[dict] = []
    work = work_list(variant, plan)
    bar = tqdm(work, desc=variant.id, unit="shape", disable=not progress, mininterval=0.5)
    rate: dict[str, float] = {}  # flop/s at the last measured shape, per mode
    broken = ""
    sets: list[list] = []  # [mode, M, N, K, seconds] of each set: where a variant's time went
    for mode_name, (M, N, K) in bar:
        bar.set_postfix_str(f"{mode_name} {M}x{N}x{K}")
        set_start = time.monotonic()
        base = _base(variant, mode_name, M, N, K)
        cost = base["work_flops"] or base["work_bytes"]  # what the rate counts: flops, or bytes where there are none
        mode = memory.get(mode_name)
        not_run = _not_run(variant, (M, N, K), plan, rate.get(mode_name), cost, "cold" in mode.info.timed, broken)
        if not_run:
            rows.append({**base, "status": not_run[0], "reason": not_run[1]})
        else:
            try:
                new_rows, seconds = _one_shape(launcher, op, mode, plan, base, watch)
            except memory.Refused as exc:  # nothing was allocated: the next shapes may still fit
                rows.append({**base, "status": "skipped", "reason": str(exc)})
                continue
            except Exception as exc:  # a CUDA error poisons the context: record any error, stop launching
                broken = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                rows.append({**base, "status": "failed", "reason": broken})
                continue
            _free(variant)  # this shape's arrays are gone: return their memory
            rows.extend(new_rows)
            if seconds:
                rate[mode_name] = cost / seconds
        sets.append([mode_name, M, N, K, round(time.monotonic() - set_start, 3)])
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs["sets"] = sets
    return df


def _timed_set(watch, fn, *args, **kw) -> tuple[timing.Timed, dict]:
    """Run a timing function while NVML watches the clocks."""
    if watch is None:
        return fn(*args, **kw), dict.fromkeys(clocks.FIELDS)
    watch.start()
    try:
        result = fn(*args, **kw)
    finally:
        seen = watch.stop()
    return result, seen


def _one_shape(launcher, op, mode, plan, base, watch):
    """One shape of one variant in one memory mode: verify it (exactly where exact arithmetic is possible, then
    for rounding), skip it where its predicted timing is over budget, time it (cold and warm, the kernel, its
    preparation, end to end, as the mode says) and return (its rows, the median seconds of its main set)."""
    checked = op.check(launcher, mode, plan.seed, plan.cpu_max_mnk, (base["M"], base["N"], base["K"]))
    common = _check_fields(checked)
    if not common["verified"]:
        check = checked.exact if not checked.exact.ok else checked.rounding
        return [{**base, **common, "status": "failed", "reason": check.reason}], 0.0
    # the last check's launch (on the inputs that are now timed) predicts the timing; skip it if over budget
    single = checked.launch_ms / 1e3
    if single * plan.rule.min_samples * (2 if "cold" in mode.info.timed else 1) > plan.budget_s:
        reason = (
            f"one run took {single:.2f} s: {plan.rule.min_samples} samples > budget {plan.budget_s:g} s "
            "(verified, not timed)"
        )
        return [{**base, **common, "status": "skipped", "reason": reason}], single
    timed = _time_sets(launcher, op, mode, plan, base, watch, checked)
    library = getattr(checked.arrays[3], "library", "")
    if launcher.variant.kind == "cpu" and launcher.variant.entry == "blas":  # the threads it runs on (run.blas)
        library = blas.describe()
    rows = [row for what, (t, seen) in timed.items() for row in _rows(base, common, seen, what, t, library)]
    main = timed.get(base["timed"]) or timed["warm"]
    return rows, float(np.median(main[0].samples)) / 1e3


def _check_fields(checked) -> dict:
    """What a shape's checks say, as the fields of each of its rows."""
    exact, rounding = checked.exact, checked.rounding
    return dict(
        exact_check="ok" if exact.ok and not exact.reason else ("not made" if exact.ok else "failed"),
        max_rel_err=rounding.max_rel_err,
        tolerance=rounding.tolerance,
        reference=rounding.reference or exact.reference,
        verified=exact.ok and rounding.ok,
    )


def _time_sets(launcher, op, mode, plan, base, watch, checked) -> dict:
    """Every timed set of a verified shape: what was timed -> (its timing, its clocks and power)."""
    variant, warm = launcher.variant, plan.warmup
    inputs, out, made, product = checked.arrays

    def hosts():  # the inputs as host arrays (the large shapes' are made on the GPU), for the steps that copy them
        return [memory.to_host(h) for h in made]

    timed: dict[str, tuple[timing.Timed, dict]] = {}
    if "cold" in mode.info.timed:
        timed["cold"] = _cold_set(mode, plan, watch, inputs, product, hosts)
        timed["warm"] = _timed_set(watch, timing.calibrated, product, warm, plan.rule, checked.launch_ms)
    elif variant.on_gpu:
        timed[base["timed"]] = _timed_set(
            watch, timing.calibrated, product, warm, plan.rule, checked.launch_ms, checked.checks_s
        )
    else:
        timed[base["timed"]] = _timed_set(
            watch, timing.time_host, product, warm, plan.rule, checked.launch_ms, checked.checks_s
        )
    if getattr(product, "prepare", None) is not None:
        timed["prepare"] = _timed_set(watch, timing.calibrated, product.prepare, warm, plan.rule)
    e2e = "end_to_end" in mode.info.timed and variant.on_gpu and op.end_to_end
    if e2e and max(base["M"], base["N"], base["K"]) <= plan.end_to_end_max_size:
        out_host = np.empty(out.shape, dtype=np.float32)
        host_inputs = hosts()

        def end_to_end():
            for array, host in zip(inputs, host_inputs):
                mode.upload(array, host)
            product()
            mode.download(out, out_host)

        timed["end_to_end"] = _timed_set(watch, timing.time_single, end_to_end, warm, plan.rule)
    return timed


def _cold_set(mode, plan, watch, inputs, product, hosts) -> tuple:
    """The cold set: before each run the inputs' pages go back to the host (memory.MemoryMode.make_cold), then one
    timed run with the mode's prefetch inside the timing. One watch over every cold run and the resets between
    them (NVML's idle readings are left out of the clocks; the energy and power cover the resets too): a watch
    per run cost 10-20 ms of NVML calls each."""

    def cold_run():
        mode.before_run(inputs)
        product()

    def take(k):
        got = []
        for _ in range(k):
            mode.make_cold(inputs, hosts)
            got += timing.time_single(cold_run, 0, 1).samples
        return got

    s, seen = _timed_set(watch, sampling.collect, take, plan.cold_rule)
    return timing.Timed(s.samples, 1, "single", s.stop, 0), seen


def _rows(base: dict, common: dict, seen: dict, what: str, t, library: str) -> list[dict]:
    """One row per sample of the set ``what``: its time and rates (none for a preparation), how it was timed."""
    flops, nbytes = base["work_flops"], base["work_bytes"]
    return [
        {
            **base,
            **common,
            **seen,
            "timed": what,
            "repeat": i,
            "ms": ms,
            "gflops": flops / (ms * 1e-3) / 1e9 if what != "prepare" and flops else np.nan,
            "gbs": nbytes / (ms * 1e-3) / 1e9 if what != "prepare" else np.nan,
            "batch": t.batch,
            "method": t.method,
            "warmups": t.warmups,
            "stop": t.stop,
            "status": "ok",
            "reason": "",
            "library": library,
        }
        for i, ms in enumerate(t.samples)
    ]


def _free(variant: Variant) -> None:
    if variant.on_gpu:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


def write(df: pd.DataFrame, meta: dict, out_dir: Path) -> None:
    """samples.csv and meta.json, each written whole or not at all."""
    out_dir.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_dir / "samples.csv.tmp", index=False)
    # what was written, for a reader to tell a damaged file (gpumm.setup.manifest.recorded)
    meta = {**meta, "files": {"samples.csv": manifest.entry(out_dir / "samples.csv.tmp")}}
    (out_dir / "meta.json.tmp").write_text(files.json_text(meta, indent=1))
    (out_dir / "samples.csv.tmp").replace(out_dir / "samples.csv")
    (out_dir / "meta.json.tmp").replace(out_dir / "meta.json")


def _bus_id() -> str | None:
    """PCI bus id of the current CUDA device: how NVML finds the same GPU (its indices may differ from CUDA's)."""
    try:
        import cupy

        return cupy.cuda.Device().pci_bus_id
    except Exception:
        return None


def device_identity() -> dict:
    """Which GPU a measurement ran on: CUDA index, PCI bus id, name and UUID (NVML), or nothing on the host."""
    try:
        import cupy

        bus = _bus_id()
        return {"index": cupy.cuda.Device().id, "pci_bus_id": bus, **clocks.Watch(pci_bus_id=bus).identity()}
    except Exception:
        return {}


def meta_for(variant: Variant, plan: Plan, started: float, df: pd.DataFrame) -> dict:
    status = df.drop_duplicates(["M", "N", "K", "memory_mode"])["status"].value_counts().to_dict()
    return {
        "variant": variant.id,
        "family": variant.family,
        "defines": variant.defines_text(),
        "digest": variant.digest(),
        "source": variant.file,
        "seed": plan.seed,
        "warmups": plan.warmup.count,
        "warmup_s": plan.warmup.seconds,
        "sampling": {
            "min_samples": plan.rule.min_samples,
            "max_samples": plan.rule.max_samples,
            "max_noise_pct": plan.rule.max_noise_pct,
            "timeout_s": plan.rule.timeout_s,
            "long_sample_s": plan.rule.long_ms / 1e3 if math.isfinite(plan.rule.long_ms) else None,
            "long_min_samples": plan.rule.long_min_samples,
            "rule": plan.rule.describe(),
        },
        "budget_s": plan.budget_s,
        "batch_target_ms": timing.TARGET_MS,
        "operation": variant.op,
        "verification": (
            f"exact: nonzero integers in [-4, 4], result equal to the float64 product bit for bit; "
            f"rounding: uniform [-1, 1) inputs, |C-ref|/(|A||B|) <= {verify.ROUNDING_TOLERANCE_U}u "
            "(see gpumm/verify.py)"
            if variant.op == "matmul"
            else f"exact: the output equals the input ({variant.op}) bit for bit, poisoned with NaN first"
        ),
        "device": device_identity() if variant.on_gpu else {},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 2),
        "shape_status": status,
        "set_seconds": df.attrs.get("sets", []),  # [memory mode, M, N, K, seconds] per set, in order
        "origin": "measured",
    }
