"""Is a prefetch to the CPU as cold as the host's writes? (issue 16: the cold managed runs' reset)

On the GPU: managed A and B (n x n, float32), C = A @ B by cuBLAS timed with CUDA events, each run after one of
two resets, interleaved: ``write`` (the host writes A and B again: what the pipeline did before) and
``prefetch`` (cudaMemPrefetchAsync of A and B to the CPU, waited for: what it does now); for the managed mode
(pages fault over) and managed_prefetch (a prefetch to the device inside the timing). Prints the median and
interquartile range of each, and what each reset costs on the host. Writes $OUT/cold-check.csv (every sample).
"""

import os
import sys
import time

import cupy as cp
import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
from gpumm.run import memory  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "10"))
rows = []
for n in (2048, 4096):
    rng = np.random.default_rng(n)
    hosts = [rng.random((n, n), dtype=np.float32) for _ in range(2)]
    for mode_name in ("managed", "managed_prefetch"):
        mode = memory.get(mode_name)
        arrays = [mode.place(h) for h in hosts]
        out = mode.empty((n, n))
        for _ in range(2):  # warm up cuBLAS
            cp.matmul(arrays[0], arrays[1], out=out)
        cp.cuda.Device().synchronize()
        for r in range(ROUNDS):
            for reset in ("write", "prefetch"):
                t0 = time.perf_counter()
                if reset == "write":
                    memory.MemoryMode.make_cold(mode, arrays, lambda h=hosts: h)
                else:
                    mode.make_cold(arrays, lambda h=hosts: h)
                reset_s = time.perf_counter() - t0
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                mode.before_run(arrays)
                cp.matmul(arrays[0], arrays[1], out=out)
                end.record()
                end.synchronize()
                rows.append((n, mode_name, reset, r, cp.cuda.get_elapsed_time(start, end), reset_s))
        assert not memory.ManagedMemory.evict_refused, memory.ManagedMemory.evict_refused
        del arrays, out
d = pd.DataFrame(rows, columns=["n", "mode", "reset", "round", "ms", "reset_s"])
d.to_csv(os.path.join(os.environ.get("OUT", "."), "cold-check.csv"), index=False)
g = d.groupby(["n", "mode", "reset"])
s = g.ms.median().to_frame("median_ms")
s["iqr_pct"] = 100 * (g.ms.quantile(0.75) - g.ms.quantile(0.25)) / s.median_ms
s["reset_s"] = g.reset_s.median()
print(s.round(3).to_string())
# the gate the study's call uses: the two resets must leave the same cold state (medians within 15%)
ratio = s.median_ms.xs("prefetch", level="reset") / s.median_ms.xs("write", level="reset")
print("prefetch / write, cold medians:", ratio.round(3).to_dict())
sys.exit(0 if ratio.between(0.85, 1.15).all() else 3)
