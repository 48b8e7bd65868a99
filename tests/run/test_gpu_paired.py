"""On the GPU: the paired step verifies, times in alternation and reads the power of a small race.

Run on the GPU machine with ``pytest -m gpu``; elsewhere these skip with the reason.
"""

import math

import pandas as pd
import pytest

from gpumm.analyse import paired as analysed
from gpumm.build import nvcc as build
from gpumm.run import paired, races
from gpumm.setup import catalog

pytestmark = pytest.mark.gpu

N = 2048
FAST = {"min_rounds": 4, "max_s": 0.3, "energy_s": 0.15, "settle_s": 0.02, "sustained_after_s": 0.1}


def _samples(ms: float, n: int = N) -> pd.DataFrame:
    """A set as the measure step writes it: verified, in device memory, at ``ms`` per launch."""
    rows = {"M": [n] * 5, "N": [n] * 5, "K": [1] * 5, "memory_mode": ["device"] * 5, "timed": ["kernel"] * 5}
    return pd.DataFrame({**rows, "status": ["ok"] * 5, "ms": [ms] * 5, "reason": [""] * 5})


@pytest.fixture(scope="module")
def movers(tmp_path_factory):
    """The copy kernel and two transposes, built for this GPU."""
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(0)
    arch = f"sm_{p['major']}{p['minor']}"
    out = {}
    for vid in ("transpose_copy", "transpose_tile64", "transpose_naive"):
        d = tmp_path_factory.mktemp(vid)
        build.build(catalog.from_id(vid), arch, d)
        out[vid] = str(d / "kernel.cubin")
    return out


@pytest.fixture(scope="module")
def launch_ms(movers):
    """Each mover's per-launch time at N on this GPU (the fastest of three replays of a graph of 200 launches): the
    hint the paired step sizes its blocks and energy spans from, which a study takes from its own measure step. A
    typed hint slower than the kernel shortens its energy span in proportion, and a span that leaves less than
    NVML's 20 ms between power samples after settling can hold none."""
    import cupy

    from gpumm.run import timing
    from gpumm.run.launch import Launcher

    A = cupy.random.default_rng(7).random((N, N), dtype=cupy.float32)
    out, got = cupy.empty_like(A), {}
    with cupy.cuda.Stream(non_blocking=True) as stream:
        for vid, cubin in movers.items():
            graph = timing.capture(Launcher(catalog.from_id(vid), cubin).bind(A, out), 200)
            assert graph is not None, f"{vid}: its launches could not be captured in a CUDA graph"
            got[vid] = min(timing.time_launches(lambda g=graph: g.launch(stream), 1, 3)) / 200
    return got


def _plan():
    fams = catalog.load()
    members = [
        {"family": f, "role": "reference" if f == "transpose_copy" else "rung",
         "rung_below": fams[f].get("rung_below") or "", "variants": [f]}
        for f in ("transpose_naive", "transpose_tile64", "transpose_copy")
    ]  # fmt: skip
    return {"races": [{"race": "moves", "reference": "transpose_copy", "sizes": [N], "members": members}]}


def test_a_small_race_is_verified_paired_and_powered(movers, launch_ms):
    share = launch_ms["transpose_copy"] / launch_ms["transpose_naive"]
    assert share < races.SETTINGS["min_share"], f"the naive transpose at {N} moves {share:.0%} of the copy's rate"
    samples = {vid: _samples(ms) for vid, ms in launch_ms.items()}
    df = paired.run(_plan(), FAST, 20261122, 1 << 27, samples, movers, progress=False)
    checks = df[df.phase == "check"].set_index("variant")
    assert set(checks.status) == {"ok"}
    assert "energy only" in checks.at["transpose_naive", "reason"]  # under min_share of the copy's rate
    sus = df[df.phase == "sustained"]
    assert set(sus.variant) == {"transpose_tile64", "transpose_copy"} and sus["round"].nunique() >= 4
    assert (sus.ms > 0).all() and sus.stop.notna().all()
    shares = analysed.shares(df)
    s = shares[shares.kind == "reference"].iloc[0]
    assert 0.5 < s.share < 2 and s.low <= s.share <= s.high
    energy = df[df.phase == "energy"].set_index("variant")
    assert set(energy.index) == set(samples)  # every verified member, paired or not
    if not math.isnan(energy.power_mean_w.iloc[0]):  # NVML's power samples, where the driver keeps them
        shown = energy[["t_s", "power_samples", "power_mean_w"]]  # about 6 samples in 0.13 s after settling
        assert (energy.power_mean_w > 30).all() and (energy.power_samples >= 3).all(), shown


def test_a_member_too_slow_to_pair_is_left_out_with_the_reason(movers):
    samples = {"transpose_copy": _samples(0.02), "transpose_tile64": _samples(55.0), "transpose_naive": _samples(0.1)}
    df = paired.run(_plan(), FAST, 20261122, 1 << 27, samples, movers, progress=False)
    row = df[(df.phase == "check") & (df.variant == "transpose_tile64")].iloc[0]
    assert row.status == "skipped" and "max_launch_ms" in row.reason
    assert races.square("copy", N) == (N, N, 1)
