"""The race on the tensor cores (issue 30) on the CPU: BF16 words, the rungs' builds and what their SASS holds, the
geometry each cubin describes against the catalog, and the variants left out on a GPU that is not a Hopper."""

import collections
import shutil

import numpy as np
import pytest

from gpumm.build import loops
from gpumm.build import nvcc as build
from gpumm.run import hopper, operations, verify
from gpumm.setup import catalog, config

BF16 = [v for v in catalog.expand({n: {} for n, f in catalog.load().items()}) if v.op == "matmul_bf16"]
KERNELS = [v for v in BF16 if v.is_cuda]
RUNGS = [v for v in KERNELS if "MAX_M" not in dict(v.defines)]  # the race's; the model's weight streams take MAX_M


def test_bf16_words_round_to_nearest_even_and_hold_their_values_exactly():
    x = np.float32([1.0, -2.5, 3.015625, 1.00390625, 1.01171875, 0.1])  # 1 + 2^-8 is a tie: to even (1.0)
    words = verify.bf16_words(x)
    assert words.dtype == np.uint16
    back = verify.bf16_values(words)
    assert back[:3].tolist() == [1.0, -2.5, 3.015625]  # exact in BF16 (8 significant bits)
    assert back[3] == 1.0 and back[4] == np.float32(1.015625)  # ties to even, both ways
    assert abs(back[5] - 0.1) <= 2**-9 * 0.1  # half an ulp of 8 bits at most
    assert (verify.bf16_words(back) == words).all()  # a BF16 value rounds to itself


def test_bf16_inputs_are_exact_integers_or_fresh_values_in_the_k_major_layout():
    A, Bt = verify.bf16_exact_inputs(7, 5, 3, 16)
    assert A.shape == (5, 16) and Bt.shape == (3, 16) and A.dtype == Bt.dtype == np.uint16
    a, bt = verify.bf16_values(A), verify.bf16_values(Bt)
    assert set(np.unique(np.abs(a))) <= {1, 2, 3, 4} and (np.round(bt) == bt).all()
    ref, _, _ = verify.reference(a, bt.T, 1 << 27, absolute=False)
    assert (ref == a.astype(np.float64) @ bt.T.astype(np.float64)).all()
    R, Rt = verify.bf16_random_inputs(7, 64, 32, 128)
    r = verify.bf16_values(R)
    assert np.count_nonzero(r) > 0.99 * r.size and np.abs(r).max() <= 1.0
    assert not (R == verify.bf16_random_inputs(8, 64, 32, 128)[0]).all()  # fresh per seed


def test_the_operation_takes_the_configs_bf16_shapes():
    op = operations.get("matmul_bf16")
    shapes = op.shapes({"bf16": {"sizes": [1024, 256], "shapes": [[7, 9, 8]]}})
    assert shapes == [(7, 9, 8), (256, 256, 256), (1024, 1024, 1024)]
    assert not op.memory_modes and not op.end_to_end and op.footprint == 8


@pytest.mark.parametrize("shape", [[7, 9, 12], [7, 9, 0]])
def test_a_bf16_shape_whose_k_the_tma_cannot_read_is_refused(shape):
    line = config.explain_sections(bf16={"sizes": [256], "shapes": [shape]})
    assert line is not None and line.startswith("config: bf16.shapes[0][2] = ")


def test_hopper_rungs_are_left_out_on_other_gpus():
    arch = {v.family: v.arch for v in BF16}
    assert arch["bf16_wmma"] is None and arch["bf16_mma"] is None and arch["cublas_bf16"] is None
    assert {arch[f] for f in ("bf16_wgmma", "bf16_warpspec", "bf16_persistent", "bf16_cluster")} == {"sm_90a"}
    by = {v.family: v for v in BF16}
    assert catalog.runs_on(by["bf16_wgmma"], "sm_90") and not catalog.runs_on(by["bf16_wgmma"], "sm_80")
    assert catalog.runs_on(by["bf16_wmma"], "sm_80") and catalog.runs_on(by["bf16_mma"], "sm_89")


