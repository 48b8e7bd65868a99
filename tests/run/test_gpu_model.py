"""On the GPU (issue 40): the weight-streaming kernels correct at every M they take, odd ones included; the model
step's checks, cold copies and rounds on real kernels; the read rate's sums.

Run on the GPU machine with ``pytest -m gpu``; elsewhere these skip with the reason.
"""

import numpy as np
import pytest

from gpumm.build import loops
from gpumm.build import nvcc as build
from gpumm.run import layers, memory, operations, reads
from gpumm.run.launch import Launcher
from gpumm.setup import catalog, paths

pytestmark = pytest.mark.gpu

# every build of the weight streams: MAX_M at its defaults, min, max and between (catalog params), and each tuning
TMA_STREAMS = ("bf16_stream_tma", "bf16_stream_tma_pdl")
SELECTION = {f: {} for f in ("bf16_stream", "bf16_stream_rows2", "bf16_stream_pdl", "bf16_stream_mma", *TMA_STREAMS)}
SELECTION["bf16_stream"] = {"MAX_M": [1, 3, 8, 16]}
SELECTION["bf16_stream_rows2"] = {"MAX_M": [1, 3]}
STREAMS = catalog.expand(SELECTION)


def shapes_for(max_m: int) -> list[tuple[int, int, int]]:
    """M from 1 to the build's MAX_M, odd ones among them; N odd, small and large; K a multiple of 8 (4104: not of
    32, a partial last chunk of the tensor-core build)."""
    ms = sorted({1, max_m, max(1, max_m - 1), (max_m + 1) // 2 | 1})
    return [(m, n, k) for m in ms for n, k in ((33, 8), (1025, 1032), (4097, 4104), (7, 14336))]


@pytest.fixture(scope="module")
def arch():
    import cupy

    p = cupy.cuda.runtime.getDeviceProperties(0)
    return f"sm_{p['major']}{p['minor']}"


class Built(dict):
    """Variant id -> its Launcher, each built on first use: a run that selects a few tests builds only theirs."""

    def __init__(self, tmp_path_factory, arch: str):
        super().__init__()
        self.tmp, self.arch = tmp_path_factory, arch

    def __missing__(self, vid: str) -> Launcher:
        v, binary = catalog.from_id(vid), None
        if v.is_cuda:
            d = self.tmp.mktemp(v.id)
            build.build(v, self.arch, d)
            binary = d / v.binary_name
        self[vid] = Launcher(v, binary)
        return self[vid]


@pytest.fixture(scope="module")
def built(tmp_path_factory, arch):
    return Built(tmp_path_factory, arch)


@pytest.mark.parametrize("vid", [v.id for v in STREAMS])
def test_a_weight_stream_matches_float64_at_every_m_it_takes(built, vid):
    """The operation's own checks, as a run makes them: output poisoned, exact on small integers, then within the
    rounding tolerance of float64, at M from 1 to MAX_M (odd ones too) and odd N."""
    v = built[vid].variant
    for shape in shapes_for(layers.max_m(v)):
        checked = operations.get("matmul_bf16").check(built[vid], memory.get("device"), 7, 1 << 27, shape)
        assert checked.exact.ok, (shape, checked.exact.reason)
        assert checked.rounding.ok, (shape, checked.rounding.reason)


@pytest.mark.parametrize("vid", [v.id for v in STREAMS])
def test_a_weight_stream_uses_the_instruction_it_is_about(built, vid):
    sass = built[vid].binary.with_name("kernel.sass").read_text()
    ops = loops.opcodes(sass)
    hmma, hgmma = sum(o.startswith("HMMA") for o in ops), sum(o.startswith("HGMMA") for o in ops)
    family = built[vid].variant.family
    assert (hmma > 0) == (family == "bf16_stream_mma"), (vid, hmma)  # the CUDA cores' stream: neither
    assert (hgmma > 0) == (family in TMA_STREAMS), (vid, hgmma)  # wgmma: the TMA's streams alone
    assert not any(o.startswith(("LDL", "STL")) for o in ops), vid


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize(
    "vid, plain, M",
    [
        ("bf16_stream_tma_pdl_k4s5e", "bf16_stream_tma_k4s5e", 16),
        ("bf16_stream_pdl_r2h2", "bf16_stream_rows2_max_m1", 1),
    ],
)
def test_pdl_launches_back_to_back_keep_their_order(built, graph, vid, plain, M):
    """A PDL build (the TMA stream; the CUDA-core stream holding its rows) launched with programmatic dependent
    launch 20 times in turn on two sets of tokens, every launch writing the same C, queued or captured in a CUDA
    graph: C holds exactly the last launch's product (each waits for the one before before it reads the tokens and
    before it writes C; the weight, which no launch writes, it reads before). The plain build's launcher does not
    use PDL."""
    import cupy

    from gpumm.run import timing, verify

    pdl = built[vid]
    assert pdl._pdl and not built[plain]._pdl
    op = operations.get("matmul_bf16")
    N, K = 4097, 4104
    with cupy.cuda.Stream(non_blocking=True) as stream:
        A1, W = op.inputs(True, 3, M, N, K, cupy)
        A2 = op.inputs(True, 4, M, N, K, cupy)[0]
        ref, _, where = op.reference([A2, W], 0, absolute=False)
        C = cupy.full((M, N), np.nan, dtype=cupy.float32)
        bound = [pdl.bind(A1, W, C), pdl.bind(A2, W, C)]
        turn = iter(range(20))

        def launch():
            bound[next(turn) % 2]()  # the last, the 20th: A2

        if graph:
            g = timing.capture(launch, 20)
            assert g is not None, "20 PDL launches could not be captured in a CUDA graph"
            g.launch(stream)
        else:
            for _ in range(20):
                launch()
        stream.synchronize()
    c = verify.compare_exact(C, ref, where)
    assert c.ok, c.reason


def _plan(built, ids, shapes):
    return {"kernels": {i: str(built[i].binary) if built[i].binary else None for i in ids}, "shapes": shapes}


def test_the_model_step_checks_times_cold_and_warm_and_pairs_the_reference(built, monkeypatch):
    """Two shapes: every member that takes each is checked then timed in every round; a weight that fits in the L2
    is timed warm too; the copies of a cold weight hold 3 times the L2; heat rounds before the shape of
    heat_from_tokens tokens, none before the other."""
    import cupy

    ids = ["bf16_stream_max_m1", "bf16_stream_mma_w8", "cublas_bf16"]
    shapes = [{"layer": "out", "M": 1, "N": 4096, "K": 4096}, {"layer": "out", "M": 16, "N": 4096, "K": 4096}]
    monkeypatch.setattr(
        layers, "_members", lambda plan: {i: layers.Member(i, built[i], layers.max_m(built[i].variant)) for i in ids}
    )
    timing = {"samples": 4, "warmup": 1, "sample_ms": 0.5, "heat_s": 0.2, "heat_from_tokens": 16}
    samples, checks, per = layers.run(_plan(built, ids, shapes), timing, 3, log=lambda *_: None)
    assert (checks.status == "ok").all() and len(checks) == 2 * (3 + 2)  # M = 16: not the one-token build
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    assert set(samples.weights) == {"cold", "warm"}  # 32 MiB: in an H100's or H200's L2
    cold = samples[samples.weights == "cold"]
    assert (cold.copies * 4096 * 4096 * 2 >= 3 * l2).all() and set(cold["round"]) == {1, 2, 3, 4}
    n = cold.groupby(["M", "kernel"]).size()
    assert n[(1, "bf16_stream_max_m1")] == 4 and (16, "bf16_stream_max_m1") not in n
    assert (samples.us > 0).all() and per.members.tolist() == [3, 2]
    assert per.heat_rounds.tolist()[0] == 0 and per.heat_rounds.tolist()[1] > 0  # heat from 16 tokens on
    assert per.heat_s.tolist()[0] == 0 and per.heat_s.tolist()[1] >= 0.2
    # the heat past its seconds asks NVML where the card stands against its cap: never "time" (no NVML) on a GPU
    assert per.heat_end.tolist()[0] == "" and per.heat_end.tolist()[1] in {"cap", "below", "limit"}
    assert per.heat_s.tolist()[1] < 2.0 + 0.1  # heat_max_s, the default, at most (and one round)


def test_a_member_that_fails_its_check_is_a_row_and_is_not_timed(built, monkeypatch):
    class Silent:  # binds a product that writes nothing: its output stays NaN
        variant, _geom = built["cublas_bf16"].variant, None

        def bind(self, *arrays, **_):
            return lambda: None

    members = {
        "silent": layers.Member("silent", Silent()),
        "cublas_bf16": layers.Member("cublas_bf16", built["cublas_bf16"]),
    }
    monkeypatch.setattr(layers, "_members", lambda plan: members)
    shapes = [{"layer": "x", "M": 3, "N": 100, "K": 64}]
    samples, checks, _ = layers.run(
        {"kernels": {}, "shapes": shapes}, {"samples": 3, "warmup": 0}, 1, log=lambda *_: None
    )
    bad = checks[checks.kernel == "silent"]
    assert bad.status.tolist() == ["failed"] and "NaN" in bad.reason.iloc[0]
    assert set(samples.kernel) == {"cublas_bf16"}


@pytest.fixture(scope="module")
def read_cubin(tmp_path_factory, arch):
    micro = catalog.microbenchmarks()["read_stream"]
    out = tmp_path_factory.mktemp("read_stream")
    build.build_file(paths.KERNELS / micro["file"], micro["entries"], arch, out)
    return out / "kernel.cubin"


def test_the_read_rate_checks_its_sums_and_reads_near_the_cards_rate(read_cubin):
    read = reads.read_rate(read_cubin, log=lambda *_: None)
    assert read.ok.all() and len(read) == len(reads.READ_PATTERNS) + 1
    assert np.isfinite(read.bytes_per_s).all() and (read.bytes_per_s > 0).all()
    assert read.bytes.max() >= 2**31  # 2 GiB: several times any L2


def test_a_weight_read_alone_checks_its_sums_and_is_timed_cold(read_cubin):
    """Two weights (8 MiB and one of 4097 rows of 1032: an odd last row for two rows a block), each read by one
    and by two rows a block, cold copies over 3 times the L2, each sample a graph of launches: every kept sample
    timed with its sums checked; a K that is not a multiple of 8 is left out."""
    weights = [("small", 1024, 4096), ("odd", 4097, 1032), ("ragged", 64, 100)]
    c = reads.ceiling(read_cubin, weights, {"samples": 3, "warmup": 1}, log=lambda *_: None)
    assert set(c.layer) == {"small", "odd"} and c.ok.all()
    patterns = ("read_rows", "read_rows2") + (("read_rows2_pdl",) if reads.overlaps() else ())
    assert c.groupby(["layer", "pattern"]).size().to_dict() == {
        (layer, p): 3 for layer in ("odd", "small") for p in patterns
    }
    assert (c.us > 0).all() and (c.batch >= c.copies).all() and (c.copies >= 2).all()
    l2 = cupy_l2()
    assert (c.bytes * c.copies >= 3 * l2).all()


def test_a_read_that_misses_rows_fails_its_sums_and_is_not_timed(read_cubin, monkeypatch):
    """The sums can fail: a read of all rows but the last block's (one or two rows) is refused, no time kept."""
    real = reads.WeightRead.__init__

    def short(self, fn, n, k, out, rows=1, pdl=False):
        real(self, fn, n - rows, k, out, rows, pdl)

    monkeypatch.setattr(reads.WeightRead, "__init__", short)
    c = reads.ceiling(read_cubin, [("short", 512, 4096)], {"samples": 2, "warmup": 0}, log=lambda *_: None)
    # one row a block, two, and two launched with PDL
    assert c.ok.tolist() == [False] * (2 + reads.overlaps()) and c.us.isna().all()


def cupy_l2() -> int:
    import cupy

    return cupy.cuda.Device().attributes["L2CacheSize"]


def test_the_dispatch_step_times_the_dispatcher_and_the_reference_only(built, monkeypatch):
    """With a rule and a `timed` list (the dispatch step: cuBLAS BF16), every kernel is loaded for the rule to pick
    from, and only the dispatcher (its pick checked again) and the reference are timed."""
    ids = ["bf16_stream_max_m1", "bf16_stream_mma_w8", "cublas_bf16"]
    members = {i: layers.Member(i, built[i], layers.max_m(built[i].variant)) for i in ids}
    members["dispatch"] = layers.Member("dispatch")
    monkeypatch.setattr(layers, "_members", lambda plan: members)
    rule = {"m_weight": 4.0, "points": [{"layer": "out", "M": 1, "N": 4096, "K": 4096, "ranking": ids[:2]}]}
    shapes = [{"layer": "out", "M": 1, "N": 4096, "K": 4096}, {"layer": "out", "M": 5, "N": 4096, "K": 4096}]
    plan = {"kernels": {}, "shapes": shapes, "timed": ["cublas_bf16"], "dispatch": rule}
    samples, checks, _ = layers.run(plan, {"samples": 3, "warmup": 1, "sample_ms": 0.5}, 5, log=lambda *_: None)
    assert set(samples.kernel) == {"dispatch", "cublas_bf16"} and (checks.status == "ok").all()
    picked = samples[samples.kernel == "dispatch"].groupby("M").picks.first().to_dict()
    assert picked == {1: "bf16_stream_max_m1", 5: "bf16_stream_mma_w8"}  # 5 tokens: past the one-token build


def test_the_fp32_steps_check_and_time_the_ladders_kernels_against_sgemm(tmp_path, arch, monkeypatch):
    """FP32 through the same step (op matmul, the weight as B = K x N): splitk's builds and cuBLAS SGEMM checked
    at odd shapes (a cluster build's k split too), timed in the same rounds; then a rule picks among them."""
    ids = ["splitk_b32x48", "splitk_b32x48c2", "cublas"]
    members = {}
    for vid in ids:
        v = catalog.from_id(vid)
        binary = None
        if v.is_cuda:
            build.build(v, arch, tmp_path / vid)
            binary = tmp_path / vid / v.binary_name
        members[vid] = layers.Member(vid, Launcher(v, binary))
    monkeypatch.setattr(layers, "_members", lambda plan: members)
    shapes = [{"layer": "held-out", "M": 333, "N": 517, "K": 129}, {"layer": "held-out", "M": 4097, "N": 33, "K": 4095}]
    plan = {"kernels": {}, "shapes": shapes, "op": "matmul"}
    samples, checks, per = layers.run(plan, {"samples": 3, "warmup": 1, "sample_ms": 0.5}, 9, log=lambda *_: None)
    assert (checks.status == "ok").all() and len(checks) == 2 * 2 * 3  # two checks, two shapes, three members
    assert set(samples.kernel) == set(ids) and set(samples.weights) == {"cold", "warm"}  # B of 267 KB, 540 KB
    members["dispatch"] = layers.Member("dispatch")
    rule = {"m_weight": 1.0, "points": [{"layer": "fit", "M": 8192, "N": 32, "K": 8192, "ranking": ids[1:2]}]}
    plan |= {"timed": ["cublas"], "dispatch": rule, "shapes": shapes[1:]}
    samples, checks, _ = layers.run(plan, {"samples": 3, "warmup": 1, "sample_ms": 0.5}, 9, log=lambda *_: None)
    assert set(samples.picks) == {"splitk_b32x48c2", "cublas"} and (checks.status == "ok").all()
