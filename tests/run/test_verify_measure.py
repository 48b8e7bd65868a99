import numpy as np
import pytest

from gpumm.run import measure, operations, verify


def product(seed, M, N, K):
    A, B = measure.inputs(seed, M, N, K)
    return A, B, (A @ B).astype(np.float32)


def test_inputs_are_seeded_random_and_never_zero():
    A1, B1 = measure.inputs(7, 33, 17, 9)
    A2, _ = measure.inputs(7, 33, 17, 9)
    A3, _ = measure.inputs(8, 33, 17, 9)
    assert A1.shape == (33, 9) and B1.shape == (9, 17) and A1.dtype == np.float32
    assert np.array_equal(A1, A2) and not np.array_equal(A1, A3)
    assert np.count_nonzero(A1) == A1.size and -1 <= A1.min() and A1.max() < 1


@pytest.mark.parametrize("shape", [(1, 64, 7), (33, 17, 129), (128, 128, 128)])
def test_float32_product_passes(shape):
    A, B, C = product(1, *shape)
    ref, abs_ref, where = verify.reference(A, B, 1 << 30)
    check = verify.compare(C, ref, abs_ref, shape[2], where)
    assert check.ok and where == "cpu_f64" and 0 < check.max_rel_err < check.tolerance


def test_an_unwritten_element_fails():
    A, B, C = product(2, 16, 16, 16)
    C[3, 5] = np.nan
    check = verify.compare(C, *verify.reference(A, B, 1 << 30)[:2], 16, "cpu_f64")
    assert not check.ok and "1 elements NaN" in check.reason


def test_a_wrong_index_fails():
    A, B, _ = product(3, 24, 24, 24)
    wrong = (A @ B.T).astype(np.float32)  # B read transposed
    check = verify.compare(wrong, *verify.reference(A, B, 1 << 30)[:2], 24, "cpu_f64")
    assert not check.ok and check.max_rel_err > 1e-2


def test_a_missed_edge_fails():
    A, B, C = product(4, 20, 20, 20)
    C[:, -1] = (A[:, :-4] @ B[:-4, -1]).astype(np.float32)  # last column skipped the last 4 terms
    assert not verify.compare(C, *verify.reference(A, B, 1 << 30)[:2], 20, "cpu_f64").ok


def test_rounding_tolerance_is_64_units_whatever_k():
    assert verify.tolerance(1) == verify.tolerance(16384) == pytest.approx(64 * 2**-24)


def test_shapes_are_unique_and_smallest_work_first():
    shapes = measure.shapes_from([256, 16, 256], [[333, 517, 129], [16, 16, 16]])
    assert shapes == [(16, 16, 16), (256, 256, 256), (333, 517, 129)]


def _cpu_blas(corrupt: bool = False):
    """cpu_blas's launcher; with ``corrupt`` its product adds 1 to C[0, 0] after computing it."""
    from gpumm.run import launch
    from gpumm.setup import catalog

    launcher = launch.Launcher(catalog.from_id("cpu_blas"))
    if corrupt:
        bind = launcher.bind

        def bad_bind(*arrays, **kw):
            bound = bind(*arrays, **kw)
            multiply = bound.multiply

            def wrong():
                multiply()
                arrays[-1][0, 0] += 1

            bound.multiply = wrong
            return bound

        launcher.bind = bad_bind
    return launcher


@pytest.mark.parametrize("shape", [(33, 17, 9), (1, 4096, 7)])
def test_the_matmul_check_passes_a_right_product_and_keeps_its_arrays(shape):
    from gpumm.run import memory, operations

    checked = operations.get("matmul").check(_cpu_blas(), memory.HostMemory(), 5, 1 << 27, shape)
    assert checked.exact.ok and checked.exact.max_rel_err == 0 and checked.rounding.ok
    placed, C, host, _ = checked.arrays
    assert C.shape == shape[:2] and [a.shape for a in host] == [shape[::2], shape[:0:-1]]


def test_the_matmul_check_fails_one_wrong_element_exactly_and_skips_the_rounding_check():
    from gpumm.run import memory, operations

    checked = operations.get("matmul").check(_cpu_blas(corrupt=True), memory.HostMemory(), 6, 1 << 27, (16, 16, 16))
    assert not checked.exact.ok and not checked.rounding.ok and "exact check failed" in checked.rounding.reason


def test_the_bf16_operation_checks_against_the_product_of_the_bf16_values():
    from gpumm.run import operations

    op = operations.get("matmul_bf16")
    A, Bt = op.inputs(False, 9, 5, 3, 16, np)
    assert A.dtype == np.uint16 and A.shape == (5, 16) and Bt.shape == (3, 16)
    ref, abs_ref, where = op.reference([A, Bt], 1 << 27, absolute=True)
    a, bt = verify.bf16_values(A), verify.bf16_values(Bt)
    assert where == "cpu_f64" and np.array_equal(ref, a.astype(np.float64) @ bt.T.astype(np.float64))
    assert np.array_equal(abs_ref, np.abs(a).astype(np.float64) @ np.abs(bt.T).astype(np.float64))
    E = op.inputs(True, 9, 5, 3, 16, np)
    values = [verify.bf16_values(w) for w in E]
    assert all(np.all(v == np.round(v)) and np.abs(v).max() <= verify.EXACT_MAGNITUDE for v in values)


def test_a_grid_of_its_own_is_for_the_bf16_kernels_only():
    """Launcher.bind's ``grid`` (an exploration's BF16 build on blocks of its own) is refused for another kernel,
    whose launch the catalog alone describes."""
    A, B, C = (np.ones((4, 4), dtype=np.float32) for _ in range(3))
    launcher = _cpu_blas()
    launcher.bind(A, B, C)()
    assert (C == 4).all()
    with pytest.raises(ValueError, match="BF16 kernels only"):
        launcher.bind(A, B, C, grid=(1,))


def _bf16_product(drop_last: int = 0, skip_row: bool = False):
    """bind(A, Bt, C) for the BF16 operation's checked: C = A·Btᵀ from the BF16 values in FP32 on the CPU; ``drop_last``
    terms of K left out, or (``skip_row``) the last row of C left unwritten."""

    def bind(A, W, C):
        def launch():
            a, w = verify.bf16_values(A), verify.bf16_values(W)
            k = a.shape[1] - drop_last
            out = (a[:, :k].astype(np.float32) @ w[:, :k].astype(np.float32).T).astype(np.float32)
            C[: C.shape[0] - int(skip_row)] = out[: C.shape[0] - int(skip_row)]

        return launch

    return bind


def _coarse_product(bind_inner):
    """A product that reads its inputs one mantissa bit short (BF16's 8 significant bits cut to 7): exact on the
    exact check's small integers, wrong by far more than the rounding check allows on random values."""

    def bind(A, W, C):
        cut = np.uint16(0xFFFE)
        return bind_inner(A & cut, W & cut, C)

    return bind


@pytest.mark.parametrize("shape", [(1, 64, 4096), (16, 96, 136), (5, 33, 8)])
def test_bf16_checked_passes_a_right_product_and_names_a_wrong_one(shape):
    checked = operations.get("matmul_bf16").checked
    assert checked(_bf16_product(), *shape, np) == ""
    assert checked(_bf16_product(drop_last=1), *shape, np).startswith("exact check")
    assert "NaN" in checked(_bf16_product(skip_row=True), *shape, np)
    assert checked(_coarse_product(_bf16_product()), *shape, np).startswith("rounding check")
