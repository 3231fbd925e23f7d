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

import functools
import inspect
import logging
import types
from collections.abc import Awaitable, Callable, Mapping
from contextvars import Token
from typing import Any, ClassVar, Generic, ParamSpec, TypeVar, get_args, overload

from openprogram.agentic._identity import ON_CODE_CHANGE, code_identity
from openprogram.agentic._signature import (
    arguments_model,
    binder,
    runtime_positional,
    tool_spec,
)
from openprogram.callbacks.base import notify
from openprogram.core import _context
from openprogram.core.dag import Effect, Expose, Node, RenderRange, check_render_range
from openprogram.errors import EffectUnknown, ResumeDivergence, RunStopped, StoreError

__all__ = ["AgenticFunction", "AsyncAgenticFunction", "agentic_function", "is_async"]

log = logging.getLogger("openprogram")

P = ParamSpec("P")
R = TypeVar("R")

_EXPOSE = ("io", "llm", "full", "hidden")
_NOT_RESUMED = object()
_INPUT_KEYS = {"description", "options", "hidden"}


@overload
def agentic_function(
    fn: Callable[P, Awaitable[R]],
    *,
    expose: Expose = "io",
    render_range: Mapping[str, int | None] | None = None,
    input: Mapping[str, Mapping[str, Any]] | None = None,
    system: str | None = None,
    render_output: Callable[[Any], Any] | None = None,
    compactor: Callable[[str], str] | None = None,
    effect: Effect | None = None,
    on_code_change: str | None = None,
) -> AsyncAgenticFunction[P, R]: ...
@overload
def agentic_function(
    fn: Callable[P, R],
    *,
    expose: Expose = "io",
    render_range: Mapping[str, int | None] | None = None,
    input: Mapping[str, Mapping[str, Any]] | None = None,
    system: str | None = None,
    render_output: Callable[[Any], Any] | None = None,
    compactor: Callable[[str], str] | None = None,
    effect: Effect | None = None,
    on_code_change: str | None = None,
) -> AgenticFunction[P, R]: ...
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
) -> Callable[[Callable[P, R]], AgenticFunction[P, R]]: ...


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
) -> (
    AgenticFunction[..., Any]
    | AsyncAgenticFunction[..., Any]
    | Callable[[Callable[..., Any]], AgenticFunction[..., Any]]
):
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

    def decorate(func: Callable[..., Any]) -> AgenticFunction[..., Any]:
        _refuse_generators(func)
        kind = AsyncAgenticFunction if inspect.iscoroutinefunction(func) else AgenticFunction
        return kind(
            func, expose, checked_range, input or {}, system, render_output, compactor, effect,
            on_code_change,
        )  # fmt: skip

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


