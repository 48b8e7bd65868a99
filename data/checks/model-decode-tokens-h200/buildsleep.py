"""The catalog's bf16_stream_tma_pdl_k4s5e / _k4s5el4 built with sleep.patch (results/carry/build)."""
from pathlib import Path

from gpumm.build import nvcc
from gpumm.setup import catalog

OUT = Path("results/carry/build")
CANDS = {"s500": {"PDL_SLEEP0": 500}, "s1000": {"PDL_SLEEP0": 1000}, "s1500": {"PDL_SLEEP0": 1500}}
for vid in ("bf16_stream_tma_pdl_k4s5e", "bf16_stream_tma_pdl_k4s5el4"):
    base = catalog.from_id(vid)
    nvcc.build(base, base.arch, OUT / vid)
    for tag, over in CANDS.items():
        d = dict(base.defines) | over
        flags = (*base.nvcc_flags, *(f"-D{k}={v}" for k, v in d.items()))
        out = OUT / f"{vid}@{tag}"
        nvcc.compile_source(base.source, base.arch, out, flags, tag)
        for f in out.glob("*.tmp"):
            f.rename(f.with_suffix(""))
        print(vid, tag, d)
