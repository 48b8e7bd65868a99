"""The decode end of a real model's layers on one GPU (issue 40, step 2 exploration): weight-streaming candidates
against cuBLAS BF16 at M = 1 to 64 tokens, every layer of the configuration's model, weights cold and warm, each
held to the DRAM bound of its shape (gpumm.analyse.model). The candidates: a warp per ROWS rows (tools/model/
stream.cu, CUBIN), and the catalog's kernel files built here with other defines (nvcc, on this machine): split-K
inside a block (kernels/matmul_bf16/stream.cu), the tensor cores (stream_mma.cu); and catalog builds as they are,
from results/build.

    python tools/model/run.py CUBIN OUT_DIR [--tokens 1,16] [--candidates FILE] [--layers qkv,out]

FILE (YAML): token count -> a list of [name, kind, defines], in place of CANDIDATES (data/checks/*/candidates.yaml).
A "race" name NAME@TAG is the catalog's NAME built otherwise (other defines) into results/build/NAME@TAG; a "tma"
candidate {cubin: PATH, split: S} is a build of kernels/matmul_bf16/stream_tma.cu in results/build/PATH launched
on S blocks a tile (K split among them; PDL where the cubin says); a "next" NAME@TAG is a build of it with NEXT_L2
(data/checks/model-decode-next-h200), given the weight of the launch {ahead: A} after it (1 unless said: the next)
as a third tensor map (its graphs are whole turns of the copies; a build without NEXT_L2, whose kernel takes two
maps, is refused).

Per shape: every kernel verified first, output poisoned with NaN: the exact check (small integers, exact in BF16
and in FP32 sums) and the rounding check (random BF16 values) against the float64 product, on the GPU; a kernel
that fails is reported, not timed. A read candidate (the weight read alone) has its block sums checked against the
weight's instead (the calls of data/checks/model-decode-ceiling-h100 and -bulk-h100 ran before that check).
Then timed in CUDA graphs of L launches, each launch on the next of C copies of
the weight (cold: C copies over at least 3 times the L2, so no launch finds its weight in the L2; warm: one copy),
15 samples after 3 warm-up graphs; per launch = the graph's time / L. The DRAM bound is the shape's bytes over the
read rate the model step measures (gpumm.run.reads.read_rate: the read_stream micro-benchmark and the copy).
Writes OUT_DIR/samples.csv (every sample) and OUT_DIR/summary.csv (medians, shares).
"""

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.analyse import model  # noqa: E402
from gpumm.run import operations, reads, verify  # noqa: E402
from gpumm.setup import catalog  # noqa: E402

# token count: the candidates (name, kind, defines): "warp" a warp per ROWS rows of tools/model/stream.cu; "split"
# kernels/matmul_bf16/stream.cu and "mma" stream_mma.cu built here with these defines; "race" a catalog build
MMA16 = {"MAX_M": 16, "WARPS": 8, "CHUNKS": 2, "PIPE": 0, "L2_PREFETCH": 0}
# "read": the weight read alone (the read_stream micro-benchmark), timed as the candidates: the size's ceiling
READS = [("read_rows", "read", {"entry": "read_rows"}), ("read_grid8", "read", {"entry": "read_grid", "per_sm": 8})]
CANDIDATES = {
    1: [("split_m1_r2_w8", "split", {"MAX_M": 1, "ROWS": 2, "WARPS": 8}), ("bf16_stream_max_m1", "race", {})] + READS,
    16: [("bf16_stream_mma_w8", "race", {}), ("bf16_stream_mma_w16", "race", {})] + READS[:1],
    64: [("mma_t8_w8_u1_pipe", "mma", MMA16 | {"MAX_M": 64, "CHUNKS": 1, "PIPE": 1}), ("bf16_pingpong", "race", {})],
}
FILES = {"split": ("matmul_bf16/stream.cu", "bf16_stream"), "mma": ("matmul_bf16/stream_mma.cu", "bf16_stream_mma")}
SAMPLES, WARMUP = 15, 3
BF16 = operations.get("matmul_bf16")  # its checks


