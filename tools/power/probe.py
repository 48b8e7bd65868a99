"""Probe of the GPU's power states (issue 36), run once on each GPU kind before the pipeline's paired step was
built: what NVML can say about power, energy and the clock during a kernel, how fast the board reaches its power
cap, and how steady kernels timed in alternation are.

    python tools/power/probe.py CUBINS OUT      (CUBINS: a folder of <variant>/kernel.cubin built for sm_90a)

Writes OUT/nvml.csv (every NVML reading during two seconds of load, with the host's clock), OUT/nvml.json (what
the sampled buffers and violation counters returned), OUT/blocks.csv (every timed block of every group: its
kernel, round, per-launch time, the energy counter after it), OUT/burst.csv (one kernel from an idle card, one
launch per event pair) and OUT/checks.csv (each kernel's checks at each shape).
"""

import csv
import json
import math
import sys
import threading
import time
from pathlib import Path

import cupy
import pynvml as nv

from gpumm.run import memory, operations, timing
from gpumm.run.launch import Launcher
from gpumm.setup import catalog

SEED = 20261122
CUBINS = Path(sys.argv[1])
OUT = Path(sys.argv[2])
OUT.mkdir(parents=True, exist_ok=True)

nv.nvmlInit()
H = nv.nvmlDeviceGetHandleByPciBusId(cupy.cuda.Device().pci_bus_id)


def energy_mj() -> int:
    return nv.nvmlDeviceGetTotalEnergyConsumption(H)


def power_instant_mw() -> float:
    v = nv.nvmlDeviceGetFieldValues(H, [nv.NVML_FI_DEV_POWER_INSTANT])[0]
    return float(v.value.uiVal) if v.nvmlReturn == 0 else math.nan


def violation(policy: int) -> tuple[int, int]:
    v = nv.nvmlDeviceGetViolationStatus(H, policy)
    return int(v.referenceTime), int(v.violationTime)


def samples(kind: int, since: int = 0):
    try:
        typ, got = nv.nvmlDeviceGetSamples(H, kind, since)
    except nv.NVMLError as exc:
        return str(exc)
    out = []
    for s in got:
        val = s.sampleValue
        field = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal"}.get(int(typ), "uiVal")
        out.append((int(s.timeStamp), float(getattr(val, field))))
    return out


def product(vid: str, shape):
    v = catalog.from_id(vid)
    binary = CUBINS / vid / "kernel.cubin" if v.is_cuda else None
    launcher = Launcher(v, binary)
    op = operations.get(v.op)
    checked = op.check(launcher, memory.get("device"), SEED, 134217728, shape)
    return v, checked


CHECKS = []


def members(vids, shape):
    out = []
    for vid in vids:
        try:
            v, c = product(vid, shape)
        except Exception as exc:  # noqa: BLE001
            CHECKS.append([vid, *shape, "error", f"{type(exc).__name__}: {str(exc)[:300]}"])
            print("ERROR", vid, shape, CHECKS[-1], flush=True)
            continue
        ok = c.exact.ok and c.rounding.ok
        CHECKS.append([vid, *shape, "ok" if ok else "failed", (c.exact.reason or "") + (c.rounding.reason or "")])
        if ok:
            out.append((vid, v, c))
        else:
            print("FAILED", CHECKS[-1], flush=True)
    return out


