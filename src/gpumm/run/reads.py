"""Reading DRAM alone, measured by the model step before its shapes (issue 40): the card's read rate, the DRAM
bound's rate (``read_rate``), and each layer's weight read alone as the kernels read it (``ceiling``), the fastest a
kernel that reads the weight once can be expected to go at that size.

Both run the read_stream micro-benchmark (kernels/memory/read_stream.cu: 16-byte loads read once, every block's sum
written out) and check its sums before any time counts.
"""

import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd

from gpumm.run import layers
from gpumm.run.launch import sm_count

READ_PATTERNS = [("read_grid", 4), ("read_grid", 8), ("read_rows", 512), ("read_rows", 1792)]
READ_PATTERNS += [("read_rows2", 512), ("read_rows2", 1792)]
ROWS_A_BLOCK = {"read_rows": 1, "read_rows2": 2}  # the whole-row patterns, and how many rows a block reads at once
ROWS_A_BLOCK["read_rows2_pdl"] = 2  # read_rows2 launched with programmatic dependent launch (sm_90 on)
PDL_PATTERNS = {"read_rows2_pdl"}
CEILING_COLUMNS = ["layer", "N", "K", "pattern", "bytes", "copies", "round", "batch", "us", "ok"]


def read_rate(cubin: Path, log=print) -> pd.DataFrame:
    """The read_stream micro-benchmark's patterns and the device copy over 2 GiB (several times any L2): one row
    each, with its bytes per second (median of 10 launches after 2) and whether its sums checked. read_grid at 4 or 8
    blocks of 256 threads per SM; read_rows and read_rows2 (one or two rows a block) with rows of 8 KiB (a
    4096-wide BF16 weight) or 28 KiB (14336). The copy's rate counts what it reads and writes, as the bandwidth study
    does."""
    import cupy

    words = 1 << 27  # 16-byte words: 2 GiB
    rows = _patterns(cupy, cupy.RawModule(path=str(cubin)), words, log) + [_copy(cupy, words // 2, log)]
    cupy.get_default_memory_pool().free_all_blocks()
    return pd.DataFrame(rows)


def _patterns(cupy, mod, words: int, log) -> list[dict]:
    buf = cupy.ones(4 * words, dtype=cupy.uint32)
    sms = sm_count()
    rows = []
    for name, arg in READ_PATTERNS:
        fn = mod.get_function(name)
        if name == "read_grid":
            grid, args, read = sms * arg, (np.int64(words),), words
        else:  # whole rows only, one or two a block
            rows_ = words // arg
            grid, args, read = -(-rows_ // ROWS_A_BLOCK[name]), (np.int64(rows_), np.int32(arg)), rows_ * arg
        out = cupy.zeros(grid, dtype=cupy.uint32)

        def launch(fn=fn, grid=grid, out=out, args=args):
            fn((grid,), (256,), (buf, out, *args))

        launch()
        ok = int(out.astype(cupy.uint64).sum()) == 4 * read  # four 1s a word
        ms = statistics.median([layers.one_ms(cupy, launch) for _ in range(10)]) if ok else math.nan
        rows.append({"pattern": f"{name} {arg}", "ok": ok, "bytes": 16 * read, "ms": ms})
        rows[-1]["bytes_per_s"] = 16 * read / (ms * 1e-3)
        log(f"read stream {name} {arg}: {rows[-1]['bytes_per_s'] / 1e9:,.0f} GB/s" + ("" if ok else " (FAILED)"))
    return rows


def _copy(cupy, words: int, log) -> dict:
    src = cupy.ones(4 * words, dtype=cupy.uint32)
    dst = cupy.zeros_like(src)

    def launch():
        dst[...] = src

    ms = statistics.median([layers.one_ms(cupy, launch) for _ in range(10)])
    ok = bool((dst == 1).all())
    row = {"pattern": "device copy", "ok": ok, "bytes": 2 * src.nbytes, "ms": ms}
    row["bytes_per_s"] = 2 * src.nbytes / (ms * 1e-3)
    log(f"device copy: {row['bytes_per_s'] / 1e9:,.0f} GB/s" + ("" if ok else " (FAILED)"))
    return row


class WeightRead:
    """The weight read alone, as a launcher for gpumm.run.layers.sample_graph: ``bind(A, W, C)`` reads W's N rows
    whole with read_rows or read_rows2 (a block of 256 threads a row, or two rows), A and C untouched; with
    ``pdl``, read_rows2_pdl launched with programmatic dependent launch (gpumm.run.hopper.launch_pdl)."""

    def __init__(self, fn, n: int, k: int, out, rows: int = 1, pdl: bool = False):
        self.fn, self.n, self.k, self.out, self.grid, self.pdl = fn, n, k, out, -(-n // rows), pdl

    def bind(self, A, W, C):
        args = (W, self.out, np.int64(self.n), np.int32(self.k // 8))
        if self.pdl:
            from gpumm.run import hopper

            return hopper.launch_pdl(self.fn, (self.grid,), (256,), 0, args)
        return lambda: self.fn((self.grid,), (256,), args)


def overlaps() -> bool:
    """Whether this GPU runs programmatic dependent launch (compute capability 9.0 on): the PDL read is timed."""
    import cupy

    return int(cupy.cuda.Device().compute_capability) >= 90


def random_weight(cupy, n: int, k: int):
    """An N x K weight of random 16-bit words (K even), for a read whose sums are checked."""
    return cupy.random.randint(0, 1 << 31, size=(n, k // 2), dtype=cupy.int32).view(cupy.uint16)


def sum_mod32(cupy, x) -> int:
    """The sum of an array's 32-bit words, modulo 2^32 (what read_rows' unsigned sums add up to)."""
    return int(x.view(cupy.uint32).astype(cupy.uint64).sum()) % (1 << 32)


def ceiling(cubin: Path, weights: list[tuple[str, int, int]], settings: dict, log=print) -> pd.DataFrame:
    """Each weight (layer, N, K: BF16, N rows of K) read alone as the model step times its kernels, by read_rows and by
    read_rows2 (one or two rows a block), and from sm_90 on by read_rows2_pdl launched with programmatic dependent
    launch (each launch's first loads under the last ones of the launch before), on random words, cold copies over
    ``cold_factor`` times the L2, a sample a CUDA graph of launches taking the copies in turn, ``warmup`` samples
    then ``samples`` kept; the analysis keeps the fastest. A plain launch pays its start and the drain of its last
    loads, a larger share of a small weight's time (the H100's 32 MiB output weight: 82% of the 2 GiB read rate,
    data/checks/model-decode-ceiling-h100); with PDL the H200 read every layer's weight at 98-100%
    (data/checks/model-decode-pdl-h200). The sums are checked (mod 2^32) before any time counts and again after
    the last sample (its last launch's): a row with ``ok`` false and no time where they differ, or where the card
    has no room for the copies. One row per kept sample."""
    import cupy

    settings = {**layers.SETTINGS, **settings}
    mod = cupy.RawModule(path=str(cubin))
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    pdl = overlaps()
    rows = []
    with cupy.cuda.Stream(non_blocking=True):
        for layer, n, k in weights:
            if k % 8:
                log(f"read ceiling {layer}: K = {k} is not a multiple of 8 (16-byte rows): not timed")
                continue
            patterns = [p for p in ROWS_A_BLOCK if p not in PDL_PATTERNS or pdl]
            keys = [{"layer": layer, "N": n, "K": k, "pattern": p, "bytes": 2 * n * k, "copies": 0} for p in patterns]
            copies = []
            try:  # one weight and its cold copies for both patterns
                copies = [random_weight(cupy, n, k)]
                n_copies = layers.copies_for(copies[0].nbytes, l2, settings["cold_factor"])
                copies += [copies[0].copy() for _ in range(n_copies - 1)]
                want = sum_mod32(cupy, copies[0])
            except cupy.cuda.memory.OutOfMemoryError as exc:
                rows += [_not_timed(key) for key in keys]
                log(f"read ceiling {layer}: not timed, out of GPU memory ({exc})")
            else:
                for key in keys:
                    key = key | {"copies": n_copies}
                    try:
                        rows += _one_ceiling(cupy, mod.get_function(key["pattern"]), key, copies, want, settings, log)
                    except cupy.cuda.memory.OutOfMemoryError as exc:
                        rows.append(_not_timed(key))
                        log(f"read ceiling {layer} {key['pattern']}: not timed, out of GPU memory ({exc})")
            del copies
            cupy.get_default_memory_pool().free_all_blocks()
    return pd.DataFrame(rows, columns=CEILING_COLUMNS)


def _not_timed(key: dict) -> dict:
    """A weight's row for a pattern not timed (its sums did not check, or no room for its copies): no time."""
    return key | {"round": -1, "batch": 0, "us": math.nan, "ok": False}


def _one_ceiling(cupy, fn, key: dict, copies: list, want: int, settings: dict, log) -> list[dict]:
    """One pattern's samples over the cold copies (every copy holds the same words, whose sum is ``want``)."""
    n, k = key["N"], key["K"]
    out = cupy.zeros(n, dtype=cupy.uint32)
    reader = WeightRead(fn, n, k, out, ROWS_A_BLOCK[key["pattern"]], key["pattern"] in PDL_PATTERNS)
    reader.bind(None, copies[0], None)()
    if sum_mod32(cupy, out) != want:
        log(f"read ceiling {key['layer']} {key['pattern']}: FAILED (its sums differ from the weight's)")
        return [_not_timed(key)]
    run, batch = layers.sample_graph(cupy, reader, None, copies, None, settings)
    kept = []
    for r in range(settings["warmup"] + settings["samples"]):
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        s.record()
        run()
        e.record()
        e.synchronize()
        if r >= settings["warmup"]:
            kept.append(key | {"round": r, "batch": batch, "us": cupy.cuda.get_elapsed_time(s, e) * 1e3 / batch})
    if sum_mod32(cupy, out) != want:  # the last launch's sums
        log(f"read ceiling {key['layer']} {key['pattern']}: FAILED after its samples (its sums differ)")
        return [_not_timed(key)]
    rate = copies[0].nbytes / statistics.median(r["us"] for r in kept) / 1e3
    log(f"read ceiling {key['layer']} {key['pattern']} ({n} x {k}, {key['copies']} copies): {rate:,.0f} GB/s")
    return [r | {"ok": True} for r in kept]
