"""A SQLite file is checked once per process (store/_whole.py), not on every open.

SQLite's quick_check reads the whole file, so checking on every open made recording
each session through its own `Session(path)` slow down as the file grew (issue 43). A
file found whole is trusted for the rest of the process; another file, or a new file
put where a deleted one was, is checked as before.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram import Session, StoreDamaged
from openprogram.store import SQLiteStore
from tests.openprogram.store import programs


def _checks(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files SQLiteStore runs its (real) quick_check over, as it runs it."""
    checked: list[Path] = []
    real = SQLiteStore._check_integrity

    def counted(self: SQLiteStore, connection: object) -> None:
        checked.append(self.path)
        real(self, connection)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteStore, "_check_integrity", counted)
    return checked


def test_each_session_recorded_into_one_file_does_not_check_the_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = _checks(monkeypatch)
    path = tmp_path / "runs.db"
    for i in range(5):
        with Session(path, id=f"s{i}"):
            programs.count(i)
    assert checked == [path]
    other = tmp_path / "other.db"
    with Session(other, id="o"):
        programs.count(0)
    assert checked == [path, other]
    assert [len(Session.open(path, f"s{i}").dag) for i in range(5)] == [1] * 5
    assert checked == [path, other]


def test_a_damaged_file_put_where_a_checked_one_was_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with Session(path, id="run"):
        for i in range(300):
            programs.count(i)
    copy = tmp_path / "copy.db"
    shutil.copy(path, copy)
    for extra in ("", "-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    with open(copy, "r+b") as file:  # damage the copy, then put it where the checked was
        file.seek(copy.stat().st_size // 2)
        file.write(random.Random(9).randbytes(8192))
    shutil.move(copy, path)
    with pytest.raises(StoreDamaged, match="is damaged"):
        Session.open(path, "run")


def test_a_damaged_file_is_checked_again_each_time_it_is_opened(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with Session(path, id="run"):
        for i in range(300):
            programs.count(i)
    with open(path, "r+b") as file:
        file.seek(path.stat().st_size // 2)
        file.write(random.Random(9).randbytes(8192))
    for _ in range(2):  # never noted as whole
        with pytest.raises(StoreDamaged):
            Session.open(path, "run")


def test_a_file_another_process_wrote_is_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = _checks(monkeypatch)
    path = tmp_path / "runs.db"
    with Session(path, id="here"):
        programs.count(0)
    assert checked == [path]
    other = (
        "import sys\nfrom openprogram import Session\n"
        "from tests.openprogram.store import programs\n"
        "with Session(sys.argv[1], id='there'):\n    programs.count(1)\n"
    )
    root = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", other, str(path)], cwd=root, check=True, timeout=120)
    with Session.open(path, "there") as there:
        assert len(there.dag) == 1
    assert checked == [path, path]
