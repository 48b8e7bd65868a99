"""Issue 40: the dispatcher's rule, fitted on measured shapes (never typed), and its pick at shapes it never saw."""

import pandas as pd
import pytest

from gpumm.analyse import dispatch

REF = "cublas_bf16"


def samples(times: dict) -> pd.DataFrame:
    """Three cold rounds per (layer, M, N, K, kernel) around the given µs, and one warm sample that must not count."""
    rows = []
    for (layer, m, n, k, kernel), us in times.items():
        rows += [
            {"layer": layer, "M": m, "N": n, "K": k, "kernel": kernel, "weights": "cold", "round": r, "us": us + d}
            for r, d in enumerate((-1, 0, 5))
        ]
        rows.append(
            {"layer": layer, "M": m, "N": n, "K": k, "kernel": kernel, "weights": "warm", "round": 0, "us": 0.001}
        )
    return pd.DataFrame(rows)


NO_FAILS = pd.DataFrame(columns=["layer", "M", "N", "K", "kernel", "status"])
TIMES = {
    ("out", 1, 4096, 4096, "stream1"): 10.0,
    ("out", 1, 4096, 4096, "mma16"): 12.0,
    ("out", 1, 4096, 4096, "race"): 40.0,
    ("out", 1, 4096, 4096, REF): 11.0,
    ("out", 16, 4096, 4096, "mma16"): 13.0,
    ("out", 16, 4096, 4096, "race"): 41.0,
    ("out", 16, 4096, 4096, REF): 9.0,
    ("out", 1024, 4096, 4096, "race"): 60.0,
    ("out", 1024, 4096, 4096, REF): 61.0,
}
MAX_M = {"stream1": 1, "mma16": 16, "race": None}


def test_the_rule_ranks_each_fitted_shapes_kernels_by_their_cold_median_and_never_the_reference():
    rule = dispatch.fit(samples(TIMES), NO_FAILS, REF)
    ranks = {(p["layer"], p["M"]): p["ranking"] for p in rule["points"]}
    assert ranks == {("out", 1): ["stream1", "mma16", "race"], ("out", 16): ["mma16", "race"], ("out", 1024): ["race"]}
    assert rule["reference"] == REF  # cuBLAS is faster at M = 16 and still never picked


def test_a_kernel_that_failed_its_checks_at_a_shape_is_not_ranked_there():
    fails = pd.DataFrame([{"layer": "out", "M": 1, "N": 4096, "K": 4096, "kernel": "stream1", "status": "failed"}])
    rule = dispatch.fit(samples(TIMES), fails, REF)
    assert rule["points"][0]["ranking"] == ["mma16", "race"]
    assert dispatch.pick(rule, 1, 4096, 4096, MAX_M) == "mma16"


@pytest.mark.parametrize(
    "m, expected",
    [(1, "stream1"), (2, "mma16"), (5, "mma16"), (16, "mma16"), (17, "race"), (100, "race"), (2000, "race")],
)
def test_a_shape_takes_the_fitted_rankings_and_a_kernel_that_takes_its_m(m, expected):
    """M = 2 lies between the fitted 1 and 16: the one-token build cannot take it, mma16's worse cost of the two
    (13/9) is less than the race's; M = 17 between 16 and 1024, where no build of at most 16 tokens may go; 2000
    past the last fitted M: the nearest's ranking."""
    rule = dispatch.fit(samples(TIMES), NO_FAILS, REF)
    assert dispatch.pick(rule, m, 4096, 4096, MAX_M) == expected


def test_the_nearest_shape_weighs_an_octave_of_m_four_times_one_of_n():
    rule = {"m_weight": 4.0, "points": [{"M": 16, "N": 4096, "K": 4096}, {"M": 1, "N": 128256, "K": 4096}]}
    near = min(rule["points"], key=lambda p: dispatch.distance(rule, p, 8, 128256, 4096))
    assert near["M"] == 16  # one octave of M (4) against log2(128256 / 4096) ≈ 4.97 octaves of N
    assert dispatch.distance(rule, rule["points"][0], 16, 4096, 4096) == 0


