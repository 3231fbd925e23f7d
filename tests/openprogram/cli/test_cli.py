"""The `openprogram` command over a real SQLite store: every command, and its errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import networkx as nx
import pytest
from click.testing import CliRunner

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.cli import cli


@agentic_function(render_range={"callers": 0})
def review(draft: str) -> str:
    return llm(f"Review: {draft}")


@agentic_function
def write(product: str) -> str:
    draft = llm(f"Tagline for {product}.")
    review(draft)
    return llm("Shorter.")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A SQLite store with session "tagline01", named by OPENPROGRAM_STORE."""
    path = tmp_path / "runs.db"
    script = ScriptedModel({"write": ["Long tagline here.", "Short."], "review": ["too long"]})
    with Session(str(path), id="tagline01") as session, Runtime(script):
        session.submit("We need a tagline.")
        write("coffee")
    monkeypatch.setenv("OPENPROGRAM_STORE", str(path))
    monkeypatch.chdir(tmp_path)
    return path


def run(*arguments: str, code: int = 0):
    result = CliRunner().invoke(cli, list(arguments), prog_name="openprogram")
    assert result.exit_code == code, result.output
    return result


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()):
    """Every command, the installed plugins' too (as `openprogram --help` lists them)."""
    yield prefix
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            yield from all_commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


@pytest.mark.parametrize("command", list(all_commands(cli)), ids=" ".join)
def test_every_command_has_help(command):
    result = run(*command, "--help")

    assert result.output.startswith(f"Usage: openprogram {' '.join(command)}".rstrip())


def test_list_shows_each_session_with_its_node_count(store):
    result = run("sessions", "list")

    assert "tagline01" in result.output and "      6  " in result.output
    rows = json.loads(run("sessions", "list", "--json").output)
    assert rows[0]["id"] == "tagline01" and rows[0]["nodes"] == 6


def test_show_prints_the_call_tree_with_tokens(store):
    output = run("sessions", "show", "tagline01").output

    assert "session tagline01  6 nodes · 3 llm calls" in output
    assert "✓  write #1  " in output
    assert "\n    ✓  review #1 (llm)  " in output and " tok $0.0000" in output
    shallow = run("sessions", "show", "tag", "--depth", "1", "--values").output
    assert "review" not in shallow and '"Short."' in shallow


def test_render_shows_what_an_llm_call_saw_and_why_nodes_were_hidden(store):
    output = run("sessions", "render", "tagline01", "llm:write#2", "--diff").output

    assert (
        "what write #2 (llm) saw  (4 nodes read; rebuilt context matches the recorded hash)"
        in output
    )
    assert "[review #1] input=" in output and "Shorter." in output
    assert "── reply\nShort.\n" in output
    assert "inside review (expose='io') (1 node in 1 call): review #1" in output
    assert "  content:\n-   Tagline for coffee.\n+   Shorter.\n" in output


DRAFT = '"draft": "Long tagline here."'


def test_render_as_json_gives_the_messages(store):
    messages = json.loads(run("sessions", "render", "tagline01", "llm:review#1", "--json").output)

    assert messages == [
        {"role": "user", "content": f"[review #1] input={{{DRAFT}}}\nReview: Long tagline here."}
    ]


def test_render_of_a_call_shows_what_a_call_inside_it_would_see_now(store):
    output = run("sessions", "render", "tagline01", "write#1").output

    assert output.startswith("what an llm() call in write #1 would see")
    assert "assistant" in output and "Short." in output


def test_report_writes_exactly_the_file_asked_for(store, tmp_path):
    target = tmp_path / "out" / "run.html"
    target.parent.mkdir()

    result = run("sessions", "report", "tagline01", "-o", str(target))

    assert f"wrote {target}" in result.output
    assert [p.name for p in target.parent.iterdir()] == ["run.html"]
    assert target.read_text(encoding="utf-8").startswith("<!doctype html>")
    run("sessions", "report", "tagline01")
    assert (tmp_path / "openprogram-tagline01.html").is_file()


def test_the_default_report_path_stays_in_the_current_folder_whatever_the_id(store, tmp_path):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    Session(str(store), id="../../escape").close()
    Session(str(store), id="/etc/evil").close()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        run("sessions", "report", "../../escape")
        run("sessions", "report", "/etc/evil")
    assert sorted(p.name for p in work.iterdir()) == [
        "openprogram-_.._escape.html",
        "openprogram-_etc_evil.html",
    ]
    assert not (tmp_path / "escape.html").exists()
    assert not list(tmp_path.glob("openprogram-*escape*"))


