"""Where does a launch of the TMA weight stream spend its time? (issue 40, exploration)

``build`` writes results/trace/trace.cu, kernels/matmul_bf16/stream_tma.cu's kernel with ``%globaltimer`` stamps in
each block (its start; the block-wide sync after the barriers' set-up; the producer's loop reached; its first stage
asked for; its first stages asked for; its wait for the launch before done; its last stage asked for; the consumers'
first and last stage in; their wait done before C; the end; in the build ``probe``, stage 0's weight in), and
compiles it four ways into results/carry/trace/BUILD/kernel.cubin: ``pdl`` (bf16_stream_tma_pdl_k4s5e's defines),
``plain`` (PDL 0), ``pdll4`` (PDL_L2 4), ``probe`` (``pdl`` with stage 0's weight on a barrier of its own). The
stamps go in at lines of stream_tma.cu named in EDITS: an edit of the kernel that moves them makes ``build`` say
which, rather than trace something else.

``run`` (on the GPU) times nothing: for each layer (at --tokens tokens), each build passes the exact and rounding
checks first (the BF16 operation's `checked`: fresh inputs, output poisoned), then a CUDA graph of --launches
back-to-back launches over cold copies of the weight (over three times the L2) runs twice, and the stamps of the
second are written, one row a block: OUT/trace.csv (layer, build, launch, block, sm, the stamps in ns from the
graph's first block start).

    python tools/model/trace.py build
    python tools/model/trace.py run OUT [--layers qkv,out,down] [--builds pdl,plain,pdll4] [--launches 20]

data/checks/model-decode-boundary-h200 ran the hand-made copy of this edit that 1c50ae14 kept as
tools/model/trace.cu.
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
from gpumm.run import operations, verify  # noqa: E402
from gpumm.run.launch import Launcher  # noqa: E402
from gpumm.setup import catalog  # noqa: E402

STAMPS = [
    "start",
    "synced",
    "one_asked",
    "asked",
    "waited",
    "last_asked",
    "first_in",
    "last_in",
    "c_wait",
    "end",
    "w0_in",
    "loop",
]
N = len(STAMPS)


def stamp(name: str) -> str:
    """The line that stamps ``name``: its place in STAMPS, the column it is read back into."""
    return f"st[{STAMPS.index(name)}] = now();"


KERNEL = ROOT / "kernels" / "matmul_bf16" / "stream_tma.cu"
BASE = "bf16_stream_tma_pdl_k4s5e"  # the catalog entry whose defines the builds start from, and whose launch they take
GLOBALS = f"""
__device__ unsigned long long trace_rec[16384][{N + 1}];  // a block's id and SM, then its {N} stamps (ns)
__device__ unsigned trace_n;
#if TRACE_PROBE && PDL  // build `probe`: stage 0's weight on a barrier of its own, so that its arrival is stamped
#define PROBE ((uint32_t)__cvta_generic_to_shared(&probe_bar))
#endif

__device__ __forceinline__ unsigned long long now()
{{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}}
"""
RECORD = f"""    asm volatile("bar.sync 1, 128;" ::: "memory");  // every consumer has stored
    if (tid == 0) {{
        {stamp("end")}
        unsigned sm_id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm_id));
        const unsigned i = atomicAdd(&trace_n, 1u) % 16384;
        trace_rec[i][0] = ((unsigned long long)sm_id << 32) | blockIdx.x;
        for (int j = 0; j < {N}; ++j) {{
            trace_rec[i][1 + j] = st[j];
        }}
    }}
