"""Strict YAML: a key given twice is an error, and every error names the file, the line and the column.

PyYAML (and Snakemake, which reads ``config.yaml`` with it) keeps the last of
two equal keys without a word: ``tiled:`` written twice in ``variants`` runs
only the second's tiles. The configuration files and the kernel catalog are
read here instead (the workflow checks ``config.yaml`` and every
``--configfile`` before Snakemake's own reading is used), so that a repeated
key or a syntax error stops the run with one line such as

    config.yaml:31:3: tiled: key given twice (first at line 24)

Parsing stays in libyaml's C parser where PyYAML has it (the catalog is read
by every step of the pipeline).
"""

from pathlib import Path

import yaml

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlFileError(ValueError):
    """A YAML file that cannot be read as written; the message is one line: ``file:line:column: problem``."""


class _StrictLoader(_BASE):
    """The safe loader, refusing a mapping key given twice."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict:
    first: dict = {}
    for key_node, _ in node.value:  # the mapping's own keys (a merge key's (<<) may be overridden: that is YAML)
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            seen = first.get(key)
        except TypeError:  # an unhashable key: construct_mapping reports it
            break
        if seen is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"{key}: key given twice (first at line {seen.line + 1})", key_node.start_mark
            )
        first[key] = key_node.start_mark
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def loads(text: str, name: str = "<string>"):
    """Parse ``text`` strictly; ``name`` is the file the messages name."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        line = _one_line(exc, name)
        mark = exc.problem_mark
        if mark is not None and "\t" in (text.splitlines()[mark.line : mark.line + 1] or [""])[0]:
            line += " (a tab: YAML indents with spaces only)"
        raise YamlFileError(line) from None
    except yaml.YAMLError as exc:
        raise YamlFileError(f"{name}: {' '.join(str(exc).split())}") from None


def load(path: Path, name: str | None = None):
    """Read and parse the file at ``path`` strictly (``name``: how messages call it, by default the path)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise YamlFileError(f"{name or path}: cannot be read ({exc})") from None
    return loads(text, name or str(path))


def _one_line(exc: yaml.MarkedYAMLError, name: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name
    problem = " ".join(x for x in (exc.context, exc.problem) if x)
    if exc.context and exc.context_mark is not None and exc.problem_mark is not None:
        if exc.context_mark.line != exc.problem_mark.line:
            problem = f"{exc.problem} ({exc.context} at line {exc.context_mark.line + 1})"
    return f"{where}: {' '.join(problem.split())}"
