"""ReplayModel: a model that answers from a recorded session, for offline tests.

Each request is matched to the recorded llm exchange at the same call path (frame
names and ordinals from the top level down) and checked by content hash; anything else
raises ReplayMismatch naming the node. Start at ReplayModel.complete().
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram._resume import Step, all_call_paths, call_path, input_hash, path_text
from openprogram.dag import ContextDAG, Node
from openprogram.errors import ModelError, ReplayMismatch
from openprogram.models import ModelReply, ModelRequest, ToolCall
from openprogram.usage import Usage

if TYPE_CHECKING:
    from openprogram.session import Session

__all__ = ["ReplayModel"]


class ReplayModel:
    """Answers every llm() call with the reply recorded at the same place in `session`.

    A request matches the recorded exchange at its call path (e.g. `gui_agent #1 /
    gui_step #3 / llm plan_next_action #1`) when the rendered messages hash equal the
    recorded `messages_hash` (strict=True, the default: the model sees exactly what it
    saw then) or, with strict=False, when the llm() content alone is the same. Recorded
    tool calls are asked again (the tools themselves run live).
    The recording is read once, when the model is made. Raises ReplayMismatch (with the
    new node's id) when the path is not recorded or the content differs; a recorded
    provider failure is raised again as ModelError. Replies cost nothing.
    """

    def __init__(self, session: Session | ContextDAG, *, strict: bool = True) -> None:
        dag = session if isinstance(session, ContextDAG) else session.dag
        self.name = f"replay:{getattr(session, 'id', 'dag')}"
        self.strict = strict
        self.recorded: dict[tuple[Step, ...], Node] = {
            path: node for path, node in all_call_paths(dag).items() if node.kind == "llm"
        }

    def complete(self, request: ModelRequest) -> ModelReply:
        dag = request.rendered.dag
        node = dag.node(request.node_id)
        path = call_path(dag, node)
        recorded = self.recorded.get(path)
        if recorded is None:
            raise ReplayMismatch(
                f"the recording has no llm exchange at {path_text(path)} (new node "
                f"{node.id}); it holds {len(self.recorded)} exchanges"
                + (f", the nearest {_nearest(self.recorded, path)}" if self.recorded else "")
                + ". Re-record the session, or check why the program asks here.",
                node_id=node.id,
            )
        if self.strict:
            expected, actual = recorded.messages_hash, request.rendered.messages_hash
            what = "rendered messages"
        else:
            expected, actual = input_hash(recorded.input), input_hash(node.input)
            what = "llm() content"
        if expected != actual:
            raise ReplayMismatch(
                f"the {what} at {path_text(path)} (new node {node.id}) differ from the "
                f"recorded exchange {recorded.id}: sha256 {str(actual)[:12]} instead of "
                f"{str(expected)[:12]}. The program now sends something else at this "
                "point; re-record, or use ReplayModel(session, strict=False) to match "
                "on the llm() content only.",
                node_id=node.id,
            )
        if recorded.output is None:
            raise ModelError(
                f"the recorded exchange {recorded.id} at {path_text(path)} failed: "
                f"{recorded.error or recorded.status}",
                node_id=node.id,
            )
        usage = recorded.usage or Usage()
        return ModelReply(
            text=str(recorded.output),
            usage=Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cached_tokens=usage.cached_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                calls=1,
            ),
            raw={"replayed_from": recorded.id},
            tool_calls=[ToolCall.from_json(c) for c in recorded.meta.get("tool_calls") or ()]
            or None,
        )

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        return self.complete(request)

    def __repr__(self) -> str:
        return f"ReplayModel({self.name!r}, exchanges={len(self.recorded)})"


def _nearest(recorded: dict[tuple[Step, ...], Any], path: tuple[Step, ...]) -> str:
    """The recorded path sharing the longest prefix with `path`, as text."""

    def shared(candidate: tuple[Step, ...]) -> int:
        count = 0
        for mine, theirs in zip(path, candidate, strict=False):
            if mine != theirs:
                break
            count += 1
        return count

    best = max(recorded, key=shared)
    return f"is {path_text(best)}"
