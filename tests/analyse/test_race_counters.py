"""The race's sentences name the counter each rung's file says it should move (issue 28), a counter that drops to
zero included, and the mapping agrees with the kernel files' headers."""

import re

import pandas as pd
import pytest

from gpumm.analyse import race
from gpumm.setup import catalog, paths

# how a header names each counter of race.MOVES
PHRASES = {
    "shared_loads_per_ffma": r"shared-memory load(s| instructions) per FFMA",
    "dram_bytes_per_flop": r"DRAM bytes per FLOP",
    "issue_active_pct": r"issue[- ]slot",
    "bank_conflicts_per_kflop": r"bank[\s/]*conflicts|bank_conflicts",
    "stall_long_scoreboard": r"long scoreboard",
    "stall_barrier": r"\"barrier\"",
    "stall_short_scoreboard": r"short\s+scoreboard",
    "stall_mio_throttle": r"MIO throttle",
    "sm_active": r"SM active cycles",
}


def _header(family: str) -> str:
    """The comment block a kernel file opens with, on one line."""
    text = (paths.KERNELS / catalog.load()[family]["file"]).read_text()
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return " ".join(lines)


@pytest.mark.parametrize("family", sorted(race.MOVES))
def test_each_rung_names_in_its_header_the_counters_its_sentence_leads_with(family):
    header = _header(family)
    said = re.search(r"[Tt]he counters? it should move:?(.*)", header)
    assert said, f"{family}: its header does not say which counter it should move"
    for col in race.MOVES[family]:
        assert re.search(PHRASES[col], header), (family, col)


def test_every_rung_of_the_race_has_its_counters():
    chain = race.chain([{"family": n, "rung_below": f.get("rung_below")} for n, f in catalog.load().items()])
    rungs = [f for f in chain if f not in ("naive", "unrolled", "cublas")]
    assert set(rungs) == set(race.MOVES), sorted(set(rungs) ^ set(race.MOVES))


def _counters(**rows):
    base = {c: 1.0 for c, _, _ in race.COUNTERS + race.STALL_COUNTERS}
    return pd.DataFrame([{**base, "family": f, **v} for f, v in rows.items()])


def test_a_drop_to_zero_is_named_first_as_the_rungs_counter():
    """double_buffer's 0.366 shared bank conflicts per 1000 FLOP going to 0 is swizzled's whole idea."""
    c = _counters(
        double_buffer={"bank_conflicts_per_kflop": 0.366, "issue_active_pct": 70.0, "registers": 128},
        swizzled={"bank_conflicts_per_kflop": 0.0, "issue_active_pct": 71.0, "registers": 160},
    )
    rates = pd.DataFrame({"family": ["swizzled"], "M": [4096], "gain_over_rung_below": [1.003]})
    fams = [{"family": "double_buffer"}, {"family": "swizzled", "rung_below": "double_buffer"}]
    said = race.what_moved(c, rates, fams, 4096)
    assert said == [
        "**swizzled** over double_buffer — the counters its file names: shared-memory bank conflicts per 1000 FLOP "
        "0.366 → 0 (better, gone); issue-slot utilisation (%) 70 → 71 (better, ×1.01). Most moved besides: "
        "registers per thread 128 → 160 (worse, ×1.25). GFLOP/s ×1.00."
    ]


def test_a_counter_the_profile_lacks_is_said_to_be_missing():
    c = _counters(interior={}, streamk={})
    rates = pd.DataFrame({"family": ["streamk"], "M": [4096], "gain_over_rung_below": [1.02]})
    said = race.what_moved(c, rates, [{"family": "interior"}, {"family": "streamk", "rung_below": "interior"}], 4096)
    assert said == [
        "**streamk** over interior — the counters its file names: SM active cycles against elapsed cycles (the race's "
        "metric set does not collect it). GFLOP/s ×1.02."
    ]


def test_a_move_among_near_zeros_is_not_news():
    """streamk over interior: bank conflicts 0.00119 -> 4.4e-05 per kFLOP, where other rungs have 2.1, is noise."""
    c = _counters(
        vectorized={"bank_conflicts_per_kflop": 2.1},
        interior={"bank_conflicts_per_kflop": 0.00119, "l2_bytes_per_flop": 0.0169},
        streamk={"bank_conflicts_per_kflop": 4.4e-05, "l2_bytes_per_flop": 0.0233},
    )
    rates = pd.DataFrame({"family": ["streamk"], "M": [4096], "gain_over_rung_below": [1.02]})
    said = race.what_moved(c, rates, [{"family": "interior"}, {"family": "streamk", "rung_below": "interior"}], 4096)
    assert "bank conflicts" not in said[0] and "L2 bytes per FLOP 0.0169 → 0.0233" in said[0]
