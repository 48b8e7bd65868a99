"""Issue 39: every regime and cause word comes from one rule and the run's numbers, and flips with them."""

import pandas as pd
import pytest

from gpumm.analyse import access_patterns, headlines
from gpumm.profile import session
from gpumm.report import races
from gpumm.setup import regimes

MIB = 2**20


@pytest.mark.parametrize(
    "times, name",
    [(0.5, "cached"), (0.51, "mixed"), (2.56, "mixed"), (2.999, "mixed"), (3.0, "dram"), (10.2, "dram")],
)
def test_the_regime_flips_at_the_rule(times, name):
    assert regimes.regime(times * 50 * MIB, 50 * MIB) == name
    assert session.regime(1, 12 / times, footprint=12) == name  # the profile step's rule is the same rule


def test_bf16_at_4096_is_mixed_on_an_h100_and_an_h200_and_dram_on_a_40_mib_l2():
    """128 MiB of BF16 A, B and FP32 C: 2.56× the H100's 50 MiB and 2.1× the H200's 60 MiB, not the DRAM regime;
    3.2× a 40 MiB L2 is."""
    assert regimes.square(4096, 50 * MIB, "bf16") == "mixed"
    assert regimes.square(4096, 60 * MIB, "bf16") == "mixed"
    assert regimes.square(4096, 40 * MIB, "bf16") == "dram"
    said = regimes.square_words(4096, 50 * MIB, "bf16")
    assert "2.6 times over" in said and "mixed" in said and "DRAM regime starts at 3" in said
    assert regimes.square_words(8192, 50 * MIB, "bf16").endswith("10.2 times over: the DRAM regime")
    assert regimes.square_words(1024, 50 * MIB) == "A, B and C fill 24% of the L2: inside the L2"
    assert "unknown" in regimes.square_words(1024, float("nan"))


def test_a_race_caption_names_each_sizes_regime_by_the_rule():
    said = races.memory_words([8192, 4096, 4096], 50 * MIB, "bf16")
    assert said.startswith(" At 4096³ A, B (BF16) and C (FP32) fill the L2 2.6 times over: between")
    assert "at 8192³ A, B (BF16) and C (FP32) fill the L2 10.2 times over: the DRAM regime." in said
    assert "several times" not in said
    assert "the DRAM regime" in races.memory_words([4096], 40 * MIB, "bf16").split(":")[1]


def _ratio(rows_dram_us: float, rows_l2_us: float) -> pd.DataFrame:
    """S0-T2's table at 1024 and 2048: columns read 1.4 µs from DRAM, 0.22 from the L2."""
    return pd.DataFrame(
        [
            {"regime": "dram", "n": n, "rows_ms": rows_dram_us * k / 1e3, "cols_ms": 1.4 * k / 1e3}
            for n, k in ((1024, 1), (2048, 4))
        ]
        + [
            {"regime": "l2", "n": n, "rows_ms": rows_l2_us * k / 1e3, "cols_ms": 0.22 * k / 1e3}
            for n, k in ((1024, 1), (2048, 4))
        ]
    ).assign(ratio=lambda d: d.rows_ms / d.cols_ms)


def test_the_cause_of_the_uncoalesced_slowdown_is_the_comparison_that_isolates_it():
    """Rows read in the same time from DRAM and the L2: bound by its transactions, not DRAM; slower from DRAM: the
    word flips."""
    same = access_patterns.cause(_ratio(4.04, 4.05))
    assert same["bound"] == "transactions" and same["sizes"] == [1024, 2048]
    assert "not by DRAM" in access_patterns.cause_words(same)
    assert "6.4× slower from DRAM" in access_patterns.cause_words(same)
    slower = access_patterns.cause(_ratio(8.0, 4.0))
    assert slower["bound"] == "dram" and "not by DRAM" not in access_patterns.cause_words(slower)
    assert access_patterns.cause(_ratio(4.0, 4.0).query("regime == 'dram'"))["bound"] == ""


def test_the_coalescing_headline_says_the_cause_not_from_dram():
    for rows_l2, word in ((4.05, "bound by the transactions it issues, not by DRAM"), (2.0, "DRAM-bound")):
        rows = headlines._coalescing({"coalescing_ratio": _ratio(4.04, rows_l2)})
        assert len(rows) == 1 and word in rows[0]["value"], rows
        assert rows[0]["what"].endswith("the matrices in DRAM")


def test_the_rules_footprints_are_the_operations():
    from gpumm.run import operations

    for key, op in (("product", "matmul"), ("bf16", "matmul_bf16"), ("transpose", "transpose")):
        assert regimes.FOOTPRINT[key] == operations.get(op).footprint, key