def test_no_kernel_taking_the_shape_is_an_error_not_a_guess():
    rule = dispatch.fit(samples({k: v for k, v in TIMES.items() if k[1] == 1 and k[4] != "race"}), NO_FAILS, REF)
    with pytest.raises(ValueError, match="no kernel of the rule takes M = 64"):
        dispatch.pick(rule, 64, 4096, 4096, MAX_M)
    with pytest.raises(ValueError, match="no fitted shape"):
        dispatch.fit(samples({("out", 1, 4096, 4096, REF): 1.0}), NO_FAILS, REF)


def test_the_shape_a_pick_comes_from_is_the_one_whose_ranking_gave_it():
    """Beyond the fitted token counts the nearest fitted shape that ranks the kernel; between two, both (M = 17
    lies between 16 and 1024, both rank the race); a kernel no fitted shape ranks comes from none."""
    rule = dispatch.fit(samples(TIMES), NO_FAILS, REF)
    assert dispatch.origin(rule, 2000, 4096, 4096, "race")["M"] == 1024
    assert dispatch.origin(rule, 17, 4096, 4096, "race")["M"] == "16–1024"  # between two that both rank it
    assert dispatch.origin(rule, 2, 4096, 4096, "mma16")["M"] == "1–16"
    assert dispatch.origin(rule, 2, 4096, 4096, "stream1")["M"] == 1  # ranked at one end only
    with pytest.raises(ValueError, match="ranks nothing|no fitted shape of the rule ranks"):
        dispatch.origin(rule, 1, 4096, 4096, REF)


def test_between_two_fitted_token_counts_the_kernel_whose_worse_cost_of_the_two_is_least():
    """The H100 archive's logits layer: bf16_pingpong 7% faster than cuBLAS BF16 at 1024 tokens and 30% slower at
    4096, bf16_persistent 2% and 4% faster; 2000 tokens is nearer 1024, and the nearest ranking gave it pingpong
    (0.78x cuBLAS there). Between the two it takes persistent, the better of the worse ends."""
    times = {
        ("logits", 1024, 128256, 4096, "pingpong"): 93.0,
        ("logits", 1024, 128256, 4096, "persistent"): 98.0,
        ("logits", 1024, 128256, 4096, REF): 100.0,
        ("logits", 4096, 128256, 4096, "pingpong"): 520.0,
        ("logits", 4096, 128256, 4096, "persistent"): 384.0,
        ("logits", 4096, 128256, 4096, REF): 400.0,
    }
    rule = dispatch.fit(samples(times), NO_FAILS, REF)
    cost = {p["M"]: p["cost"] for p in rule["points"]}
    assert cost[1024] == {"pingpong": pytest.approx(0.93), "persistent": pytest.approx(0.98)}
    takes = {"pingpong": None, "persistent": None}
    assert dispatch.pick(rule, 2000, 128256, 4096, takes) == "persistent"
    assert dispatch.pick(rule, 1024, 128256, 4096, takes) == "pingpong"  # a fitted shape: its own ranking
    assert dispatch.pick(rule, 8192, 128256, 4096, takes) == "persistent"  # past the last: the nearest
    assert dispatch.pick(rule, 2000, 4096, 4096, takes) == "pingpong"  # another weight: the nearest shape's
    assert dispatch.pick(rule, 2000, 128256, 4096, {"pingpong": None}) == "pingpong"  # only one takes it
    assert dispatch.origin(rule, 2000, 128256, 4096, "persistent")["M"] == "1024–4096"


def test_between_two_fitted_counts_a_build_that_cannot_take_the_upper_competes_on_the_lower_alone():
    """A build of at most 8 tokens is never timed at 16: between 1 and 16 it competes on its cost at 1."""
    times = {
        ("l", 1, 4096, 4096, "m8"): 5.0,
        ("l", 1, 4096, 4096, "big"): 10.0,
        ("l", 1, 4096, 4096, REF): 10.0,
        ("l", 16, 4096, 4096, "big"): 10.0,
        ("l", 16, 4096, 4096, REF): 10.0,
    }
    rule = dispatch.fit(samples(times), NO_FAILS, REF)
    takes = {"m8": 8, "big": None}
    assert [dispatch.pick(rule, m, 4096, 4096, takes) for m in (2, 8, 9)] == ["m8", "m8", "big"]
    assert dispatch.origin(rule, 2, 4096, 4096, "m8")["M"] == 1
    assert dispatch.origin(rule, 9, 4096, 4096, "big")["M"] == "1–16"


