"""Human in the loop: ask_user, ConsoleAsk and needs_approval.

ask_user records one `ask_user` code node; the answer comes from the runtime's asker
(`Runtime(ask=...)`, an input box in notebooks), else the run suspends with RunWaiting
and session.answer() completes that node (questions.py). A resumed run gets the answer
as the node's recorded output. Start at ask_user().
"""

from __future__ import annotations

import builtins
import functools
import inspect
import json
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from openprogram.agentic._signature import resolved_annotations
from openprogram.agentic.function import agentic_function
from openprogram.agentic.questions import ASK, Question, approval, check
from openprogram.agentic.questions import question as question_of
from openprogram.core import _context
from openprogram.echo import printable
from openprogram.errors import RunWaiting, UsageError

__all__ = ["ConsoleAsk", "ask_user", "needs_approval"]

Asker = Callable[[Question], Any]
"""`Runtime(ask=...)`: takes the Question (str() is its text), returns the answer or None
for "not now" (the run suspends)."""

_TERMINAL = threading.Lock()
_APPROVE = ["yes", "no"]


def ask_user(
    question: str,
    *,
    choices: Sequence[Any] | None = None,
    schema: type[BaseModel] | None = None,
) -> Any:
    """Ask a person `question` and return the answer; recorded as an `ask_user` node.

    choices: the allowed answers (JSON values); the answer is one of them.
    schema: a pydantic model; the answer is an instance of it.
    With neither, the answer is text. The runtime's asker answers (`Runtime(ask=...)`,
    ConsoleAsk on a terminal, an input box in a notebook); with none, or when it returns
    None, raises RunWaiting: the run suspends, `session.pending()` lists the question,
    `session.answer(id, value)` answers it, and the program re-run under
    `Session.open(store, id, resume=True)` gets the answer here, with nothing that
    finished before running again. UsageError for bad arguments or a wrong answer.
    """
    if not isinstance(question, str) or not question.strip():
        raise UsageError(f"ask_user(question={question!r}) needs the question as text")
    if choices is not None and schema is not None:
        raise UsageError("ask_user takes choices= or schema=, not both")
    listed: list[Any] | None = None
    if choices is not None:
        if isinstance(choices, (str, bytes)) or not isinstance(choices, Sequence) or not choices:
            raise UsageError(f"choices={choices!r} must be a non-empty list of answers")
        listed = [_json_value(c) for c in choices]
    shape: dict[str, Any] | None = None
    if schema is not None:
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise UsageError(f"schema={schema!r} must be a pydantic model class")
        shape = schema.model_json_schema()
    token = _context.enter(schema=schema)
    try:
        answer = _ask(question, listed, shape)
    finally:
        _context.leave(token)
    if schema is None:
        return answer
    try:
        return schema.model_validate(answer)
    except ValidationError as exc:  # a recorded answer the model no longer accepts
        raise UsageError(
            f"the answer {json.dumps(answer, default=repr)[:200]} to {question[:200]!r} does not "
            f"validate as {schema.__name__}: {exc.errors()[0]['msg']}"
        ) from exc


