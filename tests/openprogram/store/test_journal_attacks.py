"""The journal folder is ours or refused: attacks on `<store>-pending/` (issue 22).

Another user (a second uid, via setpriv) plants folders, links and journals beside a
store in a shared /tmp folder; this user plants a FIFO, a link to /dev/zero, a 2 GB
sparse file and a marshal bomb. Nothing of theirs is folded in, nothing of ours is
written into theirs, nothing hangs or runs out of memory, and each is named in a
warning and in `openprogram sessions check`.
"""

from __future__ import annotations

import json
import logging
import marshal
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram import Session, agentic_function
from openprogram.store.check import check_store
from openprogram.store.journal import pending_dir
from tests.openprogram.store.test_journal import die_recording

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")

CLI = [sys.executable, "-c", "from openprogram.cli import main; main()"]
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@agentic_function
def echo(text: str) -> str:
    return text


def _can_switch_uid() -> str | None:
    """Why this test cannot act as a second user, or None when it can."""
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    done = subprocess.run([*NOBODY, "true"], capture_output=True, text=True)
    if done.returncode != 0:
        return f"cannot switch to uid nobody here: {done.stderr.strip()}"
    return None


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder anyone may create files in, like /tmp itself (sticky, 1777)."""
    folder = Path(tempfile.mkdtemp(prefix="openprogram-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def nobody() -> Any:
    """Run a shell command as uid nobody (skips, saying why, where that cannot be)."""
    why = _can_switch_uid()
    if why is not None:
        pytest.skip(why)

    def run(command: str, data: bytes = b"") -> None:
        done = subprocess.run([*NOBODY, "sh", "-c", command], input=data, capture_output=True)
        assert done.returncode == 0, done.stderr.decode()

    return run


def journal_bytes(session: str, owner: str, rows: list[tuple[Any, ...]]) -> bytes:
    """A journal as a writer would write it (journal format 1)."""
    out = json.dumps({"journal": 1, "session": session, "owner": owner}).encode() + b"\n"
    for row in rows:
        data = marshal.dumps(row, 4)
        out += struct.pack("<II", len(data), zlib.crc32(data)) + data
    return out


def forged_row(seq: int) -> tuple[Any, ...]:
    return (seq, "f0rged", "code", "echo", None, "completed", 1.0, 2.0, seq,
            '{"text": "x"}', '"<script>alert(1)</script>"', "{}")  # fmt: skip


def test_a_folder_another_user_made_first_is_never_written(
    shared: Path, nobody: Any, caplog: pytest.LogCaptureFixture
):
    store = shared / "runs.db"
    folder = pending_dir(store)
    nobody(f"mkdir -m 0777 {folder}")
    with (
        caplog.at_level(logging.WARNING, logger="openprogram.store"),
        Session(str(store), id="mine") as session,
    ):
        echo("one")  # a fast call: it would wait in a journal
        assert list(folder.iterdir()) == []  # committed at once instead
        echo("two")
    assert session.failed_writes == 0
    assert f"the journals' folder {str(folder)!r} is not used: it belongs to uid" in caplog.text
    assert [n.output for n in Session.open(str(store), "mine").dag.nodes] == ["one", "two"]


def test_a_journal_another_user_planted_for_a_live_session_is_never_folded_in(
    shared: Path, nobody: Any, caplog: pytest.LogCaptureFixture
):
    store = shared / "runs.db"
    folder = pending_dir(store)
    nobody(f"mkdir -m 0755 {folder}")  # theirs, before the store's first journal
    with Session(str(store), id="live") as session:  # the lease owner is in the 0644 file
        echo("mine")
        forged = journal_bytes("live", session._owner, [forged_row(2)])
        nobody(f"cat > {folder}/1-planted.log", forged)
        with caplog.at_level(logging.WARNING, logger="openprogram.store"):
            reader = Session.open(str(store), "live")  # reading folds journals in
        assert [n.output for n in reader.dag.nodes] == ["mine"]
        reader.close()
        echo("still mine")
    assert f"{str(folder)!r} is not used: it belongs to uid" in caplog.text
    report = check_store(str(store))
    assert not report.ok and not report.damaged
    (line,) = report.refused
    assert str(folder) in line
    assert any("What to do about the refused journals" in text for text in report.lines())
    outputs = [n.output for n in Session.open(str(store), "live").dag.nodes]
    assert outputs == ["mine", "still mine"]


@pytest.mark.slow
def test_a_journal_of_another_owner_in_our_folder_is_never_folded_in(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    store = tmp_path / "runs.db"
    die_recording(store, "dead", 2)  # our folder, with a dead writer's journal
    (journal,) = pending_dir(store).iterdir()
    planted = journal.with_name("2-planted.log")
    header = json.loads(journal.read_bytes().partition(b"\n")[0])
    planted.write_bytes(journal_bytes("dead", header["owner"], [forged_row(5)]))
    os.chown(planted, 65534, 65534)
    with caplog.at_level(logging.WARNING, logger="openprogram.store"):
        session = Session.open(str(store), "dead")
    assert [n.output for n in session.dag.nodes] == [0, 1]  # the dead writer's: folded
    session.close()
    assert f"the journal {str(planted)!r} is not read: it belongs to uid 65534" in caplog.text
    assert planted.exists()


def test_a_symlinked_pending_folder_is_not_followed(
    shared: Path, nobody: Any, caplog: pytest.LogCaptureFixture
):
    store = shared / "runs.db"
    target = shared / "theirs"
    nobody(f"mkdir -m 0777 {target} && ln -s {target} {pending_dir(store)}")
    with (
        caplog.at_level(logging.WARNING, logger="openprogram.store"),
        Session(str(store), id="mine") as session,
    ):
        echo("one")
        assert list(target.iterdir()) == []
    assert session.failed_writes == 0
    assert "is not used: it is a symbolic link or not a folder" in caplog.text
    assert [n.output for n in Session.open(str(store), "mine").dag.nodes] == ["one"]


def _limited() -> None:
    """For the CLI child: 2 GiB of address space, so reading a file whole fails."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _marshal_bomb(folder: Path, name: str) -> None:
    """A whole record (right CRC) whose 14 bytes claim a tuple of 2**31 - 1 items."""
    data = b"(" + (2**31 - 1).to_bytes(4, "little") + b"N" * 9
    header = json.dumps({"journal": 1, "session": "dead", "owner": "x:1:y"}).encode()
    record = struct.pack("<II", len(data), zlib.crc32(data)) + data
    (folder / name).write_bytes(header + b"\n" + record)


