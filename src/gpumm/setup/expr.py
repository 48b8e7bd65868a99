"""Safe evaluation of the catalog's small arithmetic expressions.

Launch geometry and work models are written as text such as
``"cdiv(N, TILE)"`` or ``"2*M*N*K"``. Only integer literals, names given by the
caller, + - * // /, cdiv() and min() are allowed; anything else is an error, so a
catalog entry can never run arbitrary code.
"""

import ast
import operator

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
}


class ExpressionError(ValueError):
    """An expression uses something outside the allowed arithmetic."""


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative integers."""
    return -(-a // b)


FUNCTIONS = {"cdiv": cdiv, "min": min}  # of two arguments each (min: a persistent grid of at most SMS blocks)


def evaluate(text: str, names: dict[str, int]) -> int | float:
    """Evaluate ``text`` with ``names`` bound; raise ExpressionError if not allowed."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {text!r}") from exc
    return _eval(tree.body, names, text)


def names_in(text: str) -> set[str]:
    """The variable names an expression uses (cdiv excluded)."""
    tree = ast.parse(text, mode="eval")
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(FUNCTIONS)


def _eval(node: ast.AST, names: dict[str, int], text: str) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise ExpressionError(f"unknown name {node.id!r} in {text!r}")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _eval(node.left, names, text)
        right = _eval(node.right, names, text)
        return _BINOPS[type(node.op)](left, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and len(node.args) == 2
        and not node.keywords
    ):
        return FUNCTIONS[node.func.id](*(_eval(a, names, text) for a in node.args))
    raise ExpressionError(f"not allowed in {text!r}: {ast.dump(node)[:60]}")
