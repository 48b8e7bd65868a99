"""Issue 40: the model step's plan, by hand (no GPU): who takes a shape, how many cold copies, how many launches."""

from types import SimpleNamespace

import pytest

from gpumm.run import layers, rule
from gpumm.setup import catalog


def test_a_builds_max_m_comes_from_its_defines():
    assert layers.max_m(catalog.from_id("bf16_stream_max_m8")) == 8
    assert layers.max_m(catalog.from_id("bf16_stream_mma_m64")) == 64
    assert layers.max_m(catalog.from_id("bf16_pingpong")) is None


def test_a_member_takes_at_most_its_max_m_tokens():
    m = layers.Member("s", None, 8)
    assert layers.takes(m, 8, 4096) == "" and layers.takes(m, 9, 4096) == "M = 9 > MAX_M = 8"
    assert layers.takes(layers.Member("any"), 8192, 4096) == ""


def test_a_tma_member_refuses_a_k_its_tensor_maps_cannot_read():
    """takes() asks the launcher's geometry (a TMA kernel's rows are read at a pitch of 16 bytes)."""
    tma = layers.Member("t", SimpleNamespace(geometry={"tma": 1}))
    assert layers.takes(tma, 16, 4096) == ""
    assert "K = 4095 is not a multiple of 8" in layers.takes(tma, 16, 4095)
    assert layers.takes(layers.Member("p", SimpleNamespace(geometry={"tma": 0})), 16, 4095) == ""


@pytest.mark.parametrize(
    "weight, l2, copies",
    [(32 << 20, 50 << 20, 5), (1 << 30, 50 << 20, 2), (48 << 20, 60 << 20, 4), (50 << 20, 50 << 20, 3)],
)
def test_cold_copies_hold_three_times_the_l2_and_are_never_fewer_than_two(weight, l2, copies):
    assert layers.copies_for(weight, l2, 3.0) == copies
    assert copies * weight >= 3 * l2


def test_a_sample_is_long_enough_passes_every_copy_and_is_capped():
    assert layers.batch_for(0.01, 5, 2.0, 200) == 200  # 10 µs: capped
    assert layers.batch_for(0.1, 5, 2.0, 200) == 20
    assert layers.batch_for(13.0, 2, 2.0, 200) == 2  # a 13 ms launch: one pass over the copies
    assert layers.batch_for(0.0, 3, 2.0, 50) == 50


def test_the_fp32_steps_shapes_are_the_fit_ones_then_the_held_out_ones_and_the_layers():
    model = {
        "tokens": [1, 1024],
        "name": "tiny",
        "models": {"tiny": {"source": "by hand", "layers": {"a": {"n": 64, "k": 32, "count": 2}}}},
        "fp32": {"fit": [[8, 8, 8], [16, 4, 16]], "held_out": [[3, 5, 7], [8, 8, 8]], "tokens": [2]},
    }
    fit = layers.fp32_shapes(model, held_out=False)
    assert [(s["layer"], s["M"], s["N"], s["K"]) for s in fit] == [("fit", 8, 8, 8), ("fit", 16, 4, 16)]
    held = layers.fp32_shapes(model, held_out=True)
    # a held-out shape that is also a fit shape is not held out: left out; then the layers at fp32.tokens only
    assert [(s["layer"], s["M"], s["N"], s["K"]) for s in held] == [("held-out", 3, 5, 7), ("a", 2, 64, 32)]
    assert layers.fp32_shapes({**model, "fp32": {**model["fp32"], "tokens": []}}, held_out=True)[-1]["M"] == 3


def test_the_fp32_builds_of_the_model_steps_are_the_fp32_families_and_sgemm():
    from gpumm.setup import config

    cfg = {"tune": True, "model": {"enabled": True, "kernels": ["bf16_stream"], "reference": "cublas_bf16"}}
    cfg["model"]["fp32"] = {"kernels": ["splitk", "streamk"], "reference": "cublas"}
    ids = [v.id for v in config.model_builds(cfg, fp32=True)]
    assert ids == ["splitk_b32x32", "splitk_b32x48", "splitk_b32x48c2", "streamk", "cublas"]
    assert [v.id for v in config.model_builds(cfg, fp32=False)] == [
        "bf16_stream_max_m1",
        "bf16_stream_max_m8",
        "cublas_bf16",
    ]
    assert config.model_builds({**cfg, "model": {**cfg["model"], "enabled": False}}, fp32=True) == []


def test_a_builds_tile_of_c_comes_from_its_defines():
    assert rule.tile_of(catalog.from_id("splitk_b32x48c2")) == [32, 48]
    assert rule.tile_of(catalog.from_id("prefetch_tile16")) == [16, 16]
    assert rule.tile_of(catalog.from_id("streamk")) == [256, 128]
    assert rule.tile_of(catalog.from_id("cublas")) is None


