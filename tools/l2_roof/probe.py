"""What the L2 roof and the BF16 rungs' L2 bytes count (issue 39, item 2: five BF16 rungs ran above the L2 roof).

The tensor page's L2 roof is the memory-hierarchy study's L2-resident reads (``read_l2``: float4 loads through the
L1, a quarter of the L2 read 16 times by 8 blocks per SM), in bytes the kernel reads per second; a rung's L2
intensity divides its flops by Nsight Compute's ``lts__t_bytes.sum``. If that counter counts more than the bytes
the SMs ask for (the traffic between the L2's two partitions, ``srcunit_ltcfabric``), or the TMA's copies reach
the L2 faster than ordinary loads, the two do not share a unit. This probe counts both kinds of kernel the same
way, under ncu, on one GPU:

    python tools/l2_roof/probe.py read-l2 CUBIN        # the study's read_l2, as the study launches it (ncu's target)
    python tools/l2_roof/probe.py plan OUT.json IDS     # a profile-target plan: each BF16 id at 8192³

tools/l2_roof/run.sh builds, runs ncu with METRICS on both and writes the CSVs; report.py reads them.
"""

import json
import sys
from pathlib import Path

METRICS = [
    "gpu__time_duration.sum",
    "lts__t_bytes.sum",
    "lts__t_sectors.sum",
    "lts__t_sectors_srcunit_tex.sum",
    "lts__t_sectors_srcunit_ltcfabric.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
]


def read_l2(cubin: str) -> None:
    import cupy
    import numpy as np

    from gpumm.run.gpu import ATTRIBUTES

    dev = cupy.cuda.Device()
    sms = cupy.cuda.runtime.deviceGetAttribute(ATTRIBUTES["sm_count"], dev.id)
    l2 = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrL2CacheSize, dev.id)
    fn = cupy.RawModule(path=cubin).get_function("read_l2")
    grid, block, passes = 8 * sms, 256, 16
    n4 = max(1, l2 // 4 // 16)
    buf = cupy.ones(n4 * 4, dtype=cupy.float32)
    out = cupy.empty(grid * block, dtype=cupy.float32)
    args = (buf, out, np.int64(n4), np.int32(passes))
    fn((grid,), (block,), args)  # the buffer into the L2
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    fn((grid,), (block,), args)
    stop.record()
    stop.synchronize()
    ms = cupy.cuda.get_elapsed_time(start, stop)
    read = n4 * 16 * passes
    ok = bool(abs(float(out.sum()) - passes * n4 * 4) < 1e-3 * passes * n4 * 4)
    print(json.dumps({"kernel": "read_l2", "bytes_read": read, "ms": ms, "gbs": read / ms / 1e6, "sum_ok": ok}))


def plan(out: str, ids: str) -> None:
    items = [{"variant": v, "binary": f"/tmp/l2roof/{v}/kernel.cubin", "sizes": [8192]} for v in ids.split(",")]
    Path(out).write_text(json.dumps({"items": items, "seed": 1, "coalescing": None}))


if __name__ == "__main__":
    {"read-l2": read_l2, "plan": plan}[sys.argv[1]](*sys.argv[2:])
