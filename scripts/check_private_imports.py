#!/usr/bin/env python3
"""No module imports another package's underscored names (issue 42, run by `make lint`).

ruff's SLF001 catches `obj._private`, and its PLC2701 treats a whole first-party package
as one module, so neither sees `from openprogram.display.html import _counted` in
openprogram/cli/. This does.

The rule. A name with one leading underscore (`_counted`, `_View`; dunders are not
private) defined in module `P.m` belongs to package `P`: the modules directly in P
(`P.n`, and P's `__init__`) share it by design, as a package's helpers are shared. Any
other module, in another package or in a subpackage of P, must not import it: the owner
gives it a public name (a `_x.py` module's public names are its package's), or the
helper moves where both users sit. An import inside a function or under
`if TYPE_CHECKING:` counts too.

Out of the rule: importing a private *module* (`from openprogram.core import _secrets`,
`from openprogram.core._context import current`): a `_x.py` module is its package's
internals, but the layers above reach several of them on purpose (the per-call context,
the secret scrubber); they are named and counted in the closing note of issue 42.

Usage: check_private_imports.py [ROOT]   (ROOT: the checkout; default: this script's
parent's). Exit status 1, one line per import, when any breaks the rule.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("openprogram", "gui_harness")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    """(dotted name, whether it is a package's `__init__`)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _is_module(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _package_of(root: Path, dotted: str) -> str:
    """The package a module belongs to: itself for a package, else its parent."""
    if (root.joinpath(*dotted.split(".")) / "__init__.py").is_file():
        return dotted
    return dotted.rpartition(".")[0]


def _source(node: ast.ImportFrom, package: str) -> str:
    """The absolute module an ImportFrom reads from (`package`: the importer's own)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def violations(root: Path) -> Iterator[str]:
    """`path:line: ...` for each import of a private name across a package boundary."""
    for top in PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            me, is_init = _module_name(path, root)
            my_package = me if is_init else me.rpartition(".")[0]
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom):
                    continue
                source = _source(node, my_package)
                if source.split(".")[0] not in PACKAGES:
                    continue
                owner = _package_of(root, source)
                for alias in node.names:
                    name = alias.name
                    if not _private(name) or _is_module(root, f"{source}.{name}"):
                        continue
                    if my_package != owner:
                        relative = path.relative_to(root).as_posix()
                        yield (
                            f"{relative}:{node.lineno}: imports `{name}`, private to "
                            f"{source} (package {owner}); give it a public name in its "
                            "module, or move it where both use it "
                            "(scripts/check_private_imports.py says the rule)"
                        )


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    problems = list(violations(root))
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print("check_private_imports: no private name imported across packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
