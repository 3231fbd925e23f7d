"""scripts/check_private_imports.py, the `make lint` check that no module imports an
underscored name of another package's module: what it reports on a small tree (the
import issue 42 found among them), and that this checkout passes it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_private_imports.py"

_spec = importlib.util.spec_from_file_location("check_private_imports", SCRIPT)
assert _spec is not None and _spec.loader is not None
check_private_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_private_imports)

FILES = {
    "openprogram/__init__.py": "",
    "openprogram/display/__init__.py": "from openprogram.display.html import _counted\n",
    "openprogram/display/_payload.py": "def _parts_text(): ...\n",
    "openprogram/display/html.py": (
        "from openprogram.display._payload import _parts_text\n"  # a sibling's helper
        "from ._payload import _parts_text as again\n"
        "def _counted(): ...\n"
        "def __getattr__(name): ...\n"
    ),
    "openprogram/display/sub/__init__.py": "",
    "openprogram/display/sub/deep.py": "from openprogram.display.html import _counted\n",
    "openprogram/core/__init__.py": "",
    "openprogram/core/_secrets.py": "def scrub(): ...\n",
    "openprogram/cli/__init__.py": "",
    "openprogram/cli/_sessions.py": (
        "from openprogram.core import _secrets\n"  # a private module: outside the rule
        "from openprogram.core._secrets import scrub\n"
        "from openprogram.display.html import __getattr__\n"  # a dunder is not private
        "def show():\n"
        "    from openprogram.display.html import _counted\n"
        "    from ..display import html\n"
        "    return _counted, html\n"
    ),
    "gui_harness/__init__.py": "",
    "gui_harness/tool.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from openprogram.display.html import _counted\n"
    ),
}


def _tree(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_private_names_crossing_a_package_are_found_and_siblings_are_not(tmp_path: Path) -> None:
    found = [
        line.split(": imports ")[0] for line in check_private_imports.violations(_tree(tmp_path))
    ]
    assert found == [
        "openprogram/cli/_sessions.py:5",  # the import issue 42 found, inside a function
        "openprogram/display/sub/deep.py:1",  # a subpackage is a package of its own
        "gui_harness/tool.py:3",  # under TYPE_CHECKING too
    ]


def test_the_script_exits_1_naming_the_import_and_0_once_fixed(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 1
    assert "openprogram/cli/_sessions.py:5: imports `_counted`" in run.stderr
    for name in ("openprogram/cli/_sessions.py", "openprogram/display/sub/deep.py"):
        (root / name).write_text("from openprogram.display.html import counted\n")
    (root / "gui_harness/tool.py").write_text("")
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr


def test_this_checkout_passes() -> None:
    assert list(check_private_imports.violations(ROOT)) == []
