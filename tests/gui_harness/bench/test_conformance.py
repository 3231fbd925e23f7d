"""cua-auto-harness, a peer's conformance suite for computer-use action layers, run over
gui_harness (gui_harness/bench/conformance.py): every entry of its runner catalog passes,
judged by its own Tk probe and XRecord tap on a real Xvfb with a window manager. Entries
the default Policy refuses are counted apart, and pass with a policy that denies no keys.

The whole catalog runs once, on one desktop (a boot costs a desktop, a sandboxed guest
and the suite's two probes), and each catalog's test reads its entries from that run;
the module's tests share a worker under pytest-xdist for it."""

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
    pytest.mark.xdist_group("conformance"),  # one worker: the run below is shared
]
CATALOGS = ["clicks", "drags", "keys", "scrolls", "sequences", "typing"]

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


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """Every entry of the runner catalog, run once with the default Policy: the report
    and the folder of its verdicts."""
    out = tmp_path_factory.mktemp("conformance")
    return run_conformance(out, files=CATALOGS), out


def _ids(catalog: str) -> set[str]:
    import autoharness
    from autoharness import contracts

    path = Path(autoharness.__file__).parent / "catalogs" / "runner" / f"{catalog}.json"
    return {entry.id for entry in contracts.load_catalog(path)}


@pytest.mark.parametrize("catalog", CATALOGS)
def test_every_runner_entry_passes(catalog: str, whole_run) -> None:
    report, out = whole_run
    ids = _ids(catalog)
    assert report["inexpressible"] == []
    refused = {item["entry_id"] for item in report["policy_refused"]} & ids
    assert refused == REFUSED_BY_DEFAULT.get(catalog, set())
    unmeasured = [item for item in report["not_measurable"] if item["entry_id"] in ids]
    assert len(unmeasured) == len(refused), unmeasured
    ran = [entry for entry in report["entries"] if entry["entry_id"] in ids]
    assert {entry["entry_id"] for entry in ran} == ids - refused
    assert {k: v for k, v in failures(report, out).items() if k in ids} == {}
    assert ran and all(entry["final"] == "pass" for entry in ran)


def test_the_whole_run_measured_every_entry_of_the_catalog(whole_run) -> None:
    report, _ = whole_run
    every = set().union(*(_ids(catalog) for catalog in CATALOGS))
    assert report["totals"]["entries"] + len(report["not_measurable"]) == len(every)
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
        port = listening.getsockname()[1]
        # the suite's `curl -s -m N URL`, answered by the guest's agent in the guest's own
        # network as curl would: nothing answers there (exit 7), then a server started in
        # the guest does (its body, exit 0)
        assert guest.run(f"curl -s -m 5 http://127.0.0.1:{port}/") == (7, "")
        guest.run(f"cd /tmp && echo served > page && python3 -m http.server {port} "
                  "--bind 127.0.0.1 >/dev/null 2>&1 &")  # fmt: skip
        up = (
            "import socket, time\nfor _ in range(600):\n    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port})).close(); break\n"
            "    except OSError:\n        time.sleep(0.1)"
        )  # the server listens (a bound of 60 s, not a measure)
        assert guest.run(f'python3 -c "{up}"')[0] == 0
        assert guest.run(f"curl -s -m 5 http://127.0.0.1:{port}/page") == (0, "served\n")
        rc, seen = guest.run("ps -e -o comm=")
        assert rc == 0 and len(seen.split()) < 8, seen  # its pkill -f finds only its own
        assert guest.run("python3 -c 'import tkinter, Xlib'")[0] == 0  # what the probes need
        assert guest.run("sleep 30", timeout=0.5)[0] == 124
        assert guest.run("echo $DISPLAY; exit 3") == (3, ":0\n")
    finally:
        listening.close()
        guest.close()
