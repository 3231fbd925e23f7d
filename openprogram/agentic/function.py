"""@agentic_function: turn a function into a recorded step of the context DAG.

Owns decoration-time validation, the tool `.spec` (and the model its arguments are
validated with), runtime injection, `render_output`, and the recording of one `code`
node per call (created at entry, completed in place at exit). Recording never changes
what the function returns or raises; the errors of recording that reach the caller are
ResumeDivergence (a resumed run left its recording), EffectUnknown and StoreError (a call
with an effect that must not run: effects.py) and RunStopped (a drain or a suspension
where the call begins). Start at agentic_function().
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, get_args, overload

from pydantic import BaseModel, Field, create_model

from openprogram.agentic._identity import ON_CODE_CHANGE, code_identity
from openprogram.callbacks.base import notify
from openprogram.core import _context
from openprogram.core.dag import Effect, Expose, Node, RenderRange, check_render_range
from openprogram.errors import EffectUnknown, ResumeDivergence, RunStopped, StoreError

__all__ = ["agentic_function"]

log = logging.getLogger("openprogram")

F = TypeVar("F", bound=Callable[..., Any])

_EXPOSE = ("io", "llm", "full", "hidden")
_NOT_RESUMED = object()
_INPUT_KEYS = {"description", "options", "hidden"}


@dataclass
class _ToolCallSlot:
    """Set by the tool loop around one tool call: the call's id and the llm node that
    asked for it; the next recorded call takes them into its meta and leaves its node."""

    id: str
    asked_by: str
    node: Node | None = None


_tool_call: ContextVar[_ToolCallSlot | None] = ContextVar("openprogram_tool_call", default=None)
_next_meta: ContextVar[dict[str, Any] | None] = ContextVar("openprogram_next_meta", default=None)
_compactor: ContextVar[Callable[[str], str] | None] = ContextVar(
    "openprogram_compactor", default=None
)  # the innermost running function's own compactor


@contextmanager
def _recorded_with(meta: dict[str, Any]) -> Iterator[None]:
    """The next call recorded in this context carries `meta` on its node (the calls
    inside it do not): how the runtime marks the summaries it asks for."""
    token = _next_meta.set(meta)
    try:
        yield
    finally:
        _next_meta.reset(token)


@overload
def agentic_function(
    fn: F,
    *,
    expose: Expose = "io",
    render_range: Mapping[str, int | None] | None = None,
    input: Mapping[str, Mapping[str, Any]] | None = None,
    system: str | None = None,
    render_output: Callable[[Any], Any] | None = None,
    compactor: Callable[[str], str] | None = None,
    effect: Effect | None = None,
    on_code_change: str | None = None,
) -> F: ...
@overload
def agentic_function(
    fn: None = None,
    *,
    expose: Expose = "io",
    render_range: Mapping[str, int | None] | None = None,
    input: Mapping[str, Mapping[str, Any]] | None = None,
    system: str | None = None,
    render_output: Callable[[Any], Any] | None = None,
    compactor: Callable[[str], str] | None = None,
    effect: Effect | None = None,
    on_code_change: str | None = None,
) -> Callable[[F], F]: ...


def agentic_function(
    fn: Callable[..., Any] | None = None,
    *,
    expose: Expose = "io",
    render_range: Mapping[str, int | None] | None = None,
    input: Mapping[str, Mapping[str, Any]] | None = None,
    system: str | None = None,
    render_output: Callable[[Any], Any] | None = None,
    compactor: Callable[[str], str] | None = None,
    effect: Effect | None = None,
    on_code_change: str | None = None,
) -> Any:
    """Record every call of `fn` as a `code` node; used bare or with settings.

    expose: what callers' llm() calls see of this function (DESIGN.md §4).
    render_range: `{"callers": None | int >= 0, "subcalls": int >= -1}` for this
        function's own llm() calls.
    input: per-parameter `{"description", "options", "hidden"}` for `.spec` and rendering.
    system: text appended to the system message of this function's llm() calls.
    render_output: maps the return value to what this call's io line shows later
        calls (e.g. a count and the first items of a long list); the stored output
        stays whole. Called once, when the call returns.
    compactor: the agentic function `(text) -> summary` that llm() calls inside this
        function use when a `{"tokens": N}` render would overflow (default: the
        Runtime's, else openprogram.summarize_history).
    effect: the call's side effect (docs/operations.md#effects-and-the-ledger): None
        (it runs again when a resumed run meets it unfinished), "idempotent" (it may run
        again: it does, with the same `idempotency_key()`) or "once" (at most once: when
        it began and did not finish, a resumed run records it `unknown` and raises
        EffectUnknown until a person settles it). Its start is committed before it runs.
    on_code_change: what a resumed run does with a completed call of this function
        recorded by other code (each node records its code identity, `meta["code"]`):
        "keep" its recorded result, "refuse" (ResumeDivergence), or run the "latest"
        code again; None: the Runtime's `on_code_change` (default "keep").
    Raises ValueError (UsageError) at decoration time for any invalid setting.
    """
    if fn is not None and not callable(fn):
        raise _usage(f"@agentic_function got {fn!r}; use it bare or with keyword settings")
    if expose not in _EXPOSE:
        raise _usage(f"expose={expose!r} is not one of 'io', 'llm', 'full', 'hidden'")
    checked_range = check_render_range(render_range)
    if system is not None and not isinstance(system, str):
        raise _usage(f"system={system!r} must be a string or None")
    if render_output is not None and not callable(render_output):
        raise _usage(
            f"render_output={render_output!r} must be a function of the return value, "
            "e.g. render_output=lambda rows: {'count': len(rows), 'first': rows[:5]}"
        )

    if on_code_change is not None and on_code_change not in ON_CODE_CHANGE:
        raise _usage(f"on_code_change={on_code_change!r} is not one of {ON_CODE_CHANGE!r}")
    if effect is not None and effect not in get_args(Effect):
        raise _usage(f"effect={effect!r} is not one of None, 'idempotent', 'once'")
    if compactor is not None and not getattr(compactor, "__agentic__", False):
        raise _usage(
            f"compactor={compactor!r} must be an @agentic_function (text: str) -> str, so its "
            "summaries are recorded and reused on resume"
        )

    def decorate(func: Callable[..., Any]) -> Any:
        _refuse_generators(func)
        wrapped = _wrap(
            func, expose, checked_range, input or {}, system, render_output, compactor, effect,
            on_code_change,
        )  # fmt: skip
        return wrapped

    return decorate if fn is None else decorate(fn)


def _usage(message: str) -> Exception:
    from openprogram.errors import UsageError

    return UsageError(message)


def _refuse_generators(fn: Callable[..., Any]) -> None:
    """A generator's body runs when it is iterated, after the call returned: recorded as
    a call it would complete at once with a generator object as output, and its llm()
    calls would land outside it. Refused at decoration with the two ways that work."""
    target = inspect.unwrap(fn)
    kind = (
        "an async generator"
        if inspect.isasyncgenfunction(target)
        else "a generator"
        if inspect.isgeneratorfunction(target)
        else None
    )
    if kind is None:
        return
    name = getattr(fn, "__qualname__", repr(fn))
    collect = "[x async for x in ...]" if kind.startswith("an async") else "list(...)"
    raise _usage(
        f"@agentic_function cannot record {name}: it is {kind} function, whose body runs "
        "only when it is iterated, after the call has returned. Decorate a function that "
        f"collects what it yields (`return {collect}`), "
        "or stream text from inside a decorated function with llm(..., stream=True)"
    )


def _check_input(fn: Callable[..., Any], meta: Mapping[str, Mapping[str, Any]]) -> None:
    params = inspect.signature(fn).parameters
    for name, entry in meta.items():
        if name not in params:
            raise _usage(
                f"input={{{name!r}: ...}} names no parameter of {fn.__qualname__}; "
                f"its parameters are {list(params)!r}"
            )
        if not isinstance(entry, Mapping):
            raise _usage(f"input[{name!r}]={entry!r} must be a dict")
        unknown = set(entry) - _INPUT_KEYS
        if unknown:
            raise _usage(
                f"input[{name!r}] key {sorted(unknown)[0]!r} is unknown; "
                "use 'description', 'options', 'hidden'"
            )
        options = entry.get("options")
        if options is not None and not isinstance(options, (list, tuple)):
            raise _usage(f"input[{name!r}]['options']={options!r} must be a list")


def _wrap(
    fn: Callable[..., Any],
    expose: Expose,
    render_range: RenderRange | None,
    meta: Mapping[str, Mapping[str, Any]],
    system: str | None,
    render_output: Callable[[Any], Any] | None = None,
    compactor: Callable[[str], str] | None = None,
    effect: Effect | None = None,
    on_code_change: str | None = None,
) -> Any:
    _check_input(fn, meta)
    signature = inspect.signature(fn)
    params = list(signature.parameters)
    skipped = {"runtime"}
    if params and params[0] in ("self", "cls") and "." in fn.__qualname__:
        skipped.add(params[0])
    has_runtime = "runtime" in signature.parameters
    hidden = [name for name, entry in meta.items() if entry.get("hidden")]
    name = fn.__name__
    settings: dict[str, Any] = {
        "expose": expose,
        "render_range": render_range,
        "hidden_inputs": hidden,
    }
    if system:
        settings["system"] = system
    if effect is not None:
        settings["effect"] = effect
    if on_code_change is not None:
        settings["on_code_change"] = on_code_change

    bind = _binder(signature, skipped)

    def begin(args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Call:
        call = _Call()
        runtime = _context.live_runtime()
        if has_runtime:
            given = kwargs.get("runtime")
            if given is None and not _runtime_positional(signature, args):
                if runtime is None:
                    runtime = _context.current_runtime()
                kwargs["runtime"] = runtime
            elif given is not None:
                runtime = given
                call.runtime_token = _context.runtime_var.set(given)
        session = call.session = _context.current_session()
        slot = _tool_call.get()
        # each node its own meta dict, holding the code identity (computed once)
        node_settings = {**settings, "meta": {"code": code_identity(wrapper)}}
        if slot is not None:  # this call answers a model's tool call; its insides do not
            call.tool_token = _tool_call.set(None)
            node_settings["meta"].update(tool_call_id=slot.id, asked_by=slot.asked_by)
        if compactor is not None:
            call.compactor_token = _compactor.set(compactor)
        extra = _next_meta.get()
        if extra is not None:
            call.meta_token = _next_meta.set(None)
            meta = {**node_settings.get("meta", {}), **extra}
            node_settings = {**node_settings, "meta": meta}
        if _context.session_var.get() is None:
            # found by the threads rule (DESIGN.md §3): hold on to it for this call, so its
            # insides never look again (another session may be entered meanwhile)
            call.session_token = _context.session_var.set(session)
        if (
            runtime is not None
            and call.runtime_token is None
            and _context.runtime_var.get() is None
        ):
            call.runtime_token = _context.runtime_var.set(runtime)
        try:
            arguments = bind(args, kwargs)
        except TypeError:  # a wrong call: Python raises it when the function is called
            return call
        try:
            node = session._enter_call(name, arguments, _context.frame_var.get(), node_settings)
        except (ResumeDivergence, EffectUnknown, RunStopped, StoreError) as exc:  # the run left
            end(call, None, exc)  # its recording, met an unsettled effect, was drained
            raise  # (SIGTERM) or suspended here, or an effect call's start was not stored
        except Exception as exc:  # recording must never break the user's call
            log.exception("openprogram: could not record a call of %s", name)
            session._not_recorded(name, _context.frame_var.get(), exc)
            return call
        if slot is not None:
            slot.node = node
        if node.status == "completed":  # a resumed session's record: do not run again
            resumed = session._resumed_output(node, fn)
            if node.status == "completed":  # else reopened: the record cannot stand for it
                call.resumed = resumed
                return call
        call.node = node
        call.frame_token = _context.frame_var.set(node.id)
        if runtime is not None and runtime.callbacks:
            call.callbacks = runtime.callbacks
            call.run = node if node.parent is None else session.dag.top_level_ancestor(node)
            try:
                if node.parent is None:
                    notify(call.callbacks, "on_run_start", node, record_on=node)
                notify(call.callbacks, "on_call_start", node, record_on=call.run)
            except BaseException as exc:  # a strict observer refused: the call never runs
                end(call, None, exc)
                raise
        return call

    def end(call: _Call, result: Any, exc: BaseException | None) -> None:
        if call.frame_token is not None:
            _context.frame_var.reset(call.frame_token)
        if call.runtime_token is not None:
            _context.runtime_var.reset(call.runtime_token)
        if call.tool_token is not None:
            _tool_call.reset(call.tool_token)
        if call.meta_token is not None:
            _next_meta.reset(call.meta_token)
        if call.compactor_token is not None:
            _compactor.reset(call.compactor_token)
        if call.session_token is not None:
            _context.session_var.reset(call.session_token)
        node = call.node
        if node is None:
            return
        if render_output is not None and exc is None:
            _note_render_output(call.session, node, render_output, result)
        try:
            call.session._exit_call(node, result, exc)
        except Exception as failure:
            log.exception("openprogram: could not record the end of %s", name)
            call.session._not_recorded(name, node.parent, failure)
        if call.callbacks:
            if isinstance(exc, RunStopped):
                node.meta["stop_reason"] = exc.reason
            notify(call.callbacks, "on_call_end", node, record_on=call.run)
            if node.parent is None:
                notify(call.callbacks, "on_run_end", node, record_on=node)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = begin(args, kwargs)
            if call.resumed is not _NOT_RESUMED:
                end(call, None, None)
                return call.resumed
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                end(call, None, exc)
                raise
            end(call, result, None)
            return result

    else:

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = begin(args, kwargs)
            if call.resumed is not _NOT_RESUMED:
                end(call, None, None)
                return call.resumed
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                end(call, None, exc)
                raise
            end(call, result, None)
            return result

    wrapper.expose = expose  # type: ignore[attr-defined]
    wrapper.render_range = (  # type: ignore[attr-defined]
        render_range.as_dict() if render_range else {"callers": None, "subcalls": -1}
    )
    wrapper.input_meta = {k: dict(v) for k, v in meta.items()}  # type: ignore[attr-defined]
    wrapper.system = system  # type: ignore[attr-defined]
    wrapper.render_output = render_output  # type: ignore[attr-defined]
    wrapper.compactor = compactor  # type: ignore[attr-defined]
    wrapper.effect = effect  # type: ignore[attr-defined]
    arguments_model = _arguments_model(fn, signature, meta, skipped | set(hidden))
    wrapper.spec = _tool_spec(fn, arguments_model)  # type: ignore[attr-defined]
    wrapper._arguments_model = arguments_model  # type: ignore[attr-defined]
    wrapper.__agentic__ = True  # type: ignore[attr-defined]
    return wrapper


def _note_render_output(
    session: Any, node: Node, render: Callable[[Any], Any], result: Any
) -> None:
    """What later calls see of this call's output, noted on its node before it completes;
    a failing render_output is logged and the whole output is shown instead."""
    try:
        node.meta["render_output"] = session.dag.jsonable(render(result))
    except Exception:
        log.exception(
            "openprogram: render_output of %s failed; showing its whole output", node.name
        )


def _binder(
    signature: inspect.Signature, skipped: set[str]
) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """A function giving the bound arguments (defaults applied, `skipped` left out).

    Plain signatures (no *args, **kwargs or positional-only parameters) bind by hand,
    several times faster than Signature.bind; anything unusual falls back to it, which
    also raises the same TypeError Python would."""
    params = list(signature.parameters.values())
    plain = all(p.kind is p.POSITIONAL_OR_KEYWORD or p.kind is p.KEYWORD_ONLY for p in params)
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    names = [p.name for p in params]
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    known = set(names)

    def slow(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return {k: v for k, v in bound.arguments.items() if k not in skipped}

    if not plain:
        return slow

    def fast(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(positional) or not known.issuperset(kwargs):
            return slow(args, kwargs)
        given = dict(zip(positional, args, strict=False))
        for key, value in kwargs.items():
            if key in given:
                return slow(args, kwargs)
            given[key] = value
        arguments = {}
        for name in names:
            if name in given:
                value = given[name]
            elif name in defaults:
                value = defaults[name]
            else:
                return slow(args, kwargs)
            if name not in skipped:
                arguments[name] = value
        return arguments

    return fast


class _Call:
    """Bookkeeping of one call between begin and end."""

    __slots__ = (
        "callbacks",
        "compactor_token",
        "frame_token",
        "meta_token",
        "node",
        "resumed",
        "run",
        "runtime_token",
        "session",
        "session_token",
        "tool_token",
    )

    def __init__(self) -> None:
        self.session: Any = None
        self.node: Node | None = None
        self.run: Node | None = None
        self.frame_token: Any = None
        self.runtime_token: Any = None
        self.tool_token: Any = None
        self.meta_token: Any = None
        self.compactor_token: Any = None
        self.session_token: Any = None
        self.callbacks: Any = ()
        self.resumed: Any = _NOT_RESUMED


def _runtime_positional(signature: inspect.Signature, args: tuple[Any, ...]) -> bool:
    index = list(signature.parameters).index("runtime")
    return len(args) > index and args[index] is not None


def _arguments_model(
    fn: Callable[..., Any],
    signature: inspect.Signature,
    meta: Mapping[str, Mapping[str, Any]],
    left_out: set[str],
) -> type[BaseModel]:
    """A pydantic model of the parameters a model may pass (the tool's arguments)."""
    hints = _annotations(fn)
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.name in left_out or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        entry = meta.get(param.name, {})
        annotation = hints.get(param.name, Any)
        extra: dict[str, Any] = {}
        if entry.get("options") is not None:
            extra["enum"] = list(entry["options"])
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            annotation,
            Field(
                default=default,
                description=entry.get("description"),
                json_schema_extra=extra or None,
            ),
        )
    try:
        model = create_model(fn.__name__, **fields)  # type: ignore[call-overload]  # dynamic fields
        model.model_json_schema()
    except Exception:  # an annotation pydantic cannot schema: describe it loosely
        loose = {k: (Any, v[1]) for k, v in fields.items()}
        model = create_model(fn.__name__, **loose)  # type: ignore[call-overload]  # dynamic fields
    return model  # type: ignore[no-any-return]


def _tool_spec(fn: Callable[..., Any], model: type[BaseModel]) -> dict[str, Any]:
    """OpenAI-style tool spec `{"name", "description", "parameters"}` from the signature."""
    parameters = model.model_json_schema()
    parameters.pop("title", None)
    for schema in parameters.get("properties", {}).values():
        schema.pop("title", None)
    doc = inspect.getdoc(fn) or ""
    description = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    return {"name": fn.__name__, "description": description, "parameters": parameters}


def _annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """Annotations resolved one by one; one that does not resolve (a local or forward
    reference) counts as Any rather than spoiling the others."""
    raw = inspect.get_annotations(fn)
    namespace = {**getattr(fn, "__globals__", {})}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # an empty cell: not bound yet
                namespace[name] = cell.cell_contents
    resolved: dict[str, Any] = {}
    for name, annotation in raw.items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)
            except Exception:
                annotation = Any
        resolved[name] = annotation
    return resolved
