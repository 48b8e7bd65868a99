"""The catalog's bf16_stream_tma_pdl_k4s5e and _k4s5el4 built with flag.patch's PDL_FLAG (results/carry/build)."""
from pathlib import Path

from gpumm.build import nvcc
from gpumm.setup import catalog

OUT = Path("results/carry/build")
for vid, cands in {
    "bf16_stream_tma_pdl_k4s5e": {"flag": {"PDL_FLAG": 1, "PDL_FLAG_NS": 0}, "flag64": {"PDL_FLAG": 1, "PDL_FLAG_NS": 64}},
    "bf16_stream_tma_pdl_k4s5el4": {"flag": {"PDL_FLAG": 1, "PDL_FLAG_NS": 0}, "flag64": {"PDL_FLAG": 1, "PDL_FLAG_NS": 64}},
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