def built(file: str, defines: dict, arch: str) -> Path:
    """A kernel file of kernels/ built with these defines (nvcc, a cubin in a folder of this process)."""
    import subprocess
    import tempfile

    out = (
        Path(tempfile.gettempdir())
        / "model-cubins"
        / (Path(file).stem + "".join(f"_{k}{v}" for k, v in defines.items()))
    )
    if not out.with_suffix(".cubin").is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        flags = [f"-D{k}={v}" for k, v in defines.items()]
        cmd = [
            "nvcc",
            "-cubin",
            f"-arch={arch}",
            "-O3",
            *flags,
            "-o",
            str(out.with_suffix(".cubin")),
            str(ROOT / "kernels" / file),
        ]
        subprocess.run(cmd, check=True)
    return out.with_suffix(".cubin")


def tensor_maps(ptx: str, entry: str) -> int:
    """How many tensor maps (128-byte parameters) kernel ``entry`` of a PTX text takes; ValueError where it has no
    such entry."""
    m = re.search(rf"\.entry {re.escape(entry)}\((.*?)\)", ptx, re.S)
    if m is None:
        raise ValueError(f"the PTX has no entry {entry}")
    return len(re.findall(r"\.b8 \w+\[128\]", m.group(1)))


def load_candidates(path: Path) -> dict:
    """A --candidates file (YAML: token count -> [[name, kind, defines], ...]) as launchers takes it."""
    return {int(m): [(c[0], c[1], dict(c[2] or {})) for c in v] for m, v in yaml.safe_load(path.read_text()).items()}


def gpu_arch(cupy) -> str:
    """The arch to build for on this machine's GPU (sm_90a on Hopper: the wgmma and TMA builds need it)."""
    props = cupy.cuda.runtime.getDeviceProperties(0)
    return "sm_90a" if (props["major"], props["minor"]) == (9, 0) else f"sm_{props['major']}{props['minor']}"