def test_a_pick_that_fell_back_to_the_nearest_shape_names_that_shape_not_a_range():
    """At 2000 between 1024 and 4096 no kernel is ranked at both (x failed its check at 4096, y was not timed at
    1024): the pick is the nearest shape's, and so is its origin, not a range of two shapes it never used."""
    times = {
        ("l", 1024, 4096, 4096, "x"): 9.0,
        ("l", 1024, 4096, 4096, REF): 10.0,
        ("l", 4096, 4096, 4096, "x"): 30.0,
        ("l", 4096, 4096, 4096, "y"): 41.0,
        ("l", 4096, 4096, 4096, REF): 40.0,
        ("l", 8192, 4096, 4096, "x"): 70.0,
        ("l", 8192, 4096, 4096, REF): 80.0,
    }
    fails = pd.DataFrame([{"layer": "l", "M": 4096, "N": 4096, "K": 4096, "kernel": "x", "status": "failed"}])
    rule = dispatch.fit(samples(times), fails, REF)
    assert dispatch.pick(rule, 2000, 4096, 4096, {"x": None, "y": None}) == "x"
    assert dispatch.origin(rule, 2000, 4096, 4096, "x")["M"] == 1024


def test_the_applied_rule_and_every_pick_the_step_made_must_be_todays():
    rule = dispatch.fit(samples(TIMES), NO_FAILS, REF)
    made = pd.DataFrame(
        [{"kernel": "dispatch", "M": m, "N": 4096, "K": 4096, "picks": k} for m, k in [(2, "mma16"), (17, "race")]]
    )
    assert dispatch.check_applied(rule, rule, made) == ""
    old = {**rule, "points": [{k: v for k, v in p.items() if k != "cost"} for p in rule["points"]]}
    assert dispatch.check_applied(old, rule, made) == ""  # recorded before the costs: compared without them
    assert "applied a rule" in dispatch.check_applied({}, rule, made)
    assert "applied a rule" in dispatch.check_applied({**old, "m_weight": 1.0}, rule, made)
    wrong = made.assign(picks=["race", "race"])  # the same rule, a pick today's rule would not make
    assert dispatch.check_applied(rule, rule, wrong) == "picked race at 2 x 4096 x 4096, where today's rule picks mma16"


def test_a_kernel_is_ranked_by_its_rounds_against_the_references_not_by_a_ratio_of_whole_medians():
    """The goals hold a pick to the median of its per-round ratios; the rule ranks by the same. "paired" beats the
    reference in 4 of 5 rounds (its median, 135 us, pairs with the reference's 100 from other rounds); "steady"
    loses every round by 2%."""
    times = {REF: [100, 100, 100, 140, 140], "paired": [90, 90, 135, 135, 135], "steady": [102] * 5}
    rows = [
        {"layer": "down", "M": 8192, "N": 4096, "K": 14336, "kernel": k, "weights": "cold", "round": r, "us": us}
        for k, series in times.items()
        for r, us in enumerate(series)
    ]
    rule = dispatch.fit(pd.DataFrame(rows), NO_FAILS, REF)
    assert rule["points"][0]["ranking"] == ["paired", "steady"]
    assert rule["points"][0]["cost"] == pytest.approx({"paired": 135 / 140, "steady": 1.02})


def test_a_kernel_missing_some_of_the_references_rounds_is_not_ranked_and_a_round_twice_is_an_error():
    rows = [
        {"layer": "out", "M": 1024, "N": 4096, "K": 4096, "kernel": k, "weights": "cold", "round": r, "us": 10.0}
        for k, rounds in ((REF, range(4)), ("whole", range(4)), ("partial", range(3)))
        for r in rounds
    ]
    rule = dispatch.fit(pd.DataFrame(rows), NO_FAILS, REF)
    assert rule["points"][0]["ranking"] == ["whole"]
    with pytest.raises(ValueError, match="two samples in round 0"):
        dispatch.fit(pd.DataFrame(rows + rows[4:5]), NO_FAILS, REF)
