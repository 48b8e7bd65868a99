"""Paired comparisons: the arithmetic behind a ratio of two kernels timed in alternation, and its stopping rule.

A GPU at its power cap runs a kernel at whatever clock the power controller
allows at that moment, and the controller swings it by a quarter several times
a second. Two kernels timed minutes apart can so differ by more than their own
difference. The paired step (:mod:`gpumm.run.paired`) times the kernels of one
comparison in *rounds*: each round runs one short block of every kernel, back
to back, the order reversed every other round, so that the kernels of a round
see the same power and thermal state. A ratio is then computed round by round:

- the share of kernel a in kernel b's rate, in round r, is ``t_b[r] / t_a[r]``
  (per-launch times: a share above 1 means a is faster);
- the estimate is the geometric mean of the rounds' shares, and its 95%
  interval the t interval of their logarithms (a ratio's logarithm is a
  difference, whose mean is what rounds estimate);
- a set of rounds is enough when every comparison's interval is at most
  ``ci_points`` points of share wide (after ``min_rounds``), or when the step's
  time or round budget is spent.

Energy: each kernel runs alone for a span; its board power is the mean of NVML's
power samples (one about every 20 ms on an H100) stamped inside the span, after a
settling time (:func:`power_per_member`), and its work per joule its rate over
that power. NVML's energy counter, which moves about every 100 ms at uneven
steps, is read over the whole updates inside the span as a cross-check
(:func:`energy_per_member`).

Pure functions on lists of numbers, tested on the CPU with recorded streams.
"""

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

# two-sided 95% quantiles of Student's t for 1 to 30 degrees of freedom; beyond, the normal's 1.96 (t at 30 is
# 2.042: the last step is under 4%)
_T95 = [
    *(12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131),
    *(2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042),
]


def t95(dof: int) -> float:
    """The two-sided 95% quantile of Student's t with ``dof`` degrees of freedom (nan below 1)."""
    if dof < 1:
        return math.nan
    if dof <= len(_T95):
        return _T95[dof - 1]
    return 1.96 + 2.4 / dof  # within 0.2% of the true quantile from 30 on


@dataclass(frozen=True)
class Ratio:
    """A paired ratio: its estimate, the 95% interval, and the rounds it rests on."""

    value: float
    low: float
    high: float
    rounds: int

    @property
    def width_points(self) -> float:
        """The interval's width in points of share (100 × (high - low))."""
        return 100 * (self.high - self.low)


def ratio(num_ms: Iterable[float], den_ms: Iterable[float], batches: int = 0) -> Ratio:
    """The paired ratio ``num / den`` of per-launch times, round by round: for the share of kernel a in kernel b's
    rate pass b's times as ``num`` and a's as ``den``. Rounds where either time is missing (NaN) are left out.

    ``batches``: the interval from the means of that many runs of consecutive rounds (batch means) instead of from
    the rounds themselves. Where consecutive rounds are correlated (a kernel whose own speed drifts over a second,
    as bf16_pingpong's at the cap did on an H100) the rounds' interval is too narrow and the batches' is not; for
    independent rounds the two agree. Used where there are at least two rounds per batch."""
    logs = [math.log(n / d) for n, d in zip(num_ms, den_ms) if n == n and d == d and n > 0 and d > 0]
    n = len(logs)
    if n == 0:
        return Ratio(math.nan, math.nan, math.nan, 0)
    mean = statistics.fmean(logs)
    if n < 2:
        return Ratio(math.exp(mean), math.nan, math.nan, n)
    values = logs
    if batches >= 2 and n >= 2 * batches:
        size = n // batches
        values = [statistics.fmean(logs[i * size : (i + 1) * size]) for i in range(batches)]
    half = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)


def ratio_of_medians(num_ms: list[float], den_ms: list[float]) -> float:
    """``median(num) / median(den)``: the unpaired ratio two sets' medians give."""
    num, den = [x for x in num_ms if x == x], [x for x in den_ms if x == x]
    if not num or not den:
        return math.nan
    return statistics.median(num) / statistics.median(den)


def iqr_pct(values: list[float]) -> float:
    """Interquartile range over the median, in percent (:func:`gpumm.run.sampling.noise_pct`)."""
    from gpumm.run import sampling

    return sampling.noise_pct([v for v in values if v == v])


