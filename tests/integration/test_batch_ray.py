"""The Ray engine end to end: a private local Ray cluster (2 CPUs) runs two MiniWoB++
episodes in real Chromium on Xvfb, recording into a real PostgreSQL server; a rerun
skips them; an unreachable cluster is refused before any episode starts."""

from __future__ import annotations

import shutil
import socket

import pytest

from gui_harness.batch import engines, run_batch, session_id
from openprogram.errors import ConfigError
from openprogram.operations.ray import init_ray
from openprogram.store.open import open_store
from tests.support.ray_bystander import bystander  # noqa: F401 - a fixture

pytest.importorskip("ray", reason='needs pip install "openprogram[ray]"')
pytest.importorskip("miniwob", reason='needs pip install "openprogram[bench]"')


@pytest.mark.postgres
@pytest.mark.x11
@pytest.mark.browser
@pytest.mark.skipif(shutil.which("chromedriver") is None, reason="chromedriver is not installed")
def test_ray_runs_episodes_into_postgres_and_a_rerun_skips_them(
    bystander,  # noqa: F811
    postgres_url,
    tmp_path,
    monkeypatch,
):
    starts = []

    def counted_init_ray(*args, **kwargs):
        starts.append(kwargs.get("address"))
        return init_ray(*args, **kwargs)

    monkeypatch.setattr(engines, "init_ray", counted_init_ray)
    # a private Ray even with another running here (the old code joined it and failed:
    # "When connecting to an existing cluster, num_cpus and num_gpus must not be provided")
    tasks = [
        {"id": "cb", "benchmark": "miniwob/click-button", "seed": 5},
        {"id": "focus", "benchmark": "miniwob/focus-text", "seed": 2},
    ]
    result = run_batch(tasks, workers=2, engine="ray", store=postgres_url, model="oracle",
                       name="ray", out=tmp_path)  # fmt: skip
    assert [e["status"] for e in result.episodes] == ["success", "success"], result.episodes
    assert all(e["reward"] == 1.0 for e in result.episodes)
    store, _ = open_store(postgres_url)
    try:
        assert {s.id for s in store.list_sessions()} == {
            session_id("ray", "cb", 1),
            session_id("ray", "focus", 1),
        }
    finally:
        store.close()
    assert (tmp_path / result.episodes[0]["report"]).is_file()

    again = run_batch(tasks, workers=2, engine="ray", store=postgres_url, model="oracle",
                      name="ray", out=tmp_path)  # fmt: skip
    assert (again.ran, again.skipped) == (0, 2)
    assert starts == ["local"]  # the rerun, with nothing left to run, started no Ray


def test_an_unreachable_ray_cluster_is_refused_before_any_episode(tmp_path):
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = str(tmp_path / "s.db")
    tasks = [{"id": "cb", "benchmark": "miniwob/click-button"}]
    with pytest.raises(ConfigError, match=rf"no Ray cluster answers at '127.0.0.1:{port}'"):
        run_batch(tasks, engine="ray", address=f"127.0.0.1:{port}", store=store, model="oracle",
                  out=tmp_path)  # fmt: skip
    opened, _ = open_store(store)
    assert opened.list_sessions() == []
    opened.close()
