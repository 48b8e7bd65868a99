"""Issue 40: the model step's plan, by hand (no GPU): who takes a shape, how many cold copies, how many launches."""

import pytest

from gpumm.run import layers
from gpumm.setup import catalog


def test_a_builds_max_m_comes_from_its_defines():
    assert layers.max_m(catalog.from_id("bf16_stream_max_m8")) == 8
    assert layers.max_m(catalog.from_id("bf16_stream_mma_m64")) == 64
    assert layers.max_m(catalog.from_id("bf16_pingpong")) is None


def test_a_member_takes_at_most_its_max_m_tokens():
    m = layers.Member("s", None, 8)
    assert layers.takes(m, 8, 4096) == "" and layers.takes(m, 9, 4096) == "M = 9 > MAX_M = 8"
    assert layers.takes(layers.Member("any"), 8192, 4096) == ""


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
