"""Copy bandwidths of the run's machine: host to device and back (pageable and pinned), device to device.

The context of the memory-mode study (how fast can data cross the bus at all)
and the ceiling of the coalescing study (a device-to-device copy moves each
byte once in and once out: bytes counted = 2 x size).
"""

import numpy as np
import pandas as pd

COLUMNS = ["transfer", "bytes", "repeat", "ms", "gbs", "stop"]


def run(nbytes: int, warmup, rule) -> pd.DataFrame:
    """Every copy timed one per event pair, ``warmup`` untimed first, as many as ``rule`` asks (an int: that many)."""
    import cupy

    from gpumm.run import timing

    n = nbytes // 4
    dev = cupy.random.default_rng(1).random(n, dtype=cupy.float32) + 0.5
    dev2 = cupy.empty_like(dev)
    pageable = np.empty(n, dtype=np.float32)
    pinned_mem = cupy.cuda.alloc_pinned_memory(nbytes)
    pinned = np.frombuffer(pinned_mem, dtype=np.float32, count=n)
    stream = cupy.cuda.get_current_stream()
    copies = {
        "host_to_device_pageable": (lambda: dev.set(pageable), nbytes),
        "host_to_device_pinned": (lambda: dev.set(pinned, stream=stream), nbytes),
        "device_to_host_pageable": (lambda: dev.get(out=pageable), nbytes),
        "device_to_host_pinned": (lambda: dev.get(out=pinned, stream=stream), nbytes),
        "device_to_device": (lambda: cupy.copyto(dev2, dev), 2 * nbytes),
    }
    pageable[...] = 1.0
    pinned[...] = 1.0
    rows = []
    for name, (fn, moved) in copies.items():
        t = timing.time_single(fn, warmup, rule)
        for i, ms in enumerate(t.samples):
            rows.append(
                {
                    "transfer": name,
                    "bytes": moved,
                    "repeat": i,
                    "ms": ms,
                    "gbs": moved / (ms * 1e-3) / 1e9,
                    "stop": t.stop,
                }
            )
    if not np.array_equal(cupy.asnumpy(dev2[:1024]), cupy.asnumpy(dev[:1024])):
        raise RuntimeError("device-to-device copy did not copy")
    return pd.DataFrame(rows, columns=COLUMNS)
