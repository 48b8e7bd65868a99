"""How long after its stamp NVML's buffer of board power samples shows a sample (the paired step's energy phase
reads the buffer as it ends: a sample published later than that is missed by its last member).

    python tools/power/publish_lag.py OUT [SECONDS]

Loads the GPU (device-to-device copies of 1 GiB on a stream, kept two deep) for SECONDS (default 3) while the main
thread reads the buffer every 2 ms; writes OUT/lag.csv, one row a sample: its stamp (wall clock µs), when it was
first seen (wall clock µs) and its power (mW); prints the spacing of the stamps and the lag's quantiles.
"""

import csv
import statistics
import sys
import time
from pathlib import Path

import cupy
import pynvml as nv


def main() -> None:
    out = Path(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    out.mkdir(parents=True, exist_ok=True)
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    a = cupy.empty(1 << 28, dtype=cupy.float32)
    b = cupy.empty_like(a)
    seen: dict[int, tuple[int, float]] = {}
    t_end = time.perf_counter() + seconds
    last = cupy.cuda.Event()
    while time.perf_counter() < t_end:
        if last.done:  # keep about two copies queued
            b[...] = a
            a[...] = b
            last.record()
        now = int(time.time() * 1e6)
        try:
            _, samples = nv.nvmlDeviceGetSamples(h, nv.NVML_TOTAL_POWER_SAMPLES, 0)
        except nv.NVMLError:
            samples = []
        for s in samples:
            if s.timeStamp not in seen:
                seen[int(s.timeStamp)] = (now, float(s.sampleValue.uiVal))
        time.sleep(0.002)
    cupy.cuda.Device().synchronize()
    rows = sorted((t, first, mw) for t, (first, mw) in seen.items())
    first_read = min(first for _, first, _ in rows)  # samples stamped before it were there already: lag unknown
    with open(out / "lag.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["stamp_us", "first_seen_us", "power_mw", "lag_known"])
        for t, first, mw in rows:
            w.writerow([t, first, mw, int(t > first_read)])
    known = [(first - t) / 1e3 for t, first, _ in rows if t > first_read]
    stamps = [t for t, _, _ in rows]
    gaps = [(b - a) / 1e3 for a, b in zip(stamps, stamps[1:])]
    q = statistics.quantiles(known, n=20) if len(known) > 2 else known
    print(f"{len(rows)} samples; stamp spacing ms: median {statistics.median(gaps):.1f}, max {max(gaps):.1f}")
    print(f"lag ms ({len(known)} samples stamped after the first read): min {min(known):.1f}, "
          f"median {statistics.median(known):.1f}, q95 {q[-1]:.1f}, max {max(known):.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
