"""Is the TMA stream's gap to the weight read alone its access order? (issue 40). Times tools/model/fronts.cu, a
read of a layer's weight by blocks of 64 rows, one block an SM, 160 KiB in flight each (the TMA stream's geometry),
in groups of 2^LG rows read side by side 2^LC 16-byte words of each at a time, beside the catalog's weight read
alone (read_stream's read_rows2: two whole rows a block, many blocks an SM); and fronts_flat, the weight cut in
equal contiguous shares, one a block, a grid of 64-row shares or a persistent one of 1, 2 or 4 blocks an SM (the
same 160 KiB in flight an SM).

    nvcc -cubin -arch=sm_90a -O3 -o fronts.cubin tools/model/fronts.cu
    python -m gpumm build-micro --name read_stream --arch sm_90 --out-dir rs
    python tools/model/fronts.py fronts.cubin rs/kernel.cubin OUT.csv

Each pattern's block sums (32-bit words, wrapping; fronts_flat's total) are checked against the weight's before any
time counts. Cold: launches alternate between two copies of the weight, each larger than the L2; a sample is a
batch of 20 launches timed with CUDA events, 10 samples after 2. Writes OUT.csv (every sample) and prints the
medians.
"""

import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.run import reads  # noqa: E402

LAYERS = {"gate_up": 28672, "logits": 128256}  # weight rows; K = 4096 (8 KiB rows: 2^9 words of 16 bytes)
LK16 = 9
# (LG, LC): rows side by side, 16-byte words of each at a time
PATTERNS = [(6, 3), (6, 5), (6, 9), (4, 5), (4, 7), (2, 7), (2, 9), (1, 9), (0, 9)]
SMEM = 120 * 1024  # one block an SM
BATCH, SAMPLES, WARMUP = 20, 10, 2
# fronts_flat: (blocks an SM, 0 for a grid of 64-row shares; threads a block; shared memory that keeps the count)
FLAT = [(0, 1024, SMEM), (1, 1024, SMEM), (2, 512, 100 * 1024), (4, 256, 50 * 1024)]


def main(fronts_cubin: str, read_cubin: str, out_csv: str) -> None:
    import cupy
    import pandas as pd

    mod = cupy.RawModule(path=fronts_cubin)
    fronts, flat = mod.get_function("fronts"), mod.get_function("fronts_flat")
    fronts.max_dynamic_shared_size_bytes = flat.max_dynamic_shared_size_bytes = SMEM
    rows2 = cupy.RawModule(path=read_cubin).get_function("read_rows2")
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    rows = []
    for layer, n in LAYERS.items():
        words = n << LK16  # 16-byte words
        copies = [reads.random_weight(cupy, n, 8 << LK16)]
        copies.append(copies[0].copy())
        per_row = copies[0].view(cupy.uint32).reshape(n, -1).sum(axis=1, dtype=cupy.uint64)

        def blocks_sum_to(rows_a_block, per_row=per_row):  # each block's sum, rows_a_block rows a block
            want = (per_row.reshape(-1, rows_a_block).sum(axis=1) % 2**32).astype(cupy.uint32)
            return lambda got, want=want: bool((got == want).all())

        total = reads.sum_mod32(cupy, copies[0])
        members = {}
        for lg, lc in PATTERNS:
            out = cupy.zeros(n // 64, dtype=cupy.uint32)

            def launch(W, lg=lg, lc=lc, out=out, n=n):
                fronts((n // 64,), (1024,), (W, np.int32(LK16), np.int32(lg), np.int32(lc), out), shared_mem=SMEM)

            members[f"fronts g{1 << lg} c{16 << lc}"] = (launch, out, blocks_sum_to(64))
        for blocks, threads, smem in FLAT:
            grid = n // 64 if blocks == 0 else sms * blocks
            out = cupy.zeros(grid, dtype=cupy.uint32)

            def launch(W, grid=grid, threads=threads, smem=smem, out=out, n=n, flat=flat):
                flat((grid,), (threads,), (W, np.int64(n << LK16), out), shared_mem=smem)

            label = "a 64-row share a block" if blocks == 0 else f"{blocks} an SM, persistent"
            summed = lambda got, total=total: reads.sum_mod32(cupy, got) == total  # noqa: E731
            members[f"flat {threads} threads, {label}"] = (launch, out, summed)
        reader = reads.WeightRead(rows2, n, 8 << LK16, cupy.zeros(n // 2, dtype=cupy.uint32), 2)
        members["read_rows2"] = (lambda W, r=reader: r.bind(None, W, None)(), reader.out, blocks_sum_to(2))
        for name, (launch, out, check) in members.items():
            out.fill(0)
            launch(copies[0])
            if not check(out):
                print(f"{layer} {name}: sums FAILED, not timed", flush=True)
                rows.append({"layer": layer, "pattern": name, "ok": False, "sample": -1, "us": np.nan})
                continue
            us = []
            for s in range(WARMUP + SAMPLES):
                a, b = cupy.cuda.Event(), cupy.cuda.Event()
                a.record()
                for i in range(BATCH):
                    launch(copies[i % 2])
                b.record()
                b.synchronize()
                if s >= WARMUP:
                    us.append(cupy.cuda.get_elapsed_time(a, b) * 1e3 / BATCH)
            rows += [{"layer": layer, "pattern": name, "ok": True, "sample": i, "us": u} for i, u in enumerate(us)]
            med = statistics.median(us)
            print(f"{layer} {name:22s} {med:8.2f} us  {16 * words / med / 1e3:7,.0f} GB/s", flush=True)
        del copies
        cupy.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(out_csv, index=False)


if __name__ == "__main__":
    if len(sys.argv) != 4 or not all(Path(p).is_file() for p in sys.argv[1:3]):
        sys.exit(__doc__)
    main(*sys.argv[1:])
