"""examples/evals.py runs offline: a dataset from sessions, a leak caught, a significant
difference between two versions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "evals.py"


def test_evals_example_catches_the_leak_and_shows_the_fix_is_significant(tmp_path: Path):
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "dataset: 8 cases from 8 sessions" in out
    assert "check_policy saw the card number" in out
    assert "card_stays_private   0.000   1.000   +1.000" in out
    assert "significant: True (p = 0.0078)" in out
    assert "rescored without calls: 1.00" in out
    assert (tmp_path / "v2.html").exists() and (tmp_path / "bookings.yaml").exists()