def test_a_cluster_build_needs_sm_90_without_changing_its_digest():
    """splitk_b32x48c2 launches a thread-block cluster: left out before compute capability 9.0 (its build would
    not compile there), kept on 9.0 and later; `needs` is not in the digest (it says where, not what it runs)."""
    import dataclasses

    c2, c1 = catalog.from_id("splitk_b32x48c2"), catalog.from_id("splitk_b32x48")
    assert c2.needs == "sm_90" and c1.needs is None and "needs" not in dict(c2.defines)
    assert not catalog.runs_on(c2, "sm_80") and catalog.runs_on(c2, "sm_90") and catalog.runs_on(c2, "sm_100")
    assert catalog.runs_on(c1, "sm_80")
    assert dataclasses.replace(c2, needs=None).digest() == c2.digest()


def test_an_sm_90a_build_names_its_target_in_the_gencode_form():
    cmd = build.command("k.cu", "sm_90a", "k.cubin", "cubin")
    assert "-gencode=arch=compute_90a,code=sm_90a" in cmd and not any(c.startswith("-arch") for c in cmd)
    assert "-gencode=arch=compute_90a,code=compute_90a" in build.command("k.cu", "sm_90a", "k.ptx", "ptx")
    assert "-arch=sm_90" in build.command("k.cu", "sm_90", "k.cubin", "cubin")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: cannot compile the kernels here")
    out = {}
    for v in KERNELS:
        d = tmp_path_factory.mktemp(v.id)
        out[v.id] = (v, build.build(v, "sm_90", d), d)
    return out


def test_each_rung_compiles_to_the_instruction_it_is_about(built):
    """WMMA and mma.sync are HMMA; from the wgmma rung on, HGMMA and no HMMA (Hopper's path); no spills."""
    if loops.cuobjdump() is None:
        pytest.fail("cuobjdump is not installed: install the test extra (pip install -e '.[test]')")
    for vid, (v, report, d) in built.items():
        ops = loops.opcodes((d / "kernel.sass").read_text())
        hgmma, hmma = sum(o.startswith("HGMMA") for o in ops), sum(o.startswith("HMMA") for o in ops)
        ffma = sum(o.startswith("FFMA") for o in ops)
        if v.family in ("bf16_stream", "bf16_stream_rows2", "bf16_stream_pdl"):
            # the weight stream on the CUDA cores: FP32 FMAs, no tensor core
            assert ffma > 0 and hmma == 0 and hgmma == 0, (vid, ffma, hmma, hgmma)
        elif v.family == "bf16_stream_mma":  # on the tensor cores through mma.sync, as rung 2
            assert hmma > 0 and hgmma == 0, (vid, hgmma, hmma)
        else:
            assert (hgmma > 0 and hmma == 0) if v.arch == "sm_90a" else (hmma > 0 and hgmma == 0), (vid, hgmma, hmma)
        assert report["spill_store_bytes"] == 0 and not any(o.startswith(("LDL", "STL")) for o in ops), vid


TMA_STREAMS = ("bf16_stream_tma", "bf16_stream_tma_pdl")


def test_the_tma_stream_loads_the_weight_evict_first_and_the_tokens_without_a_hint(built):
    """bf16_stream_tma: each stage's KSUB boxes of the weight carry the L2 cache hint (a policy made evict first),
    its KSUB boxes of the tokens none; in the SASS, UTMALDG with a cache-policy descriptor for the weight alone.
    A PDL build has the loads twice: its first stages' weight and tokens apart (before and after the wait), then
    the stages' loads as without."""
    streams = [(v, d) for v, _, d in built.values() if v.family in TMA_STREAMS]
    assert {v.family for v, _ in streams} == set(TMA_STREAMS), "a TMA stream family has no build in the catalog"
    for v, d in streams:
        ksub, sites = int(dict(v.defines)["KSUB"]), 1 + int(dict(v.defines)["PDL"])
        ptx = (d / "kernel.ptx").read_text()
        assert "createpolicy.fractional.L2::evict_first" in ptx, v.id
        loads = [ln for ln in ptx.splitlines() if "cp.async.bulk.tensor.2d" in ln]
        hinted = [ln for ln in loads if ".L2::cache_hint" in ln]
        assert (len(hinted), len(loads) - len(hinted)) == (sites * ksub, sites * ksub), (v.id, len(hinted), len(loads))
        sass = [ln for ln in (d / "kernel.sass").read_text().splitlines() if "UTMALDG" in ln]
        assert sum("desc[" in ln for ln in sass) == sites * ksub and len(sass) == 2 * sites * ksub, (v.id, sass)


