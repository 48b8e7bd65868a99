"""Certify an archive for today's code where the code changed in its tokens but not in what it generates.

A variant's digest (gpumm.setup.digest) changes with any token of its kernel file or includes. Where a refactor
changed the tokens and not the machine code, the archived numbers still stand for it: :func:`certify` builds
each CUDA variant whose digest the archive does not certify, compares the SASS of the functions it launches with
the SASS the archive keeps of them (byte for byte, as ``cuobjdump`` writes it; up to three builds, since ptxas
does not always allocate registers alike), and where they are the same records today's digest as certified
(``how``: the SASS and the nvcc that built it) in the archive's DIGESTS.json. A BF16 kernel's ``bf16_geom``
constant (what the launcher reads: its tensor maps' boxes and L2 fetch, its shared memory) is compared too, from
the PTX, a member the older build lacks read as 0: a launch that changes with the same SASS is not the archived
one. Nothing is measured; any machine
with nvcc does it, no GPU needed. A variant whose SASS differs, or that has no kernel (cuBLAS, the CPU
baselines: their digest is their catalog entry and the method's version), stays stale: measure it again.
"""

import gzip
import json
import re
import struct
import subprocess
import tempfile
from pathlib import Path

from gpumm.archive import reference
from gpumm.build import loops, nvcc
from gpumm.setup.catalog import Variant


def _nvcc_version() -> str:
    out = subprocess.run([nvcc.nvcc(), "--version"], capture_output=True, text=True, check=False).stdout
    return next((line.strip() for line in out.splitlines() if "release" in line), "nvcc")


GEOM = re.compile(r"\.b8 bf16_geom\[(\d+)\]\s*=\s*\{([^}]*)\}")


def ptx_geometry(ptx: str) -> tuple[int, ...] | None:
    """A PTX's ``bf16_geom`` constant as its ints, trailing zeros dropped (the PTX leaves them out, and a member
    a build's declaration lacks is 0); None where the PTX has none. The archive keeps a build's PTX, not its
    cubin (where gpumm.run.hopper.geometry reads the same constant by member name)."""
    m = GEOM.search(ptx)
    if m is None:
        return None
    raw = [int(b) for b in m.group(2).split(",") if b.strip()]
    raw += [0] * (int(m.group(1)) - len(raw))
    ints = list(struct.unpack(f"<{len(raw) // 4}i", bytes(raw)))
    while ints and ints[-1] == 0:
        ints.pop()
    return tuple(ints)


BUILDS = 3  # ptxas does not always allocate registers alike (interior_b256x128k8: 1 build in 4 differed)


def launched(sass: str, v: Variant) -> str | None:
    """The SASS of the functions a variant launches (its entry, and its preparation kernel's), which hold all the
    code it runs (no kernel of this project calls a function it does not inline); None where one is missing."""
    names = [v.entry] + ([v.prepare[0]] if v.prepare else [])
    blocks = [loops.function_sass(sass, name) for name in names]
    if None in blocks:
        return None
    # each line's words: cuobjdump pads its columns to the widest function of the cubin, which says nothing
    return "\n".join(" ".join(line.split()) for block in blocks for line in block.splitlines())


def _same_sass(v: Variant, arch: str, archived: str, tmp: Path) -> Path | None:
    """The folder of a build of ``v`` that gives the archived SASS of the functions it launches, in up to BUILDS
    builds (the same source and flags can give two register allocations, and the archived one is then a build of
    today's code), or None. Functions it does not launch (a rung below, included and renamed) are not compared."""
    want = launched(archived, v)
    for i in range(BUILDS):
        out = tmp / f"{v.id}-{i}"
        nvcc.build(v, arch, out)
        if want is not None and launched((out / "kernel.sass").read_text(), v) == want:
            return out
    return None


def certify(archive: Path, variants: list[Variant]) -> list[str]:
    """Certify ``archive`` for each of ``variants`` it holds whose SASS today is the archived one; one line per
    variant that was not current: certified, or stale and why. It holds a variant measured in a folder of its own
    (raw/<variant>/) and a kernel its model steps timed (their meta.json's digests, the current one where the
    archive certifies none)."""
    have, lines, entries, version = reference.certified(archive), [], {}, None
    timed = reference.step_digests(archive / "raw")  # the model steps' kernels: no folder of their own
    with tempfile.TemporaryDirectory(prefix="gpumm-certify-") as tmp:
        for v in variants:
            if not (archive / "raw" / v.id / "meta.json").is_file() and v.id not in timed:
                continue  # not in this archive
            now = v.digest()
            if have.get(v.id, timed.get(v.id)) == now:
                continue
            sass = archive / "build" / v.id / "kernel.sass.gz"
            if not v.is_cuda or not sass.is_file():
                lines.append(f"{v.id}: stale (no archived SASS to compare: measure it again)")
                continue
            resources = json.loads((archive / "build" / v.id / "resources.json").read_text())
            archived = gzip.decompress(sass.read_bytes()).decode()
            built = _same_sass(v, resources.get("arch") or "sm_90", archived, Path(tmp))
            if built is None:
                lines.append(f"{v.id}: stale (its SASS differs from the archived build's: measure it again)")
                continue
            ptx = archive / "build" / v.id / "kernel.ptx.gz"
            archived_geom = ptx_geometry(gzip.decompress(ptx.read_bytes()).decode()) if ptx.is_file() else None
            if ptx_geometry((built / "kernel.ptx").read_text()) != archived_geom:
                lines.append(f"{v.id}: stale (its launch geometry, bf16_geom, differs from the archived build's)")
                continue
            version = version or _nvcc_version()
            entries[v.id] = {"digest": now, "how": f"sass: the archived build's, built again with {version}"}
            lines.append(f"{v.id}: certified (the same SASS as the archived build)")
    if entries:
        reference.write_certified(archive, entries)
    return lines
