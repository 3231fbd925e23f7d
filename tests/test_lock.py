"""The lock files cover pyproject.toml: every dependency the setup installs is pinned there,
at a version its specifier admits (a dependency added without `scripts/lock.sh` fails here,
not on a fresh machine)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# what scripts/setup.sh installs from each lock
LOCKS = {
    "demo.lock": (["gui"], []),
    "dev.lock": (["gui", "postgres", "otel", "bench", "ray", "mcp"], ["dev", "bench-apps"]),
}


def _pins(lock: str) -> dict[str, str]:
    text = (ROOT / "requirements" / lock).read_text()
    return {
        canonicalize_name(name): version
        for name, version in re.findall(r"^([A-Za-z0-9._-]+)==([^ \\\n]+)", text, re.M)
    }


def _wanted(extras: list[str], groups: list[str]) -> list[Requirement]:
    found = [Requirement(text) for text in PROJECT["project"]["dependencies"]]
    for extra in extras:
        found += [Requirement(text) for text in PROJECT["project"]["optional-dependencies"][extra]]
    for group in groups:
        found += [Requirement(text) for text in PROJECT["dependency-groups"][group]]
    return [req for req in found if req.marker is None or req.marker.evaluate()]


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_pins_every_dependency_at_a_version_pyproject_admits(lock):
    pins = _pins(lock)
    for requirement in _wanted(*LOCKS[lock]):
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements/{lock}: run scripts/lock.sh"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements/{lock} pins {name}=={pins[name]}, outside {requirement}: "
            "run scripts/lock.sh"
        )


def test_every_pin_carries_a_hash():
    for lock in LOCKS:
        entries = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / "requirements" / lock).read_text())
        for entry in entries:
            if "==" in entry and not entry.startswith("#"):
                assert "--hash=sha256:" in entry, entry.splitlines()[0]


def test_no_compromised_litellm_release_is_admitted():
    (litellm,) = [r for r in _wanted([], []) if r.name == "litellm"]
    for bad in ("1.82.7", "1.82.8", "1.107.0", "1.107.3"):
        assert not litellm.specifier.contains(bad), bad
