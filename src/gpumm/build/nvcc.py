"""Build one variant: a CUDA kernel with nvcc (.cubin, .ptx, SASS and the parsed
resource report), or a host C function with the system C compiler (a shared
object loaded through ctypes)."""

import shutil
import subprocess
from pathlib import Path

from gpumm.build import loops, ptxas
from gpumm.setup import files
from gpumm.setup.catalog import Variant

NVCC_FLAGS = ("-O3", "-lineinfo", "-std=c++17")
# the CPU baseline: optimised, but no -ffast-math (the sum keeps its order) and no -march (portable code)
CC_FLAGS = ("-O2", "-shared", "-fPIC", "-std=c11")


class BuildError(RuntimeError):
    """nvcc is missing or failed; the message holds its output."""


def nvcc() -> str:
    path = shutil.which("nvcc") or (
        Path("/usr/local/cuda/bin/nvcc") if Path("/usr/local/cuda/bin/nvcc").exists() else None
    )
    if not path:
        raise BuildError("nvcc not found on PATH: install the CUDA toolkit, or use mode: replay")
    return str(path)


def first_error(output: str) -> str:
    """nvcc's first error line (``file(line): error: ...``), else its first line, else 'no output'."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[0] if lines else "no output")


def command(source: Path, arch: str, out: Path, target: str, flags: tuple[str, ...] = ()) -> list[str]:
    """The nvcc command line for one output (target: cubin | ptx). An architecture-specific target (sm_90a:
    wgmma, setmaxnreg) is named in the -gencode form: nvcc 13.0's -arch=sm_90a also runs a plain sm_90 pass,
    which refuses those instructions."""
    verbose = ["-Xptxas", "-v"] if target == "cubin" else []
    if arch.endswith("a"):
        code = arch if target == "cubin" else f"compute_{arch[3:]}"
        target_flags = [f"-gencode=arch=compute_{arch[3:]},code={code}"]
    else:
        target_flags = [f"-arch={arch}"]
    return [nvcc(), *target_flags, f"-{target}", *verbose, *NVCC_FLAGS, *flags, "-o", str(out), str(source)]


def variant_flags(variant: Variant) -> tuple[str, ...]:
    return (*variant.nvcc_flags, *(f"-D{k}={v}" for k, v in variant.defines))


def compile_source(source: Path, arch: str, out_dir: Path, flags: tuple[str, ...], name: str) -> str:
    """nvcc a file to kernel.cubin, kernel.ptx and kernel.sass in ``out_dir`` (as *.tmp); the ptxas log.

    kernel.sass is cuobjdump's disassembly, or one line saying why there is none.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    logs = []
    for target in ("cubin", "ptx"):
        tmp = out_dir / f"kernel.{target}.tmp"
        proc = subprocess.run(command(source, arch, tmp, target, flags), capture_output=True, text=True, check=False)
        logs.append(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise BuildError(f"nvcc failed for {name} ({target}): {first_error(proc.stderr)}\n{proc.stderr.strip()}")
    try:
        sass = loops.disassemble(out_dir / "kernel.cubin.tmp")
    except loops.LoopError as exc:  # no disassembler: the loop counts will say so
        sass = f"# no SASS: {exc}\n"
    (out_dir / "kernel.sass.tmp").write_text(sass)
    (out_dir / "ptxas.log").write_text(logs[0])
    return logs[0]


OUTPUTS = ("kernel.cubin", "kernel.ptx", "kernel.sass")


def _into_place(out_dir: Path, names: tuple[str, ...]) -> None:
    """Each output's temporary file renamed to its name, once all have been written."""
    for name in names:
        (out_dir / f"{name}.tmp").replace(out_dir / name)


def _finish(out_dir: Path, report) -> None:
    """Write resources.json and move every output into place: all of them, or none looks finished."""
    (out_dir / "resources.json.tmp").write_text(files.json_text(report, indent=1))
    _into_place(out_dir, (*OUTPUTS, "resources.json"))


def compile_into(source: Path, arch: str, out_dir: Path, flags: tuple[str, ...], name: str) -> str:
    """:func:`compile_source`, then its outputs moved into place: a build outside the catalog (an exploration's
    tagged or traced build), which has no resources report. The ptxas log."""
    log = compile_source(source, arch, out_dir, flags, name)
    _into_place(out_dir, OUTPUTS)
    return log


def build(variant: Variant, arch: str, out_dir: Path) -> dict:
    """Compile ``variant`` into ``out_dir``; return its resource report.

    Writes kernel.cubin, kernel.ptx, kernel.sass, ptxas.log and resources.json.
    Outputs are written under temporary names and renamed at the end, so a
    failed build leaves nothing that looks finished.
    """
    if not variant.is_cuda:
        raise BuildError(f"{variant.id} is not a CUDA variant; nothing to build")
    log = compile_source(variant.source, variant.arch or arch, out_dir, variant_flags(variant), variant.id)
    report = ptxas.parse(log, variant.entry)
    report.update(
        variant=variant.id,
        defines=variant.defines_text(),
        digest=variant.digest(),
        nvcc_flags=" ".join((*NVCC_FLAGS, *variant.nvcc_flags)),
    )
    _finish(out_dir, report)
    return report


def build_file(source: Path, entries: list[str], arch: str, out_dir: Path) -> list[dict]:
    """Compile a micro-benchmark file; the resource report of each of its entries."""
    log = compile_source(source, arch, out_dir, (), source.stem)
    report = [ptxas.parse(log, e) for e in entries]
    _finish(out_dir, report)
    return report


def cc() -> str:
    path = shutil.which("cc") or shutil.which("gcc")
    if not path:
        raise BuildError(
            "no C compiler (cc or gcc) on PATH: install one (e.g. apt install gcc) to build the CPU baseline"
        )
    return path


def build_host(variant: Variant, out_dir: Path) -> dict:
    """Compile a CPU variant's C file into out_dir/libkernel.so (written whole or not at all)."""
    if not (variant.kind == "cpu" and variant.is_built):
        raise BuildError(f"{variant.id} has no C source to build")
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "libkernel.so.tmp"
    cmd = [cc(), *CC_FLAGS, "-o", str(tmp), str(variant.source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    (out_dir / "cc.log").write_text(" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise BuildError(f"the C compiler failed for {variant.id}:\n{proc.stderr.strip()}")
    version = subprocess.run([cc(), "--version"], capture_output=True, text=True, check=False).stdout.splitlines()
    tmp.replace(out_dir / "libkernel.so")
    return {"variant": variant.id, "compiler": version[0] if version else "", "flags": " ".join(CC_FLAGS)}