def _format_2(folder: Path, name: str, data: bytes) -> None:
    """A journal of format 2 (header line padded to 8 bytes, generation 7) holding one
    whole record of `data` (right CRC and generation) and reserved space after it."""
    line = json.dumps({"journal": 2, "session": "dead", "owner": "x:1:y"})
    line += " " * (-(len(line) + 1) % 8) + "\n"
    record = struct.pack("<IIQ", len(data), zlib.crc32(data), 7) + data
    (folder / name).write_bytes(line.encode() + struct.pack("<Q", 7) + record + bytes(4096))


def _marshal_bomb_2(folder: Path, name: str) -> None:
    """The marshal bomb in a journal of format 2."""
    _format_2(folder, name, b"(" + (2**31 - 1).to_bytes(4, "little") + b"N" * 9)


def _forged_2(folder: Path, name: str) -> None:
    """A format-2 record whose right CRC covers a string, not a node row."""
    _format_2(folder, name, marshal.dumps("\u202e" + "x" * 100_000, 4))


def _sparse(folder: Path, name: str) -> None:
    """A 2 GiB file of holes: it takes no disk, but reading it whole takes 2 GiB (a
    reader reads a journal a record at a time: here its first 64 KiB hold no line)."""
    (folder / name).touch(mode=0o600)
    os.truncate(folder / name, 2 << 30)


PLANTS = {
    "fifo": lambda folder, name: os.mkfifo(folder / name, 0o600),
    "zero": lambda folder, name: (folder / name).symlink_to("/dev/zero"),
    "sparse": _sparse,
    "marshal": _marshal_bomb,
    "marshal-2": _marshal_bomb_2,
    "forged-2": _forged_2,
}
WHY = {
    "fifo": "it is not a regular file",
    "zero": "it is a symbolic link",
    "sparse": "is damaged and not read: its first 65,536 bytes hold no header line",
    "marshal": "is damaged and not read: the record at byte 0 is not a node row",
    "marshal-2": "is damaged and not read: the record at byte 8 is not a node row",
    "forged-2": "is damaged and not read: the record at byte 8 is not a node row",
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
@pytest.mark.slow
def test_odd_files_in_the_folder_neither_hang_nor_exhaust_an_opener(
    tmp_path: Path, plant: str, caplog: pytest.LogCaptureFixture
):
    store = tmp_path / "runs.db"
    die_recording(store, "dead", 2)
    name = f"0-{plant}.log"  # read before the real journal
    PLANTS[plant](pending_dir(store), name)
    planted = pending_dir(store) / name
    cli = subprocess.run(
        [*CLI, "sessions", "check", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=60,  # a FIFO opened for reading without O_NONBLOCK blocks forever
        preexec_fn=_limited,
    )
    assert "MemoryError" not in cli.stderr and "Traceback" not in cli.stderr, cli.stderr
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert str(planted) in cli.stdout and WHY[plant] in cli.stdout
    assert "2 records of session 'dead'" in cli.stdout  # the real journal: reported

    with caplog.at_level(logging.WARNING, logger="openprogram.store"):
        session = Session.open(str(store), "dead")
    assert [n.output for n in session.dag.nodes] == [0, 1]  # the real one is folded in
    session.close()
    assert str(planted) in caplog.text and WHY[plant] in caplog.text
    assert os.path.lexists(planted)  # left for its owner to look at
