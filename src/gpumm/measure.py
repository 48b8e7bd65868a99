"""Verify, then time, one variant at every configured shape and memory mode.

For each shape (smallest work first) and memory mode, before any timing:

1. the exact check: inputs of small nonzero integers, C poisoned with NaN,
   one product, which must equal the float64 reference bit for bit;
2. the rounding check: fresh random inputs (uniform in [-1, 1)), C poisoned,
   one product, within the rounding tolerance of the float64 reference
   (:mod:`gpumm.verify` gives both rules and their reasons).

Only a variant that passes both is timed, on the random inputs. Every array
the product touches (A, B, C and the B^T of the variants that transpose B
first) lives in the memory mode under test, and the product's time includes
its preparation step, which is also timed on its own.

GPU kernel times are batched (:mod:`gpumm.timing`): each sample is the
per-launch time of a CUDA graph of back-to-back launches lasting at least
2 ms, so short kernels are not timed at the host's launch rate. The GPU's
clocks and temperature during each timed set are recorded (NVML,
:mod:`gpumm.clocks`), and a set whose SM clock fell below the maximum is
marked throttled. A shape whose predicted time exceeds the budget is skipped,
and the skip is a row in the output with its reason.
"""

import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm import clocks, columns, memory, operations, timing, verify
from gpumm.catalog import Variant
from gpumm.launch import Launcher

COLUMNS = columns.SAMPLES


@dataclass(frozen=True)
class Plan:
    shapes: list[tuple[int, int, int]]
    modes: list[str]
    warmups: int
    repeats: int
    budget_s: float
    seed: int
    cpu_max_mnk: int
    cpu_repeats: int = 10  # CPU variants: one warm-up, then this many timed calls
    cold_repeats: int = 10  # managed modes: cold runs, each after the host wrote the inputs again
    end_to_end_max_size: int = 2048  # GPU variants are also timed end to end up to this size


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


def run(variant: Variant, binary: Path | None, plan: Plan, progress: bool = True) -> pd.DataFrame:
    """All rows (samples, failures, skips) for one variant."""
    with _stream(variant):
        return _run(variant, binary, plan, progress)


def _run(variant: Variant, binary: Path | None, plan: Plan, progress: bool) -> pd.DataFrame:
    from tqdm import tqdm

    launcher = Launcher(variant, binary)
    op = operations.get(variant.op)
    watch = clocks.Watch(pci_bus_id=_bus_id()) if variant.on_gpu else None
    modes = plan.modes if variant.on_gpu else ["host"]
    rows: list[dict] = []
    work = [(m, s) for m in modes for s in plan.shapes]
    bar = tqdm(work, desc=variant.id, unit="shape", disable=not progress, mininterval=0.5)
    rate: dict[str, float] = {}  # flop/s at the last measured shape, per mode
    broken = ""
    for mode_name, (M, N, K) in bar:
        bar.set_postfix_str(f"{mode_name} {M}x{N}x{K}")
        base = dict(
            variant=variant.id,
            family=variant.family,
            defines=variant.defines_text(),
            kind=variant.kind,
            M=M,
            N=N,
            K=K,
            memory_mode=mode_name,
            timed="kernel" if variant.on_gpu else "end_to_end",
        )
        flops, nbytes = variant.work(M, N, K)
        base.update(work_flops=flops, work_bytes=nbytes)
        cost = flops or nbytes  # what the rate below counts: flops, or bytes for the operations without any
        launches = _launches(variant, plan) + 1
        if broken:
            rows.append({**base, "status": "failed", "reason": f"not run: an earlier error ({broken})"})
        elif variant.max_size and max(M, N, K) > variant.max_size:
            rows.append(
                {
                    **base,
                    "status": "skipped",
                    "reason": f"larger than this variant's max_size {variant.max_size} (catalog)",
                }
            )
        elif mode_name in rate and cost / rate[mode_name] * launches > plan.budget_s:
            predicted = cost / rate[mode_name] * launches
            rows.append(
                {
                    **base,
                    "status": "skipped",
                    "reason": f"predicted {predicted:.0f} s for {launches} runs > budget {plan.budget_s:g} s",
                }
            )
        else:
            try:
                new_rows, seconds = _one_shape(launcher, op, memory.get(mode_name), plan, base, watch)
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
    return pd.DataFrame(rows, columns=COLUMNS)


def _launches(variant: Variant, plan: Plan) -> int:
    return plan.warmups + plan.repeats if variant.on_gpu else 1 + plan.cpu_repeats


def _timed_set(watch, fn, *args) -> tuple[timing.Timed, dict]:
    """Run a timing function while NVML watches the clocks."""
    if watch is None:
        return fn(*args), dict.fromkeys(clocks.FIELDS)
    watch.start()
    try:
        result = fn(*args)
    finally:
        seen = watch.stop()
    return result, seen


def _single(launch, warmups: int, repeats: int) -> timing.Timed:
    return timing.Timed(timing.time_launches(launch, warmups, repeats), 1, "single")


