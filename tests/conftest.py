"""Shared fixtures: every test starts with no default session or runtime around, and
leaves the process's SIGTERM handler as it found it.

Hypothesis runs derandomized by default (profile "ci": the same examples every run, so a
rare random failure never fails CI and no shrinking stalls it); profile "dev" draws new
examples each run (`--hypothesis-profile=dev`; `--hypothesis-seed=N` implies it).
"""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import settings

from tests.support.postgres import postgres_url  # noqa: F401 - a fixture for every test

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", derandomize=False)
# the hypothesis plugin loads a --hypothesis-profile given on the command line after this
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    # a derandomized run ignores --hypothesis-seed: asking for a seed means a random run
    seed = config.getoption("hypothesis_seed", None)
    if seed is not None and config.getoption("hypothesis_profile", None) is None:
        settings.load_profile("dev")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # under parallel workers (pytest-xdist, --dist loadgroup): the tests of files named
    # *_ray.py run on one worker, one local Ray cluster at a time; so do the tests marked
    # heavy_app, one heavy app at a time: two LibreOffices (or a LibreOffice and the
    # desktop bench's two desktops) starting at once on 2 cores left apps unanswered
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.path.stem.endswith("_ray"):
            item.add_marker(pytest.mark.xdist_group("ray"))
        elif item.get_closest_marker("heavy_app") is not None:
            item.add_marker(pytest.mark.xdist_group("heavy-apps"))


@pytest.fixture(autouse=True)
def _fresh_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    from openprogram.core import _context

    monkeypatch.delenv("OPENPROGRAM_MODEL", raising=False)
    # component memory and other user data go to a scratch folder, never the real home
    monkeypatch.setenv("OPENPROGRAM_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    _context.reset_defaults()
    sigterm = signal.getsignal(signal.SIGTERM)
    yield
    _context.reset_defaults()
    left = signal.getsignal(signal.SIGTERM)
    if left != sigterm:  # a leaked handler changes how later tests' fork children end
        signal.signal(signal.SIGTERM, sigterm)
        pytest.fail(f"the test left a SIGTERM handler behind: {left!r} (it was {sigterm!r})")
