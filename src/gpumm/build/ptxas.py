"""Parse the compiler's resource report (``nvcc -Xptxas -v``) into a table row."""

import re

_ENTRY = re.compile(r"Compiling entry function '(?P<entry>[^']+)' for '(?P<arch>sm_\w+)'")
_FRAME = re.compile(
    r"(?P<stack>\d+) bytes stack frame, (?P<spill_stores>\d+) bytes spill stores, "
    r"(?P<spill_loads>\d+) bytes spill loads"
)
_USED = re.compile(r"Used (?P<registers>\d+) registers")
_SMEM = re.compile(r"(?P<smem>\d+) bytes smem")
_BARRIERS = re.compile(r"used (?P<barriers>\d+) barriers")
_CAP = re.compile(
    r"adjusting per thread register count of \d+ to lower bound of (?P<cap>\d+)|with\s+(?P<cap2>\d+) of maxrregcount"
)


class PtxasParseError(ValueError):
    """The text holds no resource report for the entry asked for."""


def parse(text: str, entry: str) -> dict:
    """Registers, spills, stack and shared memory of one kernel from ptxas -v output."""
    starts = [m for m in _ENTRY.finditer(text)]
    for i, m in enumerate(starts):
        if m.group("entry") != entry:
            continue
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        block = text[m.end() : end]
        frame, used = _FRAME.search(block), _USED.search(block)
        if not frame or not used:
            break
        smem, barriers = _SMEM.search(block), _BARRIERS.search(block)
        cap = _CAP.search(text)
        return {
            "entry": entry,
            "arch": m.group("arch"),
            "registers": int(used.group("registers")),
            "stack_bytes": int(frame.group("stack")),
            "spill_store_bytes": int(frame.group("spill_stores")),
            "spill_load_bytes": int(frame.group("spill_loads")),
            "smem_bytes": int(smem.group("smem")) if smem else 0,
            "barriers": int(barriers.group("barriers")) if barriers else 0,
            "register_cap": int(cap.group("cap") or cap.group("cap2")) if cap else None,
        }
    raise PtxasParseError(f"no resource report for entry {entry!r} in the compiler output")
