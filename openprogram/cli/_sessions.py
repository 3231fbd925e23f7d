"""`openprogram sessions list | show | render | report | export | fork | check`: reading
recorded sessions from a store (the group's other commands are added by the package:
pending, answer, settle, diff, ops). Start at sessions.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import click

from openprogram.cli._options import store_option
from openprogram.cli._print import Styled, data_text, json_text, say, styled
from openprogram.cli._root import cli
from openprogram.cli._stores import find_node, opened_session, opened_store
from openprogram.core.dag import ContextDAG, Node
from openprogram.echo import echo, mask_url, printable
from openprogram.errors import OpenProgramError

__all__ = ["sessions"]

_COLOUR = {
    "completed": "green",
    "error": "red",
    "running": "yellow",
    "cancelled": "bright_black",
    "stopped": "magenta",
    "waiting": "cyan",
    "unknown": "bright_magenta",
}
_SHOW_LIMIT = 300


# -- sessions ------------------------------------------------------------------------------
@cli.group()
def sessions() -> None:
    """List, inspect, report on and fork recorded sessions.

    NODE arguments take a node id (or a unique prefix), NAME#K for the K-th call of a
    function, llm:NAME#K for its K-th model exchange, or user#K.
    """


@sessions.command("list")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_command(store_spec: str, as_json: bool) -> None:
    """List the sessions in a store, oldest first."""
    with opened_store(store_spec) as store:
        infos = store.list_sessions()
        where = mask_url(store.url)
    if as_json:
        rows = [
            {
                "id": i.id,
                "created_at": i.created_at,
                "nodes": i.nodes,
                "parent": i.parent,
                "at": i.at,
                "branch": i.branch,
            }
            for i in infos
        ]
        say(json_text(rows, indent=2))
        return
    if not infos:
        say(f"no sessions in {where}")
        return
    ids = [printable(i.id, newlines=False) for i in infos]
    width = max(len(i) for i in ids)
    say(f"{'ID':<{width}}  {'CREATED':<19}  {'NODES':>7}  FORKED FROM")
    for info, shown in zip(infos, ids, strict=True):
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.created_at))
        origin = f"{info.parent} at {info.at}" if info.parent else ""
        say(f"{shown:<{width}}  {created}  {info.nodes:>7,}  ", styled(origin, newlines=False))


@sessions.command("show")
@click.argument("session_id", metavar="ID")
@store_option
@click.option("--depth", type=click.IntRange(min=1), help="Show calls down to this depth only.")
@click.option("--all", "show_all", is_flag=True, help=f"Show every node (default: {_SHOW_LIMIT}).")
@click.option("--values", is_flag=True, help="Show each node's output (or error) too.")
@click.option("--code", "code", is_flag=True, help="Show the code version of every call.")
def show_command(
    session_id: str, store_spec: str, depth: int | None, show_all: bool, values: bool,
    code: bool,
) -> None:  # fmt: skip
    """Print a session's call tree: status, duration, tokens and cost per node. A call
    recorded by another version of its function's code than its other calls says which
    (`code <identity>`; --code: every call)."""
    from openprogram.agentic.questions import is_ask, question
    from openprogram.core._tree import walk
    from openprogram.display._payload import summary, value_text

    with opened_session(store_spec, session_id) as session:
        dag = session.dag
        total = summary(dag)
        statuses = total["statuses"]
        idle = _idle(session)
        cut = sum(1 for n in dag.nodes if idle and n.status == "running" and _once(n))
        say(
            styled(f"session {session.id}", newlines=False, bold=True),
            f"  {total['nodes']:,} nodes · {total['kinds']['llm']:,} llm calls · "
            f"{total['input_tokens'] + total['output_tokens']:,} tokens · "
            f"${total['cost_usd']:.4f} · {_duration(total['duration_s'])}"
            + (f" (+{_duration(total['down_s'])} down, resumed)" if total["down_s"] else ""),
            styled(f" · {statuses['error']} errors", fg="red") if statuses["error"] else "",
            *(
                styled(f" · {statuses[status]} {status}", fg=_COLOUR[status])
                for status in ("stopped", "waiting", "unknown")
                if statuses[status]
            ),
            styled(f" · {cut} interrupted", fg=_COLOUR["unknown"]) if cut else "",
        )
        versions: dict[str, set[str]] = {}
        for each in dag.nodes:
            if each.kind == "code" and each.meta.get("code") is not None:
                versions.setdefault(each.name, set()).add(str(each.meta["code"]))
        for shown, (node, level) in enumerate(walk(dag, depth)):
            if not show_all and shown >= _SHOW_LIMIT:
                say(f"… {len(dag) - shown:,} more nodes (use --all or --depth)")
                break
            line = _tree_line(dag, node, level, idle=idle, session_id=session.id)
            version = node.meta.get("code") if node.kind == "code" else None
            if version is not None and (code or len(versions.get(node.name, ())) > 1):
                line = Styled(line + styled(f"  code {version}", newlines=False, fg="cyan"))
            if values:
                out = node.error or value_text(node)[1] or value_text(node)[0]
                out = " ".join(out.split())
                out = f"  {out[:120]}{'…' if len(out) > 120 else ''}"
                line = Styled(line + styled(out, newlines=False, dim=True))
            say(line)
            if node.status == "waiting" and is_ask(node):  # the line cuts it: all of it
                asked = " ".join(question(node).text.split())
                if len(asked) > 100:
                    say("  " * (level + 2), styled(f"asks: {asked}", newlines=False))


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _idle(session: Any) -> bool:
    """Whether no live process holds the session's writer lease: nothing it shows as
    running is running."""
    holder = getattr(session.store, "holder", None)
    found = holder(session.id) if callable(holder) else None
    return found is None or found.expired(time.time()) is not None


def _once(node: Node) -> bool:
    return node.kind == "code" and node.meta.get("effect") == "once"


def _tree_line(
    dag: ContextDAG, node: Node, level: int, *, idle: bool = False, session_id: str = ""
) -> Styled:
    from openprogram.core._tree import node_line

    mark, name, facts = node_line(dag, node)
    colour = _COLOUR.get(node.status)
    if idle and node.status == "running" and node.kind != "user":  # its process ended
        if _once(node):
            mark, colour = "?", _COLOUR["unknown"]
            facts.append(
                "interrupted: its process ended during the call, so whether its effect "
                f"happened is unknown (key {node.meta.get('key')}); settle it: openprogram "
                f"sessions settle {session_id} {node.id} --result JSON | --rerun"
            )
        else:
            facts.append("interrupted: no process runs it (a resumed run runs it again)")
    shown = [styled(fact, newlines=False) for fact in facts]
    if node.status in ("error", "cancelled", "stopped") and node.error and facts:
        shown[-1] = styled(facts[-1], newlines=False, fg="red")
    line = [
        "  " * level + styled(mark, fg=colour),
        styled(name, newlines=False, bold=node.kind == "code"),
        *shown,
    ]
    return Styled("  ".join(line))


@sessions.command("render")
@click.argument("session_id", metavar="ID")
@click.argument("reference", metavar="NODE")
@store_option
@click.option("--diff", is_flag=True, help="Also show what changed since the previous call.")
@click.option("--json", "as_json", is_flag=True, help="Print the messages as JSON.")
def render_command(
    session_id: str, store_spec: str, reference: str, diff: bool, as_json: bool
) -> None:
    """Show exactly what a model call saw: the messages, its reply, and what was hidden.

    For an llm node, its context is rebuilt as it was when the call was made. For a
    call (code node), shows what an llm() call inside it would see now.
    """
    from openprogram.display.calls import CallView, label
    from openprogram.render.render import render_context

    with opened_session(store_spec, session_id) as session:
        dag = session.dag
        node = find_node(dag, reference)
        if node.kind == "user":
            raise click.ClickException(
                f"{echo(reference)} is user input, which sees nothing; give an llm node "
                "(llm:NAME#K) or a call (NAME#K)"
            )
        if node.kind == "code":
            rendered = render_context(dag, node.id)
            if as_json:
                say(json_text(_plain_messages(rendered), ensure_ascii=False, indent=2))
                return
            say(styled(f"what an llm() call in {label(dag, node)} would see", bold=True))
            _echo_messages(rendered)
            return
        view = CallView(dag, node)
        if as_json:
            say(json_text(_plain_messages(view.rendered), ensure_ascii=False, indent=2))
            return
        verdict = {True: "matches the recorded hash", False: "DIFFERS from the recorded hash"}
        say(
            styled(f"what {label(dag, node)} saw", bold=True),
            f"  ({len(node.reads)} nodes read; rebuilt context "
            f"{verdict.get(view.verified, 'has no recorded hash')})",  # type: ignore[arg-type]
        )
        _echo_messages(view.rendered)
        say(styled("── reply", fg="magenta"))
        say(node.output if node.output is not None else "(none)")
        if node.error:
            say(styled(node.error, fg="red"))
        say(styled(f"── hidden from it: {len(view.hidden)} earlier nodes", dim=True))
        for group in view.hidden_groups():
            say(f"  {group.rule} ({group.counted()}): {group.names(dag, limit=6)}")
        if diff and view.previous is not None:
            say(styled(f"── diff vs {label(dag, view.previous)}", dim=True))
            colours = {"+": "green", "-": "red", " ": None}
            for line in view.diff:
                say(styled(f"{line.op} {line.text}", fg=colours[line.op]))


def _plain_messages(rendered: Any) -> list[dict[str, Any]]:
    """The messages with images as `<image sha256:…>` text instead of data URLs."""
    plain = []
    for role, parts in rendered.display_turns():
        texts = [str(p["image"]) if p.get("type") == "image" else p["text"] for p in parts]
        plain.append({"role": role, "content": "\n".join(texts)})
    return plain


def _echo_messages(rendered: Any) -> None:
    colours = {"system": "yellow", "user": "blue", "assistant": "magenta"}
    for message in _plain_messages(rendered):
        role = message["role"]
        say(styled(f"── {role}", fg=colours.get(role.split(" ")[0], "cyan")))
        say(message["content"])
    compacted: dict[str, int] = {}
    for entry in rendered.report:
        if entry["kind"] == "compacted":  # one line per summary, not one per node
            compacted[entry["reason"]] = compacted.get(entry["reason"], 0) + 1
            continue
        say(styled(f"({entry['kind']}: {entry['reason']})", fg="yellow"))
    for reason, count in compacted.items():
        say(styled(f"(compacted, {count} nodes: {reason})", fg="yellow"))


@sessions.command("report")
@click.argument("session_id", metavar="ID")
@store_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write (default: openprogram-ID.html here); - for stdout.",
)
@click.option("--title", help="Heading of the report (default: the session id).")
@click.option(
    "--thumbnail-px",
    type=click.IntRange(min=16),
    default=320,
    show_default=True,
    help="Size screenshots show at in the tree (a click opens them at full size).",
)
def report_command(
    session_id: str, store_spec: str, output: Path | None, title: str | None, thumbnail_px: int
) -> None:
    """Write a session's report: one self-contained HTML file (no network needed)."""
    from openprogram.display.report import report_html, write_report

    if output == Path("-"):
        with opened_session(store_spec, session_id) as session:
            try:
                say(data_text(report_html(session, title=title, thumbnail_px=thumbnail_px)))
            except OpenProgramError as exc:
                raise click.ClickException(str(exc)) from exc
        return
    with opened_session(store_spec, session_id) as session:
        target = output or Path(f"openprogram-{_file_safe(session.id)}.html")
        say(f"writing the report of {len(session.dag):,} nodes…", err=True)
        try:
            written = write_report(session, target, title=title, thumbnail_px=thumbnail_px)
        except OpenProgramError as exc:
            raise click.ClickException(str(exc)) from exc
        except OSError as exc:
            raise click.ClickException(f"cannot write {str(target)!r}: {exc.strerror}") from exc
    size = written.stat().st_size
    say(f"wrote {written} ({size / 1e6:.1f} MB)")


