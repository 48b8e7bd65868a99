"""The sources' claims (gpumm.analyse.claims) on hand-made tables: every statement at every size and kernel it names,
thresholds on unrounded values (just under and just over), a statement that holds at some sizes only, and one count
for the index and the pages."""

import pandas as pd
import pytest

from gpumm.analyse import claims, headlines


def _row(variant, n, mode, timed, ms):
    return {
        "variant": variant,
        "kind": "cublas" if variant == "cublas" else "cuda",
        "M": n,
        "N": n,
        "K": n,
        "memory_mode": mode,
        "timed": timed,
        "status": "ok",
        "median_ms": ms,
        "gflops": 2 * n**3 / (ms * 1e-3) / 1e9,
    }


def _uva(ratios: dict[int, float], variant: str = "cublas") -> pd.DataFrame:
    """device times of 1 ms at each size, zero-copy times ``ratio`` ms."""
    rows = []
    for n, r in ratios.items():
        rows += [_row(variant, n, "device", "kernel", 1.0), _row(variant, n, "zero_copy", "kernel", r)]
    return pd.DataFrame(rows)


NO_RESOURCES = pd.DataFrame(columns=["variant", "smem_bytes"])


def _verdict(summary, part, claim="S1-C2"):
    v = claims.verdicts(claims.cases(summary, NO_RESOURCES)).set_index(["claim", "part"])
    return v.loc[(claim, part)]


@pytest.mark.parametrize(
    "ratio, holds, said", [(29.99, False, "29.99×"), (30.0, False, "30.0×"), (30.01, True, "30.01×")]
)
def test_over_30x_is_compared_unrounded(ratio, holds, said):
    v = _verdict(_uva({2048: ratio}), "a1")
    assert v.verdict == (claims.HOLDS if holds else claims.NOT)
    assert f"at 2048 ({said})" in v.detail  # two decimals where one would round onto the threshold


def test_a_claim_that_holds_at_some_sizes_says_where():
    """The H200's shape of S1-C2 a: 39× at 512 and 65× at 1024 hold, 29.78× at 2048 does not."""
    v = _verdict(_uva({256: 20.0, 512: 39.4, 1024: 64.8, 2048: 29.78}), "a1")
    assert v.verdict == claims.IN_PART and (v.cases, v.held) == (4, 2)
    assert v.detail == "at 512–1024 (39.4× to 64.8×); not at 256 and 2048 (20.0× to 29.8×)"


def test_the_best_kernel_is_held_to_50x():
    v = _verdict(_uva({1024: 49.99, 2048: 50.5}, "unrolled"), "a2")
    assert v.verdict == claims.IN_PART and "not at 1024 (49.99×)" in v.detail


@pytest.mark.parametrize(
    "speedup, share, over, half",
    [
        (14.999, 0.3501, False, True),
        (15.001, 0.3499, True, False),
        (14.99, 0.6499, False, True),
        (20, 0.6501, True, False),
    ],
)
def test_s1_c1_at_the_edges(speedup, share, over, half):
    n, cublas_ms = 16384, 1.0
    best_ms = cublas_ms / share
    rows = [
        _row("cublas", n, "device", "kernel", cublas_ms),
        _row("unrolled", n, "device", "kernel", best_ms),
        _row("naive", n, "device", "kernel", best_ms * speedup),
        _row("naive", n, "zero_copy", "kernel", 1e-6),  # another memory mode never enters the claim
        _row("cublas", 8192, "device", "kernel", 1.0),  # cuBLAS alone at a size: not the claim's size
    ]
    c = claims.cases(pd.DataFrame(rows), NO_RESOURCES).set_index("part")
    assert c.at["a", "size"] == n and c.at["a", "value"] == pytest.approx(speedup)
    assert bool(c.at["a", "holds"]) is over and bool(c.at["b", "holds"]) is half


def test_s1_c1_takes_the_largest_size_all_three_ran():
    rows = []
    for n, naive in ((4096, 25.0), (8192, 200.0)):
        rows += [_row("naive", n, "device", "kernel", naive), _row("unrolled", n, "device", "kernel", 1.0)]
        rows += [_row("cublas", n, "device", "kernel", 0.5)]
    rows.append(_row("unrolled", 16384, "device", "kernel", 8.0))  # naive not measured at 16384
    a = _verdict(pd.DataFrame(rows), "a", "S1-C1")
    assert a.verdict == claims.HOLDS and a.detail == "for unrolled (200×) at 8192"


@pytest.mark.parametrize("ratio, holds", [(1.1, True), (1.1001, False), (0.9, True), (0.8999, False)])
def test_unified_matches_manual_within_ten_percent(ratio, holds):
    rows = [_row("naive", 4096, "device", "kernel", 1.0), _row("naive", 4096, "managed", "warm", ratio)]
    rows += [_row("naive", 2048, "device", "kernel", 1.0), _row("naive", 2048, "managed", "warm", 5.0)]  # not the top
    v = _verdict(pd.DataFrame(rows), "b")
    assert v.verdict == (claims.HOLDS if holds else claims.NOT) and "at 4096" in v.detail


