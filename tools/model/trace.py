"""Where does a launch of the TMA weight stream spend its time? (issue 40, exploration)

tools/model/trace.cu is stream_tma.cu's kernel with globaltimer stamps per block (start; the producer's first
stages asked for; its wait for the launch before done; its last stage asked for; the consumers' first and last
stage in; their wait done before C; the end). This times nothing: for each layer (at 16 tokens), each build
(CUBIN directories under results/carry/trace) is verified against float64 (output poisoned), then a CUDA graph of
LAUNCHES back-to-back launches over cold copies of the weight (over three times the L2) runs twice, and the
stamps of the second are written, one row a block: OUT/trace.csv (layer, build, launch, block, sm, the stamps in
ns from the graph's first block start).

    python tools/model/trace.py OUT [--layers qkv,out,down] [--builds pdl,plain,pdll4] [--launches 20] [--tokens 16]

The builds are made on a machine with nvcc (data/checks/model-decode-boundary-h200 used these three):

    from gpumm.build import nvcc
    nvcc.compile_source(Path("tools/model/trace.cu"), "sm_90a", Path("results/carry/trace/pdl"),
                        ("-Ikernels/matmul_bf16", "-DMAX_M=16", "-DSTAGES=5", "-DKSUB=4", "-DPDL=1",
                         "-DPDL_L2=0", "-DPDL_LATE=0"), "pdl")   # then rename kernel.*.tmp to kernel.*
    (plain: -DPDL=0; pdll4: -DPDL_L2=4)
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.analyse import model  # noqa: E402
from gpumm.run import hopper, verify  # noqa: E402

STAMPS = ["start", "asked", "waited", "last_asked", "first_in", "last_in", "c_wait", "end"]


def launch_of(fn, geom: dict, pdl: bool, grid: tuple, block: tuple, product: tuple):
    """A launch of the trace build ``fn`` for C = A·Wᵀ (``product``: A, W, C, m, n, k), with PDL where built so."""
    a = hopper.arguments(geom, *product)
    if pdl:
        return hopper.launch_pdl(fn, grid, block, geom["smem"], a)
    return lambda: fn(grid, block, a, shared_mem=geom["smem"])


def main() -> None:
    import cupy

    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", default="qkv,out,down")
    p.add_argument("--builds", default="pdl,plain,pdll4")
    p.add_argument("--launches", type=int, default=20)
    p.add_argument("--tokens", type=int, default=16)
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["model"]
    shapes = model.shapes({**cfg, "tokens": [args.tokens]}).set_index("layer")
    l2 = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrL2CacheSize, 0)
    rows = []
    for layer in args.layers.split(","):
        m, n, k = (int(shapes.loc[layer, c]) for c in ("M", "N", "K"))
        A = verify.bf16_random_inputs(11, m, 8, k, cupy)[0]
        W = verify.bf16_random_inputs(13, 8, n, k, cupy)[1]
        copies = [W] + [W.copy() for _ in range(max(1, math.ceil(3 * l2 / W.nbytes)))]
        want = verify.bf16_values(A, cupy).astype(cupy.float64) @ verify.bf16_values(W, cupy).astype(cupy.float64).T
        for build in args.builds.split(","):
            cubin = ROOT / "results" / "carry" / "trace" / build / "kernel.cubin"
            mod = cupy.RawModule(path=str(cubin))
            fn = mod.get_function("bf16_stream_tma")
            geom, pdl = hopper.geometry(cubin), hopper.pdl(cubin)
            hopper.prepare(fn, geom)
            count = cupy.ndarray((1,), cupy.uint32, mod.get_global("trace_n"))
            recs = cupy.ndarray((16384, 9), cupy.uint64, mod.get_global("trace_rec"))
            grid, block = (math.ceil(n / 64), 1), (geom["threads"], 1)
            C = cupy.full((m, n), cupy.nan, dtype=cupy.float32)

            launches = [launch_of(fn, geom, pdl, grid, block, (A, Wc, C, m, n, k)) for Wc in copies]
            launches[0]()
            cupy.cuda.Device().synchronize()
            err = float(cupy.max(cupy.abs(C.astype(cupy.float64) - want) / (cupy.abs(want) + 1.0)))
            ok = bool(cupy.all(cupy.isfinite(C))) and err < 2e-2
            print(f"{layer} {build}: checked, worst relative error {err:.2e} {'ok' if ok else 'FAILED'}", flush=True)
            if not ok:
                continue
            stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                for i in range(args.launches):
                    launches[i % len(launches)]()
                graph = stream.end_capture()
                for _ in range(2):
                    count.fill(0)  # on the null stream: synchronize first
                    stream.synchronize()
                    cupy.cuda.Device().synchronize()
                    graph.launch(stream)
                    stream.synchronize()
            got = int(count[0].get())
            rec = recs[: min(got, 16384)].get()
            df = pd.DataFrame(rec[:, 1:].astype(np.int64), columns=STAMPS)
            df["block"] = (rec[:, 0] & 0xFFFFFFFF).astype(np.int64)
            df["sm"] = (rec[:, 0] >> 32).astype(np.int64)
            df = df.sort_values("start")
            df["launch"] = df.groupby("block").cumcount()  # block b's i-th record belongs to launch i
            t0 = df["start"].min()
            for c in STAMPS:
                df[c] = np.where(df[c] > 0, df[c] - t0, -1)
            df = df.assign(layer=layer, build=build, M=m, N=n, K=k)
            rows.append(df)
            per = df.groupby("launch").agg(first=("start", "min"), last_end=("end", "max"))
            span = (per.last_end.iloc[-1] - per["first"].iloc[1]) / (len(per) - 1) / 1e3
            print(f"{layer} {build}: {got} blocks recorded, about {span:.2f} us a launch", flush=True)
    pd.concat(rows).to_csv(out / "trace.csv", index=False)


if __name__ == "__main__":
    main()
