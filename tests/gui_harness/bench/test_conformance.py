"""cua-auto-harness, a peer's conformance suite for computer-use action layers, run over
gui_harness (gui_harness/bench/conformance.py): every entry of its runner catalog passes,
judged by its own Tk probe and XRecord tap on a real Xvfb with a window manager. Entries
the default Policy refuses are counted apart, and pass with a policy that denies no keys."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gui_harness.actions import Policy
from gui_harness.bench.conformance import GuestShell, run_conformance


def _sandbox_problem() -> str | None:
    """Why the suite's bubblewrap guest cannot start here, or None."""
    for program in ("Xvfb", "openbox", "bwrap", "xdotool", "curl"):
        if shutil.which(program) is None:
            return f"{program} is not installed (scripts/setup.sh --dev installs it)"
    argv = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--unshare-net", "true"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        return f"bubblewrap cannot make namespaces here: {run.stderr.strip()[:200]}"
    return None


_PROBLEM = _sandbox_problem()
pytestmark = [
    pytest.mark.x11,
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(_PROBLEM is not None, reason=_PROBLEM or ""),
]

REFUSED_BY_DEFAULT = {"keys": {"chord_alt_f4", "chord_super_d", "key_f12"}}
"""The entries the default Policy refuses: alt+f4 and super close and leave, f12 drops
down a terminal (DEFAULT_DENY_KEYS)."""


def failures(report: dict[str, Any], out: Path) -> dict[str, list[str]]:
    """Each entry that did not pass, with what its verdicts say."""
    found = {}
    for entry in report["entries"]:
        if entry["final"] == "pass":
            continue
        said = []
        for verdict in sorted((out / "entries" / entry["entry_id"]).glob("rep*/verdict.json")):
            data = json.loads(verdict.read_text())
            said.append(f"{data['status']}: {data['event_channel']['detail']} {data['notes']}")
        found[entry["entry_id"]] = said
    return found


@pytest.mark.parametrize("catalog", ["clicks", "drags", "keys", "scrolls", "sequences", "typing"])
def test_every_runner_entry_passes(catalog: str, tmp_path: Path) -> None:
    report = run_conformance(tmp_path, files=[catalog])
    assert report["inexpressible"] == []
    refused = {item["entry_id"] for item in report["policy_refused"]}
    assert refused == REFUSED_BY_DEFAULT.get(catalog, set())
    assert len(report["not_measurable"]) == len(refused), report["not_measurable"]
    assert failures(report, tmp_path) == {}
    assert report["totals"]["pass"] == report["totals"]["entries"] > 0


def test_the_entries_the_default_policy_refuses_pass_when_it_allows_them(tmp_path: Path) -> None:
    refused = sorted(REFUSED_BY_DEFAULT["keys"])
    report = run_conformance(tmp_path, entries=refused, policy=Policy(deny_keys=()))
    assert report["not_measurable"] == []
    assert failures(report, tmp_path) == {}
    assert sorted(entry["entry_id"] for entry in report["entries"]) == refused


def test_the_guest_has_its_own_tmp_processes_and_network(tmp_path: Path) -> None:
    guest = GuestShell(":0")
    listening = socket.create_server(("127.0.0.1", 0))
    try:
        assert guest.run(f"echo mine > /tmp/guest-file; test -e {tmp_path}")[0] == 1
        assert not Path("/tmp/guest-file").exists()  # its /tmp is its own
        reach = (
            f"import socket; socket.create_connection(('127.0.0.1', {listening.getsockname()[1]}))"
        )
        assert guest.run(f'python3 -c "{reach}" 2>/dev/null')[0] == 1  # so is its loopback
        rc, seen = guest.run("ps -e -o comm=")
        assert rc == 0 and len(seen.split()) < 8, seen  # its pkill -f finds only its own
        assert guest.run("python3 -c 'import tkinter, Xlib'")[0] == 0  # what the probes need
        assert guest.run("sleep 30", timeout=0.5)[0] == 124
        assert guest.run("echo $DISPLAY; exit 3") == (3, ":0\n")
    finally:
        listening.close()
        guest.close()
