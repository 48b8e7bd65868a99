"""The catalog's bf16_stream_tma_pdl_k4s5e built with the diagnostic PDL_NOWAIT of nowait.patch (results/carry/build)."""
from pathlib import Path

from gpumm.build import nvcc
from gpumm.setup import catalog

OUT = Path("results/carry/build")
for vid, cands in {
    "bf16_stream_tma_pdl_k4s5e": {"nowait": {"PDL_NOWAIT": 1}, "nowait2": {"PDL_NOWAIT": 2}},
    "bf16_stream_tma_pdl_k4s5el4": {"nowait": {"PDL_NOWAIT": 1}},
}.items():
    base = catalog.from_id(vid)
    nvcc.build(base, base.arch, OUT / vid)
    for tag, over in cands.items():
        d = dict(base.defines) | over
        flags = (*base.nvcc_flags, *(f"-D{k}={v}" for k, v in d.items()))
        out = OUT / f"{vid}@{tag}"
        nvcc.compile_source(base.source, base.arch, out, flags, tag)
        for f in out.glob("*.tmp"):
            f.rename(f.with_suffix(""))
        print(vid, tag, d)