class Poller:
    """NVML readings in a thread with the host clock: clock, reasons, instant power, energy."""

    def __init__(self, every_s=0.0005):
        self.every_s, self.rows, self._stop = every_s, [], threading.Event()

    def _loop(self):
        while not self._stop.is_set():
            t = time.perf_counter()
            try:
                self.rows.append(
                    [
                        t,
                        nv.nvmlDeviceGetClockInfo(H, nv.NVML_CLOCK_SM),
                        int(nv.nvmlDeviceGetCurrentClocksEventReasons(H)),
                        power_instant_mw(),
                        nv.nvmlDeviceGetPowerUsage(H),
                        energy_mj(),
                        nv.nvmlDeviceGetTemperature(H, nv.NVML_TEMPERATURE_GPU),
                    ]
                )
            except nv.NVMLError:
                pass
            time.sleep(self.every_s)

    def __enter__(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


BLOCKS = []


def group(name, vids, shape, block_ms=10.0, heat_s=1.5, run_s=6.0, reverse=False):
    got = members(vids, shape)
    if reverse:
        got = got[::-1]
    runners = []
    for vid, v, c in got:
        launch = c.arrays[3]
        single = c.launch_ms
        batch = max(1, math.ceil(block_ms / single)) if single > 0 else 1
        run, method, batch, _ = timing._runner(launch, batch)
        run()
        cupy.cuda.get_current_stream().synchronize()
        flops, nbytes = v.work(*shape)
        runners.append((vid, run, batch, flops or nbytes))
    t0 = time.perf_counter()
    r = 0
    stream = cupy.cuda.get_current_stream()
    while time.perf_counter() - t0 < heat_s + run_s:
        order = runners if r % 2 == 0 else runners[::-1]
        for pos, (vid, run, batch, work) in enumerate(order):
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            e0 = energy_mj()
            a.record(stream)
            run()
            b.record(stream)
            b.synchronize()
            t = time.perf_counter() - t0
            e1 = energy_mj()
            ms = cupy.cuda.get_elapsed_time(a, b)
            BLOCKS.append(
                [name, "rev" if reverse else "fwd", r, pos, vid, *shape, batch, ms / batch, round(t, 5), e0, e1, work,
                 "heat" if t < heat_s else "run"]
            )  # fmt: skip
        r += 1
    return len(runners)


def burst(vid, shape, idle_s=3.0, run_s=1.5):
    got = members([vid], shape)
    if not got:
        return []
    launch = got[0][2].arrays[3]
    cupy.cuda.get_current_stream().synchronize()
    time.sleep(idle_s)
    rows, t0 = [], time.perf_counter()
    stream = cupy.cuda.get_current_stream()
    with Poller() as p:
        while time.perf_counter() - t0 < run_s:
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record(stream)
            launch()
            b.record(stream)
            b.synchronize()
            rows.append([vid, *shape, round(time.perf_counter() - t0, 5), cupy.cuda.get_elapsed_time(a, b)])
    return rows, [[vid, r[0] - t0, *r[1:]] for r in p.rows]


def main():
    info = {
        "name": nv.nvmlDeviceGetName(H),
        "power_limit_mw": nv.nvmlDeviceGetEnforcedPowerLimit(H),
        "max_sm_mhz": nv.nvmlDeviceGetMaxClockInfo(H, nv.NVML_CLOCK_SM),
        "driver": nv.nvmlSystemGetDriverVersion(),
    }
    print(info, flush=True)
    with cupy.cuda.Stream(non_blocking=True):
        # 1. NVML during two seconds of cuBLAS BF16 at 8192 (graph replays back to back)
        got = members(["cublas_bf16"], (8192, 8192, 8192))
        launch = got[0][2].arrays[3]
        run, _, batch, _ = timing._runner(launch, 8)
        v0 = {p: violation(p) for p in (nv.NVML_PERF_POLICY_POWER, nv.NVML_PERF_POLICY_THERMAL)}
        ts = int(time.time() * 1e6) - 1_000_000
        t0 = time.perf_counter()
        with Poller() as p:
            while time.perf_counter() - t0 < 2.0:
                run()
                cupy.cuda.get_current_stream().synchronize()
        v1 = {p: violation(p) for p in (nv.NVML_PERF_POLICY_POWER, nv.NVML_PERF_POLICY_THERMAL)}
        info["violation_before"], info["violation_after"] = v0, v1
        info["clk_samples"] = samples(nv.NVML_PROCESSOR_CLK_SAMPLES, ts)
        info["power_samples"] = samples(nv.NVML_TOTAL_POWER_SAMPLES, ts)
        with open(OUT / "nvml.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t", "sm_mhz", "reasons", "power_instant_mw", "power_usage_mw", "energy_mj", "temp_c"])
            w.writerows([[r[0] - t0, *r[1:]] for r in p.rows])
        (OUT / "nvml.json").write_text(json.dumps(info, indent=1, default=str))
        print("nvml rows", len(p.rows), flush=True)
        # 2. groups timed in alternation
        bf16 = ["bf16_wgmma", "bf16_warpspec", "bf16_persistent", "bf16_cluster", "bf16_pingpong", "cublas_bf16"]
        fp32 = ["double_buffer", "swizzled", "interior_b256x128k8", "streamk", "cublas"]
        for rev in (False, True):
            group("bf16", bf16, (8192, 8192, 8192), reverse=rev)
            print("bf16 8192", rev, flush=True)
            group("bf16", bf16, (4096, 4096, 4096), heat_s=1.0, run_s=4.0, reverse=rev)
            group("fp32", fp32, (8192, 8192, 8192), block_ms=20, reverse=rev)
            print("fp32 8192", rev, flush=True)
            group("fp32", fp32, (4096, 4096, 4096), heat_s=1.0, run_s=4.0, reverse=rev)
            group("transpose", ["transpose_tile64", "transpose_copy"], (16384, 16384, 1), heat_s=1.0, run_s=3.0,
                  reverse=rev)  # fmt: skip
        # long blocks: the same kernels alone for 2 s each (energy without attribution), pinned in order
        for vid in ("cublas_bf16", "bf16_persistent", "cublas_bf16"):
            group("alone", [vid], (8192, 8192, 8192), block_ms=200, heat_s=0.0, run_s=2.0)
        with open(OUT / "blocks.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["group", "order", "round", "pos", "variant", "M", "N", "K", "batch", "ms", "t", "e0_mj",
                        "e1_mj", "work", "phase"])  # fmt: skip
            w.writerows(BLOCKS)
        # 3. from an idle card
        rows, polled = [], []
        for vid in ("cublas_bf16", "bf16_persistent"):
            r, p = burst(vid, (8192, 8192, 8192))
            rows += r
            polled += p
        with open(OUT / "burst.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["variant", "M", "N", "K", "t", "ms"])
            w.writerows(rows)
        with open(OUT / "burst_nvml.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["variant", "t", "sm_mhz", "reasons", "power_instant_mw", "power_usage_mw", "energy_mj",
                        "temp_c"])  # fmt: skip
            w.writerows(polled)
    with open(OUT / "checks.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", "M", "N", "K", "status", "reason"])
        w.writerows(CHECKS)
    print("done", flush=True)


if __name__ == "__main__":
    main()
