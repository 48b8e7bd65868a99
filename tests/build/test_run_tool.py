"""tools/model/run.py, the decode explorations' timer: what it reads of a build before it launches it."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("run_tool", ROOT / "tools" / "model" / "run.py")
run_tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_tool)

SIGNATURE = """
.visible .entry other(
	.param .u64 other_param_0
)
.visible .entry bf16_stream_tma(
	.param .align 128 .b8 bf16_stream_tma_param_0[128],
	.param .align 128 .b8 bf16_stream_tma_param_1[128],{next}
	.param .u64 bf16_stream_tma_param_2,
	.param .u32 bf16_stream_tma_param_3
)
.maxntid 160, 1, 1
{{
	.local .align 16 .b8 __local_depot0[128];
}}
"""


def test_a_next_build_is_told_from_a_plain_one_by_its_tensor_maps():
    """The catalog's build takes two maps; a NEXT_L2 build a third (the next launch's weight); a 128-byte array in
    the kernel's body or another entry's parameters are not counted."""
    plain = SIGNATURE.format(next="")
    chained = SIGNATURE.format(next="\n\t.param .align 128 .b8 bf16_stream_tma_param_9[128],")
    assert run_tool.tensor_maps(plain, "bf16_stream_tma") == 2
    assert run_tool.tensor_maps(chained, "bf16_stream_tma") == 3
    with pytest.raises(ValueError, match="no entry bf16_stream"):
        run_tool.tensor_maps(plain, "bf16_stream")