"""
# (a line of stream_tma.cu, what goes before it, what goes after it): each line must be there exactly once
EDITS = [
    ('#include "stream_tma.cuh"\n', "", GLOBALS),
    (
        "    extern __shared__ uint8_t smem_raw[];\n",
        "",
        f"    __shared__ volatile unsigned long long st[{N}];\n"
        "#if TRACE_PROBE && PDL\n    __shared__ alignas(8) uint64_t probe_bar;\n#endif\n"
        "    if (threadIdx.x == 0) {\n"
        f"        for (int j = 1; j < {N}; ++j) {{\n"
        "            st[j] = 0;  // a stamp a build never reaches stays 0\n        }\n"
        f"        {stamp('start')}\n    }}\n",
    ),
    (
        "    __syncthreads();\n",
        "#if TRACE_PROBE && PDL\n    if (threadIdx.x == 0) {\n"
        "        mbar_init(PROBE, 1);\n        mbar_init_fence();\n    }\n#endif\n",
        f"    if (threadIdx.x == 128) {{\n        {stamp('synced')}\n    }}\n",
    ),
    (
        "            first = nk < STAGES ? nk : STAGES;  // fresh stages: no wait for a consumer\n",
        "",
        f"            {stamp('loop')}\n",
    ),
    (
        "                load_weight(sm, s, sm.full + 8 * s, &tmW, s * KS, n0, policy);\n",
        "",
        f"                if (s == 0) {{\n                    {stamp('one_asked')}\n                }}\n",
    ),
    (
        "            pdl_wait();  // the tokens are the kernel before's output\n",
        f"            {stamp('asked')}\n",
        f"            {stamp('waited')}\n",
    ),
    ("        return;\n", f"        if (tid == 128) {{\n            {stamp('last_asked')}\n        }}\n", ""),
    (
        "    float d[8];\n",
        "#if TRACE_PROBE && PDL\n    mbar_wait(PROBE, 0);  // stage 0's weight in\n"
        f"    if (tid == 0) {{\n        {stamp('w0_in')}\n    }}\n#endif\n",
        "",
    ),
    (
        "    consume(ring, prev, sm.full, nk, [&](int s, int kt) { mma_stage(d, sm, s, kt == 0); }, release);\n",
        "",
        f"    if (tid == 0) {{\n        {stamp('last_in')}\n    }}\n",
    ),
    ("    store_rows(d, C, M, N, n0, tid);\n", f"    if (tid == 0) {{\n        {stamp('c_wait')}\n    }}\n", RECORD),
]
PROBE_LOAD = (  # build `probe`: stage 0's weight completes on PROBE, its full barrier waits for the tokens alone
    "                mbar_expect_tx(sm.full + 8 * s, Smem::TX);\n"
    "                load_weight(sm, s, sm.full + 8 * s, &tmW, s * KS, n0, policy);\n",
    "#if TRACE_PROBE && PDL\n                if (s == 0) {\n"
    "                    mbar_expect_tx(sm.full, Smem::TX - ROWS * KSUB * 128);\n"
    "                    mbar_expect_tx(PROBE, ROWS * KSUB * 128);\n"
    "                    load_weight(sm, 0, PROBE, &tmW, 0, n0, policy);\n"
    "                } else\n#endif\n                {\n"
    "                    mbar_expect_tx(sm.full + 8 * s, Smem::TX);\n"
    "                    load_weight(sm, s, sm.full + 8 * s, &tmW, s * KS, n0, policy);\n                }\n",
)
FIRST_IN = (  # the consumers' first stage in: inside the loop's lambda
    "[&](int s, int kt) { mma_stage(d, sm, s, kt == 0); }",
    f"[&](int s, int kt) {{\n        if (tid == 0 && kt == 0) {{\n            {stamp('first_in')}\n        }}\n"
    "        mma_stage(d, sm, s, kt == 0);\n    }",
)
BUILDS = {
    "pdl": {"PDL": 1, "PDL_L2": 0},
    "plain": {"PDL": 0, "PDL_L2": 0},
    "pdll4": {"PDL": 1, "PDL_L2": 4},
    "probe": {"PDL": 1, "PDL_L2": 0, "TRACE_PROBE": 1},
}


class TraceError(RuntimeError):
    pass


def traced(src: str) -> str:
    """stream_tma.cu's text with the stamps put in; TraceError naming the first line of EDITS it lacks."""
    for line, before, after in EDITS:
        if src.count(line) != 1:
            raise TraceError(f"{KERNEL.name} has {src.count(line)} lines {line.strip()!r}, not one: update EDITS")
        src = src.replace(line, before + line + after)
    for name, (old, new) in (("FIRST_IN", FIRST_IN), ("PROBE_LOAD", PROBE_LOAD)):
        if src.count(old) != 1:
            raise TraceError(f"{KERNEL.name} no longer has {old.strip()!r} once: update {name}")
        src = src.replace(old, new)
    return src


def build() -> None:
    """results/trace/trace.cu, then its builds (BUILDS) (nvcc on this machine) into results/carry/trace."""
    from gpumm.build import nvcc
    from gpumm.setup import catalog

    src = ROOT / "results" / "trace" / "trace.cu"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(traced(KERNEL.read_text()))
    base = dict(catalog.from_id(BASE).defines)
    for name, over in BUILDS.items():
        out = ROOT / "results" / "carry" / "trace" / name
        flags = (f"-I{KERNEL.parent}", *(f"-D{k}={v}" for k, v in {**base, **over}.items()))
        nvcc.compile_into(src, "sm_90a", out, flags, f"trace {name}")
        print(f"built {out / 'kernel.cubin'}")


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("build")
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--layers", default="qkv,out,down")
    r.add_argument("--builds", default="pdl,plain,pdll4")
    r.add_argument("--launches", type=int, default=20)
    r.add_argument("--tokens", type=int, default=16)
    args = p.parse_args()
    if args.command == "build":
        try:
            build()
        except TraceError as exc:
            sys.exit(f"trace: {exc}")
    else:
        run(args)


def run(args) -> None:
    import cupy

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
        for build in args.builds.split(","):
            cubin = ROOT / "results" / "carry" / "trace" / build / "kernel.cubin"
            kernel = Launcher(catalog.from_id(BASE), cubin)  # PDL where the build says
            why = operations.get("matmul_bf16").checked(kernel.bind, m, n, k, cupy)  # both checks, output poisoned
            print(f"{layer} {build}: {'checked' if not why else 'FAILED: ' + why}", flush=True)
            if why:
                continue
            count = cupy.ndarray((1,), cupy.uint32, kernel.module.get_global("trace_n"))
            recs = cupy.ndarray((16384, N + 1), cupy.uint64, kernel.module.get_global("trace_rec"))
            C = cupy.empty((m, n), dtype=cupy.float32)
            launches = [kernel.bind(A, Wc, C) for Wc in copies]
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
