"""Does the way a sample is taken move a decode kernel's time? (issue 40, the H200 decode goals at 16 tokens)

tools/model/run.py timed `bf16_stream_tma_k4s5e` on gate and up at 16 tokens at 55.5 us (91.6% of the DRAM bound,
data/checks/model-decode-promotion-h200); the model step of the H200 archive of 3534238 times the same build and
shape at 57.7 us, cuBLAS BF16 at 56.6-56.9 against 56.3, the weight read alone at 52.5 in both. The two ways differ
in how samples follow each other: run.py takes a member's samples one at a time, the GPU idle between them (a graph
of 20 launches, then a synchronize); the model step (gpumm.run.layers.time_shape) launches one sample of every
member after another without waiting, in rounds, while a thread asks NVML for the clocks every 2 ms.

For each shape (a layer at M tokens; the configuration's model), each kernel (catalog builds from results/build)
and the weight read alone (read_rows2, as the model step's ceiling reads it) are checked (both checks of
gpumm.run.layers.check_shape; the read's sums against the weight's), then timed on the same cold copies (over 3
times the L2) and the same graphs (gpumm.run.layers.sample_graph: launches for 2 ms), in these ways, in order:

- ``gapped``: a member's samples one at a time, synchronized after each (run.py's way);
- ``gapped20``: as gapped with graphs of 20 launches (run.py's length);
- ``gapped_watch``: as gapped with gpumm.run.clocks.Watch asking NVML every 2 ms;
- ``rounds``: the model step's rounds (a sample of each member back to back, the order reversed every other
  round, one synchronize a round), no NVML;
- ``step``: gpumm.run.layers.time_shape itself (its own copies and graphs, rounds with the Watch);
- ``gapped_again``: gapped once more, for drift.

Each way: 2 warm-up samples then 10 kept per member. Writes OUT/samples.csv (shape, way, member, round, batch,
us), OUT/checks.csv, OUT/read.csv (the card's read rate, gpumm.run.reads.read_rate) and OUT/watch.csv (the Watch's
fields for gapped_watch and step), and prints each shape's medians.

    python tools/model/harness.py OUT [--layers gate_up,down] [--tokens 1,16] [--kernels a,b] [--preheat S]

--preheat S: S seconds of FP16 products of 8192 x 8192 (cuBLAS) first, the card warmed as the study leaves it.
--knockout NAME:VARIANT:CUBIN[:GRID] (repeatable): a build of VARIANT's file with a part left out (its output wrong
by design, so never checked and never a candidate), launched as VARIANT (with GRID blocks where given, `sms` one an
SM: a persistent build) and timed beside the others: what that part costs (the TMA stream's tokens' boxes, its
wgmmas, its blocks' turnover: data/checks/model-decode-harness-h200).
"""

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.run import clocks, layers, pairing, reads, timing  # noqa: E402
from gpumm.run.launch import Launcher, sm_count  # noqa: E402
from gpumm.setup import catalog, paths  # noqa: E402

WARMUP, SAMPLES = 2, 10


class FixedGrid:
    """A BF16 kernel's launcher with its grid set to ``blocks`` (a knock-out's persistent build)."""

    def __init__(self, launcher, blocks: int):
        self.inner, self.blocks = launcher, blocks

    def bind(self, A, W, C):
        return self.inner.bind(A, W, C, grid=(self.blocks,))


def gapped(cupy, runs: list, way: str) -> list[dict]:
    """Each member's samples one at a time, the GPU synchronized after each: rounds of one member."""
    return [row for run in runs for row in rounds(cupy, [run], way)]


def rounds(cupy, runs: list, way: str) -> list[dict]:
    """The model step's rounds: a sample of every member back to back, synchronized once a round."""
    rows = []
    for r in range(WARMUP + SAMPLES):
        events = []
        for mid, run, batch in pairing.order(runs, r):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            s.record()
            run()
            e.record()
            events.append((mid, batch, s, e))
        events[-1][-1].synchronize()
        if r >= WARMUP:
            for mid, batch, s, e in events:
                rows.append({"way": way, "kernel": mid, "round": r, "batch": batch})
                rows[-1]["us"] = cupy.cuda.get_elapsed_time(s, e) * 1e3 / batch
    return rows


def graph_of(cupy, launcher, A, copies: list, C, n: int):
    """A graph of n launches taking the copies in turn."""
    bound = itertools.cycle([launcher.bind(A, W, C) for W in copies])
    graph = timing.capture(lambda: next(bound)(), n)
    stream = cupy.cuda.get_current_stream()
    if graph is None:  # a launch that refuses capture: plain launches

        def plain():
            for _ in range(n):
                next(bound)()

        return plain
    return lambda: graph.launch(stream)


