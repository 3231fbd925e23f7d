"""The `openprogram sessions pending`, `sessions answer` and `sessions settle` commands
(human in the loop).

Owns their command-line handling; the questions are questions.py's, the answering is
Session.answer's, the settling of an interrupted effect="once" call Session.settle's.
cli.py adds them to its `sessions` group, handing over how it opens stores and sessions
(this module sits below cli.py and never imports it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from openprogram.cli._print import json_text, say, styled
from openprogram.echo import echo, elide

__all__ = ["question_commands"]


def question_commands(
    opened_store: Callable[[str], Any],
    resolve_id: Callable[[Any, str], str],
    opened_session: Callable[[str, str], Any],
    store_option: Callable[[Any], Any],
) -> list[click.Command]:
    """The three commands, built on cli.py's store and session openers."""

    @click.command("pending")
    @click.argument("session_id", metavar="[ID]", required=False)
    @store_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
    def pending_command(session_id: str | None, store_spec: str, as_json: bool) -> None:
        """List the questions runs wait on (ask_user with no answer yet): of one session,
        or of every session in the store. Answer one with `sessions answer ID QID VALUE`."""
        from openprogram.session.session import Session

        found: list[tuple[str, Any]] = []
        with opened_store(store_spec) as store:
            ids = [resolve_id(store, session_id)] if session_id else [
                info.id for info in store.list_sessions()
            ]  # fmt: skip
            for sid in ids:
                session = Session.open(store, sid)
                found += [(sid, question) for question in session.pending()]
                session.close()
        if as_json:
            rows = [{"session": sid, **vars(question)} for sid, question in found]
            say(json_text(rows, indent=2, ensure_ascii=False))
            return
        if not found:
            where = f" in session {ids[0]}" if session_id else ""
            say(styled(f"no questions are waiting{where}", newlines=False))
        for sid, question in found:  # every word of the question, none acting on the terminal
            say(styled(sid, newlines=False, bold=True), f" {question.id}  ",
                styled(question.text, newlines=False))  # fmt: skip
            say("    answer: ", styled(elide(question.expects(), 500), newlines=False))

    @click.command("answer")
    @click.argument("session_id", metavar="ID")
    @click.argument("question_id", metavar="QID")
    @click.argument("value", metavar="VALUE")
    @store_option
    @click.option("--by", help="Who answers, as recorded (default: user@host pid N).")
    def answer_command(
        session_id: str, question_id: str, value: str, store_spec: str, by: str | None
    ) -> None:
        """Answer question QID of session ID (see `sessions pending`). VALUE is text, a
        choice, or JSON for a question with a schema. An answer is final: a question
        answered already (here or elsewhere) keeps its answer. Re-run the program with
        Session.open(store, ID, resume=True) to go on from there."""
        from openprogram.agentic import questions
        from openprogram.errors import UsageError

        with opened_session(store_spec, session_id) as session:
            question_id = _node_id(session, question_id)
            asked = questions.question(questions.find(session.dag, question_id))
            try:
                questions.check(asked, value)  # a VALUE that cannot answer it: exit 2
            except UsageError as exc:
                raise click.BadParameter(str(exc), param_hint="VALUE") from exc
            asked = session.answer(question_id, value, by=by)
        say("answered ", asked.id, " (", styled(elide(asked.text, 200), newlines=False),
            ") in session ", styled(session.id, newlines=False))  # fmt: skip

    @click.command("settle")
    @click.argument("session_id", metavar="ID")
    @click.argument("node_id", metavar="NODE|OP")
    @store_option
    @click.option("--result", "result", metavar="JSON", help="What the call returned.")
    @click.option("--rerun", is_flag=True, help="Its effect did not happen: run it again.")
    @click.option("--by", help="Who settles, as recorded (default: user@host pid N).")
    def settle_command(
        session_id: str,
        node_id: str,
        store_spec: str,
        result: str | None,
        rerun: bool,
        by: str | None,
    ) -> None:
        """Settle call NODE of session ID: an effect="once" call that was interrupted, so
        whether its effect happened is unknown (`sessions show` marks it ?), or operation
        OP, unknown the same way (`sessions ops` lists it). Look the effect up by the
        call's idempotency key (an operation's: its id), then give what it returned
        (--result, JSON; text that is not JSON is taken as text) or --rerun. A call is
        settled once: one settled already (here or by another process) is refused,
        naming who settled it and when. Re-run the program with Session.open(store, ID,
        resume=True) to go on from there."""
        if (result is None) == (not rerun):
            raise click.UsageError("give one of --result JSON or --rerun")
        _short(node_id, "NODE")
        value = None if result is None else _result(result)
        with opened_session(store_spec, session_id) as session:
            operation = any(r.id == node_id for r in session.operations())
            if not operation:
                node_id = _node_id(session, node_id)
            node = session.settle(node_id, value, rerun=rerun, by=by)
        how = "to run again" if rerun else "with " + elide(json_text(value), 200)
        what = [styled(node.name, newlines=False), f" ({node.id}) "]
        if operation:  # the node is the tool call that made it
            what.insert(0, f"operation {node_id} of ")
        say("settled ", *what, how, " in session ", styled(session.id, newlines=False))

    return [pending_command, answer_command, settle_command]


_ID_CHARS = 1000
"""The longest NODE `sessions settle` takes: node ids, NAME#K and operation ids are short."""
_RESULT_CHARS = 1 << 20
"""The longest --result `sessions settle` takes (characters)."""


def _short(text: str, name: str) -> None:
    """BadParameter (exit 2) for a NODE too long to be one, quoted cut."""
    if len(text) > _ID_CHARS:
        raise click.BadParameter(
            f"{echo(text, 60)} is {len(text):,} characters; a node or operation is named "
            f"in at most {_ID_CHARS:,}",
            param_hint=name,
        )


def _result(text: str) -> Any:
    """--result as a value: JSON, else the text itself. BadParameter (exit 2) when it is
    over _RESULT_CHARS, or JSON nested deeper than a stored value may be."""
    from openprogram.core.values import MAX_DEPTH

    if len(text) > _RESULT_CHARS:
        raise click.BadParameter(
            f"is {len(text):,} characters; a result is at most {_RESULT_CHARS:,} (store a "
            "large result elsewhere and settle with where it is)",
            param_hint="--result",
        )
    try:
        value = json.loads(text)
    except RecursionError:
        value = _DEEP
    except ValueError:
        return text
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and value is not _DEEP:  # walked without recursion
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                value = _DEEP
                break
            stack.extend(
                (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    if value is _DEEP:
        raise click.BadParameter(
            f"nests lists and objects deeper than {MAX_DEPTH} levels, more than a stored "
            "value holds; give the result flatter",
            param_hint="--result",
        )
    return value


_DEEP = object()


def _node_id(session: Any, reference: str) -> str:
    """The id of the node `reference` names, in every form a NODE argument takes (a node
    id, a unique id prefix, NAME#K, llm:NAME#K, user#K: display.calls.resolve_node); the
    reference itself when it names none, for the command's own error to list what it
    could name."""
    from openprogram.display.calls import resolve_node
    from openprogram.errors import UsageError

    try:
        return str(resolve_node(session.dag, reference).id)
    except UsageError as exc:
        if any(n.id.startswith(reference) for n in session.dag.nodes):  # an ambiguous
            raise click.ClickException(str(exc)) from exc  # prefix: say so
        return reference
