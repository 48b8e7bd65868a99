"""Exploration for issue 19's transpose goal, on the GPU (run from tools/transpose after build.sh).

1. Verify every candidate exactly: fresh random inputs (never zeros), the output poisoned with NaN first,
   the result compared bit for bit with the input's transpose (a copy: with the input), at shapes whose sides
   are multiples of 4, edges included (1000 x 1024, 4 x 4096, 36 x 1028, 4096 x 4, 8192, 16384).
2. Time the verified ones at 8192 and 16384 (the DRAM regime: 268 MB and 1 GiB inputs against a 50 MB L2)
   against cudaMemcpy device to device of the same bytes and of 1 GiB (the pipeline's bandwidth study),
   in interleaved rounds, CUDA events around a batch of launches lasting at least 2 ms.
3. Write results.csv (every sample: candidate, size, round, ms per launch, GB/s) and summary.csv (median
   GB/s, interquartile range, share of the same run's device-to-device copies), and print the summary.

GB/s counts the bytes moved: 8 M N for a transpose or copy (read once, written once), as the pipeline does.
"""

import glob
import os
import subprocess

import cupy as cp
import numpy as np
import pandas as pd

OUT = os.environ.get("OUT", ".")
ROUNDS = int(os.environ.get("ROUNDS", "15"))
TILES = {"t1": 1, "t1_cs": 1, "t2": 2, "t2_cs": 2, "t4": 4, "t4_cs": 4}
PER_THREAD = {"c4": 4, "c4_cs": 4, "c8": 8}


def load():
    kernels = {}
    for path in sorted(glob.glob("cubins/*.cubin")):
        name = os.path.basename(path)[:-6]
        mod = cp.RawModule(path=path)
        if name == "cat_vec4":
            kernels[name] = ("transpose", mod.get_function("transpose_vec4"), 1)
        elif name.startswith("tt"):  # tile.cu: tt<rows>x<cols>b<thread rows>
            tr, rest = name[2:].split("x")
            tc, br = rest.split("b")
            kernels[name] = ("tile", mod.get_function("tile_explore"), (int(tr), int(tc), int(br)))
        elif name.startswith("b"):  # bulk.cu: b<chunk KiB>s<stages>a<ahead>x<blocks per SM>
            kernels[name] = ("bulk", mod.get_function("bulk_explore"), int(name.rsplit("x", 1)[1]))
        elif name in TILES:
            kernels[name] = ("transpose", mod.get_function("transpose_explore"), TILES[name])
        else:
            kernels[name] = ("copy", mod.get_function("copy_explore"), PER_THREAD[name])
    return kernels


def launcher(kind, fn, per, src, dst):
    M, N = src.shape
    args = (src, dst, np.int32(M), np.int32(N))
    if kind == "transpose":
        grid = ((N + 31) // 32, (M + 32 * per - 1) // (32 * per))
        return lambda: fn(grid, (8, 32), args)
    if kind == "tile":  # per = (rows, cols, thread rows) of a tile
        tr, tc, br = per
        return lambda: fn(((N + tc - 1) // tc, (M + tr - 1) // tr), (tc // 4, br), args)
    if kind == "bulk":  # one warp a block, `per` blocks per SM
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        return lambda: fn((sms * per,), (32,), args)
    n4 = M * N // 4
    return lambda: fn(((n4 + 256 * per - 1) // (256 * per),), (256,), args)


def memcpy(dst, src, nbytes):
    return lambda: cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, 3, 0)  # device to device


def verify(kernels):
    rng = cp.random.default_rng(1919)
    bad = set()
    for M, N in [(1000, 1024), (4, 4096), (36, 1028), (4096, 4), (8192, 8192), (16384, 16384)]:
        src = rng.uniform(-1, 1, (M, N), dtype=cp.float32) + 2.0  # never zero
        for name, (kind, fn, per) in kernels.items():
            dst = cp.full((N, M) if kind in ("transpose", "tile") else (M, N), cp.nan, dtype=cp.float32)
            launcher(kind, fn, per, src, dst)()
            want = cp.ascontiguousarray(src.T) if kind in ("transpose", "tile") else src  # copy, bulk: the input
            ok = bool(cp.array_equal(dst.view(cp.uint32), want.view(cp.uint32)))
            if not ok:
                bad.add(name)
                print(f"FAILED {name} at {M}x{N}", flush=True)
        del src
    return bad


def timed(fn, reps, start, stop):
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / reps


def main():
    print(
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.mem,temperature.gpu", "--format=csv"],
            capture_output=True,
            text=True,
        ).stdout,
        flush=True,
    )
    kernels = load()
    bad = verify(kernels)
    print(f"verified {len(kernels) - len(bad)} of {len(kernels)}; failed: {sorted(bad)}", flush=True)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    big_a = cp.empty(1 << 28, dtype=cp.float32)  # 1 GiB each: the pipeline's device-to-device copy
    big_b = cp.empty_like(big_a)
    for n in (8192, 16384):
        src = cp.random.default_rng(n).uniform(-1, 1, (n, n), dtype=cp.float32) + 2.0
        dst = cp.empty_like(src)
        cands = {name: launcher(*k, src, dst) for name, k in kernels.items() if name not in bad}
        cands["d2d_same_bytes"] = memcpy(dst, src, src.nbytes)
        cands["d2d_1GiB"] = memcpy(big_b, big_a, big_a.nbytes)
        reps = {}
        for name, fn in cands.items():  # warm up, then batch to at least 2 ms
            one = timed(fn, 3, start, stop)
            reps[name] = max(1, int(np.ceil(2.0 / max(one, 1e-3))))
        for r in range(ROUNDS):
            for name, fn in cands.items():
                ms = timed(fn, reps[name], start, stop)
                moved = 2 * big_a.nbytes if name == "d2d_1GiB" else 2 * src.nbytes
                rows.append({"name": name, "n": n, "round": r, "ms": ms, "gbs": moved / (ms * 1e-3) / 1e9})
        del src, dst
    df = pd.DataFrame(rows)
    df.to_csv(os.path.join(OUT, "results.csv"), index=False)
    q = df.groupby(["n", "name"]).gbs.quantile([0.25, 0.5, 0.75]).unstack()
    q.columns = ["q25", "median", "q75"]
    q["iqr_pct"] = 100 * (q.q75 - q.q25) / q["median"]
    q = q.reset_index()
    for ref in ("d2d_same_bytes", "d2d_1GiB"):  # shares of the same run's copies at the same size
        q[f"of_{ref}"] = q["median"] / q.n.map(q[q.name == ref].set_index("n")["median"])
    q = q.sort_values(["n", "median"], ascending=[True, False])
    q.to_csv(os.path.join(OUT, "summary.csv"), index=False)
    pd.set_option("display.width", 200)
    print(q.round(3).to_string(index=False))
    print(
        subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu", "--format=csv"],
            capture_output=True,
            text=True,
        ).stdout
    )


if __name__ == "__main__":
    main()
