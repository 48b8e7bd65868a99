"""Catalog kernels built otherwise, for tools/model/run.py (issue 40, exploration): the ``NAME@TAG`` builds.

Each TAG is a list of defines laid over the catalog entry's own; with ``--patch`` the patch (git diff of kernels/)
is applied for the builds and taken back after, whatever happens, so that the tree is left as it was. Every base
entry is built as it is too (``NAME``), and each ``NAME@TAG`` lands in OUT/NAME@TAG/kernel.cubin, where run.py's
``race`` (or ``next``) candidates look for it once OUT is copied into results/build on the GPU machine. With
``--candidates FILE`` the candidates file for run.py is written: at each of ``--tokens``, the bases, then their
tags, in the order given.

    python tools/model/tags.py OUT BASE[,BASE...] TAG:K=V[,K=V...] ... [--patch FILE] [--candidates FILE]
        [--tokens 1,16] [--kind race] [--arch sm_90a] [--ahead 1]

A TAG's name is letters, digits, '_', '.', '+' and '-'; so is each value. ``--arch``: for a base whose catalog
entry names none (the TMA streams name sm_90a themselves).

For instance (data/checks/model-decode-tokens-h200, call 2):

    python tools/model/tags.py results/carry/build bf16_stream_tma_pdl_k4s5e,bf16_stream_tma_pdl_k4s5el4 \
        s500:PDL_SLEEP0=500 s1000:PDL_SLEEP0=1000 --patch data/checks/model-decode-tokens-h200/sleep.patch \
        --candidates results/carry/cand.yaml
"""

import argparse
import contextlib
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from gpumm.build import nvcc  # noqa: E402
from gpumm.setup import catalog  # noqa: E402


class TagError(ValueError):
    """A TAG or a patch this tool cannot take (what and why)."""


WORD = re.compile(r"[A-Za-z0-9_.+-]+")


def parse_tag(text: str) -> tuple[str, dict[str, str]]:
    """``s500:PDL_SLEEP0=500,PDL_L2=4`` as (tag, defines)."""
    tag, sep, rest = text.partition(":")
    if not sep or not rest or not WORD.fullmatch(tag):
        raise TagError(f"{text!r}: a tag is NAME:K=V[,K=V...], NAME of letters, digits, '_', '.', '+' and '-'")
    defines = {}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.isidentifier() or not WORD.fullmatch(value):
            raise TagError(f"{text!r}: {item!r} is not K=V (V of letters, digits, '_', '.', '+' and '-')")
        defines[key] = value
    return tag, defines


def check_patch(patch: Path, root: Path = ROOT) -> Path:
    """``patch`` as an absolute path, once ``git apply --check`` says it applies to the tree at ``root``."""
    if not patch.is_file():
        raise TagError(f"{patch}: no such patch")
    patch = patch.resolve()
    check = subprocess.run(["git", "apply", "--check", str(patch)], cwd=root, capture_output=True, text=True)
    if check.returncode != 0:
        raise TagError(f"{patch} does not apply to this tree: {check.stderr.strip()}")
    return patch


@contextlib.contextmanager
def applied(patch: Path | None, root: Path = ROOT):
    """The tree at ``root`` with ``patch`` applied (``git apply``), taken back on the way out; nothing without one."""
    if patch is None:
        yield
        return
    patch = check_patch(patch, root)

    def stop(signum, frame):  # a kill (timeout's TERM, a closed terminal) unwinds through the finally below
        raise SystemExit(f"tags.py: stopped by signal {signum}")

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    applied_yet = False
    try:
        subprocess.run(["git", "apply", str(patch)], cwd=root, check=True, capture_output=True)
        applied_yet = True
        yield
    finally:
        try:
            if applied_yet:
                back = subprocess.run(["git", "apply", "-R", str(patch)], cwd=root, capture_output=True, text=True)
                if back.returncode != 0:
                    raise TagError(f"could not take {patch} back ({back.stderr.strip()}): run git apply -R {patch}")
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


def build(
    out: Path, bases: list[str], tags: list[tuple[str, dict[str, str]]], patch: Path | None, arch: str = "sm_90a"
) -> list[str]:
    """Each base as it is (before any patch) and with each tag's defines (the patch applied); the names built. A
    build that fails leaves no folder of its own behind."""
    if patch is not None:
        check_patch(patch)  # before anything is built
    variants = []
    for vid in bases:
        try:
            variants.append(catalog.from_id(vid))
        except (KeyError, ValueError) as exc:
            raise TagError(f"{vid}: not in the catalog ({exc})") from exc
    names = []
    for v in variants:
        with _whole(out / v.id):
            nvcc.build(v, v.arch or arch, out / v.id)
        names.append(v.id)
    with applied(patch):
        for v in variants:
            for tag, over in tags:
                flags = (*v.nvcc_flags, *(f"-D{k}={val}" for k, val in (dict(v.defines) | over).items()))
                dest = out / f"{v.id}@{tag}"
                with _whole(dest):
                    nvcc.compile_into(v.source, v.arch or arch, dest, flags, f"{v.id}@{tag}")
                names.append(dest.name)
    return names


@contextlib.contextmanager
def _whole(dest: Path):
    """A build into ``dest`` that leaves the folder whole or not at all."""
    shutil.rmtree(dest, ignore_errors=True)
    try:
        yield
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def candidates(names: list[str], tokens: list[int], kind: str, ahead: int = 1) -> str:
    """run.py's --candidates file: at each token count, every name as a ``kind`` candidate (a ``next`` one handed
    the weight of the launch ``ahead`` after it)."""
    extra = f"{{ahead: {ahead}}}" if kind == "next" and ahead != 1 else "{}"
    rows = "".join(f"- [{n}, race, {{}}]\n" if "@" not in n else f"- [{n}, {kind}, {extra}]\n" for n in names)
    return "".join(f"{m}:\n{rows}" for m in tokens)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("bases")
    p.add_argument("tags", nargs="+")
    p.add_argument("--patch", type=Path)
    p.add_argument("--candidates", type=Path)
    p.add_argument("--tokens", default="1,16")
    p.add_argument("--kind", default="race", choices=["race", "next"])
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--ahead", type=int, default=1, help="a next candidate: the launch whose weight it is handed")
    a = p.parse_args(argv)
    try:
        tokens = [int(t) for t in a.tokens.split(",")]
    except ValueError:
        print(f"tags.py: --tokens {a.tokens!r} is not a list of token counts (1,16)", file=sys.stderr)
        return 2
    try:
        tags = [parse_tag(t) for t in a.tags]
        names = build(a.out, a.bases.split(","), tags, a.patch, a.arch)
    except (TagError, nvcc.BuildError) as exc:
        print(f"tags.py: {exc}", file=sys.stderr)
        return 2
    if a.candidates:
        a.candidates.parent.mkdir(parents=True, exist_ok=True)
        a.candidates.write_text(candidates(names, tokens, a.kind, a.ahead))
    print("\n".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