def test_a_dip_at_1024_per_kernel():
    """A dip is a rate at 1024 at least 5% under both neighbours: 0.949 is one, 0.951 and 0.999 are not."""
    rows = []
    for v, ratio in (("naive", 0.949), ("cublas", 0.951), ("unrolled", 0.999)):
        t1024 = 8.0 / ratio  # time at 1024 against 8x 512's time
        rows += [_row(v, 512, "device", "kernel", 1.0), _row(v, 1024, "device", "kernel", t1024)]
        rows += [_row(v, 2048, "device", "kernel", 64.0)]
    v = _verdict(pd.DataFrame(rows), "c1")
    assert v.verdict == claims.IN_PART and v.detail.startswith("for naive (0.949×) at 1024"), v.detail
    assert "cublas" not in v.detail.split("; not")[0]


def test_the_cpu_wins_only_counts_small_matrices():
    """Seed 002's 'the CPU wins for small matrices' is tested from 16 to 128 only: a GPU win at 256 does not count."""
    rows = []
    for n, cpu in ((16, 0.5), (64, 0.9), (128, 1.2), (256, 50.0)):
        rows += [_row("cpu_serial", n, "host", "end_to_end", cpu), _row("naive", n, "device", "end_to_end", 1.0)]
    cases = claims.s2_cpu(pd.DataFrame(rows).assign(kind=lambda d: d.variant.map({"cpu_serial": "cpu"}).fillna("cuda")))
    assert [(c["size"], c["holds"]) for c in cases] == [(16, True), (64, True), (128, False)]


def test_the_explanation_by_shared_memory_is_tested_on_the_compiler_report():
    res = pd.DataFrame({"variant": ["tiled_tile16", "unrolled"], "smem_bytes": [2048, 1024]})
    v = claims.verdicts(claims.cases(_uva({1024: 40.0}), res)).set_index("part").loc["c3"]
    assert v.verdict == claims.NOT and "tiled_tile16 2048 B, unrolled 1024 B" in v.detail


def test_untested_statements_are_listed_and_not_counted():
    v = claims.verdicts(claims.cases(_uva({512: 40.0, 1024: 20.0}), NO_RESOURCES))
    assert len(v) == len(claims.STATEMENTS)
    assert (v.verdict == claims.UNTESTED).sum() == len(claims.STATEMENTS) - 1
    assert claims.count(v) == {claims.HOLDS: 0, claims.IN_PART: 1, claims.NOT: 0}
    assert claims.counted(v) == "0 hold, 1 holds in part and 0 do not hold, of 1 statement tested"


def test_the_index_counts_as_the_pages_do():
    rows = [*_uva({512: 40.0, 1024: 20.0}).to_dict("records"), *_uva({1024: 60.0}, "unrolled").to_dict("records")]
    s = pd.DataFrame(rows)
    t = {"summary": s, "claim_verdicts": claims.verdicts(claims.cases(s, NO_RESOURCES))}
    row = headlines.headlines(t).set_index("key").loc["claims"]
    assert row.value == "1 holds, 1 holds in part and 0 do not hold, of 2 statements tested"
    assert (row.page, row.anchor, row.number) == ("index", "claims", 1.0)


def test_spans_read_as_runs_of_the_sweep():
    assert claims.spans([16, 32, 64, 2048]) == "16–64 and 2048"
    assert claims.spans([512, 1024, 2048, 8192, 16384]) == "512–2048 and 8192–16384"
    assert claims.spans([256, 1024, 4096]) == "256, 1024 and 4096"
    assert (
        claims.shown(0.449, "share", (0.35, 0.65)) == "45%" and claims.shown(0.3496, "share", (0.35, 0.65)) == "34.96%"
    )


def test_s2_tr_on_a_run_without_the_padded_transpose_has_no_cases():
    """A subset run (only transpose_naive) leaves seed 002's transpose claim untested, not a crash."""
    t = pd.DataFrame(
        {"variant": ["transpose_naive"], "M": [512], "N": [512], "status": ["ok"], "speedup_over_naive": [1.0]}
    )
    assert claims.s2_tr(t) == []
    t = pd.concat([t, t.assign(variant="transpose_padded", speedup_over_naive=9.5)], ignore_index=True)
    assert [(c["size"], c["holds"]) for c in claims.s2_tr(t)] == [(512, True)]


def test_a_claim_case_over_a_throttled_set_is_marked_where_it_stands():
    """Issue 39: S1-C2's zero-copy slowdowns from a throttled set carry the mark; a set at full clock does not."""
    import pandas as pd

    from gpumm.analyse import claims

    rows = [
        {"variant": "cublas", "M": n, "N": n, "K": n, "timed": "kernel", "memory_mode": mode, "status": "ok"}
        | {"median_ms": ms, "throttled": hot}
        for n, hot in ((32, True), (256, False))
        for mode, ms in (("zero_copy", 3.3), ("device", 0.1))
    ]
    summary = pd.DataFrame(rows)
    cases = pd.DataFrame(claims.s1_c2(summary, pd.DataFrame()))
    a1 = cases[cases.part == "a1"].set_index("size")
    assert a1.loc[32, "note"] == "zero-copy and device sets ran throttled"
    assert a1.loc[256, "note"] == ""
    assert claims.throttled_note(summary.drop(columns="throttled"), "cublas", 32, ("zero_copy",)) == ""
