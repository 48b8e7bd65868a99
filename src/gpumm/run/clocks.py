"""The GPU's clocks, power and energy while a measurement runs (NVML), and whether it was throttled.

A background thread reads the SM clock, the memory clock, the temperature and
NVML's clock-event reasons every few milliseconds while the timed launches of
one set run. Around the set, NVML's counters are read once before and once
after: the energy counter (millijoules since the driver loaded), and the two
violation counters, the nanoseconds during which the power policy and the
thermal policy held the clock down. The board's power comes from NVML's own
buffer of power samples (one about every 20 ms on an H100) over the set.

What each field is worth, as seen on an H100 (tools/power/probe.py, 2026-11-27):
the energy counter and the instantaneous power move only every 100 ms, and so
does the SM clock NVML reports, while a BF16 product at 8192³ runs at the 700 W
cap within 50 ms and the power controller then swings the clock between about
1200 and 1600 MHz several times a second. A clock polled every few ms misses
most of that; the violation counter does not: it counts the capped time to the
nanosecond. So a set is *throttled* when any slowdown reason was seen (power
cap, hardware slowdown, thermal, power brake), when either violation counter
moved during the set, or when the polled SM clock fell below 98% of the
maximum (as nvbench does: a number taken at a lower clock is not the card's
number at its clock). Energy over a set shorter than a few counter updates
says little; the paired step (:mod:`gpumm.run.paired`) measures each kernel's
energy over whole updates. Where NVML is missing (no driver library, or the
CPU variants), every field is empty, never guessed.
"""

import math
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
# the reasons that slow a running kernel down: any one of them makes a set throttled
REASONS = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "thermal (software)",
    0x40: "thermal (hardware)",
    0x80: "power brake",
}
SLOWDOWN = 0x4 | 0x8 | 0x20 | 0x40 | 0x80
POWER_MIN_S = 0.1  # a set shorter than this (five of NVML's power samples) reads no power samples

FIELDS = CLOCK_FIELDS


def reason_words(reasons) -> str:
    """NVML's clock-event reasons (an int or a hex string) in words: 'power cap, thermal (software)'; '' for none."""
    if reasons is None or (isinstance(reasons, float) and math.isnan(reasons)) or reasons == "":
        return ""
    bits = int(reasons, 16) if isinstance(reasons, str) else int(reasons)
    return ", ".join(words for bit, words in REASONS.items() if bits & bit)


@dataclass(frozen=True)
class Counters:
    """NVML's counters at one moment: the host's clock (s), the wall clock (µs, the time base of NVML's sample
    buffers), the energy counter (mJ) and the violation counters of the power and thermal policies (ns); None
    where NVML does not keep one."""

    t: float
    stamp_us: int
    energy_mj: int | None = None
    power_violation_ns: int | None = None
    thermal_violation_ns: int | None = None


def _delta(a, b):
    return None if a is None or b is None else b - a


def summarise(
    samples: list[tuple[int, int, int, int]],
    max_sm_mhz: int | None,
    before: Counters | None = None,
    after: Counters | None = None,
    power_mw: list[float] = (),
) -> dict:
    """The fields of one set from the polled (sm MHz, mem MHz, °C, reasons) readings, NVML's counters before and
    after the set, and the board power samples (mW) of NVML's buffer during it."""
    out = dict.fromkeys(FIELDS)
    window = after.t - before.t if before is not None and after is not None else None
    if window is not None and window > 0:
        out["window_s"] = round(window, 6)
        energy = _delta(before.energy_mj, after.energy_mj)
        out["energy_j"] = energy / 1e3 if energy is not None else None
        for key, field in (("power_capped_pct", "power_violation_ns"), ("thermal_capped_pct", "thermal_violation_ns")):
            d = _delta(getattr(before, field), getattr(after, field))
            out[key] = min(100.0, max(0.0, 100 * d / 1e9 / window)) if d is not None else None
    power = [p / 1e3 for p in power_mw if p == p]
    if power:
        out["power_mean_w"] = statistics.fmean(power)
        out["power_peak_w"] = max(power)
    if not samples:
        return out
    # readings taken while the GPU was idle (between the host's steps) say nothing about a running kernel
    busy = [s for s in samples if not s[3] & _IDLE] or samples
    sm = [s[0] for s in busy]
    reasons = 0
    for s in busy:
        reasons |= s[3]
    reasons &= ~_BENIGN_REASONS
    low = min(sm)
    capped = max((out.get(k) or 0) for k in ("power_capped_pct", "thermal_capped_pct"))
    out.update(
        sm_clock_mhz=statistics.median(sm),
        sm_clock_min_mhz=low,
        mem_clock_mhz=statistics.median(s[1] for s in busy),
        temperature_c=max(s[2] for s in samples),
        clock_reasons=hex(reasons),
        throttled=throttled(reasons, capped, low, max_sm_mhz),
    )
    return out


