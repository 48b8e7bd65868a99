"""The catalog's bf16_stream_tma_pdl_k4s5e built with next.patch's NEXT_L2 / NEXT_AT (results/carry/build)."""
from pathlib import Path

from gpumm.build import nvcc
from gpumm.setup import catalog

OUT = Path("results/carry/build")
CANDS = {
    "n4": {"NEXT_L2": 4}, "n8": {"NEXT_L2": 8}, "n12": {"NEXT_L2": 12},
    "n4a2": {"NEXT_L2": 4, "NEXT_AT": 2}, "n8a2": {"NEXT_L2": 8, "NEXT_AT": 2}, "n8a4": {"NEXT_L2": 8, "NEXT_AT": 4},
}
base = catalog.from_id("bf16_stream_tma_pdl_k4s5e")
for vid in ("bf16_stream_tma_pdl_k4s5e", "bf16_stream_tma_pdl_k4s5el4"):
    v = catalog.from_id(vid)
    nvcc.build(v, v.arch, OUT / vid)
for tag, over in CANDS.items():
    d = dict(base.defines) | {"NEXT_AT": -1} | over
    flags = (*base.nvcc_flags, *(f"-D{k}={v}" for k, v in d.items()))
    out = OUT / f"{base.id}@{tag}"
    nvcc.compile_source(base.source, base.arch, out, flags, tag)
    for f in out.glob("*.tmp"):
        f.rename(f.with_suffix(""))
    print(tag, d)
