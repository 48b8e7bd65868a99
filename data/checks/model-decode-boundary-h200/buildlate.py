import sys
from pathlib import Path
from gpumm.setup import catalog
from gpumm.build import nvcc
OUT = Path("results/carry/build")
base = catalog.from_id("bf16_stream_tma_pdl_k4s5e")
cands = {
    "late1": {"PDL_LATE": 1}, "late2": {"PDL_LATE": 2}, "late4": {"PDL_LATE": 4}, "late8": {"PDL_LATE": 8},
    "late16": {"PDL_LATE": 16}, "late2l4": {"PDL_LATE": 2, "PDL_L2": 4}, "late4l4": {"PDL_LATE": 4, "PDL_L2": 4},
    "late4l8": {"PDL_LATE": 4, "PDL_L2": 8}, "late8l8": {"PDL_LATE": 8, "PDL_L2": 8},
    "late4s4": {"PDL_LATE": 4, "STAGES": 4},
}
for tag, over in cands.items():
    d = dict(base.defines); d.update(over)
    flags = (*base.nvcc_flags, *(f"-D{k}={v}" for k, v in d.items()))
    out = OUT / f"{base.id}@{tag}"
    nvcc.compile_source(base.source, base.arch, out, flags, tag)
    for f in out.glob("*.tmp"):
        f.rename(f.with_suffix(""))
    print(tag, d)
for vid in ("bf16_stream_tma_pdl_k4s5e", "bf16_stream_tma_pdl_k4s5el4", "bf16_stream_tma_pdl_k4s4e"):
    v = catalog.from_id(vid)
    nvcc.build(v, v.arch, OUT / vid)
    print(vid)
