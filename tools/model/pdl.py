"""Does programmatic dependent launch take a weight read's start and tail off its time? (issue 40). Times
tools/model/pdl.cu's read_rows2_pdl (read_stream's read_rows2 with griddepcontrol) over each decode layer's weight of
the model configuration, launched plainly and with PDL (cuLaunchKernelEx, programmatic stream serialization), beside
the catalog's read_rows2 (plain), as the model step times the weight read alone (gpumm.run.reads.ceiling: cold copies
over three times the L2, a sample a CUDA graph of about 2 ms of launches taking the copies in turn, 10 samples after
2), and the same launches queued without a graph.

    nvcc -cubin -arch=sm_90 -O3 -o pdl.cubin tools/model/pdl.cu
    python -m gpumm build-micro --name read_stream --arch sm_90 --out-dir rs
    python tools/model/pdl.py pdl.cubin rs/kernel.cubin OUT.csv

Every launcher's block sums are checked against the weight's before any time counts and after its last sample.
"""

import ctypes
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.run import layers, reads  # noqa: E402

WEIGHTS = {"qkv": (6144, 4096), "out": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}
WEIGHTS["logits"] = (128256, 4096)
SETTINGS = {**layers.SETTINGS}
PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CUlaunchAttributeID


class _Attr(ctypes.Structure):  # CUlaunchAttribute: the id, padding to 8, a 64-byte union
    _fields_ = [
        ("id", ctypes.c_uint),
        ("pad", ctypes.c_char * 4),
        ("value", ctypes.c_int),
        ("rest", ctypes.c_char * 60),
    ]


class _Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint)]
    _fields_ += [("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attr)), ("n_attrs", ctypes.c_uint)]


_CUDA = ctypes.CDLL("libcuda.so.1")
_CUDA.cuLaunchKernelEx.argtypes = [ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]


class Read:
    """bind(A, W, C): read W's N rows two a block (256 threads), plainly or with PDL, the sums to ``out``."""

    def __init__(self, fn, n: int, k: int, out, pdl: bool | None):
        self.fn, self.n, self.k, self.out, self.pdl = fn, n, k, out, pdl

    def bind(self, A, W, C):
        grid = -(-self.n // 2)
        if self.pdl is None:  # the catalog's read_rows2 through CuPy
            args = (W, self.out, np.int64(self.n), np.int32(self.k // 8))
            return lambda: self.fn((grid,), (256,), args)
        vals = [ctypes.c_void_p(W.data.ptr), ctypes.c_void_p(self.out.data.ptr)]
        vals += [ctypes.c_longlong(self.n), ctypes.c_int(self.k // 8)]
        params = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        attr = _Attr(id=PROGRAMMATIC_STREAM_SERIALIZATION, value=1)
        fn = ctypes.c_void_p(self.fn.kernel.ptr)  # the CUfunction

        def launch():
            import cupy

            cfg = _Config((grid, 1, 1), (256, 1, 1), 0, cupy.cuda.get_current_stream().ptr)
            cfg.attrs, cfg.n_attrs = ctypes.pointer(attr), 1 if self.pdl else 0
            err = _CUDA.cuLaunchKernelEx(ctypes.byref(cfg), fn, params, None)
            if err:
                raise RuntimeError(f"cuLaunchKernelEx: CUresult {err}")

        launch.keep = (vals, params, attr)
        return launch


def main(pdl_cubin: str, read_cubin: str, out_csv: str) -> None:
    import cupy
    import pandas as pd

    fn_pdl = cupy.RawModule(path=pdl_cubin).get_function("read_rows2_pdl")
    fn_rows2 = cupy.RawModule(path=read_cubin).get_function("read_rows2")
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    rows = []
    with cupy.cuda.Stream(non_blocking=True):
        for layer, (n, k) in WEIGHTS.items():
            copies = [reads.random_weight(cupy, n, k)]
            copies += [copies[0].copy() for _ in range(layers.copies_for(copies[0].nbytes, l2, 3.0) - 1)]
            want = (copies[0].view(cupy.uint32).reshape(n // 2, -1).sum(axis=1, dtype=cupy.uint64) % 2**32).astype(
                cupy.uint32
            )
            members = {"read_rows2": (fn_rows2, None), "pdl kernel, plain": (fn_pdl, False), "pdl": (fn_pdl, True)}
            for name, (fn, pdl) in members.items():
                out = cupy.zeros(n // 2, dtype=cupy.uint32)
                reader = Read(fn, n, k, out, pdl)
                reader.bind(None, copies[0], None)()
                cupy.cuda.get_current_stream().synchronize()
                if not bool((out == want).all()):
                    print(f"{layer} {name}: sums FAILED, not timed", flush=True)
                    rows.append({"layer": layer, "member": name, "how": "-", "ok": False, "round": -1, "us": np.nan})
                    continue
                for how in ("graph", "queued"):
                    run, batch = layers.sample_graph(cupy, reader, None, copies, None, SETTINGS)
                    if how == "queued":
                        bound = [reader.bind(None, W, None) for W in copies]

                        def run(bound=bound, batch=batch):
                            for i in range(batch):
                                bound[i % len(bound)]()

                    us = []
                    for r in range(SETTINGS["warmup"] + SETTINGS["samples"]):
                        s, e = cupy.cuda.Event(), cupy.cuda.Event()
                        s.record()
                        run()
                        e.record()
                        e.synchronize()
                        if r >= SETTINGS["warmup"]:
                            us.append(cupy.cuda.get_elapsed_time(s, e) * 1e3 / batch)
                    ok = bool((out == want).all())
                    rows += [
                        {"layer": layer, "member": name, "how": how, "ok": ok, "round": i, "batch": batch, "us": u}
                        for i, u in enumerate(us)
                    ]
                    med = statistics.median(us)
                    rate = copies[0].nbytes / med / 1e3
                    print(f"{layer:8s} {name:18s} {how:6s} {med:8.2f} us {rate:7,.0f} GB/s" + ("" if ok else " FAILED"))
            del copies
            cupy.get_default_memory_pool().free_all_blocks()
    pd.DataFrame(rows).to_csv(out_csv, index=False)
    print("read rate:", reads.read_rate(Path(read_cubin), log=lambda *_: None).bytes_per_s.max() / 1e9)


if __name__ == "__main__":
    if len(sys.argv) != 4 or not all(Path(p).is_file() for p in sys.argv[1:3]):
        sys.exit(__doc__)
    main(*sys.argv[1:])