def one_shape(cupy, members: dict, read_fn, shape: tuple, l2: int, settings: dict, knockouts: dict) -> tuple:
    """(checks, samples, the Watch's rows) of one shape, every way; ``knockouts`` (name -> Member) timed unchecked."""
    M, N, K = shape
    picks = {m: m for m in members}
    checks, A, W = layers.check_shape(cupy, members, picks, shape, 0)
    reader = reads.WeightRead(read_fn, N, K, cupy.zeros(N, dtype=cupy.uint32), reads.ROWS_A_BLOCK["read_rows2"])
    reader.bind(None, W, None)()
    read_ok = reads.sum_mod32(cupy, reader.out) == reads.sum_mod32(cupy, W)
    checks.append({"kernel": "read_rows2", "status": "ok" if read_ok else "failed", "check": "sums"})
    checks += [{"kernel": k, "status": "unchecked", "check": "knockout"} for k in knockouts]
    failed = {c["kernel"] for c in checks if c["status"] == "failed"}
    ok = [m for m in [*members, "read_rows2", *knockouts] if m not in failed]
    all_members = {**members, "read_rows2": layers.Member("read_rows2", reader), **knockouts}
    copies = [W] + [W.copy() for _ in range(layers.copies_for(W.nbytes, l2, settings["cold_factor"]) - 1)]
    C = cupy.empty((M, N), dtype=cupy.float32)
    runs = [(m, *layers.sample_graph(cupy, all_members[m].launcher, A, copies, C, settings)) for m in ok]
    runs20 = [(m, graph_of(cupy, all_members[m].launcher, A, copies, C, 20), 20) for m in ok]
    rows, watch_rows = [], []
    rows += gapped(cupy, runs, "gapped")
    rows += gapped(cupy, runs20, "gapped20")
    watch = clocks.Watch(pci_bus_id=cupy.cuda.Device().pci_bus_id)
    watch.start()
    rows += gapped(cupy, runs, "gapped_watch")
    watch_rows.append({"way": "gapped_watch"} | watch.stop())
    rows += rounds(cupy, runs, "rounds")
    step, state = layers.time_shape(cupy, all_members, {m: m for m in ok}, ok, A, W, shape, l2, settings)
    keep = ("kernel", "round", "batch", "us")
    rows += [{"way": "step"} | {k: r[k] for k in keep} for r in step if r["weights"] == "cold"]
    watch_rows.append({"way": "step"} | state)
    rows += gapped(cupy, runs, "gapped_again")
    del copies, C, A, W, runs, runs20
    cupy.get_default_memory_pool().free_all_blocks()
    return checks, rows, watch_rows


def main() -> None:
    import cupy

    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", default="gate_up,down,logits")
    p.add_argument("--tokens", default="16,1")
    p.add_argument("--kernels", default="bf16_stream_tma_k4s5e,cublas_bf16")
    p.add_argument("--preheat", type=float, default=0.0, help="seconds of FP16 8192^3 products first (cuBLAS)")
    p.add_argument("--knockout", action="append", default=[], help="NAME:VARIANT:CUBIN[:GRID], timed without checks")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    spec = yaml.safe_load((ROOT / "config.yaml").read_text())["model"]
    model = spec["models"][spec["name"]]["layers"]
    members = {}
    for vid in args.kernels.split(","):
        v = catalog.from_id(vid)
        binary = paths.build_dir(vid) / v.binary_name if v.is_cuda else None
        members[vid] = layers.Member(vid, Launcher(v, binary), layers.max_m(v))
    knockouts = {}
    for spec_ in args.knockout:  # a build of a variant's file with a part left out: its output wrong by design
        name, vid, cubin, *grid = spec_.split(":")
        launcher = Launcher(catalog.from_id(vid), Path(cubin))
        if grid:  # a persistent build: GRID blocks ("sms": one an SM), not the variant's grid
            launcher = FixedGrid(launcher, sm_count() if grid[0] == "sms" else int(grid[0]))
        knockouts[name] = layers.Member(name, launcher, layers.max_m(catalog.from_id(vid)))
    read_cubin = paths.build_dir("read_stream") / "kernel.cubin"
    reads.read_rate(read_cubin).to_csv(out / "read.csv", index=False)  # the DRAM bound's rate, as the model step's
    read_mod = cupy.RawModule(path=str(read_cubin))
    read_fn = read_mod.get_function("read_rows2")
    if args.preheat > 0:  # the card warmed as the study's steps before the model's leave it
        x = cupy.ones((8192, 8192), dtype=cupy.float16)
        started = time.perf_counter()
        while time.perf_counter() - started < args.preheat:
            for _ in range(20):
                y = x @ x
            cupy.cuda.Device().synchronize()
        print(f"preheat: {time.perf_counter() - started:.1f} s", flush=True)
        del x, y
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    settings = dict(layers.SETTINGS)
    checks, samples, watch = [], [], []
    with cupy.cuda.Stream(non_blocking=True):
        for m in [int(t) for t in args.tokens.split(",")]:
            for name in args.layers.split(","):
                shape = (m, model[name]["n"], model[name]["k"])
                key = {"layer": name, "M": m}
                c, s, w = one_shape(cupy, members, read_fn, shape, l2, settings, knockouts)
                checks += [key | r for r in c]
                samples += [key | r for r in s]
                watch += [key | r for r in w]
                df = pd.DataFrame(s)
                med = df.groupby(["kernel", "way"], sort=False).us.median().unstack()
                print(f"== {name} M={m} (median us)\n{med.round(2).to_string()}", flush=True)
    pd.DataFrame(checks).to_csv(out / "checks.csv", index=False)
    pd.DataFrame(samples).to_csv(out / "samples.csv", index=False)
    pd.DataFrame(watch).to_csv(out / "watch.csv", index=False)
    failed = [c for c in checks if c["status"] == "failed"]
    print(
        f"{len(samples)} samples, {len(failed)} failed checks; median of every way: "
        f"{statistics.median(r['us'] for r in samples):.1f} us"
    )


if __name__ == "__main__":
    main()
