import sys
from pathlib import Path
from gpumm.setup import catalog
from gpumm.build import nvcc
OUT = Path("results/carry/build")
base = catalog.from_id("bf16_stream_tma_pdl_k4s5e")
cands = {
    "post2": {"PDL_POST": 2}, "post4": {"PDL_POST": 4}, "post8": {"PDL_POST": 8},
    "l4post4": {"PDL_L2": 4, "PDL_POST": 4},
    "k2s5": {"KSUB": 2, "STAGES": 5}, "k2s5post4": {"KSUB": 2, "STAGES": 5, "PDL_POST": 4},
    "k2s5post8": {"KSUB": 2, "STAGES": 5, "PDL_POST": 8},
    "k2s4": {"KSUB": 2, "STAGES": 4}, "k4s2": {"KSUB": 4, "STAGES": 2}, "k2s3": {"KSUB": 2, "STAGES": 3},
    "k2s10": {"KSUB": 2, "STAGES": 10}, "k2s10post8": {"KSUB": 2, "STAGES": 10, "PDL_POST": 8},
}
for tag, over in cands.items():
    d = dict(base.defines); d.update(over)
    flags = (*base.nvcc_flags, *(f"-D{k}={v}" for k, v in d.items()))
    out = OUT / f"{base.id}@{tag}"
    nvcc.compile_source(base.source, base.arch, out, flags, tag)
    for f in out.glob("*.tmp"):
        f.rename(f.with_suffix(""))
    print(tag, d)
for vid in ("bf16_stream_tma_pdl_k4s5e", "bf16_stream_tma_pdl_k4s5el4", "bf16_stream_tma_pdl_k4s4e", "bf16_stream_rows2_max_m1"):
    v = catalog.from_id(vid)
    nvcc.build(v, v.arch, OUT / vid)
    print(vid)
