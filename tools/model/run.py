"""The decode end of a real model's layers on one GPU (issue 40, step 2 exploration): the weight-streaming
kernels (stream.cu: a warp per ROWS rows, or a block of warps splitting K per ROWS rows) against cuBLAS BF16 at M = 1
and 16 tokens, every layer of the configuration's model, weights cold and warm, each held to the DRAM bound of its
shape (gpumm.analyse.model).

    python tools/model/run.py CUBIN OUT_DIR [--tokens 1,16]

Per shape: every kernel verified first, output poisoned with NaN: the exact check (small integers, exact in BF16
and in FP32 sums) and the rounding check (random BF16 values) against the float64 product, on the GPU; a kernel
that fails is reported, not timed. Then timed in CUDA graphs of L launches, each launch on the next of C copies of
the weight (cold: C copies over at least 3 times the L2, so no launch finds its weight in the L2; warm: one copy),
15 samples after 3 warm-up graphs; per launch = the graph's time / L. The DRAM bound is the shape's bytes over the
device-to-device copy rate measured here (bytes read plus written over the copy's time, as the bandwidth study).
Writes OUT_DIR/samples.csv (every sample) and OUT_DIR/summary.csv (medians, shares).
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.analyse import model  # noqa: E402
from gpumm.run import verify  # noqa: E402

# token count: the candidates (kernel, how it is launched: a warp or a block of 8 warps per ROWS rows, ROWS; or
# "mma": a block of WARPS warps per 16 rows, taking M; or "race": a catalog variant, from results/build)
CANDIDATES = {
    1: [("split_m1_r1_w8", "block", 1), ("bf16_stream_max_m1", "race", 0), ("split_m1_r2_w8", "block", 2)],
    16: [("mma_t2_w8_u2", "mma", 8), ("bf16_stream_mma_w8", "race", 0), ("mma_t2_w16_u2", "mma", 16)]
    + [("bf16_stream_mma_w16", "race", 0)],
}
SAMPLES, WARMUP = 15, 3


def copy_rate(cupy) -> float:
    """Device-to-device copy: bytes read plus written per second, median of 10 copies of 1 GiB."""
    a = cupy.ones(1 << 28, dtype=cupy.float32)
    b = cupy.empty_like(a)
    times = []
    for _ in range(12):
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        s.record()
        b[...] = a
        e.record()
        e.synchronize()
        times.append(cupy.cuda.get_elapsed_time(s, e))
    return 2 * a.nbytes / (float(np.median(times[2:])) * 1e-3)


def launchers(cupy, mod, m: int, n: int, k: int):
    """(name, bind(A, W, C) -> launch) of each streaming candidate for m tokens and of cuBLAS BF16 (FP32 out and
    compute)."""
    from gpumm.run.launch import Launcher
    from gpumm.setup import catalog

    def candidate(name: str, kind: str, rows: int):
        if kind == "race":
            race = Launcher(catalog.from_id(name), ROOT / "results" / "build" / name / "kernel.cubin")
            return name, lambda A, W, C: race.bind(A, W, C)
        fn = mod.get_function(name)
        if kind == "mma":  # rows: warps per block of 16 rows
            grid, block = (math.ceil(n / 16),), (32 * rows,)

            def bind_mma(A, W, C):
                args = (A, W, C, np.int32(m), np.int32(n), np.int32(k))
                return lambda: fn(grid, block, args)

            return name, bind_mma
        units = math.ceil(n / rows)  # blocks, or warps (8 to a block of 256 threads)
        grid = (units,) if kind.startswith("block") else (math.ceil(units / 8),)
        block = (512,) if kind == "block16" else (256,)

        def bind(A, W, C):
            args = (A, W, C, np.int32(n), np.int32(k))
            return lambda: fn(grid, block, args)

        return name, bind

    lib = Launcher(catalog.from_id("cublas_bf16"))
    found = [candidate(*c) for c in CANDIDATES[m]]
    return [*found, ("cublas_bf16", lambda A, W, C: lib.bind(A, W, C, scratch=cupy.empty))]


def read_rate(cupy, mod) -> float:
    """The best read-only stream (read_u4, read_u8 of stream.cu at 4 to 16 blocks of 256 threads per SM) over 2 GiB:
    bytes read per second, median of 10 after 2 warm-ups."""
    n = 1 << 27  # 16-byte words
    p = cupy.ones(4 * n, dtype=cupy.uint32)
    out = cupy.zeros(1, dtype=cupy.uint32)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    best = 0.0
    for name in ("read_u4", "read_u8", "span_u4", "span_u8"):
        fn = mod.get_function(name)
        for per_sm in (2, 4, 8, 16):
            times = []
            for _ in range(12):
                s, e = cupy.cuda.Event(), cupy.cuda.Event()
                s.record()
                fn((sms * per_sm,), (256,), (p, np.uint64(n), out))
                e.record()
                e.synchronize()
                times.append(cupy.cuda.get_elapsed_time(s, e))
            rate = p.nbytes / (float(np.median(times[2:])) * 1e-3)
            print(f"read stream {name} x {per_sm} blocks per SM: {rate / 1e9:,.0f} GB/s", flush=True)
            best = max(best, rate)
    return best


def verified(cupy, bind, m: int, n: int, k: int) -> str:
    """'' when the kernel passes both checks at this shape, else why not."""
    for exact in (True, False):
        make = verify.bf16_exact_inputs if exact else verify.bf16_random_inputs
        A, W = make(7, m, n, k, cupy)
        C = cupy.full((m, n), np.nan, dtype=cupy.float32)
        bind(A, W, C)()
        cupy.cuda.Device().synchronize()
        a, w = verify.bf16_values(A, cupy), verify.bf16_values(W, cupy)
        ref, abs_ref, where = verify.reference(a, w.T, 0, absolute=not exact)
        check = verify.compare_exact(C, ref, where) if exact else verify.compare(C, ref, abs_ref, k, where)
        if not check.ok:
            return check.reason
    return ""


def timed(cupy, bind, A, copies: list, m: int, n: int) -> list[float]:
    """µs per launch of each sample: a graph of L launches, launch i on copy i mod C."""
    C = cupy.empty((m, n), dtype=cupy.float32)
    per_graph = max(20, 2 * len(copies))
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        launches = [bind(A, W, C) for W in copies]  # bound on this stream: cuBLAS's handle takes the current one
        launches[0]()  # anything the first call sets up (cuBLAS's workspace) before the capture
        stream.synchronize()
        stream.begin_capture()
        for i in range(per_graph):
            launches[i % len(launches)]()
        graph = stream.end_capture()
        out = []
        for i in range(WARMUP + SAMPLES):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            s.record(stream)
            graph.launch(stream)
            e.record(stream)
            e.synchronize()
            if i >= WARMUP:
                out.append(cupy.cuda.get_elapsed_time(s, e) * 1e3 / per_graph)
    return out


def main() -> None:
    import cupy

    p = argparse.ArgumentParser()
    p.add_argument("cubin")
    p.add_argument("out")
    p.add_argument("--tokens", default="1,16")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mod = cupy.RawModule(path=args.cubin)
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["model"]
    cfg = {**cfg, "tokens": [int(t) for t in args.tokens.split(",")]}
    l2 = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrL2CacheSize, 0)
    copy = copy_rate(cupy)
    rate = read_rate(cupy, mod)
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"{name}: device copy {copy / 1e9:,.0f} GB/s, read {rate / 1e9:,.0f} GB/s, L2 {l2 >> 20} MiB", flush=True)
    b = model.bounds(model.shapes(cfg), rate, math.inf)
    rows, samples = [], []
    for s in b.itertuples():
        m, n, k = int(s.M), int(s.N), int(s.K)
        A = verify.bf16_random_inputs(11, m, 8, k, cupy)[0]
        weight = verify.bf16_random_inputs(13, 8, n, k, cupy)[1]
        cold = [weight] + [weight.copy() for _ in range(max(1, math.ceil(3 * l2 / weight.nbytes)))]
        for kernel, bind in launchers(cupy, mod, m, n, k):
            why = verified(cupy, bind, m, n, k)
            if why:
                rows.append(
                    {"layer": s.layer, "M": m, "N": n, "K": k, "kernel": kernel, "status": "failed"} | {"reason": why}
                )
                print(f"{s.layer} M={m} {kernel}: FAILED {why}", flush=True)
                continue
            for weights, copies in (("cold", cold), ("warm", [weight])):
                us = timed(cupy, bind, A, copies, m, n)
                samples += [{"layer": s.layer, "M": m, "kernel": kernel, "weights": weights, "us": u} for u in us]
                med = float(np.median(us))
                rows.append(
                    {"layer": s.layer, "M": m, "N": n, "K": k, "kernel": kernel, "weights": weights, "status": "ok"}
                    | {"median_us": med, "q25_us": float(np.quantile(us, 0.25)), "q75_us": float(np.quantile(us, 0.75))}
                    | {"copies": len(copies), "bound_us": s.dram_us, "share_of_bound": s.dram_us / med}
                )
                share = f"{s.dram_us / med:.1%} of the DRAM bound"
                print(f"{s.layer:8s} M={m:3d} {kernel:14s} {weights}: {med:8.2f} us, {share}", flush=True)
        del cold, weight
        cupy.get_default_memory_pool().free_all_blocks()
    summary = pd.DataFrame(rows)
    ok = summary[summary.status == "ok"]
    lib = ok[ok.kernel == "cublas_bf16"].set_index(["layer", "M", "weights"]).median_us
    summary["share_of_cublas"] = [
        lib.get((r.layer, r.M, r.weights), np.nan) / r.median_us if r.status == "ok" else np.nan
        for r in summary.itertuples()
    ]
    summary = summary.assign(gpu=name, copy_gbs=copy / 1e9, read_gbs=rate / 1e9, l2_mib=l2 >> 20)
    summary.to_csv(out / "summary.csv", index=False)
    pd.DataFrame(samples).to_csv(out / "samples.csv", index=False)
    print(summary[summary.status == "ok"].round(3).to_string())


if __name__ == "__main__":
    main()
