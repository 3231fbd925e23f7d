"""scripts/check_any_seams.py, the `make lint` check that no signature between openprogram's
parts takes or returns a bare `Any`: what it reports on a small tree, and that this
checkout passes it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_any_seams.py"

_spec = importlib.util.spec_from_file_location("check_any_seams", SCRIPT)
assert _spec is not None and _spec.loader is not None
check_any_seams = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_any_seams)

SOURCE = """
from typing import Any, Optional, Protocol
import typing

def seam(session: Any, runtime: Any | None, stream: Optional[Any], *args: Any, **kw: Any) -> Any:
    return None

def typed(payload: dict[str, Any], callback: typing.Callable[..., Any], value: object) -> list[Any]:
    return []

def quoted(value: "Any") -> "typing.Any":
    return value

def _private(session: Any) -> Any:
    def closure(inner: Any) -> Any:
        return inner
    return closure

class Public:
    def __init__(self, store: Any) -> None:
        pass

    def method(self, runtime: Any) -> int:
        return 0

    def _helper(self, thing: Any) -> Any:
        return thing

    class Inner:
        async def run(self) -> Any:
            return None

class _Hidden:
    def method(self, runtime: Any) -> Any:
        return runtime
"""


def _tree(tmp_path: Path, allowed: str | None = None) -> Path:
    package = tmp_path / "openprogram" / "layer"
    package.mkdir(parents=True)
    (package / "_module.py").write_text(SOURCE)
    if allowed is not None:
        (tmp_path / "scripts").mkdir()
        (tmp_path / "scripts" / "any_seams_allowed.txt").write_text(allowed)
    return tmp_path


def test_bare_any_on_a_seam_is_found_and_any_inside_a_type_is_not(tmp_path: Path) -> None:
    where = "openprogram/layer/_module.py"
    assert check_any_seams.all_sites(_tree(tmp_path)) == [
        f"{where}:seam:session",
        f"{where}:seam:runtime",
        f"{where}:seam:stream",
        f"{where}:seam:return",
        f"{where}:quoted:value",
        f"{where}:quoted:return",
        f"{where}:Public.__init__:store",
        f"{where}:Public.method:runtime",
        f"{where}:Public.Inner.run:return",
    ]


def test_a_listed_site_passes_a_new_one_fails_and_a_stale_line_fails(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    sites = check_any_seams.all_sites(root)
    listed = "# comment\n" + "\n".join(sites[1:]) + "\nopenprogram/gone.py:f:x\n"
    (root / "scripts").mkdir()
    (root / "scripts" / "any_seams_allowed.txt").write_text(listed)
    problems = check_any_seams.check(root)
    assert len(problems) == 2
    assert problems[0].startswith(f"{sites[0]}: `Any` in a signature")
    assert problems[1].startswith("openprogram/gone.py:f:x: listed in")
    (root / "scripts" / "any_seams_allowed.txt").write_text("\n".join(sites))
    assert check_any_seams.check(root) == []


def test_the_script_exits_1_with_the_sites_and_0_when_clean(tmp_path: Path) -> None:
    root = _tree(tmp_path, allowed="")
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 1
    assert "openprogram/layer/_module.py:seam:session" in run.stderr
    (root / "openprogram" / "layer" / "_module.py").write_text("def f(x: object) -> int: ...\n")
    run = subprocess.run(
        [sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr


def test_this_checkout_passes() -> None:
    assert check_any_seams.check(ROOT) == []