def test_the_model_step_times_the_fewest_tokens_first(monkeypatch, tmp_path):
    """Every layer at one token, then at 8, then at 1024: the decode shapes before the prefill ones heat the card
    (the configuration lists shapes layer by layer)."""
    from argparse import Namespace

    import pandas as pd

    from gpumm.run import commands, launch

    seen = []

    def fake_run(plan, settings, seed, log=print):
        seen.extend((s["layer"], s["M"]) for s in plan["shapes"])
        return pd.DataFrame(columns=layers.SAMPLE_COLUMNS), pd.DataFrame(columns=layers.CHECK_COLUMNS), pd.DataFrame()

    monkeypatch.setattr(layers, "run", fake_run)
    monkeypatch.setattr(launch, "sm_count", lambda: 132)
    monkeypatch.setattr(commands, "_step_meta", lambda *a, **k: None)
    tiny = {"a": {"n": 64, "k": 32, "count": 2}, "b": {"n": 128, "k": 32, "count": 1}}
    model = {"tokens": [1, 1024], "held_out": [8], "name": "tiny", "models": {"tiny": {"source": "", "layers": tiny}}}
    args = Namespace(model=model, tokens="all", kernels="cublas_bf16", timed="", rule=None, read_cubin=None)
    commands.cmd_layers(Namespace(**vars(args), fp32=False, seed=0, out_dir=str(tmp_path)))
    assert seen == [("a", 1), ("b", 1), ("a", 8), ("b", 8), ("a", 1024), ("b", 1024)]


class _Clock:
    """time.perf_counter for heat(): each reading 10 ms after the one before."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 0.01
        return self.t


def test_heat_runs_rounds_of_every_member_in_turn_until_its_seconds_are_spent_and_none_for_zero(monkeypatch):
    import types

    synced = []
    stream = types.SimpleNamespace(synchronize=lambda: synced.append(1))
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(get_current_stream=lambda: stream))
    ran = []
    runs = [lambda m=m: ran.append(m) for m in ("a", "b")]
    monkeypatch.setattr(layers.time, "perf_counter", _Clock())
    assert layers.heat(cupy, runs, 0.0) == {"heat_s": 0.0, "heat_rounds": 0, "heat_end": ""} and ran == []
    got = layers.heat(cupy, runs, 0.05)
    assert got["heat_rounds"] == len(synced) >= 3 and got["heat_s"] >= 0.05 and got["heat_end"] == "time"
    assert ran[:4] == ["a", "b", "b", "a"] and len(ran) == 2 * got["heat_rounds"]  # the order reversed in turn


def _heat(monkeypatch, answers, seconds=0.05, most_s=0.2):
    """heat() on two members with a cap that gives ``answers`` in turn (then the last for ever): (its result, how
    many rounds ran, how many times the cap was asked)."""
    import types

    stream = types.SimpleNamespace(synchronize=lambda: None)
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(get_current_stream=lambda: stream))
    ran, asked = [], []

    def cap():
        asked.append(1)
        return answers[min(len(asked), len(answers)) - 1]

    monkeypatch.setattr(layers.time, "perf_counter", _Clock())
    got = layers.heat(cupy, [lambda: ran.append(1)], seconds, most_s, cap)
    return got, len(ran), len(asked)


def test_heat_goes_on_past_its_seconds_while_the_card_is_near_its_cap_and_not_held_until_it_is(monkeypatch):
    """The cap is asked only once the seconds are spent, after every round from then on; the heat ends the first
    time it answers "cap"."""
    plain, rounds, _ = _heat(monkeypatch, ["cap"])
    assert plain["heat_end"] == "cap" and plain["heat_s"] < 0.1
    got, more, asked = _heat(monkeypatch, ["", "", "", "cap"])
    assert got["heat_end"] == "cap" and asked == 4 and more == rounds + 3 and got["heat_rounds"] == more


def test_heat_stops_at_its_seconds_where_the_board_is_well_below_its_cap(monkeypatch):
    got, rounds, asked = _heat(monkeypatch, ["below"])
    assert got["heat_end"] == "below" and asked == 1 and 0.05 <= got["heat_s"] < 0.1


def test_heat_near_the_cap_and_never_held_stops_at_its_most_seconds(monkeypatch):
    got, rounds, asked = _heat(monkeypatch, [""])
    assert got["heat_end"] == "limit" and 0.2 <= got["heat_s"] < 0.25 and rounds > asked > 5  # asked every round


def test_heat_of_no_seconds_never_asks_the_cap_and_a_most_below_the_seconds_is_the_seconds(monkeypatch):
    got, rounds, asked = _heat(monkeypatch, ["cap"], seconds=0.0)
    assert got == {"heat_s": 0.0, "heat_rounds": 0, "heat_end": ""} and asked == 0 and rounds == 0
    got, rounds, asked = _heat(monkeypatch, [""], seconds=0.05, most_s=0.0)
    assert got["heat_end"] == "limit" and asked == 1 and 0.05 <= got["heat_s"] < 0.1
