from pathlib import Path
from gpumm.setup import catalog
from gpumm.build import nvcc
OUT = Path("results/carry/build")
sets = {
    "bf16_stream_rows2_max_m1": {"pdl": {"PDL": 1}, "h1": {"PDL": 1, "HOLD": 1}, "h2": {"PDL": 1, "HOLD": 2},
                                 "h4": {"PDL": 1, "HOLD": 4}, "h8": {"PDL": 1, "HOLD": 8},
                                 "w4h4": {"PDL": 1, "HOLD": 4, "WARPS": 4}, "r4h2": {"PDL": 1, "HOLD": 2, "ROWS": 4}},
    "bf16_stream_max_m1": {"h2": {"PDL": 1, "HOLD": 2}, "h8": {"PDL": 1, "HOLD": 8}},
}
for vid, cands in sets.items():
    base = catalog.from_id(vid)
    for tag, over in cands.items():
        d = dict(base.defines); d.update(over)
        flags = (*base.nvcc_flags, *(f"-D{k}={v}" for k, v in d.items()))
        out = OUT / f"{vid}@{tag}"
        nvcc.compile_source(base.source, "sm_90", out, flags, tag)
        for f in out.glob("*.tmp"):
            f.rename(f.with_suffix(""))
        print(out.name, (out / "ptxas.log").read_text().split("Used")[1].split(",")[0])
for vid in ("bf16_stream_rows2_max_m1", "bf16_stream_max_m1", "bf16_stream_tma_pdl_k4s5e", "bf16_stream_tma_pdl_k4s5el4"):
    v = catalog.from_id(vid)
    nvcc.build(v, v.arch or "sm_90", OUT / vid)
