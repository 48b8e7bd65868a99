"""The weight read alone in tiles of R rows x CH bytes (tools/model/read_tiles.cu), beside read_rows2, at gate and
up's weight (28672 x 4096 BF16, 235 MB) on one GPU: a diagnostic of the decode gap (issue 40).

    python tools/model/read_tiles.py TILES_CUBIN READ_STREAM_CUBIN OUT.csv

Cold: the weight and a copy (together over 3 times the L2) taken in turn. Each pattern at 1, 2, 4 and 8 blocks of
256 threads an SM: 15 samples, each the mean of 20 launches between two CUDA events after 3 warm-up launches; its
sums checked (every word holds four 1s) before it is timed. Writes one row a pattern and grid with every sample.
"""

import re
import statistics
import sys
from pathlib import Path

import numpy as np

N, K = 28672, 4096
SAMPLES, BATCH, WARMUP = 15, 20, 3


def main() -> None:
    import cupy
    import pandas as pd

    tiles_cubin, read_cubin, out = sys.argv[1:4]
    words = N * K // 8  # 16-byte words
    l2 = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrL2CacheSize, 0)
    sms = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrMultiProcessorCount, 0)
    n_copies = max(2, -(-3 * l2 // (16 * words)))
    copies = [cupy.ones(4 * words, dtype=cupy.uint32) for _ in range(n_copies)]
    tiles = cupy.RawModule(path=tiles_cubin)
    read = cupy.RawModule(path=read_cubin)
    names = re.findall(rb"read_tiles_r\d+_c\d+", Path(tiles_cubin).read_bytes())
    patterns = sorted({n.decode() for n in names}, key=lambda s: [int(x) for x in re.findall(r"\d+", s)])
    runs = []
    for name in patterns:
        fn = tiles.get_function(name)
        for per_sm in (1, 2, 4, 8):
            grid = sms * per_sm
            sums = cupy.zeros(grid, dtype=cupy.uint32)
            runs.append(
                (
                    f"{name} x{per_sm}",
                    grid,
                    lambda buf, fn=fn, g=grid, s=sums: fn((g,), (256,), (buf, s, np.int64(words))),
                    sums,
                )
            )
    fn2 = read.get_function("read_rows2")
    sums2 = cupy.zeros(-(-N // 2), dtype=cupy.uint32)
    runs.append(
        ("read_rows2", N // 2, lambda buf: fn2((N // 2,), (256,), (buf, sums2, np.int64(N), np.int32(K // 8))), sums2)
    )
    rows = []
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for name, grid, launch, sums in runs:
        sums.fill(0)
        launch(copies[0])
        cupy.cuda.Device().synchronize()
        ok = int(sums.astype(cupy.uint64).sum()) == 4 * words
        us = []
        if ok:
            for i in range(WARMUP):
                launch(copies[i % n_copies])
            for _ in range(SAMPLES):
                start.record()
                for i in range(BATCH):
                    launch(copies[i % n_copies])
                stop.record()
                stop.synchronize()
                us.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / BATCH)
        med = statistics.median(us) if us else float("nan")
        rows.append(
            {
                "pattern": name,
                "grid": grid,
                "ok": ok,
                "median_us": med,
                "gbs": 16 * words / med / 1e3,
                "samples": " ".join(f"{u:.3f}" for u in us),
            }
        )
        print(
            f"{name:28s} grid {grid:6d} {'ok' if ok else 'FAILED'} {med:8.2f} us {rows[-1]['gbs']:8.0f} GB/s",
            flush=True,
        )
    df = pd.DataFrame(rows)
    best = df.gbs.max()
    df["share_of_best"] = df.gbs / best
    df.to_csv(out, index=False)


if __name__ == "__main__":
    main()
