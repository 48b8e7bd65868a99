"""Build one CUDA variant with nvcc: .cubin, .ptx and the parsed resource report."""

import json
import shutil
import subprocess
from pathlib import Path

from gpumm import loops, ptxas
from gpumm.catalog import Variant

NVCC_FLAGS = ("-O3", "-lineinfo", "-std=c++17")


class BuildError(RuntimeError):
    """nvcc is missing or failed; the message holds its output."""


def nvcc() -> str:
    path = shutil.which("nvcc") or (
        Path("/usr/local/cuda/bin/nvcc") if Path("/usr/local/cuda/bin/nvcc").exists() else None
    )
    if not path:
        raise BuildError("nvcc not found on PATH: install the CUDA toolkit, or use mode: replay")
    return str(path)


def command(variant: Variant, arch: str, out: Path, target: str) -> list[str]:
    """The nvcc command line for one output (target: cubin | ptx)."""
    defines = [f"-D{k}={v}" for k, v in variant.defines]
    cmd = [
        nvcc(),
        f"-arch={arch}",
        f"-{target}",
        *NVCC_FLAGS,
        *variant.nvcc_flags,
        *defines,
        "-o",
        str(out),
        str(variant.source),
    ]
    if target == "cubin":
        cmd[3:3] = ["-Xptxas", "-v"]
    return cmd


def build(variant: Variant, arch: str, out_dir: Path) -> dict:
    """Compile ``variant`` into ``out_dir``; return its resource report.

    Writes kernel.cubin, kernel.ptx, kernel.sass (cuobjdump's disassembly, or
    one line saying why there is none), ptxas.log and resources.json. Outputs
    are written under temporary names and renamed at the end, so a failed
    build leaves nothing that looks finished.
    """
    if not variant.is_cuda:
        raise BuildError(f"{variant.id} is not a CUDA variant; nothing to build")
    out_dir.mkdir(parents=True, exist_ok=True)
    logs = []
    for target in ("cubin", "ptx"):
        tmp = out_dir / f"kernel.{target}.tmp"
        proc = subprocess.run(command(variant, arch, tmp, target), capture_output=True, text=True, check=False)
        logs.append(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise BuildError(f"nvcc failed for {variant.id} ({target}):\n{proc.stderr.strip()}")
    report = ptxas.parse(logs[0], variant.entry)
    report.update(
        variant=variant.id,
        defines=variant.defines_text(),
        digest=variant.digest(),
        nvcc_flags=" ".join((*NVCC_FLAGS, *variant.nvcc_flags)),
    )
    (out_dir / "ptxas.log").write_text(logs[0])
    (out_dir / "resources.json.tmp").write_text(json.dumps(report, indent=1))
    try:
        sass = loops.disassemble(out_dir / "kernel.cubin.tmp")
    except loops.LoopError as exc:  # no disassembler: the loop counts will say so
        sass = f"# no SASS: {exc}\n"
    (out_dir / "kernel.sass.tmp").write_text(sass)
    for name in ("kernel.cubin", "kernel.ptx", "kernel.sass", "resources.json"):
        (out_dir / f"{name}.tmp").replace(out_dir / name)
    return report