def _json_value(choice: Any) -> Any:
    try:
        return json.loads(json.dumps(choice, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        raise UsageError(
            f"choice {choice!r:.200} is not a JSON value (text, a finite number, bool)"
        ) from None


def _asked(question: str, choices: list[Any] | None, schema: dict[str, Any] | None) -> Any:
    session = _context.current_session()
    frame = session.dag.get(_context.frame_id())
    if frame is not None and frame.name == ASK:
        frame.meta["ask"] = True
        asked = question_of(frame)
    else:  # not recorded (the store failed): asked all the same, and never suspended
        asked = Question(id="", text=question, choices=choices, schema=schema)
    replayed = getattr(getattr(_context.live_runtime(), "model", None), "recorded_answer", None)
    if frame is not None and callable(replayed):  # a ReplayModel answers as recorded
        found, answer = replayed(session.dag, frame)
        if found:
            return answer
    asker = _asker()
    answer = None if asker is None else asker(asked)
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()  # never awaited: no "was never awaited" warning
        raise UsageError(
            f"the asker {asker!r} returned an awaitable; Runtime(ask=...) takes a plain "
            "function returning the answer (or None), e.g. ConsoleAsk()"
        )
    if answer is not None:
        checked = check(asked, answer)
        model = _context.call_context().schema
        if model is not None:
            try:
                model.model_validate(checked)
            except ValidationError as exc:
                raise UsageError(
                    f"the asker's answer to question {asked.id} does not validate as "
                    f"{model.__name__}: {exc.errors()[0]['msg']}"
                ) from exc
        return checked
    if not asked.id:
        raise UsageError(f"ask_user({question[:200]!r}) got no answer and was not recorded")
    raise RunWaiting(
        f"waiting for an answer to question {asked.id}: {question[:200]!r}", question=asked
    )


_asked.__name__ = _asked.__qualname__ = ASK
with warnings.catch_warnings():  # its tool-arguments model (never used) has a field
    warnings.filterwarnings("ignore", 'Field name "schema"', UserWarning)  # "schema"
    _ask = agentic_function(_asked)


RERUN = "rerun"
"""The answer that settles an interrupted effect as not done: run it again."""


def ask_to_settle(question: str) -> tuple[bool, Any] | None:
    """Put `question` about an effect whose outcome is unknown (an interrupted
    effect="once" call, an unknown operation) to the runtime's asker: (True, None) when
    the person answers "rerun" (it did not happen: run it again), else (False, what it
    returned: the answer as JSON, else as text). None when the runtime has no asker;
    RunWaiting when the asker says "not now"."""
    if getattr(_context.live_runtime(), "ask", None) is None:
        return None
    text = str(ask_user(question)).strip()
    if text.lower() == RERUN:
        return True, None
    try:
        return False, json.loads(text)
    except ValueError:
        return False, text


def _asker() -> Asker | None:
    """The ambient runtime's asker; in a notebook kernel without one, the input box."""
    runtime = _context.live_runtime()
    asker = getattr(runtime, "ask", None)
    if asker is not None:
        return asker  # type: ignore[no-any-return]
    return ConsoleAsk() if _in_notebook() else None


def _in_notebook() -> bool:
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class ConsoleAsk:
    """Asks on the terminal (in a notebook, an input box): shows the question and its
    choices and reads one line; a choice may be given by its number, a schema answer as
    JSON. An empty line, end of input or a kernel without input answers "not now" (the
    run suspends). An answer that does not fit is explained and asked again, `attempts`
    times in all.

    read: a function prompt -> line (default: the builtin input); write: where the
    question and the explanations go (default: standard output).
    """

    def __init__(
        self,
        *,
        attempts: int = 3,
        read: Callable[[str], str] | None = None,
        write: IO[str] | None = None,
    ) -> None:
        if attempts < 1:
            raise UsageError(f"attempts={attempts!r} must be at least 1")
        self.attempts = attempts
        self._read = read
        self._write = write

    def __call__(self, asked: Question) -> object:
        with _TERMINAL:  # tool calls run in parallel may ask at once: one at a time
            return self._ask(asked)

    def _ask(self, asked: Question) -> Any:
        out = self._write or sys.stdout
        print(f"\n{printable(asked.text)}", file=out)  # a model's text: no escapes act
        if asked.choices is not None:
            for number, choice in enumerate(asked.choices, 1):
                print(f"  {number}. {printable(_shown(choice), newlines=False)}", file=out)
        elif asked.schema is not None:
            print(f"  (answer in JSON: {printable(asked.expects())})", file=out)
        out.flush()
        read = self._read or builtins.input
        for _ in range(self.attempts):
            try:
                line = read("> ")
            except (EOFError, NotImplementedError):  # no terminal, or a kernel without stdin
                return None
            line = line.strip()
            if not line:
                return None
            if asked.choices is not None and line.isdigit():
                number = int(line)
                if 1 <= number <= len(asked.choices):
                    return asked.choices[number - 1]
            try:
                return check(asked, line)
            except UsageError as exc:
                print(f"  {printable(str(exc))}", file=out)
                out.flush()
        return None


def _shown(choice: Any) -> str:
    return choice if isinstance(choice, str) else json.dumps(choice)


_DECLINED = "the user declined this call of {name}; it did not run. Do not call it again "
_DECLINED += "unless the user asks for it."


def needs_approval(
    tool: Callable[..., Any], *, question: Callable[..., str] | None = None
) -> Callable[..., Any]:
    """`tool` as a tool that asks the user before each call (`llm(tools=[...])`).

    The question is "Allow <name>(<arguments>)?" with the choices "yes" and "no" (every
    argument shown, a long one with its middle elided and its sha256: questions.approval),
    or what `question(**arguments)` returns. "yes" runs the tool; "no" runs nothing and the
    model is told the call was declined (the node's `meta["declined"]` is True). With no
    answer at hand the run suspends like any ask_user. Keeps the tool's name, spec and
    settings. A tool object with its own `needs_approval(question=)` (an MCP server's
    tool) is asked for its approving copy.
    """
    approving = getattr(tool, "needs_approval", None)
    if callable(approving) and not getattr(tool, "__agentic__", False):  # a tool object
        return approving(question=question)  # type: ignore[no-any-return]
    if not callable(tool) or not hasattr(tool, "__name__"):
        raise UsageError(f"needs_approval({tool!r}) takes a function")
    settings: dict[str, Any] = {}
    if getattr(tool, "__agentic__", False):
        settings = {
            "expose": tool.expose,  # type: ignore[attr-defined]
            "render_range": tool.render_range,  # type: ignore[attr-defined]
            "input": tool.input_meta,  # type: ignore[attr-defined]
            "system": tool.system,  # type: ignore[attr-defined]
            "render_output": tool.render_output,  # type: ignore[attr-defined]
            "effect": getattr(tool, "effect", None),  # asked inside it: ask before acting
        }
    raw = inspect.unwrap(tool)
    name = raw.__name__
    parameters = inspect.signature(raw).parameters

    def approve(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        passed = {**dict(zip(parameters, args, strict=False)), **kwargs}
        # in the signature's order: a replayed tool call may list its arguments otherwise,
        # and a resumed run must ask the very same question
        given = {k: passed[k] for k in parameters if k in passed and k != "runtime"}
        text = question(**given) if question is not None else approval(name, given)
        if ask_user(text, choices=_APPROVE) == "yes":
            return True
        frame = _context.current_session().dag.get(_context.frame_id())
        if frame is not None:
            frame.meta["declined"] = True
        return False

    if inspect.iscoroutinefunction(raw):

        @functools.wraps(raw)
        async def approved_async(*args: Any, **kwargs: Any) -> Any:
            if not approve(args, kwargs):
                return _DECLINED.format(name=name)
            return await raw(*args, **kwargs)

        wrapper: Callable[..., Any] = approved_async
    else:

        @functools.wraps(raw)
        def approved(*args: Any, **kwargs: Any) -> Any:
            if not approve(args, kwargs):
                return _DECLINED.format(name=name)
            return raw(*args, **kwargs)

        wrapper = approved
    wrapper.__annotations__ = resolved_annotations(raw)  # resolved where the tool was written
    return agentic_function(wrapper, **settings)  # type: ignore[no-any-return]