def _host(fn, warmups: int, repeats: int) -> timing.Timed:
    return timing.Timed(timing.time_host(fn, warmups, repeats), 1, "host")


def _one_shape(launcher, op, mode, plan, base, watch):
    variant = launcher.variant
    M, N, K = base["M"], base["N"], base["K"]
    checked = op.check(launcher, mode, plan.seed, plan.cpu_max_mnk, (M, N, K))
    exact, rounding = checked.exact, checked.rounding
    check = exact if not exact.ok else rounding
    common = dict(
        exact_check="ok" if exact.ok and not exact.reason else ("not made" if exact.ok else "failed"),
        max_rel_err=rounding.max_rel_err,
        tolerance=rounding.tolerance,
        reference=rounding.reference or exact.reference,
        verified=exact.ok and rounding.ok,
    )
    if not (exact.ok and rounding.ok):
        return [{**base, **common, "status": "failed", "reason": check.reason}], 0.0
    inputs, out, hosts, product = checked.arrays
    library = getattr(product, "library", "")
    if variant.on_gpu:
        timer, warmups, repeats = timing.calibrated, plan.warmups, plan.repeats
    else:
        timer, warmups, repeats = _host, 1, plan.cpu_repeats
    # one run predicts the whole measurement; skip it if over budget
    single = (timing.time_launches(product, 0, 1)[0] if variant.on_gpu else timing.time_host(product, 0, 1)[0]) / 1e3
    runs = warmups + repeats + (plan.cold_repeats if "cold" in mode.info.timed else 0)
    if single * runs > plan.budget_s:
        reason = f"one run took {single:.2f} s: {runs} runs > budget {plan.budget_s:g} s"
        return [{**base, **common, "status": "skipped", "reason": reason}], single
    timed: dict[str, tuple[timing.Timed, dict]] = {}
    if "cold" in mode.info.timed:
        # cold: the host writes the inputs again (their pages go back to the host), then one timed run
        # (with the mode's prefetch inside the timing); warm: the runs after, pages resident
        def cold_run():
            mode.before_run(inputs)
            product()

        samples, seen = [], []
        for _ in range(plan.cold_repeats):
            for array, host in zip(inputs, hosts):
                mode.write_on_host(array, host)
            t, c = _timed_set(watch, _single, cold_run, 0, 1)
            samples += t.samples
            seen.append(c)
        timed["cold"] = (timing.Timed(samples, 1, "single"), _merge_clocks(seen))
        timed["warm"] = _timed_set(watch, timer, product, warmups, repeats)
    else:
        timed[base["timed"]] = _timed_set(watch, timer, product, warmups, repeats)
    if getattr(product, "prepare", None) is not None:
        timed["prepare"] = _timed_set(watch, timer, product.prepare, warmups, repeats)
    e2e = "end_to_end" in mode.info.timed and variant.on_gpu and op.end_to_end
    if e2e and max(M, N, K) <= plan.end_to_end_max_size:
        out_host = np.empty(out.shape, dtype=np.float32)

        def end_to_end():
            for array, host in zip(inputs, hosts):
                mode.upload(array, host)
            product()
            mode.download(out, out_host)

        timed["end_to_end"] = _timed_set(watch, _single, end_to_end, warmups, repeats)
    rows = []
    flops, nbytes = base["work_flops"], base["work_bytes"]
    for what, (t, seen) in timed.items():
        rows += [
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
                "status": "ok",
                "reason": "",
                "library": library,
            }
            for i, ms in enumerate(t.samples)
        ]
    main = timed.get(base["timed"]) or timed["warm"]
    return rows, float(np.median(main[0].samples)) / 1e3


def _merge_clocks(seen: list[dict]) -> dict:
    """One set of clock fields for several short timed runs (the cold runs)."""
    have = [s for s in seen if s.get("sm_clock_mhz") is not None]
    if not have:
        return dict.fromkeys(clocks.FIELDS)
    reasons = 0
    for s in have:
        reasons |= int(s["clock_reasons"], 16)
    return {
        "sm_clock_mhz": float(np.median([s["sm_clock_mhz"] for s in have])),
        "sm_clock_min_mhz": min(s["sm_clock_min_mhz"] for s in have),
        "mem_clock_mhz": float(np.median([s["mem_clock_mhz"] for s in have])),
        "temperature_c": max(s["temperature_c"] for s in have),
        "clock_reasons": hex(reasons),
        "throttled": any(s["throttled"] for s in have),
    }


def _free(variant: Variant) -> None:
    if variant.on_gpu:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


def write(df: pd.DataFrame, meta: dict, out_dir: Path) -> None:
    """samples.csv and meta.json, each written whole or not at all."""
    out_dir.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_dir / "samples.csv.tmp", index=False)
    (out_dir / "meta.json.tmp").write_text(json.dumps(meta, indent=1))
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
        "warmups": plan.warmups,
        "repeats": plan.repeats,
        "cpu_repeats": plan.cpu_repeats,
        "cold_repeats": plan.cold_repeats,
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
        "origin": "measured",
    }
