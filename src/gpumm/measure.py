"""Verify, then time, one variant at every configured shape and memory mode.

For each shape (smallest work first): draw fresh random inputs from a seed
derived from the run's seed and the shape, poison C with NaN, launch once,
compare with a float64 reference; only a verified variant is timed. A shape
whose predicted time (from the rate at the previous shape) exceeds the budget
is skipped, and the skip is a row in the output with its reason.
"""

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm import memory, timing, verify
from gpumm.catalog import Variant
from gpumm.launch import Launcher

COLUMNS = [
    "variant",
    "family",
    "defines",
    "kind",
    "M",
    "N",
    "K",
    "memory_mode",
    "timed",
    "repeat",
    "ms",
    "gflops",
    "max_rel_err",
    "tolerance",
    "reference",
    "verified",
    "status",
    "reason",
]


@dataclass(frozen=True)
class Plan:
    shapes: list[tuple[int, int, int]]
    modes: list[str]
    warmups: int
    repeats: int
    budget_s: float
    seed: int
    cpu_max_mnk: int
    cpu_repeats: int = 5  # CPU variants: one warm-up, then this many timed calls
    cold_repeats: int = 5  # managed modes: cold runs, each after the host wrote the inputs again
    end_to_end_max_size: int = 2048  # GPU variants are also timed end to end up to this size


def inputs(seed: int, M: int, N: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Random A (M x K) and B (K x N), uniform in [-1, 1), float32; fresh per shape."""
    rng = np.random.default_rng([seed, M, N, K])
    A = rng.random((M, K), dtype=np.float32) * 2 - 1
    B = rng.random((K, N), dtype=np.float32) * 2 - 1
    return A, B


def shapes_from(sizes: list[int], extra: list[list[int]]) -> list[tuple[int, int, int]]:
    """Square sizes and extra shapes, without repeats, smallest work first."""
    shapes = {(s, s, s) for s in sizes} | {tuple(s) for s in extra}
    return sorted(shapes, key=lambda s: (s[0] * s[1] * s[2], s))


def run(variant: Variant, cubin: Path | None, plan: Plan, progress: bool = True) -> pd.DataFrame:
    """All rows (samples, failures, skips) for one variant."""
    from tqdm import tqdm

    launcher = Launcher(variant, cubin)
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
        flops, _ = variant.work(M, N, K)
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
        elif mode_name in rate and flops / rate[mode_name] * launches > plan.budget_s:
            predicted = flops / rate[mode_name] * launches
            rows.append(
                {
                    **base,
                    "status": "skipped",
                    "reason": f"predicted {predicted:.0f} s for {launches} runs > budget {plan.budget_s:g} s",
                }
            )
        else:
            try:
                new_rows, seconds = _one_shape(launcher, memory.get(mode_name), plan, base, M, N, K, flops)
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
                rate[mode_name] = flops / seconds
    return pd.DataFrame(rows, columns=COLUMNS)


def _launches(variant: Variant, plan: Plan) -> int:
    return plan.warmups + plan.repeats if variant.on_gpu else 1 + plan.cpu_repeats


def _one_shape(launcher, mode, plan, base, M, N, K, flops):
    variant = launcher.variant
    A_host, B_host = inputs(plan.seed, M, N, K)
    A, B = mode.place(A_host), mode.place(B_host)
    C = mode.empty((M, N))
    C.fill(np.nan)  # poison: an element the product never writes stays NaN
    product = launcher.bind(A, B, C)
    product()
    _sync(variant)
    ref, abs_ref, where = verify.reference(A_host, B_host, plan.cpu_max_mnk)
    out = mode.fetch(C) if where == "cpu_f64" else C
    check = verify.compare(out, ref, abs_ref, K, where)
    del ref, abs_ref, out
    common = dict(max_rel_err=check.max_rel_err, tolerance=check.tolerance, reference=where, verified=check.ok)
    if not check.ok:
        return [{**base, **common, "status": "failed", "reason": check.reason}], 0.0
    timer = timing.time_launches if variant.on_gpu else timing.time_host
    warmups, repeats = (plan.warmups, plan.repeats) if variant.on_gpu else (1, plan.cpu_repeats)
    # one timed run predicts the whole measurement; skip it if over budget
    single = timer(product.run, 0, 1)[0] / 1e3
    if single * (warmups + repeats) > plan.budget_s:
        reason = f"one run took {single:.2f} s: {warmups + repeats} runs > budget {plan.budget_s:g} s"
        return [{**base, **common, "status": "skipped", "reason": reason}], single
    timed = {}
    if "cold" in mode.info.timed:
        # cold: the host writes the inputs again (their pages go back to the host), then one timed run
        # (with the mode's prefetch inside the timing); warm: the runs after, pages resident
        def cold_run():
            mode.before_run([A, B])
            product.run()

        timed["cold"] = []
        for _ in range(plan.cold_repeats):
            mode.write_on_host(A, A_host)
            mode.write_on_host(B, B_host)
            timed["cold"] += timer(cold_run, 0, 1)
        timed["warm"] = timer(product.run, warmups, repeats)
    else:
        timed[base["timed"]] = timer(product.run, warmups, repeats)
    if product.prepare is not None:
        timed["prepare"] = timer(product.prepare, warmups, repeats)
    if "end_to_end" in mode.info.timed and variant.on_gpu and max(M, N, K) <= plan.end_to_end_max_size:
        C_host = np.empty((M, N), dtype=np.float32)

        def end_to_end():
            mode.upload(A, A_host)
            mode.upload(B, B_host)
            product()
            mode.download(C, C_host)

        timed["end_to_end"] = timer(end_to_end, warmups, repeats)
    rows = []
    for what, samples in timed.items():
        rows += [
            {
                **base,
                **common,
                "timed": what,
                "repeat": i,
                "ms": ms,
                "gflops": flops / (ms * 1e-3) / 1e9 if what != "prepare" else np.nan,
                "status": "ok",
                "reason": "",
            }
            for i, ms in enumerate(samples)
        ]
    return rows, float(np.median(timed.get(base["timed"]) or timed["warm"])) / 1e3


def _sync(variant: Variant) -> None:
    if variant.on_gpu:
        import cupy

        cupy.cuda.Device().synchronize()


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
        "budget_s": plan.budget_s,
        "tolerance_rule": "2*K*2^-24 on |C-ref|/(|A||B|), float64 reference (see gpumm/verify.py)",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "seconds": round(time.time() - started, 2),
        "shape_status": status,
        "origin": "measured",
    }
