"""What decides a variant's numbers, as one digest: the code that builds it in substance, not its bytes.

A variant's digest covers its catalog entry as expanded (kind, entry point, defines, flags, launch geometry,
preparation, threads, work model), the tokens of its kernel file and of every file it includes (comments and
blank space removed: a comment, a reflowed line or a re-indented block leaves the digest as it was; a
preprocessor directive keeps its own line), and :data:`METHOD_VERSION`. Nothing here needs a CUDA toolkit, so
a replay-only machine decides it too.

An archived measurement is current while the digest its archive certifies for the variant equals this one
(gpumm.archive.reference.certified). Where the tokens change and the generated code does not (a refactor),
``python -m gpumm certify`` builds the variant, compares its SASS with the SASS the archive keeps, and certifies
the new digest without measuring again.
"""

import hashlib
import json
import re

# Raise on purpose when the measurement method changes what a number means: how a variant is launched and timed
# (gpumm.run.launch, gpumm.run.measure, gpumm.run.timing), verified (gpumm.run.verify) or its work counted
# (gpumm.run.operations). cuBLAS and the CPU baselines have no kernel file: this and their catalog entry are all
# their digest covers.
METHOD_VERSION = 1
SCHEME = "tokens-1"  # how the digest is made: a digest recorded under another scheme is not compared

_LEX = re.compile(
    r'"(?:\\.|[^"\\\n])*"'  # a string literal, whole
    r"|'(?:\\.|[^'\\\n])*'"  # a character literal
    r"|//[^\n]*|/\*.*?\*/"  # comments
    r"|\n|[A-Za-z_]\w*|\d[\w.]*|\S",
    re.S,
)


def tokens(text: str) -> list[str]:
    """The tokens of C, C++ or CUDA source ``text``, comments and blank space dropped; each preprocessor
    directive on a line of its own (a newline token after it), since its line ends it."""
    out, line_start, directive = [], True, False
    for m in _LEX.finditer(text.replace("\\\n", "")):
        t = m.group()
        if t.startswith(("//", "/*")):
            continue
        if t == "\n":
            if directive:
                out.append("\n")
            line_start, directive = True, False
            continue
        if line_start and t == "#":
            directive = True
        line_start = False
        out.append(t)
    return out


def of(entry: dict, sources: dict[str, str]) -> str:
    """The digest of a variant: ``entry`` (its catalog entry as expanded, JSON-able) and ``sources`` (each file
    the build reads, by its path under kernels/, and its text)."""
    record = {
        "scheme": SCHEME,
        "method": METHOD_VERSION,
        "entry": entry,
        "sources": {name: " ".join(tokens(text)) for name, text in sorted(sources.items())},
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=list).encode()).hexdigest()[:16]
