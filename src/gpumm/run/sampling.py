"""When a timed set has enough samples: the stopping rule every measurement uses.

A fixed count of samples spends the same on a 1.8 s launch, whose spread is
below 0.1% after a few samples, as on a 20 µs one. As nvbench does (its
defaults: relative standard deviation at most 0.5%, at least 10 samples and
0.5 s, a 15 s timeout), a set here takes samples in chunks and stops at the
first of:

- **quiet**: at least ``min_samples`` samples and a noise at most
  ``max_noise_pct``, the noise being the interquartile range over the
  median, in percent (the spread the report shows for every set; unlike the
  standard deviation, one sample caught by a hiccup of the host does not
  blow it up);
- **max_samples**: ``max_samples`` samples taken, however noisy;
- **timeout**: ``timeout_s`` seconds of sampling spent and at least
  ``min_samples`` samples taken.

A set never stops below ``min_samples``, except a set of long samples: one
whose sample lasts ``long_ms`` or more (a single launch: seed 001's products
at 16384³, 0.6 to 1.8 s each, whose interquartile range over five samples
was 0.001% to 0.5% in both archives of 2026-11-24) takes
``long_min_samples`` at least (:meth:`Rule.for_sample`), then stops as any
set does: quiet, full or out of time. Every sample is kept; the set
records why it stopped, and its noise is recomputed from the samples by the
summary. :func:`collect` is pure (it is given a function that takes samples
and a clock), so the rule is tested on synthetic series.
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

STOPS = ("quiet", "max_samples", "timeout")


def quantile(values: list[float], q: float) -> float:
    """The q-quantile with linear interpolation between order statistics (pandas' and NumPy's default)."""
    s = sorted(values)
    if not s:
        return math.nan
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def noise_pct(samples: list[float]) -> float:
    """Interquartile range over the median, in percent; nan for no samples or a zero median."""
    median = quantile(samples, 0.5)
    if not samples or not median:
        return math.nan
    return 100 * (quantile(samples, 0.75) - quantile(samples, 0.25)) / median


@dataclass(frozen=True)
class Rule:
    """Stop a set once it is quiet, full or out of time, never below ``min_samples``."""

    min_samples: int = 5
    max_samples: int = 20
    max_noise_pct: float = 0.5
    timeout_s: float = 2.0
    long_ms: float = math.inf  # a sample at least this long (in the samples' unit, milliseconds) ...
    long_min_samples: int = 3  # ... makes this the minimum (never more than min_samples)

    def __post_init__(self):
        if not 1 <= self.min_samples <= self.max_samples:
            raise ValueError(f"need 1 <= min_samples ({self.min_samples}) <= max_samples ({self.max_samples})")
        if self.long_min_samples < 1:
            raise ValueError(f"need long_min_samples >= 1 (got {self.long_min_samples})")

    def for_sample(self, sample_ms: float) -> "Rule":
        """The rule for a set whose one sample is expected to last ``sample_ms``: this one, with the minimum
        lowered to ``long_min_samples`` when the sample is ``long_ms`` or longer."""
        if sample_ms >= self.long_ms and self.long_min_samples < self.min_samples:
            return replace(self, min_samples=self.long_min_samples)
        return self

    def verdict(self, samples: list[float], elapsed_s: float) -> str:
        """Why the set stops now ('quiet', 'max_samples', 'timeout'), or '' to take more samples."""
        n = len(samples)
        if n < self.min_samples:
            return ""
        if noise_pct(samples) <= self.max_noise_pct:
            return "quiet"
        if n >= self.max_samples:
            return "max_samples"
        if elapsed_s >= self.timeout_s:
            return "timeout"
        return ""

    def next_chunk(self, taken: int) -> int:
        """How many samples to take next: the minimum first, then a quarter more each time (so that a short
        kernel's samples run back to back on the GPU, and a long one's set ends soon after it is quiet)."""
        if taken < self.min_samples:
            return self.min_samples - taken
        return max(1, min(self.max_samples - taken, taken // 4))

    def describe(self) -> str:
        long = (
            f" ({self.long_min_samples} at least for samples of {self.long_ms / 1e3:g} s or more)"
            if math.isfinite(self.long_ms) and self.long_min_samples < self.min_samples
            else ""
        )
        return (
            f"at least {self.min_samples} samples{long}, then until the interquartile range is at most "
            f"{self.max_noise_pct:g}% of the median, {self.max_samples} samples, or {self.timeout_s:g} s of sampling"
        )


@dataclass(frozen=True)
class Sampled:
    samples: list[float]
    stop: str  # one of STOPS
    seconds: float  # wall time spent sampling


def collect(take: Callable[[int], list[float]], rule: Rule, clock: Callable[[], float] = time.monotonic) -> Sampled:
    """Samples from ``take(k)`` (which returns k new samples) until ``rule`` says stop."""
    samples: list[float] = []
    start = clock()
    while True:
        k = rule.next_chunk(len(samples))
        got = list(take(k))
        if len(got) != k:
            raise RuntimeError(f"asked for {k} samples, got {len(got)}")
        samples += got
        stop = rule.verdict(samples, clock() - start)
        if stop:
            return Sampled(samples, stop, clock() - start)


def fixed(count: int) -> Rule:
    """A rule that takes exactly ``count`` samples (the fixed-count method, for comparisons)."""
    return Rule(min_samples=count, max_samples=count, max_noise_pct=-1.0, timeout_s=math.inf)
