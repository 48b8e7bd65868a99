"""The one rule that names a memory regime, and the words every page uses for it (issue 39).

A launch's working set (the arrays it reads and writes) against the card's L2:

- ``dram``: at least DRAM_FACTOR (3) times the L2. Most of what the launch reads cannot have been left in the L2
  by an earlier read of it, so its counters and its time show DRAM;
- ``cached``: at most CACHED_FACTOR (half) of the L2, so the arrays stay in it between launches and the DRAM
  traffic is the first touch only;
- ``mixed``: in between. Neither DRAM nor the L2 alone: a page says so and claims neither.

The run/profile steps size their DRAM-regime launches by this rule, and the pages word a regime by it, so a caption
cannot call 2.56 times the L2 "several times the L2" while the run page says the DRAM regime starts at 3.

Pure functions, tested on the CPU.
"""

DRAM_FACTOR = 3
CACHED_FACTOR = 0.5
# bytes per n² of each operation's arrays: FP32 A, B and C; BF16 A and B with FP32 C; a transpose's input and output
# (gpumm.run.operations takes each operation's footprint from here)
FOOTPRINT = {"product": 12, "bf16": 8, "transpose": 8}


def regime(working_bytes: float, l2_bytes: float) -> str:
    """'dram', 'cached' or 'mixed' for a working set against the L2; 'unknown' without an L2 size."""
    if not l2_bytes or l2_bytes != l2_bytes or working_bytes != working_bytes:
        return "unknown"
    times = working_bytes / l2_bytes
    return "dram" if times >= DRAM_FACTOR else ("cached" if times <= CACHED_FACTOR else "mixed")


NAMES = {
    "dram": "the DRAM regime",
    "cached": "inside the L2",
    "mixed": "between the L2 and DRAM regimes (mixed)",
    "unknown": "regime unknown (no L2 size recorded)",
}


def words(working_bytes: float, l2_bytes: float, what: str = "the arrays") -> str:
    """``what`` against the L2 and the regime it makes, e.g. 'A, B and C fill the L2 2.6 times over: between the
    L2 and DRAM regimes (mixed; DRAM needs 3 times)'."""
    r = regime(working_bytes, l2_bytes)
    if r == "unknown":
        return NAMES[r]
    times = working_bytes / l2_bytes
    said = f"{what} fill the L2 {times:.1f} times over" if times >= 1 else f"{what} fill {times:.0%} of the L2"
    if r == "mixed":
        return f"{said}: {NAMES[r]}; the DRAM regime starts at {DRAM_FACTOR} times"
    return f"{said}: {NAMES[r]}"


def square(n: int, l2_bytes: float, op: str = "product") -> str:
    """The regime of a square launch of size n of ``op`` (a key of FOOTPRINT)."""
    return regime(FOOTPRINT[op] * n * n, l2_bytes)


def square_words(n: int, l2_bytes: float, op: str = "product") -> str:
    """:func:`words` for a square launch of size n of ``op``."""
    what = {"product": "A, B and C", "bf16": "A, B (BF16) and C (FP32)", "transpose": "the input and output"}[op]
    return words(FOOTPRINT[op] * n * n, l2_bytes, what)
