import sys
from pathlib import Path
from gpumm.setup import catalog
from gpumm.build import nvcc
OUT = Path("results/carry/build")
base = catalog.from_id("bf16_stream_tma_pdl_k4s5e")
cands = {
    "early": {"EARLY": 1}, "earlyl4": {"EARLY": 1, "PDL_L2": 4},
    "p2s1000": {"PDL_PACE": 2, "PDL_SLEEP": 1000}, "p2s2000": {"PDL_PACE": 2, "PDL_SLEEP": 2000},
    "p1s1500": {"PDL_PACE": 1, "PDL_SLEEP": 1500}, "p3s1000": {"PDL_PACE": 3, "PDL_SLEEP": 1000},
    "p2s1000l4": {"PDL_PACE": 2, "PDL_SLEEP": 1000, "PDL_L2": 4}, "p3s2000": {"PDL_PACE": 3, "PDL_SLEEP": 2000},
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