def throttled(reasons: int, capped_pct: float, low_mhz: float | None, max_sm_mhz: int | None) -> bool:
    """The rule: a slowdown reason seen, a violation counter that moved (``capped_pct``: the share of the time a
    policy held the clock down, NaN where unread), or a clock below THROTTLE_SHARE of the maximum."""
    low = bool(max_sm_mhz) and low_mhz is not None and low_mhz < THROTTLE_SHARE * max_sm_mhz
    return bool(reasons & SLOWDOWN) or (capped_pct == capped_pct and capped_pct > 0) or low


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
            self.reasons(),
        )

    def _try(self, fn, *args):
        try:
            return fn(*args)
        except Exception:  # a counter this GPU or driver does not keep: the field stays empty
            return None

    def energy_mj(self) -> int | None:
        v = self._try(self.nv.nvmlDeviceGetTotalEnergyConsumption, self.handle)
        return int(v) if v is not None else None

    def _violation_ns(self, policy) -> int | None:
        v = self._try(self.nv.nvmlDeviceGetViolationStatus, self.handle, policy)
        return int(v.violationTime) if v is not None else None

    def counters(self, energy: bool = True) -> Counters:
        """The counters now; the energy counter only where ``energy`` (one read costs about 4 ms on an H100)."""
        nv = self.nv
        return Counters(
            t=time.monotonic(),
            stamp_us=int(time.time() * 1e6),
            energy_mj=self.energy_mj() if energy else None,
            power_violation_ns=self._violation_ns(nv.NVML_PERF_POLICY_POWER),
            thermal_violation_ns=self._violation_ns(nv.NVML_PERF_POLICY_THERMAL),
        )

    def power_samples_mw_stamped(self, since_us: int) -> list[tuple[int, float]]:
        """Board power from NVML's sample buffer: (stamp, wall clock µs; mW) of the samples stamped after
        ``since_us``."""
        nv = self.nv
        got = self._try(nv.nvmlDeviceGetSamples, self.handle, nv.NVML_TOTAL_POWER_SAMPLES, since_us)
        if not got:
            return []
        kind, samples = got
        field = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal"}.get(int(kind), "uiVal")
        return [(int(s.timeStamp), float(getattr(s.sampleValue, field))) for s in samples]

    def power_samples_mw(self, since_us: int, until_us: int) -> list[float]:
        """Board power (mW) from NVML's sample buffer, for the samples stamped within (since_us, until_us]."""
        return [mw for t, mw in self.power_samples_mw_stamped(since_us) if since_us < t <= until_us]

    def max_sm(self) -> int:
        return self.nv.nvmlDeviceGetMaxClockInfo(self.handle, self.nv.NVML_CLOCK_SM)

    def power_limit_w(self) -> float | None:
        v = self._try(self.nv.nvmlDeviceGetEnforcedPowerLimit, self.handle)
        return v / 1e3 if v is not None else None

    def power_w(self) -> float | None:
        """The board's power now: NVML's instantaneous field where the driver has it (it moves every 100 ms on an
        H100), else its power usage, which Ampere and later cards average over the last second."""
        nv = self.nv
        field = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", None)
        got = self._try(nv.nvmlDeviceGetFieldValues, self.handle, [field]) if field is not None else None
        if got and int(got[0].nvmlReturn) == 0:
            return float(got[0].value.uiVal) / 1e3
        v = self._try(nv.nvmlDeviceGetPowerUsage, self.handle)
        return v / 1e3 if v is not None else None

    def reasons(self) -> int:
        return int(self._reasons(self.handle))

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
    """Samples NVML in a thread between start() and stop(); stop() returns the set's fields."""

    interval_s: float = 0.002
    device_index: int = 0
    pci_bus_id: str | None = None

    def __post_init__(self):
        self._samples: list = []
        self._stop = threading.Event()
        self._thread = None
        self._before = None
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

    def power_limit_w(self) -> float | None:
        return self._nvml.power_limit_w() if self._nvml else None

    def _loop(self):
        # the counters before the set, read here so that the set does not wait for them (the energy counter alone
        # takes about 4 ms to read)
        try:
            self._before = self._nvml.counters()
        except Exception:
            self._before = None
        while not self._stop.is_set():
            try:
                self._samples.append(self._nvml.read())
            except Exception:  # a failed read is a missing sample, not a failed measurement
                pass
            time.sleep(self.interval_s)

    def start(self) -> None:
        if not self._nvml:
            return
        self._samples, self._stop, self._before = [], threading.Event(), None
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> dict:
        if not self._nvml or self._thread is None:
            return dict.fromkeys(FIELDS)
        self._stop.set()
        self._thread.join()
        self._thread = None
        before = self._before
        # the energy counter and NVML's power buffer only for a set long enough to hold some of their updates (the
        # counter moves every 100 ms, a power sample comes every 20 ms): each read costs milliseconds
        long = before is not None and time.monotonic() - before.t >= POWER_MIN_S
        after = self._nvml.counters(energy=long)
        try:  # one reading at the very end, so that even a short measurement has one
            self._samples.append(self._nvml.read())
        except Exception:
            pass
        power = self._nvml.power_samples_mw(before.stamp_us, after.stamp_us) if long else []
        return summarise(self._samples, self.max_sm_mhz, before, after, power)