def test_a_pdl_build_lets_the_next_launch_start_and_waits_before_the_tokens(built):
    """PDL = 1 (kernels/matmul_bf16/pdl.cuh): the cubin holds bf16_pdl = 1 (the launcher then launches it with
    programmatic dependent launch), its SASS lets the next grid start (PREEXIT) and waits for the grid before
    (ACQBULK): the TMA stream twice (the producer before the tokens, the consumers before C), with PDL_L2 stages
    asked of the L2 as KSUB bulk tensor prefetches; the CUDA-core stream once, after it has asked for the HOLD
    steps of each of its ROWS rows (evict-first loads of the weight) and before any other load. Every other BF16
    build has none of it."""
    if loops.cuobjdump() is None:
        pytest.skip("cuobjdump is not on PATH: no SASS to read")
    seen = set()
    for vid, (v, _, d) in built.items():
        defines, sass = dict(v.defines), (d / "kernel.sass").read_text()
        heads = collections.Counter(o.split(".")[0] for o in loops.opcodes(sass))
        count = heads.__getitem__
        pdl, prefetches, tma = defines.get("PDL", 0), count("UTMAPF"), v.family in TMA_STREAMS
        assert hopper.pdl(d / "kernel.cubin") == bool(pdl), vid
        assert (count("PREEXIT"), count("ACQBULK")) == ((1, 2 if tma else 1) if pdl else (0, 0)), vid
        assert prefetches == (defines["KSUB"] if pdl and defines.get("PDL_L2") else 0), (vid, prefetches)
        if pdl:
            assert not tokens_before_the_wait(sass), vid
        if pdl and not tma:
            first = sass.split("ACQBULK")[0]
            held = [ln for ln in first.splitlines() if "LDG" in ln]
            assert len(held) == defines["HOLD"] * defines["ROWS"] and all(".EF" in ln for ln in held), (vid, held)
        seen.add((pdl, bool(prefetches), tma))
    assert seen >= {(0, False, True), (1, False, True), (1, True, True), (1, False, False)}, seen


def tokens_before_the_wait(sass: str) -> list[str]:
    """The loads of a PDL build's SASS that may read the tokens (the kernel before's output) before the producer's
    wait (its last ACQBULK in the listing, after the consumers'): copies by the TMA without the weight's cache
    policy, and reads through the read-only path (LDG...CONSTANT: ptxas moves those above griddepcontrol.wait, as
    an exploration's mma.sync stream showed, data/checks/model-decode-boundary-h200)."""
    lines = [ln for ln in sass.splitlines() if ln.strip().startswith("/*")]
    waits = [i for i, ln in enumerate(lines) if "ACQBULK" in ln]
    before = lines[: waits[-1]] if waits else lines
    return [ln for ln in before if ("UTMALDG" in ln and "desc[" not in ln) or ("LDG" in ln and "CONSTANT" in ln)]


def test_the_token_check_finds_a_load_before_the_wait():
    """tokens_before_the_wait flags an unhinted TMA copy or a read-only load above the wait, and nothing after."""
    wait, weight = "        /*0100*/ ACQBULK ;", "        /*00c0*/ UTMALDG.2D [UR4], [UR6], desc[UR8] ;"
    token, nc = (
        "        /*00d0*/ UTMALDG.2D [UR4], [UR6] ;",
        "        /*00e0*/ LDG.E.128.CONSTANT R8, desc[UR6][R2.64] ;",
    )
    assert tokens_before_the_wait("\n".join([weight, wait, token, nc])) == []
    assert tokens_before_the_wait("\n".join([weight, token, wait])) == [token]
    assert tokens_before_the_wait("\n".join([nc, wait, wait])) == [nc]