class AgenticFunction(Generic[P, R]):
    """What @agentic_function makes of a function: called as it is, each call recorded as
    a `code` node. It keeps the function's name, docs and signature (functools.wraps; the
    function is `__wrapped__`), binds as a method where it is one, pickles by its
    qualified name, and carries the decoration's settings: `expose`, `render_range`,
    `input_meta`, `system`, `render_output`, `compactor`, `effect`, the tool `spec` and
    the `arguments_model` a model's tool arguments are validated with."""

    __agentic__: ClassVar[bool] = True
    __code_identity__: str | None = None  # computed on its first call (_identity.py)
    __wrapped__: Callable[P, R]
    __name__: str
    __qualname__: str

    def __init__(
        self,
        fn: Callable[P, R],
        expose: Expose,
        render_range: RenderRange | None,
        meta: Mapping[str, Mapping[str, Any]],
        system: str | None,
        render_output: Callable[[Any], Any] | None = None,
        compactor: Callable[[str], str] | None = None,
        effect: Effect | None = None,
        on_code_change: str | None = None,
    ) -> None:
        _check_input(fn, meta)
        functools.update_wrapper(self, fn)
        signature = inspect.signature(fn)
        params = list(signature.parameters)
        skipped = {"runtime"}
        if params and params[0] in ("self", "cls") and "." in fn.__qualname__:
            skipped.add(params[0])
        hidden = [name for name, entry in meta.items() if entry.get("hidden")]
        self.expose: Expose = expose
        self.render_range: dict[str, int | None] = (
            render_range.as_dict() if render_range else {"callers": None, "subcalls": -1}
        )
        self.input_meta: dict[str, dict[str, Any]] = {k: dict(v) for k, v in meta.items()}
        self.system = system
        self.render_output = render_output
        self.compactor = compactor
        self.effect = effect
        self.arguments_model = arguments_model(fn, signature, meta, skipped | set(hidden))
        self.spec: dict[str, Any] = tool_spec(fn, self.arguments_model)
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
        self._settings = settings
        self._signature = signature
        self._has_runtime = "runtime" in signature.parameters
        self._bind = binder(signature, skipped)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        call = self._begin(args, kwargs)
        if call.resumed is not _NOT_RESUMED:
            self._end(call, None, None)
            return call.resumed  # type: ignore[no-any-return]
        try:
            result = self.__wrapped__(*args, **kwargs)
        except BaseException as exc:
            self._end(call, None, exc)
            raise
        self._end(call, result, None)
        return result

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> AgenticFunction[P, R]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any] | None = None) -> Callable[..., R]: ...
    def __get__(self, instance: object, owner: type[Any] | None = None) -> Any:
        """A method's decorated function, bound to `instance` (as a function would be)."""
        return self if instance is None else types.MethodType(self, instance)

    def __reduce__(self) -> str:
        """Pickled by qualified name, as the function it stands for (pickle checks the
        module's attribute of that name is this very object)."""
        return self.__qualname__

    def __repr__(self) -> str:
        return f"<agentic function {self.__module__}.{self.__qualname__}>"

    def _begin(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Call:
        """Enter the call: its call context, and its node (completed when resumed)."""
        call = _Call()
        here = _context.call_context()
        changes: dict[str, Any] = {}  # the call context this call runs in, but its frame
        runtime = _context.live_runtime()
        if self._has_runtime:
            given = kwargs.get("runtime")
            if given is None and not runtime_positional(self._signature, args):
                if runtime is None:
                    runtime = _context.current_runtime()
                kwargs["runtime"] = runtime
            elif given is not None:
                runtime = changes["runtime"] = given
        session = call.session = _context.current_session()
        slot = here.tool_call
        # each node its own meta dict, holding the code identity (computed once)
        node_settings = {**self._settings, "meta": {"code": code_identity(self)}}
        if slot is not None:  # this call answers a model's tool call; its insides do not
            changes["tool_call"] = None
            node_settings["meta"].update(tool_call_id=slot.id, asked_by=slot.asked_by)
        if self.compactor is not None:
            changes["compactor"] = self.compactor
        extra = here.next_meta
        if extra is not None:
            changes["next_meta"] = None
            meta = {**node_settings.get("meta", {}), **extra}
            node_settings = {**node_settings, "meta": meta}
        if here.session is None:
            # found by the threads rule (DESIGN.md §3): hold on to it for this call, so its
            # insides never look again (another session may be entered meanwhile)
            changes["session"] = session
        if runtime is not None and "runtime" not in changes and here.runtime is None:
            changes["runtime"] = runtime
        if changes:
            call.token = _context.enter(**changes)
        name = self.__name__
        try:
            arguments = self._bind(args, kwargs)
        except TypeError:  # a wrong call: Python raises it when the function is called
            return call
        try:
            node = session.enter_call(name, arguments, here.frame, node_settings)
        except (ResumeDivergence, EffectUnknown, RunStopped, StoreError) as exc:  # the run left
            self._end(call, None, exc)  # its recording, met an unsettled effect, was drained
            raise  # (SIGTERM) or suspended here, or an effect call's start was not stored
        except Exception as exc:  # recording must never break the user's call
            log.exception("openprogram: could not record a call of %s", name)
            session.not_recorded(name, here.frame, exc)
            return call
        if slot is not None:
            slot.node = node
        if node.status == "completed":  # a resumed session's record: do not run again
            resumed = session.resumed_output(node, self.__wrapped__)
            if node.status == "completed":  # else reopened: the record cannot stand for it
                call.resumed = resumed
                return call
        call.node = node
        entered = _context.enter(frame=node.id)
        if call.token is None:
            call.token = entered
        if runtime is not None and runtime.callbacks:
            call.callbacks = runtime.callbacks
            call.run = node if node.parent is None else session.dag.top_level_ancestor(node)
            try:
                if node.parent is None:
                    notify(call.callbacks, "on_run_start", node, record_on=node)
                notify(call.callbacks, "on_call_start", node, record_on=call.run)
            except BaseException as exc:  # a strict observer refused: the call never runs
                self._end(call, None, exc)
                raise
        return call

    def _end(self, call: _Call, result: Any, exc: BaseException | None) -> None:
        """Leave the call: its call context, and its node completed with how it ended."""
        if call.token is not None:
            _context.leave(call.token)
        node = call.node
        if node is None:
            return
        if self.render_output is not None and exc is None:
            _note_render_output(call.session, node, self.render_output, result)
        try:
            call.session.exit_call(node, result, exc)
        except Exception as failure:
            log.exception("openprogram: could not record the end of %s", self.__name__)
            call.session.not_recorded(self.__name__, node.parent, failure)
        if call.callbacks:
            if isinstance(exc, RunStopped):
                node.meta["stop_reason"] = exc.reason
            notify(call.callbacks, "on_call_end", node, record_on=call.run)
            if node.parent is None:
                notify(call.callbacks, "on_run_end", node, record_on=node)


class AsyncAgenticFunction(AgenticFunction[P, Awaitable[R]]):
    """@agentic_function of an `async def` function: awaiting a call records it. Python
    3.12 and later tell it for a coroutine function (inspect.iscoroutinefunction); before
    that, openprogram.agentic.function.is_async() does."""

    def __init__(self, fn: Callable[P, Awaitable[R]], *args: Any, **kwargs: Any) -> None:
        super().__init__(fn, *args, **kwargs)
        mark = getattr(inspect, "markcoroutinefunction", None)
        if mark is not None:
            mark(self)

    async def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        call = self._begin(args, kwargs)
        if call.resumed is not _NOT_RESUMED:
            self._end(call, None, None)
            return call.resumed  # type: ignore[no-any-return]
        try:
            result = await self.__wrapped__(*args, **kwargs)
        except BaseException as exc:
            self._end(call, None, exc)
            raise
        self._end(call, result, None)
        return result


def is_async(fn: object) -> bool:
    """Whether calling `fn` gives an awaitable to await: a coroutine function, or a
    decorated one (which Python before 3.12 does not tell for one)."""
    return isinstance(fn, AsyncAgenticFunction) or inspect.iscoroutinefunction(fn)


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


class _Call:
    """Bookkeeping of one call between begin and end."""

    __slots__ = ("callbacks", "node", "resumed", "run", "session", "token")

    def __init__(self) -> None:
        self.session: Any = None
        self.node: Node | None = None
        self.run: Node | None = None
        self.token: Token[_context.CallContext] | None = None  # leaves the call's context
        self.callbacks: Any = ()
        self.resumed: Any = _NOT_RESUMED