def test_check_reports_an_intact_store_and_session(store):
    result = run("sessions", "check")
    assert "runs.db: ok — 1 session(s), 6 nodes readable" in result.output
    assert (
        "session tagline01: ok, 6 of 6 rows read are nodes"
        in run("sessions", "check", "tagline01").output
    )


def test_export_writes_graphml(store, tmp_path):
    run("sessions", "export", "tagline01", "-o", str(tmp_path / "dag.graphml"))

    assert nx.read_graphml(tmp_path / "dag.graphml").number_of_nodes() == 6


def test_fork_records_a_new_session_sharing_history(store):
    result = run("sessions", "fork", "tagline01", "review#1", "--id", "fork01")

    assert result.stdout.strip() == "fork01"
    listed = {row["id"]: row for row in json.loads(run("sessions", "list", "--json").output)}
    assert listed["fork01"]["parent"] == "tagline01"
    assert "review #1" in run("sessions", "show", "fork01").output


def test_the_default_store_is_openprogram_db_in_the_current_folder(store, monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_STORE")
    store.rename(store.with_name("openprogram.db"))

    assert "tagline01" in run("sessions", "list").output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("sessions", "show", "nothing"), "no session 'nothing'"),
        (("sessions", "render", "tagline01", "write#7"), "use #1 to #1"),
        (("sessions", "render", "tagline01", "user#1"), "is user input, which sees nothing"),
        (("sessions", "list", "--store", "missing.db"), "no session store at 'missing.db'"),
        (("sessions", "list", "--store", "mysql://x"), "scheme openprogram does not know"),
        (("sessions", "list", "--store", "sqlite:///:memory:"), "keeps nothing between processes"),
        (("sessions", "check", "nothing"), "no session 'nothing'"),
        (("sessions", "check", "--store", "missing.db"), "no session store at 'missing.db'"),
        (("sessions", "export", "tagline01", "-o", "dag.txt"), "use a .graphml, .mmd"),
        (("sessions", "export", "tagline01", "-o", "dag.txt"), "pass --format graphml|mermaid"),
        (("sessions", "render", "tagline01", "nope#1"), "no code node is named 'nope'; code"),
        (("sessions", "report", "tagline01", "-o", "nowhere/run.html"), "does not exist"),
    ],
)
def test_errors_say_what_to_do(store, arguments, message):
    result = run(*arguments, code=1)

    assert message in result.output
    assert "Traceback" not in result.output


def test_gui_needs_a_model(monkeypatch):
    monkeypatch.delenv("OPENPROGRAM_MODEL", raising=False)

    result = run("gui", "open the settings", code=2)

    assert "pass --model provider/name" in result.output