@sessions.command("export")
@click.argument("session_id", metavar="ID")
@store_option
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write, or - for stdout; the suffix picks the format (.graphml, .mmd, "
    ".dot, .json).",
)
@click.option(
    "-f",
    "--format",
    "export_format",
    type=click.Choice(["graphml", "mermaid", "dot", "json"]),
    help="Format, when the suffix does not say.",
)
def export_command(
    session_id: str, store_spec: str, output: Path, export_format: str | None
) -> None:
    """Export a session's DAG as GraphML, Mermaid, DOT or JSON."""
    from openprogram.display.export import export_text, write_export

    if output == Path("-"):
        if export_format is None:
            raise click.ClickException(
                "-o - writes to stdout, so name the format: -f graphml|mermaid|dot|json"
            )
        with opened_session(store_spec, session_id) as session:
            say(data_text(export_text(session.dag, export_format)))  # type: ignore[arg-type]
        return
    if export_format is None and output.suffix.lower() not in (".graphml", ".mmd", ".dot", ".json"):
        raise click.ClickException(
            f"cannot tell the export format from {str(output)!r}; use a .graphml, .mmd, .dot or "
            ".json file name, or pass --format graphml|mermaid|dot|json"
        )
    with opened_session(store_spec, session_id) as session:
        try:
            written = write_export(session.dag, output, format=export_format)  # type: ignore[arg-type]
        except OpenProgramError as exc:
            raise click.ClickException(str(exc)) from exc
    say(f"wrote {written}")