@dataclass(frozen=True)
class Rule:
    """When a group's sustained rounds are enough: every interval at most ``ci_points`` wide after ``min_rounds``;
    or ``max_rounds`` rounds; or ``max_s`` seconds."""

    min_rounds: int = 10
    max_rounds: int = 400
    ci_points: float = 0.5
    max_s: float = 3.0

    def __post_init__(self):
        if not 2 <= self.min_rounds <= self.max_rounds:
            raise ValueError(f"need 2 <= min_rounds ({self.min_rounds}) <= max_rounds ({self.max_rounds})")

    def verdict(self, per_round: dict[str, list[float]], pairs: list[tuple[str, str]], elapsed_s: float) -> str:
        """Why the rounds stop now ('quiet', 'max_rounds', 'timeout'), or '' to run more. ``per_round``: each
        kernel's per-launch ms, one entry per round; ``pairs``: (a, b) for every share of a in b's rate."""
        n = min((len(v) for v in per_round.values()), default=0)
        if n < self.min_rounds:
            return "timeout" if elapsed_s >= self.max_s and n >= 2 else ""
        widths = [ratio(per_round[b], per_round[a]).width_points for a, b in pairs]
        if all(w == w and w <= self.ci_points for w in widths):
            return "quiet"
        if n >= self.max_rounds:
            return "max_rounds"
        if elapsed_s >= self.max_s:
            return "timeout"
        return ""


def order(members: list, round_index: int) -> list:
    """The order of a round: as given in even rounds, reversed in odd ones (a drift within a round then weighs
    on every kernel alike over two rounds)."""
    return list(members) if round_index % 2 == 0 else list(members)[::-1]


def edges(readings: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """The moments the energy counter moved: (host time, new value) for every reading whose value differs from the
    one before (the first reading is not an edge: when the counter last moved before it is unknown)."""
    out = []
    for (_, a), (t, b) in zip(readings, readings[1:]):
        if b != a:
            out.append((t, b))
    return out


@dataclass(frozen=True)
class Energy:
    """One kernel's energy over whole updates of the counter: joules, seconds, and the work (flops or bytes) its
    launches did in those seconds."""

    joules: float
    seconds: float
    work: float

    @property
    def watts(self) -> float:
        return self.joules / self.seconds if self.seconds > 0 else math.nan

    @property
    def work_per_joule(self) -> float:
        return self.work / self.joules if self.joules > 0 else math.nan


def energy_per_member(
    spans: dict[str, tuple[float, float]],
    blocks: list[tuple[str, float, float, float]],
    readings: list[tuple[float, int]],
    settle_s: float = 0.05,
) -> dict[str, Energy]:
    """Each kernel's energy from the counter's updates that fall wholly inside its span.

    ``spans``: kernel -> (start, end) of the time it ran alone (host clock, s); ``blocks``: (kernel, start, end,
    work) of every block of launches, on the same clock; ``readings``: (host time, counter mJ) polled throughout.
    An update interval counts for a kernel when it starts at least ``settle_s`` after the kernel's span starts (the
    power controller's reaction to the kernel before) and ends inside the span. A kernel with no whole interval in
    its span gets NaNs."""
    e = edges(readings)
    out = {}
    for name, (s0, s1) in spans.items():
        joules = seconds = work = 0.0
        for (ta, va), (tb, vb) in zip(e, e[1:]):
            if ta < s0 + settle_s or tb > s1:
                continue
            joules += (vb - va) / 1e3
            seconds += tb - ta
            for k, b0, b1, w in blocks:
                if k == name and b1 > b0:
                    overlap = min(b1, tb) - max(b0, ta)
                    if overlap > 0:
                        work += w * overlap / (b1 - b0)
        out[name] = Energy(joules, seconds, work) if seconds > 0 else Energy(math.nan, math.nan, math.nan)
    return out


@dataclass(frozen=True)
class Power:
    """One kernel's board power over its span: the mean and peak of the samples inside it (W), and how many."""

    mean_w: float
    peak_w: float
    samples: int


def power_per_member(
    spans: dict[str, tuple[float, float]], samples: list[tuple[float, float]], settle_s: float = 0.05
) -> dict[str, Power]:
    """Each kernel's power from the samples ``(time, mW)`` (host clock, s) stamped within its span, from ``settle_s``
    after its start to its end; NaNs where none is."""
    out = {}
    for name, (s0, s1) in spans.items():
        got = [mw / 1e3 for t, mw in samples if s0 + settle_s <= t <= s1 and mw == mw]
        out[name] = Power(statistics.fmean(got), max(got), len(got)) if got else Power(math.nan, math.nan, 0)
    return out