def test_the_geometry_each_cubin_describes_agrees_with_the_catalog(built):
    """The launcher reads threads, shared memory and TMA boxes from the cubin, the grid from the catalog: they
    must describe the same kernel (threads, one block per tile or per SM, boxes the TMA can copy)."""
    for vid, (v, _, d) in built.items():
        g = hopper.geometry(d / "kernel.cubin")
        bx, by, _ = v.block_dims()
        assert g["threads"] == bx * by, vid
        assert g["smem"] <= 227 * 1024, vid  # a Hopper SM's shared memory for one block
        if v in RUNGS and g["tma"]:  # the race's rungs: the launcher's 256 bytes an L2 miss
            assert g["l2_fetch"] == 0 and hopper.promotion(g) == 3, vid
        if v not in RUNGS and g["tma"]:  # the TMA's weight stream: a block per 64 weight rows, 16 tokens a box
            assert g["rung"] == 0 and (g["abox"], g["bbox"], g["bn"], g["cluster"]) == (16, 64, 64, 1), vid
            # its maps fetch 128 bytes a miss into the L2, a box row (data/checks/model-decode-promotion-h200)
            assert g["l2_fetch"] == 128 and hopper.promotion(g) == 2, vid
            assert g["bk"] * 2 == 128 and v.grid_dims(1, 4097, 64)[:2] == (-(-4097 // 64), 1), vid
            continue
        if v not in RUNGS:  # a weight stream: pointers, no tile of C, not a rung; a block per 16 rows (or ROWS)
            assert g["tma"] == 0 and g["rung"] == 0 and g["bm"] == 0, vid
            rows = dict(v.defines).get("ROWS", 16)
            assert v.grid_dims(1, 4097, 64)[:2] == (-(-4097 // rows), 1), vid
            continue
        for M, N in ((4096, 4096), (7, 9), (4097, 33)):
            tiles = -(-M // g["bm"]) * -(-N // g["bn"])
            gx, gy, _ = v.grid_dims(M, N, 64, sms=132)
            if g["cluster"] > 1:
                assert gx % g["cluster"] == 0 and gx <= 132, vid
            elif g["persistent"]:
                assert (gx, gy) == (min(132, tiles), 1), vid
            else:
                assert gx * gy == tiles, vid
        if g["tma"]:
            assert 0 < g["abox"] <= 256 and 0 < g["bbox"] <= 256 and g["bk"] * 2 == 128, vid  # 128-byte rows
            assert hopper.supports(g, 64, 64, 12) and hopper.supports(g, 64, 64, 16) is None


def test_the_geometry_is_read_by_member_name_from_its_declaration(built, tmp_path):
    """Issue 38: a rung sets its bf16_geom member by member by name; the launcher reads the names from
    geometry.cuh's struct and the values from the cubin, so a member added or moved there moves here too."""
    names = hopper.fields()
    assert names[:4] == ("rung", "bm", "bn", "bk") and names[-3:] == ("cbox_cols", "cbox_rows", "l2_fetch")
    rungs = set()
    for vid, (v, _, d) in built.items():
        g = hopper.geometry(d / "kernel.cubin")
        assert tuple(g) == names, vid
        defines = {k.lower(): value for k, value in v.defines}
        assert all(g[k] == defines[k] for k in ("bm", "bn", "stages", "gm", "store") if k in defines), vid
        rungs.add(g["rung"])
    assert rungs == set(range(1, len(RUNGS) + 1)) | {0}  # every rung says which it is; the weight streams 0
    bad = tmp_path / "geometry.cuh"
    bad.write_text("struct Bf16Geom {\n    int rung;\n    float bm;  // not an int\n};\n")
    with pytest.raises(hopper.HopperError, match="float bm"):
        hopper.fields(bad)
    bad.write_text("struct Other { int rung; };\n")
    with pytest.raises(hopper.HopperError, match="no struct Bf16Geom"):
        hopper.fields(bad)


def test_a_member_set_out_of_its_declared_order_does_not_compile(tmp_path):
    """The compiler holds a rung's BF16_GEOM to the declaration's order: a member set out of order, or one the
    struct does not have, is a build error, not a value read under another name."""
    try:
        nvcc = build.nvcc()
    except build.BuildError as exc:
        pytest.skip(str(exc))
    import subprocess

    header = catalog.paths.KERNELS / "matmul_bf16" / "geometry.cuh"
    for body, said in ((".bm = 128, .rung = 3", "out-of-order"), (".rung = 3, .tile = 128", "has no field")):
        src = tmp_path / "k.cu"
        src.write_text(f'#include "{header}"\nBF16_GEOM({body});\n')
        out = subprocess.run(
            [nvcc, "-std=c++17", "-c", "-o", str(tmp_path / "k.o"), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode != 0 and said in out.stdout + out.stderr, out.stdout + out.stderr


def test_a_kernel_asks_the_launcher_for_an_l2_fetch_it_can_make():
    assert [hopper.promotion({"l2_fetch": b}) for b in (0, 64, 128, 256)] == [3, 1, 2, 3]
    with pytest.raises(hopper.HopperError, match="64, 128 or 256"):
        hopper.promotion({"l2_fetch": 96})
