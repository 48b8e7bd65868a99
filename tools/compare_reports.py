"""Are two rendered reports the same? (issue 17: a refactor must leave the report as it was)

    python tools/compare_reports.py BEFORE/results AFTER/results [--ignore-paths]

Compares every table of ``tables/`` byte for byte, and every page of ``report/`` after removing papermill's
random cell ids (and, with ``--ignore-paths``, the package's file names the pages cite, ``src/gpumm/...``,
which a move of modules changes); prints each difference (a changed line of a page, at most a few per page)
and exits 1 if there is any, 0 if the two reports are the same.
"""

import difflib
import re
import sys
from pathlib import Path

CELL_ID = re.compile(r'id="cell-id=[0-9a-f-]+"|cell-id=[0-9a-f-]+')
PACKAGE_PATH = re.compile(r"src/gpumm/[a-z_/]*[a-z_]+(\.py|/)")


def page_lines(path: Path, ignore_paths: bool = False) -> list[str]:
    text = CELL_ID.sub("", path.read_text())
    return (PACKAGE_PATH.sub("src/gpumm/…", text) if ignore_paths else text).splitlines()


def compare(before: Path, after: Path, shown: int = 4, ignore_paths: bool = False) -> list[str]:
    out = []
    for sub, match in (("tables", "*"), ("report", "*.html")):
        names = sorted({p.name for p in (before / sub).glob(match)} | {p.name for p in (after / sub).glob(match)})
        for name in names:
            a, b = before / sub / name, after / sub / name
            if not (a.is_file() and b.is_file()):
                out.append(f"{sub}/{name}: only in {'after' if b.is_file() else 'before'}")
            elif sub == "tables" and a.read_bytes() != b.read_bytes():
                out.append(f"tables/{name}: differs")
            elif sub == "report":
                diff = [
                    line[:200]
                    for line in difflib.unified_diff(
                        page_lines(a, ignore_paths), page_lines(b, ignore_paths), lineterm="", n=0
                    )
                    if line[:1] in "+-" and not line.startswith(("+++", "---"))
                ]
                if diff:
                    out.append(f"report/{name}: {len(diff)} changed lines, e.g. " + " | ".join(diff[:shown]))
    return out


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--ignore-paths"]
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    diffs = compare(Path(args[0]), Path(args[1]), ignore_paths="--ignore-paths" in sys.argv)
    same = "the same: every table byte for byte, every page but its cell ids" + (
        " and the package's file names it cites" if "--ignore-paths" in sys.argv else ""
    )
    print("\n".join(diffs) if diffs else same)
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
