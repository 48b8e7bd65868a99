"""One launch of each candidate at one layer and token count, each inside an NVTX range named ``prof``, for Nsight
Compute (issue 40 exploration: why one weight stream reads the DRAM slower than another). The candidates as
tools/model/run.py takes them (its --candidates file; run.py verified them first), the weight a fresh random one.

    ncu --nvtx --nvtx-include "prof/" ... python tools/model/profile.py CUBIN --layer gate_up --tokens 16 \\
        --candidates FILE
"""

import argparse
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import run  # noqa: E402  (tools/model/run.py: its launchers)
from gpumm.analyse import model  # noqa: E402
from gpumm.run import verify  # noqa: E402
from gpumm.setup import catalog  # noqa: E402


def main() -> None:
    import cupy
    from cupy.cuda import nvtx

    p = argparse.ArgumentParser()
    p.add_argument("cubin")
    p.add_argument("--layer", required=True)
    p.add_argument("--tokens", type=int, required=True)
    p.add_argument("--candidates", type=Path, required=True)
    args = p.parse_args()
    chosen = run.load_candidates(args.candidates)
    cfg = yaml.safe_load((run.ROOT / "config.yaml").read_text())["model"]
    shapes = model.shapes({**cfg, "tokens": [args.tokens]})
    s = shapes[shapes.layer == args.layer].iloc[0]
    m, n, k = int(s.M), int(s.N), int(s.K)
    arch = run.gpu_arch(cupy)
    mod = cupy.RawModule(path=args.cubin)
    read_mod = cupy.RawModule(path=str(run.built(catalog.microbenchmarks()["read_stream"]["file"], {}, arch)))
    A = verify.bf16_random_inputs(11, m, 8, k, cupy)[0]
    W = verify.bf16_random_inputs(13, 8, n, k, cupy)[1]
    C = cupy.empty((m, n), dtype=cupy.float32)
    for name, bind in run.launchers(cupy, mod, read_mod, m, n, k, arch, chosen):
        launch = bind(A, W, C)
        launch()  # anything a first call sets up, outside the range
        cupy.cuda.Device().synchronize()
        nvtx.RangePush("prof")
        launch()
        cupy.cuda.Device().synchronize()
        nvtx.RangePop()
        print(f"{args.layer} M={m} {name}: profiled", flush=True)


if __name__ == "__main__":
    main()
