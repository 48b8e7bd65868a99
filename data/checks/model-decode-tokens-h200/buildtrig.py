"""The catalog's bf16_stream_tma_pdl_k4s5e / _k4s5el4 built with trig.patch (results/carry/build)."""
from pathlib import Path

from gpumm.build import nvcc
from gpumm.setup import catalog

OUT = Path("results/carry/build")
CANDS = {"t1": {"PDL_TRIG": 1}, "t2": {"PDL_TRIG": 2}}
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
