"""NVML read in a thread while the paired step's energy phase runs (gpumm.run.paired): the energy counter, the SM
clock, the clock's reasons, the power violation counter and the buffer of board power samples, on the host's
clock."""

import threading
import time

from gpumm.run import clocks


class Poll:
    """A thread that reads NVML while a phase runs, with the host's clock (time.perf_counter): the energy counter at
    every reading (its edges time its updates), the SM clock, the reasons and the power violation counter at every
    eighth (``fresh``), and the buffer of board power samples twice a second (NVML keeps about two seconds)."""

    def __init__(self, watch: clocks.Watch):
        self.watch, self.rows, self.power, self._stop = watch, [], {}, threading.Event()
        self._thread = None
        self.offset = time.time() - time.perf_counter()  # wall clock (NVML's stamps) minus the host's clock

    def _fetch(self, nvml) -> None:
        for stamp, mw in nvml.power_samples_mw_stamped(0):
            self.power[stamp] = mw

    def _loop(self):
        nvml, k, last, fetched = self.watch._nvml, 0, (None, 0, None), time.perf_counter()
        while not self._stop.is_set():
            try:
                fresh = k % 8 == 0
                if fresh:
                    sm, _, _, reasons = nvml.read()
                    last = (sm, reasons, nvml._violation_ns(nvml.nv.NVML_PERF_POLICY_POWER))
                self.rows.append((time.perf_counter(), nvml.energy_mj(), *last, fresh))
                if time.perf_counter() - fetched > 0.5:
                    self._fetch(nvml)
                    fetched = time.perf_counter()
            except Exception:
                pass
            k += 1
        try:
            self._fetch(nvml)
        except Exception:
            pass

    def until_stamped(self, wall_us: int, timeout_s: float = 0.5) -> None:
        """Read the buffer until it holds a sample stamped after ``wall_us`` (wall clock µs), at most ``timeout_s``:
        NVML shows a sample up to about 3 ms after its stamp on an H200 (data/checks/power-lag-h200), so a read as
        the phase ends can miss the last member's final sample."""
        if not self.watch.available:
            return
        nvml, give_up = self.watch._nvml, time.perf_counter() + timeout_s
        while time.perf_counter() < give_up:
            try:
                self._fetch(nvml)
            except Exception:
                return
            if self.power and max(self.power) > wall_us:
                return
            time.sleep(0.005)

    def samples(self) -> list[tuple[float, float]]:
        """The power samples as (host clock s, mW), in time order."""
        return sorted((stamp / 1e6 - self.offset, mw) for stamp, mw in self.power.items())

    def __enter__(self):
        if self.watch.available:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
