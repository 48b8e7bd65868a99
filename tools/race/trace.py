"""Exploration for issue 19, on the GPU: where a stream-K launch spends its time. Loads the cubins build.sh made
with SK_TRACE=1 (cubins/trace_*.cubin: kernels/matmul/streamk.cu stamping %globaltimer at each phase's end), launches
each at 4096 and 8192 (warm-up first), and writes every block's stamps (ns from the launch's first stamp) to
trace.csv and a summary per phase to the console."""

import os

import cupy as cp
import numpy as np
import pandas as pd
from candidates import SMS, load

OUT = os.environ.get("OUT", ".")
PHASES = ["start", "whole_tiles", "split1_product", "split1_done", "split2_product", "split2_done", "unused", "end"]
rows = []
rng = cp.random.default_rng(19)
for name, launch in load("trace_*").items():
    trace = launch.module.get_global("sk_trace")
    stamps = cp.ndarray((160, 8), dtype=cp.uint64, memptr=trace)  # SK_MAX_BLOCKS x 8 stamps
    for n in (4096, 8192):
        A = rng.uniform(-1, 1, (n, n), dtype=cp.float32)
        B = rng.uniform(-1, 1, (n, n), dtype=cp.float32)
        C = cp.empty((n, n), dtype=cp.float32)
        for rep in range(6):
            stamps.fill(0)
            launch(A, B, C)
            cp.cuda.Device().synchronize()
            if rep < 2:  # warm-up
                continue
            s = cp.asnumpy(stamps[:SMS]).astype(np.int64)
            t0 = s[:, 0].min()
            for g in range(SMS):
                for i, p in enumerate(PHASES):
                    if s[g, i]:
                        rows.append({"name": name, "n": n, "rep": rep, "block": g, "phase": p, "ns": s[g, i] - t0})
df = pd.DataFrame(rows)
df.to_csv(f"{OUT}/trace.csv", index=False)
summary = df.groupby(["name", "n", "phase"]).ns.describe(percentiles=[0.5])[["count", "min", "50%", "max"]]
summary[["min", "50%", "max"]] /= 1e3
print("microseconds from the launch's first stamp (count: stamps)\n", summary.round(1).to_string())
