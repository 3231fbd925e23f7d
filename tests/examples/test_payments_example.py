"""examples/payments.py: a payment agent killed mid-payment (SIGKILL), resumed, and
settled by a person from the shell or on the terminal; the provider charges once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "payments.py"
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="uses SIGKILL")


def run(folder: Path, *arguments: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=folder,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(EXAMPLE.parents[1])},
    )


def crashed(folder: Path) -> None:
    killed = run(folder, str(EXAMPLE), "--crash")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len((folder / "pay.db.provider").read_text().splitlines()) == 1  # it charged


def test_killed_mid_payment_then_settled_from_the_shell(tmp_path: Path):
    crashed(tmp_path)
    resumed = run(tmp_path, str(EXAMPLE))
    assert resumed.returncode == 3, resumed.stderr
    assert "pay_invoice was interrupted; its effect is unknown (key op-run1-" in resumed.stdout
    assert "the provider has: ch_1 for 120.00" in resumed.stdout
    command = re.search(r"settle it: openprogram (.*)", resumed.stdout)
    assert command is not None
    node = command.group(1).split()[3]
    settled = run(tmp_path, "-m", "openprogram", "sessions", "settle", "run1", node,
                  "--store", "pay.db", "--result", '"ch_1"')  # fmt: skip
    assert settled.returncode == 0 and settled.stdout.startswith("settled pay_invoice")
    done = run(tmp_path, str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("Paid INV-7 (charge ch_1) and sent the receipt.\n")
    assert "receipt for INV-7: ch_1" in done.stdout
    assert len((tmp_path / "pay.db.provider").read_text().splitlines()) == 1  # charged once


def test_killed_mid_payment_then_settled_on_the_terminal(tmp_path: Path):
    crashed(tmp_path)
    done = run(tmp_path, str(EXAMPLE), "--ask", stdin="ch_1\n")
    assert done.returncode == 0, done.stderr
    assert "pay_invoice (idempotency key op-run1-" in done.stdout  # the question
    assert done.stdout.endswith("Paid INV-7 (charge ch_1) and sent the receipt.\n")
    assert len((tmp_path / "pay.db.provider").read_text().splitlines()) == 1