@pytest.mark.slow
def test_the_entry_point_runs_as_a_program():
    result = subprocess.run(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0 and result.stdout.startswith("openprogram, version ")


def test_show_counts_and_marks_a_stopped_run_apart_from_errors(tmp_path, monkeypatch):
    from openprogram import RunStopped

    @agentic_function
    def job() -> None:
        raise RunStopped("paused by the operator")

    path = tmp_path / "stopped.db"
    with Session(str(path), id="paused01"), pytest.raises(RunStopped):
        job()
    output = run("sessions", "show", "paused01", "--store", str(path)).output

    assert "1 nodes · 0 llm calls" in output and " · 1 stopped" in output
    assert "errors" not in output
    assert "■  job #1" in output and "RunStopped: paused by the operator" in output


# -- plugins -------------------------------------------------------------------------------


def test_the_gui_agent_commands_come_from_its_plugin_and_are_listed_apart():
    output = run("--help").output
    built_in, _, plugins = output.partition("Plugin commands (from gui_harness):")
    assert "sessions" in built_in
    for name in ("batch", "bench", "demo", "gui", "serve"):
        assert f"\n  {name} " in plugins and f"\n  {name} " not in built_in.split("Commands:")[1]
    assert run("demo", "--help").output.startswith("Usage: openprogram demo")


def test_without_plugins_the_help_and_an_unknown_command_say_what_to_install(monkeypatch):
    import openprogram.cli._root

    monkeypatch.setattr(openprogram.cli._root, "_entry_points", list)  # nothing is installed
    help_text = run("--help").output
    assert "none installed" in help_text and "pip install 'openprogram[gui]'" in help_text
    assert "\n  demo " not in help_text
    result = run("demo", code=2)
    assert "No such command 'demo'" in result.output
    assert "come from a plugin, and none is installed: pip install 'openprogram[gui]'" in (
        " ".join(result.output.split())
    )


_PLUGIN = """
import click

@click.command()
@click.argument("who")
def hello(who):
    '''Greet WHO from a plugin.'''
    click.echo(f"hello, {who}")

broken = object()
"""

_ENTRY_POINTS = """[openprogram.commands]
hello = hello_plugin:hello
missing = hello_plugin_gone:command
odd = hello_plugin:broken
sessions = hello_plugin:hello
"""


@pytest.mark.slow
def test_an_installed_plugin_adds_its_commands_and_a_broken_one_says_why(tmp_path):
    (tmp_path / "hello_plugin.py").write_text(_PLUGIN)
    info = tmp_path / "hello_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(_ENTRY_POINTS)

    def openprogram(*arguments: str) -> subprocess.CompletedProcess[str]:
        code = "from openprogram.cli import main; main()"
        return subprocess.run(
            [sys.executable, "-c", code, *arguments],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"},
            check=False,
        )

    listing = openprogram("--help").stdout
    assert "Plugin commands (from hello_plugin, hello_plugin_gone):" in listing
    assert "hello    Greet WHO from a plugin." in listing
    assert "Unavailable: the 'missing' command (hello_plugin_gone:command) could not be" in listing
    assert "Plugin commands (from gui_harness):" in listing  # the other plugin is still there
    assert openprogram("hello", "Ada").stdout == "hello, Ada\n"
    assert "List, inspect" in openprogram("sessions", "--help").stdout  # built-ins win
    odd = openprogram("odd")
    assert odd.returncode == 1 and "is <object object at" in odd.stderr
    assert "not a click command" in odd.stderr and "Traceback" not in odd.stderr
    missing = openprogram("missing", "--flag")
    assert missing.returncode == 1 and "No module named 'hello_plugin_gone'" in missing.stderr


PASSWORD = "S3cretPassw0rd!"


@pytest.mark.parametrize(
    "arguments",
    [
        ["sessions", "list"],
        ["sessions", "show", "some-id"],
        ["sessions", "check"],
        ["sessions", "report", "some-id"],
    ],
)
@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://bob:{PASSWORD}@127.0.0.1:1/db",
        f"postgresql://127.0.0.1:1/db?user=bob&password={PASSWORD}",
        f"sqlite:///runs.db?password={PASSWORD}",
        f"mysql://bob:{PASSWORD}@127.0.0.1/db",
    ],
)
@pytest.mark.slow
def test_no_session_command_prints_a_store_password(arguments, url):
    result = CliRunner().invoke(cli, [*arguments, "--store", url])
    assert result.exit_code == 1, result.output
    assert "***" in result.output
    assert "S3cret" not in result.output


def test_a_huge_session_id_or_store_is_echoed_in_a_few_hundred_characters(store):
    result = CliRunner().invoke(cli, ["sessions", "show", "x" * 1_000_000])
    assert result.exit_code == 1 and "no session 'xxx" in result.output
    assert "characters]" in result.output and len(result.output) < 2_000
    missing = CliRunner().invoke(cli, ["sessions", "list", "--store", "/" + "y" * 100_000])
    assert missing.exit_code == 1 and len(missing.output) < 2_000
    rendered = CliRunner().invoke(cli, ["sessions", "render", "tagline01", "z" * 1_000_000])
    assert rendered.exit_code == 1 and "no node 'zzz" in rendered.output
    assert "characters]" in rendered.output and len(rendered.output) < 2_000


@pytest.mark.postgres
def test_a_postgresql_store_is_named_without_its_password(postgres_url):
    scheme, _, rest = postgres_url.partition("://")
    user, _, where = rest.partition("@")
    url = f"{scheme}://{user.split(':')[0]}:{PASSWORD}@{where}"
    runner = CliRunner()
    listed = runner.invoke(cli, ["sessions", "list", "--store", url])
    assert listed.exit_code == 0, listed.output
    assert "no sessions in postgresql://" in listed.output and ":***@" in listed.output
    shown = runner.invoke(cli, ["sessions", "show", "nope", "--store", url])
    assert shown.exit_code == 1 and "no session 'nope' in postgresql://" in shown.output
    checked = runner.invoke(cli, ["sessions", "check", "--store", url])
    assert checked.exit_code == 0 and "store postgresql://" in checked.output
    for result in (listed, shown, checked):
        assert "S3cret" not in result.output and ":***@" in result.output
