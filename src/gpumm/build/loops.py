"""Count the instructions of a kernel's innermost loop in PTX and SASS (seed 000, S0-S35).

Seed 000 read the PTX of its kernels and counted the instructions of the main
loop and the share that were multiply-adds (63 with 16 MADs unrolled, 19 with
1 rolled). Here the same count is made mechanically, on the PTX and on the
machine code (SASS, from ``cuobjdump -sass``): a loop is the span from a
backward branch's target to the branch; the *innermost FMA loop* is an
innermost span holding a fused multiply-add (of several side by side, the one
with the most). When the compiler unrolled the dot-product loop completely,
that is the loop over tiles.
"""

import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, fields
from pathlib import Path

_PTX_LABEL = re.compile(r"^(\$\w+):")
_PTX_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$\w+);")
_SASS_LINE = re.compile(r"/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?P<text>[^;]*;)")
_SASS_BRANCH = re.compile(r"\bBRA(?:\.\w+)*\s+(?:`\(\.L_x_\d+\)|(0x[0-9a-f]+))")


class LoopError(ValueError):
    """No loop with a fused multiply-add in the code."""


@dataclass(frozen=True)
class Loop:
    instructions: int
    fma: int
    global_loads: int
    shared_loads: int
    branches: int

    @property
    def fma_share(self) -> float:
        return self.fma / self.instructions


def _innermost(spans: list[tuple[int, int]], is_fma) -> tuple[int, int]:
    """The loop a kernel spends its multiply-adds in.

    Loops holding a fused multiply-add that hold no other such loop are the
    innermost; when there are several (a loop the compiler unrolled by 4 and
    its remainder loop, side by side), the one with the most multiply-adds.
    """
    with_fma = [(s, e) for s, e in spans if any(is_fma(i) for i in range(s, e + 1))]
    if not with_fma:
        raise LoopError("no loop holding a fused multiply-add")
    inner = [a for a in with_fma if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in with_fma)]
    return max(inner, key=lambda se: (sum(1 for i in range(se[0], se[1] + 1) if is_fma(i)), -se[0]))


def ptx_loop(ptx: str, entry: str) -> Loop:
    """The innermost FMA loop of ``entry`` in PTX text."""
    body = _ptx_function(ptx, entry)
    instrs: list[str] = []
    labels: dict[str, int] = {}
    for raw in body:
        line = raw.split("//")[0].strip()
        m = _PTX_LABEL.match(line)
        if m:
            labels[m.group(1)] = len(instrs)
        elif line.endswith(";") and not line.startswith("."):
            instrs.append(line)
    spans = []
    for i, ins in enumerate(instrs):
        b = _PTX_BRANCH.search(ins)
        if b and b.group(1) in labels and labels[b.group(1)] <= i:
            spans.append((labels[b.group(1)], i))
    s, e = _innermost(spans, lambda i: instrs[i].startswith(("fma.", "mad.")) and ".f32" in instrs[i])
    loop = instrs[s : e + 1]
    return Loop(
        instructions=len(loop),
        fma=sum(1 for x in loop if x.startswith(("fma.", "mad.")) and ".f32" in x),
        global_loads=sum(1 for x in loop if x.startswith("ld.global")),
        shared_loads=sum(1 for x in loop if x.startswith("ld.shared")),
        branches=sum(1 for x in loop if _PTX_BRANCH.search(x)),
    )


def _ptx_function(ptx: str, entry: str) -> list[str]:
    lines = ptx.splitlines()
    start = next((i for i, ln in enumerate(lines) if re.search(rf"\.entry\s+{re.escape(entry)}\b", ln)), None)
    if start is None:
        raise LoopError(f"no .entry {entry} in the PTX")
    depth, out = 0, []
    for ln in lines[start:]:
        out.append(ln)
        depth += ln.count("{") - ln.count("}")
        if depth == 0 and "}" in ln:
            break
    return out


def _opcode(text: str) -> str:
    """The opcode of one SASS instruction's text, past its predicate (``@P0 FFMA R5, ...`` -> ``FFMA``)."""
    words = text.split()
    return words[1] if words[0].startswith("@") and len(words) > 1 else words[0]


def function_sass(sass: str, name: str) -> str | None:
    """The lines ``cuobjdump -sass`` prints for function ``name`` (from its ``Function :`` line to the next
    function's), or None where the text has no such function."""
    out, inside = [], False
    for line in sass.splitlines(keepends=True):
        if "Function :" in line:
            inside = line.split("Function :")[1].strip() == name
        if inside:
            out.append(line)
    return "".join(out) or None


