"""The pages job: every page notebook runs in one kernel, each from an emptied namespace; a failing page
stops the run, naming itself, and leaves no output of its own."""

import nbformat
import pytest

from gpumm.report import execute


def _page(path, *sources):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('tables_dir = "unset"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, *(nbformat.v4.new_code_cell(s) for s in sources)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _stdout(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


@pytest.mark.slow
def test_pages_share_a_kernel_but_not_their_names(tmp_path):
    first = _page(tmp_path / "first.ipynb", "leak = 41\nimport math\nprint('first', tables_dir, leak + 1)")
    second = _page(
        tmp_path / "second.ipynb",
        "import sys\nprint('second', tables_dir, 'leak' in dir(), 'math' in dir(), 'math' in sys.modules)",
    )
    reads_leak = _page(tmp_path / "reads_leak.ipynb", "print(leak)")
    executed, html = tmp_path / "executed", tmp_path / "html"

    with pytest.raises(execute.PageError) as failed:
        execute.run([first, second, reads_leak], executed, html, {"tables_dir": "results/tables"})

    # the page that relied on another page's name failed, by name, and wrote nothing
    assert "reads_leak" in str(failed.value) and "NameError" in str(failed.value)
    assert "cell 2 (the one starting 'print(leak)')" in str(failed.value)  # as committed, not the kernel's count
    assert not (executed / "reads_leak.ipynb").exists() and not (html / "reads_leak.html").exists()
    # the pages before it ran in one kernel (modules stay imported) from an emptied namespace, with the
    # parameters papermill injected, and were written without the reset cell
    one, two = (nbformat.read(executed / f"{n}.ipynb", as_version=4) for n in ("first", "second"))
    assert "first results/tables 42" in _stdout(one)
    assert "second results/tables False False True" in _stdout(two)
    for nb in (one, two):
        assert not any(execute.RESET_TAG in c.metadata.get("tags", []) for c in nb.cells)
        assert "%reset" not in "".join(c.source for c in nb.cells)
    assert (html / "first.html").is_file() and (html / "second.html").is_file()
    assert not list(executed.glob("*.tmp")) and not list(html.glob("*.tmp"))


def test_a_long_cell_is_cut_short_with_the_whole_text_a_hover_away():
    from gpumm.report.figures import LONG, _cell

    name = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel"
    cut = _cell(name)
    assert cut.startswith(f'<span title="{name}">') and cut.endswith("…</span>") and f">{name[: LONG - 1]}…" in cut
    label = "transpose, one element per thread, global to global (reads along rows, writes along columns)"
    assert _cell(label) == label  # words wrap: shown whole
    defines = "MAXRREG=32,BM=16,BN=64,BK=16,UNROLL_K=1,LAUNCH_BOUNDS=256"
    # after each comma, and after the underscores of a long word (11 characters or more)
    assert _cell(defines) == defines.replace(",", ",<wbr>").replace("LAUNCH_", "LAUNCH_<wbr>")
    assert _cell("sm_90") == "sm_90"  # a short word stays whole
    assert _cell(12345678) == "12345678" and _cell("1,234,567", wrap=False) == "1,234,567"  # a number never breaks
    # a variant's name as a column header may break after each underscore (the transposes' tables at 1400 px)
    assert _cell("transpose_rows_block_rows8") == "transpose_<wbr>rows_<wbr>block_<wbr>rows8"
    assert _cell("a<b & c") == "a&lt;b &amp; c"  # escaped
    assert _cell("16384×16384×1") == "16384×<wbr>16384×<wbr>1"  # a shape may break after each ×


def test_a_notebook_that_is_not_json_is_named_with_its_line_and_column(tmp_path):
    """Issue 37: a page notebook cut in half is named with the parser's line and column, not a traceback."""
    from gpumm.setup import paths

    nb = tmp_path / "ladder.ipynb"
    text = (paths.NOTEBOOKS / "ladder.ipynb").read_text()
    nb.write_text(text[: len(text) // 2])
    with pytest.raises(execute.Unreadable) as exc:
        execute.read(nb)
    lines = text[: len(text) // 2].count("\n")
    assert str(exc.value).startswith(f"{nb}:{lines + 1}:") and "not a notebook" in str(exc.value)
    nb.write_text("")
    with pytest.raises(execute.Unreadable, match=r"ladder.ipynb:1:1: not a notebook \(Expecting value\)"):
        execute.read(nb)
    assert execute.read(paths.NOTEBOOKS / "ladder.ipynb").cells
