"""Stale Snakemake locks: a run killed by a signal (the machine rebooted, the job was killed for memory)
leaves its lock in .snakemake/locks/, and the next run would stop and ask for --unlock.

When a run starts (gpumm.setup.guard), :func:`clear_stale` removes the locks of a working directory in which no other
Snakemake process runs (Linux: processes read from /proc), so that the README's own command resumes a
killed run; with `rerun-incomplete` in the default profile, the jobs it left half done are run again.
Where processes cannot be listed, nothing is removed.
"""

import os
from pathlib import Path


def is_snakemake(argv: list[str]) -> bool:
    """Whether a command line runs Snakemake: its program, or the script an interpreter runs, is named snakemake,
    or it is ``python -m snakemake`` (not a `tail -f .snakemake/log/...`)."""
    head = [Path(a).name for a in argv[:2]]
    return "snakemake" in head or any(a == "-m" and b == "snakemake" for a, b in zip(argv, argv[1:]))


def snakemake_processes(workdir: Path, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of Snakemake processes (other than this one and its parents) working in ``workdir``."""
    mine = {os.getpid(), os.getppid()}
    found = []
    for entry in proc.glob("[0-9]*"):
        try:
            pid = int(entry.name)
            if pid in mine:
                continue
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if not is_snakemake(argv) or Path(os.readlink(entry / "cwd")) != workdir:
                continue
        except (OSError, ValueError):
            continue
        found.append(pid)
    return found


def holders(workdir: Path, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of other Snakemake processes working in ``workdir`` while its lock files are there: a run under way."""
    locks = list((workdir / ".snakemake" / "locks").glob("*.lock"))
    if not locks or not proc.is_dir():
        return []
    return snakemake_processes(workdir.resolve(), proc)


def clear_stale(workdir: Path, proc: Path = Path("/proc")) -> list[Path]:
    """Remove the Snakemake locks of ``workdir`` when no Snakemake process runs there; the removed files."""
    locks = sorted((workdir / ".snakemake" / "locks").glob("*.lock"))
    if not locks or not proc.is_dir() or snakemake_processes(workdir.resolve(), proc):
        return []
    for lock in locks:
        lock.unlink(missing_ok=True)
    return locks