def sass_loop(sass: str, entry: str) -> Loop:
    """The innermost FMA loop of ``entry`` in ``cuobjdump -sass`` text."""
    instrs: list[tuple[int, str]] = []
    inside = False
    for line in sass.splitlines():
        if "Function :" in line:
            inside = line.split("Function :")[1].strip() == entry
            continue
        m = _SASS_LINE.search(line) if inside else None
        if m:
            instrs.append((int(m.group("addr"), 16), m.group("text").strip()))
    if not instrs:
        raise LoopError(f"no SASS for function {entry}")
    index = {addr: i for i, (addr, _) in enumerate(instrs)}
    spans = []
    for i, (addr, text) in enumerate(instrs):
        b = _SASS_BRANCH.search(text)
        if b and b.group(1):
            target = int(b.group(1), 16)
            if target <= addr and target in index:
                spans.append((index[target], i))
    op = [_opcode(t) for _, t in instrs]
    s, e = _innermost(spans, lambda i: op[i].startswith("FFMA"))
    ops = op[s : e + 1]
    return Loop(
        instructions=len(ops),
        fma=sum(1 for o in ops if o.startswith("FFMA")),
        global_loads=sum(1 for o in ops if o.startswith("LDG")),
        shared_loads=sum(1 for o in ops if o.startswith("LDS")),
        branches=sum(1 for o in ops if o.startswith("BRA")),
    )


def cuobjdump() -> str | None:
    """cuobjdump on PATH, else the one PyPI's nvidia-cuda-cuobjdump installs."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        spec = importlib.util.find_spec("nvidia.cu13")  # namespace package of PyPI's CUDA wheels
    except ModuleNotFoundError:
        spec = None
    for base in (spec.submodule_search_locations or []) if spec else []:
        cand = Path(base) / "bin" / "cuobjdump"
        if cand.is_file():
            return str(cand)
    return None


def disassemble(cubin: Path) -> str:
    """SASS of a cubin (cuobjdump needs nvdisasm beside it)."""
    exe = cuobjdump()
    if exe is None:
        raise LoopError("cuobjdump not found: install the CUDA toolkit or pip install nvidia-cuda-cuobjdump")
    env = {**os.environ, "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run([exe, "-sass", str(cubin)], capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise LoopError(f"cuobjdump failed: {out.stderr.strip()[:300]}")
    return out.stdout


# Tensor-core instructions: the race to cuBLAS (issue 11) is FP32 FFMA only, so no rung may contain one.
# SASS: HMMA/IMMA/DMMA/BMMA (warp MMA), HGMMA/IGMMA/QGMMA/BGMMA (Hopper warpgroup MMA), UTC*MMA (tcgen05).
_SASS_TENSOR = re.compile(r"\b(?:[HIDBQ]MMA|[HIQB]GMMA|UTC\w*MMA)(?:\.[\w.]+)?\b")
# PTX: wmma.mma, mma.sync, wgmma.mma_async, tcgen05.mma
_PTX_TENSOR = re.compile(r"^\s*(?:@!?%\w+\s+)?(?:wmma\.mma|mma\.sync|wgmma\.mma_async|tcgen05\.mma)\b", re.M)


def opcodes(sass: str) -> list[str]:
    """Every instruction's opcode in ``cuobjdump -sass`` text, in order (predicates dropped)."""
    return [_opcode(m.group("text")) for m in _SASS_LINE.finditer(sass)]


def tensor_core_ops(ptx: str, sass: str) -> dict:
    """Tensor-core instructions in a build's PTX and SASS, and its FFMA count in SASS.

    ``sass_tensor_core`` and ``sass_ffma`` are None when there is no SASS (no
    cuobjdump where it was built); a FP32 FFMA kernel has 0 tensor-core
    instructions in both.
    """
    ops = opcodes(sass)
    has_sass = bool(ops)
    return {
        "ptx_tensor_core": len(_PTX_TENSOR.findall(ptx)),
        "sass_tensor_core": sum(1 for o in ops if _SASS_TENSOR.fullmatch(o)) if has_sass else None,
        "sass_ffma": sum(1 for o in ops if o.startswith("FFMA")) if has_sass else None,
    }


# the keys of analyse's record
COLUMNS = ["status", "reason"] + [
    f"{level}_{k}" for level in ("ptx", "sass") for k in [*(f.name for f in fields(Loop)), "fma_share"]
]


def analyse(ptx: str, sass: str, entry: str) -> dict:
    """PTX and SASS loop counts as one flat record, with status ok, or status missing and the reason."""
    try:
        found = (("ptx", ptx_loop(ptx, entry)), ("sass", sass_loop(sass, entry)))
    except LoopError as exc:
        return {"status": "missing", "reason": str(exc)}
    rec = {"status": "ok", "reason": ""}
    for level, loop in found:
        for k, v in asdict(loop).items():
            rec[f"{level}_{k}"] = v
        rec[f"{level}_fma_share"] = loop.fma_share
    return rec
