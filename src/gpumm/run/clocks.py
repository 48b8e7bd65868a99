"""The GPU's clocks and temperature while a measurement runs (NVML), and whether it throttled.

A background thread reads the SM clock, the memory clock, the temperature and
NVML's clock-event reasons every few milliseconds while the timed launches of
one measurement run. Each measurement then carries the median and minimum SM
clock it saw, and is marked *throttled* when the SM clock fell below the
device's maximum (as nvbench does: a number taken at a lower clock is not the
card's number). Where NVML is missing (no driver library, or the CPU
variants), every field is empty, never guessed.
"""

import statistics
import threading
import time
from dataclasses import dataclass

from gpumm.setup.columns import CLOCK_FIELDS

# A clock at or above this share of the maximum counts as "at the maximum":
# NVML reports the SM clock in steps of about 15 MHz.
THROTTLE_SHARE = 0.98
# NVML clock-event reasons that say the GPU was idle or that an application set
# its clocks: neither is a slowdown of a running measurement.
_IDLE = 0x1  # GpuIdle
_BENIGN_REASONS = _IDLE | 0x2  # and ApplicationsClocksSetting

FIELDS = CLOCK_FIELDS


def summarise(samples: list[tuple[int, int, int, int]], max_sm_mhz: int | None) -> dict:
    """Clock fields of one measurement from (sm MHz, mem MHz, °C, reasons) readings."""
    if not samples:
        return dict.fromkeys(FIELDS)
    # readings taken while the GPU was idle (between the host's steps) say nothing about a running kernel
    busy = [s for s in samples if not s[3] & _IDLE] or samples
    sm = [s[0] for s in busy]
    reasons = 0
    for s in busy:
        reasons |= s[3]
    low = min(sm)
    return {
        "sm_clock_mhz": statistics.median(sm),
        "sm_clock_min_mhz": low,
        "mem_clock_mhz": statistics.median(s[1] for s in busy),
        "temperature_c": max(s[2] for s in samples),
        "clock_reasons": hex(reasons & ~_BENIGN_REASONS),
        "throttled": bool(max_sm_mhz) and low < THROTTLE_SHARE * max_sm_mhz,
    }


class _Nvml:
    """The few NVML calls this module needs, on one device (found by PCI bus id where given: NVML's indices
    need not be CUDA's)."""

    def __init__(self, index: int, pci_bus_id: str | None = None):
        import pynvml

        pynvml.nvmlInit()
        self.nv = pynvml
        if pci_bus_id:
            self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        else:
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        old_name = "nvmlDeviceGetCurrentClocksThrottleReasons"  # before NVML 12.5
        self._reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(pynvml, old_name)

    def read(self) -> tuple[int, int, int, int]:
        nv, h = self.nv, self.handle
        return (
            nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
            nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
            nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
            int(self._reasons(h)),
        )

    def max_sm(self) -> int:
        return self.nv.nvmlDeviceGetMaxClockInfo(self.handle, self.nv.NVML_CLOCK_SM)

    def identity(self) -> dict:
        nv, h = self.nv, self.handle
        uuid = nv.nvmlDeviceGetUUID(h)
        name = nv.nvmlDeviceGetName(h)
        return {
            "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
            "name": name.decode() if isinstance(name, bytes) else name,
        }


@dataclass
class Watch:
    """Samples NVML in a thread between start() and stop(); stop() returns the clock fields."""

    interval_s: float = 0.002
    device_index: int = 0
    pci_bus_id: str | None = None

    def __post_init__(self):
        self._samples: list = []
        self._stop = threading.Event()
        self._thread = None
        try:
            self._nvml = _Nvml(self.device_index, self.pci_bus_id)
            self.max_sm_mhz = self._nvml.max_sm()
        except Exception:  # no NVML here: the fields stay empty
            self._nvml, self.max_sm_mhz = None, None

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def identity(self) -> dict:
        return self._nvml.identity() if self._nvml else {}

    def _loop(self):
        while not self._stop.is_set():
            try:
                self._samples.append(self._nvml.read())
            except Exception:  # a failed read is a missing sample, not a failed measurement
                pass
            time.sleep(self.interval_s)

    def start(self) -> None:
        if not self._nvml:
            return
        self._samples, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> dict:
        if not self._nvml or self._thread is None:
            return dict.fromkeys(FIELDS)
        self._stop.set()
        self._thread.join()
        self._thread = None
        try:  # one reading at the very end, so that even a short measurement has one
            self._samples.append(self._nvml.read())
        except Exception:
            pass
        return summarise(self._samples, self.max_sm_mhz)