def launchers(cupy, mod, read, m: int, n: int, k: int, arch: str, candidates: dict | None = None):
    """(name, bind(A, W, C) -> launch) of each candidate for m tokens and of cuBLAS BF16 (FP32 out and compute);
    "read": the weight read alone by the read_stream micro-benchmark (module `read`), A and C untouched: the fastest
    a kernel that reads the weight once could go at this size."""
    from gpumm.run.launch import Launcher, sm_count
    from gpumm.setup import catalog

    def candidate(name: str, kind: str, d: dict):
        if kind == "race":
            # NAME@TAG: the catalog's NAME, built here with other defines into results/build/NAME@TAG
            race = Launcher(catalog.from_id(name.split("@")[0]), ROOT / "results" / "build" / name / "kernel.cubin")
            return name, lambda A, W, C: race.bind(A, W, C)
        if kind == "next":  # NAME@TAG built with NEXT_L2: the next launch's weight as a third tensor map
            from gpumm.run import hopper

            folder = ROOT / "results" / "build" / name
            race = Launcher(catalog.from_id(name.split("@")[0]), folder / "kernel.cubin")
            maps = tensor_maps((folder / "kernel.ptx").read_text(), race.variant.entry)
            if maps != 3:  # launched with three, a kernel of two would take the third map's bytes as C
                raise SystemExit(
                    f"run.py: {name}: a next candidate is a build with NEXT_L2 (the next launch's weight as a third "
                    f"tensor map); its kernel takes {maps}"
                )
            geom, fn = race.geometry, race.function
            grid, block = race.variant.grid_dims(m, n, k, sms=sm_count()), race.variant.block_dims()

            def chained(A, W, C, nxt=None):
                ma, mb, *rest = hopper.arguments(geom, A, W, C, m, n, k)
                mn = hopper.arguments(geom, A, W if nxt is None else nxt, C, m, n, k)[1]
                return hopper.launch_pdl(fn, grid, block, geom["smem"], (ma, mb, mn, *rest))

            chained.chain = True  # timed() hands it the copy of the launch `ahead` after it (1: the next)
            chained.ahead = int(d.get("ahead", 1))
            return name, chained
        if kind == "read":
            fn = read.get_function(d["entry"])
            if d["entry"] in reads.ROWS_A_BLOCK:  # as the model step's ceiling reads it: one or two rows a block
                out = cupy.zeros(n, dtype=cupy.uint32)
                bind = reads.WeightRead(fn, n, k, out, reads.ROWS_A_BLOCK[d["entry"]]).bind
            else:  # a grid-stride stream over the weight's 16-byte words
                grid, words = (sm_count() * d["per_sm"],), np.int64(n * k // 8)
                out = cupy.zeros(grid[0], dtype=cupy.uint32)

                def bind(A, W, C):
                    return lambda: fn(grid, (256,), (W, out, words))

            reader = lambda A, W, C: bind(A, W, C)  # noqa: E731
            reader.out = out  # its block sums, for read_checked
            return name, reader
        if kind == "tma":  # a TMA stream's cubin in results/build/CUBIN, K split over `split` blocks (gridDim.y)
            tma = Launcher(catalog.from_id("bf16_stream_tma"), ROOT / "results" / "build" / d["cubin"])
            grid = (math.ceil(n / 64), d.get("split", 1))  # a block per 64 weight rows, as the catalog's
            return name, lambda A, W, C: tma.bind(A, W, C, grid=grid)
        if kind == "warp":  # 8 warps of ROWS rows a block: (A, W, C, N, K)
            fn, grid, block = mod.get_function(f"stream_m{m}_r{d['ROWS']}"), (math.ceil(n / d["ROWS"] / 8),), (256,)
            return name, lambda A, W, C: lambda: fn(grid, block, (A, W, C, np.int32(n), np.int32(k)))
        file, entry = FILES[kind]
        fn = cupy.RawModule(path=str(built(file, d, arch))).get_function(entry)
        rows = d.get("ROWS", 16)  # the tensor-core stream: 16 weight rows a block
        grid, block = (math.ceil(n / rows),), (32 * d["WARPS"],)
        if d.get("PDL"):  # launched with programmatic dependent launch
            from gpumm.run import hopper

            return name, lambda A, W, C: hopper.launch_pdl(
                fn, grid, block, 0, (A, W, C, np.int32(m), np.int32(n), np.int32(k))
            )
        return name, lambda A, W, C: lambda: fn(grid, block, (A, W, C, np.int32(m), np.int32(n), np.int32(k)))

    lib = Launcher(catalog.from_id("cublas_bf16"))
    found = [candidate(*c) for c in (candidates or CANDIDATES)[m]]
    return [*found, ("cublas_bf16", lambda A, W, C: lib.bind(A, W, C, scratch=cupy.empty))]


def read_checked(cupy, bind, n: int, k: int) -> str:
    """'' when a read candidate's block sums (``bind.out``) add up to the weight's (mod 2^32) on random words, else
    why not."""
    W = reads.random_weight(cupy, n, k)
    bind(None, W, None)()
    return "" if reads.sum_mod32(cupy, bind.out) == reads.sum_mod32(cupy, W) else "its sums differ from the weight's"


def timed(cupy, bind, A, copies: list, m: int, n: int) -> list[float]:
    """µs per launch of each sample: a graph of L launches, launch i on copy i mod C."""
    C = cupy.empty((m, n), dtype=cupy.float32)
    per_graph = max(20, 2 * len(copies))
    chain = getattr(bind, "chain", False)  # a kernel handed a later launch's weight too
    if chain:  # whole turns of the copies, so that every launch's later weight is the one that launch reads
        per_graph = -(-per_graph // len(copies)) * len(copies)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        if chain:
            launches = [bind(A, W, C, copies[(i + bind.ahead) % len(copies)]) for i, W in enumerate(copies)]
        else:
            launches = [bind(A, W, C) for W in copies]  # bound on this stream: cuBLAS's handle takes the current one
        launches[0]()  # anything the first call sets up (cuBLAS's workspace) before the capture
        stream.synchronize()
        stream.begin_capture()
        for i in range(per_graph):
            launches[i % len(launches)]()
        graph = stream.end_capture()
        out = []
        for i in range(WARMUP + SAMPLES):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            s.record(stream)
            graph.launch(stream)
            e.record(stream)
            e.synchronize()
            if i >= WARMUP:
                out.append(cupy.cuda.get_elapsed_time(s, e) * 1e3 / per_graph)
    return out


def main() -> None:
    import cupy

    p = argparse.ArgumentParser()
    p.add_argument("cubin")
    p.add_argument("out")
    p.add_argument("--tokens", default="1,16")
    p.add_argument("--candidates", type=Path, help="YAML: token count -> [[name, kind, defines], ...]")
    p.add_argument("--layers", help="comma-separated layers of the model (default: all)")
    args = p.parse_args()
    chosen = load_candidates(args.candidates) if args.candidates else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mod = cupy.RawModule(path=args.cubin)
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())["model"]
    cfg = {**cfg, "tokens": [int(t) for t in args.tokens.split(",")]}
    l2 = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrL2CacheSize, 0)
    props = cupy.cuda.runtime.getDeviceProperties(0)
    arch = gpu_arch(cupy)
    micro = catalog.microbenchmarks()["read_stream"]
    read_cubin = built(micro["file"], {}, arch)
    read_mod = cupy.RawModule(path=str(read_cubin))
    read = reads.read_rate(read_cubin)
    copy = float(read.set_index("pattern").bytes_per_s["device copy"])
    rate = float(read[read.ok].bytes_per_s.max())
    name = props["name"].decode()
    print(f"{name}: device copy {copy / 1e9:,.0f} GB/s, read {rate / 1e9:,.0f} GB/s, L2 {l2 >> 20} MiB", flush=True)
    b = model.bounds(model.shapes(cfg), rate, math.inf)
    if args.layers:
        b = b[b.layer.isin(args.layers.split(","))]
    rows, samples = [], []
    for s in b.itertuples():
        m, n, k = int(s.M), int(s.N), int(s.K)
        A = verify.bf16_random_inputs(11, m, 8, k, cupy)[0]
        weight = verify.bf16_random_inputs(13, 8, n, k, cupy)[1]
        cold = [weight] + [weight.copy() for _ in range(max(1, math.ceil(3 * l2 / weight.nbytes)))]
        for kernel, bind in launchers(cupy, mod, read_mod, m, n, k, arch, chosen):
            is_read = kernel.startswith("read_")
            why = read_checked(cupy, bind, n, k) if is_read else BF16.checked(bind, m, n, k, cupy)
            if why:
                rows.append(
                    {"layer": s.layer, "M": m, "N": n, "K": k, "kernel": kernel, "status": "failed"} | {"reason": why}
                )
                print(f"{s.layer} M={m} {kernel}: FAILED {why}", flush=True)
                continue
            for weights, copies in (("cold", cold), ("warm", [weight])):
                us = timed(cupy, bind, A, copies, m, n)
                samples += [{"layer": s.layer, "M": m, "kernel": kernel, "weights": weights, "us": u} for u in us]
                med = float(np.median(us))
                rows.append(
                    {"layer": s.layer, "M": m, "N": n, "K": k, "kernel": kernel, "weights": weights, "status": "ok"}
                    | {"median_us": med, "q25_us": float(np.quantile(us, 0.25)), "q75_us": float(np.quantile(us, 0.75))}
                    | {"copies": len(copies), "bound_us": s.dram_us, "share_of_bound": s.dram_us / med}
                )
                share = f"{s.dram_us / med:.1%} of the DRAM bound"
                print(f"{s.layer:8s} M={m:3d} {kernel:14s} {weights}: {med:8.2f} us, {share}", flush=True)
        del cold, weight
        cupy.get_default_memory_pool().free_all_blocks()
    summary = pd.DataFrame(rows)
    ok = summary[summary.status == "ok"]
    lib = ok[ok.kernel == "cublas_bf16"].set_index(["layer", "M", "weights"]).median_us
    summary["share_of_cublas"] = [
        lib.get((r.layer, r.M, r.weights), np.nan) / r.median_us if r.status == "ok" else np.nan
        for r in summary.itertuples()
    ]
    summary = summary.assign(gpu=name, copy_gbs=copy / 1e9, read_gbs=rate / 1e9, l2_mib=l2 >> 20)
    summary.to_csv(out / "summary.csv", index=False)
    pd.DataFrame(samples).to_csv(out / "samples.csv", index=False)
    print(summary[summary.status == "ok"].round(3).to_string())


if __name__ == "__main__":
    main()