@sessions.command("fork")
@click.argument("session_id", metavar="ID")
@click.argument("reference", metavar="NODE")
@store_option
@click.option("--id", "new_id", help="Id of the new session (default: a random one).")
def fork_command(session_id: str, store_spec: str, reference: str, new_id: str | None) -> None:
    """Start a new session that shares ID's history up to NODE (the original is untouched).

    Run a program inside Session.open(store, NEW_ID) to continue on the fork.
    """
    with opened_session(store_spec, session_id) as session:
        node = find_node(session.dag, reference)
        try:
            fork = session.fork(at=node.id, id=new_id)
        except OpenProgramError as exc:
            raise click.ClickException(str(exc)) from exc
        say(fork.id)
        say(
            f"forked {session.id} at {node.name} #{session.dag.ordinal(node)} ({node.id}); "
            f"inspect it with `openprogram sessions show {fork.id}`",
            err=True,
        )


@sessions.command("check")
@click.argument("session_id", metavar="[ID]", required=False)
@store_option
def check_command(session_id: str | None, store_spec: str) -> None:
    """Check a store (or one session) for damage and say how much is readable.

    Reads only. Exits with status 1 when anything is damaged or a journal is refused.
    """
    from openprogram.store.check import check_store

    if "://" not in store_spec and not Path(store_spec).expanduser().exists():
        raise click.ClickException(f"no session store at {echo(store_spec)}")
    try:
        report = check_store(store_spec, session_id)
    except (OpenProgramError, ImportError) as exc:
        raise click.ClickException(str(exc)) from exc
    for line in report.lines():
        say(line)
    if not report.ok:
        sys.exit(1)


def _file_safe(text: str) -> str:
    """`text` as one file name: no folders, no leading dot (an id may be anything)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text).lstrip(".") or "session"