NEAR_CAP = 0.9  # a board drawing less than this share of its power limit is not heading for the cap


class Cap:
    """Where the card stands against its power cap now, for the model steps' heat rounds (gpumm.run.layers.heat):
    each call says "cap" where a power or thermal policy holds the clock down (a slowdown reason set now, or a
    violation counter that moved since the call before, or for the first call since the probe was made, just
    before the heat), "below" where the board draws less than NEAR_CAP of its power limit (its kernels do not reach
    the cap: FP32 draws 440-620 W of an H100's or H200's 700), else "" (near the cap, not yet held: the chip still
    warming, as a BF16 prompt's first second is). "time" where NVML fails to answer: the heat then ends at its
    seconds, as without NVML. The device is the current CUDA device's, found by its PCI bus id
    (``pci_bus_id``); without NVML ``available`` is False."""

    def __init__(self, device_index: int = 0, pci_bus_id: str | None = None):
        try:
            self._nvml = _Nvml(device_index, pci_bus_id)
            self._limit = self._nvml.power_limit_w()
            self._held = self._counters()
        except Exception:  # no NVML here
            self._nvml, self._limit, self._held = None, None, None

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def _counters(self) -> tuple:
        c = self._nvml.counters(energy=False)
        return (c.power_violation_ns, c.thermal_violation_ns)

    def __call__(self) -> str:
        if self._nvml is None:
            return "time"
        try:
            held = self._counters()
            reasons = self._nvml.reasons()
        except Exception:  # a failed read: no verdict, the heat ends at its seconds
            return "time"
        moved = any((_delta(a, b) or 0) > 0 for a, b in zip(self._held, held))
        self._held = held
        if moved or reasons & SLOWDOWN:
            return "cap"
        power = self._nvml.power_w()
        return "below" if power is not None and self._limit and power < NEAR_CAP * self._limit else ""
