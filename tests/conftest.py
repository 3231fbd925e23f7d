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


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # under parallel workers (pytest-xdist, --dist loadgroup): the tests of files named
    # *_ray.py run on one worker, one local Ray cluster at a time; so do the tests marked
    # heavy_app, one heavy app at a time: two LibreOffices (or a LibreOffice and the
    # desktop bench's two desktops) starting at once on 2 cores left apps unanswered.
    # A module whose tests share a module-scoped fixture (a desktop and its app, a
    # server, a recorded store) runs on one worker too, so that it starts once, not
    # once on each worker
    if not config.pluginmanager.hasplugin("xdist"):
        return
    _slow_modules_first(items)
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if item.path.stem.endswith("_ray"):
            item.add_marker(pytest.mark.xdist_group("ray"))
        elif item.get_closest_marker("heavy_app") is not None:
            item.add_marker(pytest.mark.xdist_group("heavy-apps"))
        elif _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if getattr(config.option, "loadgroup", False):  # set on the workers of --dist loadgroup
        _name_the_groups(items)


def _name_the_groups(items: list[pytest.Item]) -> None:
    """End each grouped test's node id with "@GROUP", as pytest-xdist does to tell its
    scheduler the group: under pytest 9.2 the node id xdist rewrites (`_nodeid`) is no
    longer the one read (pytest-xdist issue 1386), and every group was spread over the
    workers. With an older pytest xdist's own rewrite works, and this leaves it to it."""
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # a pytest before structured node ids
        return
    for item in items:
        names = {str(mark.args[0]) for mark in item.iter_markers("xdist_group") if mark.args}
        if names and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(names))}")


_SLOW_MARKS = ("slow", "x11", "browser", "notebook", "heavy_app")


def _slow_modules_first(items: list[pytest.Item]) -> None:
    """Put the modules holding a test marked slow (or needing a display, a browser, a
    notebook kernel, a heavy app) before the others, each module's tests in their order:
    the workers start on the long tests and end on short ones, so that neither waits
    long for the other at the end of the run."""
    slow = {
        item.path
        for item in items
        if any(item.get_closest_marker(mark) is not None for mark in _SLOW_MARKS)
    }
    items.sort(key=lambda item: item.path not in slow)


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture set up once for its module (or class, or package)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in info.names_closure:
        definitions = info.name2fixturedefs.get(name)
        if definitions and definitions[-1].scope in ("module", "class", "package"):
            return True
    return False


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
