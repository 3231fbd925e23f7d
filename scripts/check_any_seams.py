#!/usr/bin/env python3
"""No `Any` in a signature between openprogram's own parts (issue 42, run by `make lint`).

The rule. In openprogram/, a *seam* is a function another module may call: a
module-level function or a method of a class, whose name does not start with an
underscore (`__init__` and `__call__` count: they are how a class is used), in a class
whose name does not start with one either. Modules named `_x.py` are no exception: their
public names are what the package's other modules call. A seam's parameters and return
must not be annotated `Any` itself (`Any`, `Any | None`, `Optional[Any]`):

* a session, a runtime, a stream or a store from another layer is named by its class, or
  by a `typing.Protocol` beside the lower-layer user that lists what it uses;
* a value the code only passes on or looks at with `isinstance` (a user's argument or
  result, what `repr` shows) is `object`;
* `Any` inside a type stays allowed: a JSON payload (`dict[str, Any]`), a callback
  (`Callable[..., Any]`) or `*args: Any` / `**kwargs: Any` forwarded elsewhere is dynamic
  by nature, and the container still says what the seam passes.

Sites that broke the rule when it came in are listed in scripts/any_seams_allowed.txt
(`path:function:parameter`, `return` for the return): the list must only shrink. A listed
site that no longer breaks the rule fails the check too, until its line is removed.

Usage: check_any_seams.py [ROOT]   (ROOT: the checkout; default: this script's parent's)
       check_any_seams.py --list   (print every site, to rebuild the list)
Exit status 1 on a site not in the list or a line of the list that is stale.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ALLOWED = Path("scripts/any_seams_allowed.txt")
_EXEMPT_DUNDERS = {"__init__", "__call__"}


def _is_bare_any(node: ast.expr | None) -> bool:
    """`Any`, `typing.Any`, `Any | None`, `None | Any`, `Optional[Any]`, or one of them
    as a string annotation."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _is_bare_any(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return False
    if isinstance(node, ast.Name):
        return node.id == "Any"
    if isinstance(node, ast.Attribute):
        return node.attr == "Any" and isinstance(node.value, ast.Name)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = (node.left, node.right)
        return any(_is_bare_any(side) for side in sides) and all(
            _is_bare_any(side) or (isinstance(side, ast.Constant) and side.value is None)
            for side in sides
        )
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id == "Optional" and _is_bare_any(node.slice)
    return False


def _public(name: str) -> bool:
    return not name.startswith("_") or name in _EXEMPT_DUNDERS


def _seams(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, function) of every seam: public functions at module level and
    public methods of public classes (nested classes included), never closures."""

    def walk(
        body: list[ast.stmt], prefix: str
    ) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if _public(statement.name):
                    yield prefix + statement.name, statement
            elif isinstance(statement, ast.ClassDef) and not statement.name.startswith("_"):
                yield from walk(statement.body, f"{prefix}{statement.name}.")
            elif isinstance(statement, ast.If):  # `if TYPE_CHECKING:` / version branches
                yield from walk(statement.body + statement.orelse, prefix)

    return walk(tree.body, "")


def sites(path: Path, relative: str) -> Iterator[str]:
    """`relative:function:parameter` (or `:return`) for each bare Any on a seam of `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for name, function in _seams(tree):
        arguments = function.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            if _is_bare_any(argument.annotation):
                yield f"{relative}:{name}:{argument.arg}"
        if _is_bare_any(function.returns):
            yield f"{relative}:{name}:return"


def all_sites(root: Path) -> list[str]:
    found: list[str] = []
    for path in sorted((root / "openprogram").rglob("*.py")):
        found.extend(sites(path, path.relative_to(root).as_posix()))
    return found


def allowed(root: Path) -> list[str]:
    path = root / ALLOWED
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def check(root: Path) -> list[str]:
    """The problems: sites not allowed, and allowed lines that are stale."""
    found = all_sites(root)
    listed = allowed(root)
    problems = [
        f"{site}: `Any` in a signature between openprogram's parts; name the type, a "
        "Protocol, or `object` (scripts/check_any_seams.py says the rule)"
        for site in found
        if site not in set(listed)
    ]
    problems += [
        f"{site}: listed in {ALLOWED} but no longer a bare Any: remove the line "
        "(the list only shrinks)"
        for site in listed
        if site not in set(found)
    ]
    return problems


def main(argv: list[str]) -> int:
    default = Path(__file__).resolve().parent.parent
    if argv[:1] == ["--list"]:
        root = Path(argv[1]) if len(argv) > 1 else default
        print("\n".join(all_sites(root)))
        return 0
    root = Path(argv[0]) if argv else default
    problems = check(root)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"check_any_seams: no new Any seams ({len(allowed(root))} listed sites left)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
