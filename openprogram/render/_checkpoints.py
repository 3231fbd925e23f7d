"""How a history's pieces go into its messages: in runs, with checkpoints where it cuts.

Owns Checkpoint (where a history stood after one node) and the writing of pieces into a
history's message stream: each run of plain turns of one role as one entry (C loops),
a checkpoint after every node, and the messages hash state (a copy) kept only where a
later render is likely to continue from (`due`); a continuation from anywhere else
goes back to the nearest one (`cut`). _history.py builds and caches histories with it.
"""

from __future__ import annotations

import bisect
from itertools import chain, compress, count, groupby
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple, Protocol

from openprogram.core.node import Node, by_seq
from openprogram.render._chunks import Chunks
from openprogram.render._messages import Entry, MessageStream
from openprogram.render._pieces import Piece

__all__ = [
    "SPACING", "UNKEPT", "Checkpoint", "add_checkpointed", "add_unkept", "cut", "due", "runs",
]  # fmt: skip

SPACING = 16
"""Nodes at most between two checkpoints that keep the hash state."""


class Checkpoint(NamedTuple):
    """Where a history stood after one node's turns. One with no `state` holds only
    `answers` and `images` (the rest are 0): a continuation starts from one with (cut)."""

    state: Any  # the messages hash so far (a hashlib object, copied)
    messages: int
    last: int  # parts in the last, still open, message
    line_reports: int
    build_reports: int
    omitted: int
    answers: tuple[str, ...]  # tool results this node's turns carry
    images: int  # history image parts so far, sent or omitted
    chars: int  # length of the text lines so far, joined


UNKEPT = Checkpoint(None, 0, 0, 0, 0, 0, (), 0, 0)
"""The start of a history nothing continues."""


class Extended(Protocol):
    """What add_checkpointed writes to: a History (_history.py)."""

    stream: MessageStream
    checkpoints: Chunks[Checkpoint]
    line_reports: list[dict[str, Any]]
    build_reports: list[dict[str, Any]]
    omitted: list[dict[str, Any]]


def add_checkpointed(
    history: Extended,
    pieces: list[Piece],
    due_at: set[int],
    replaced: dict[int, tuple[Entry, ...]],
    omitted: list[tuple[int, dict[str, Any]]],
) -> None:
    """Add `pieces` to `history` with a checkpoint after each, the hash state in those
    at `due_at`; the pieces up to each of those go in at once, so a rebuild of many
    nodes is C work. `replaced`: entries by index (images dropped); `omitted`: (index,
    report entry), oldest first."""
    stream, checkpoints = history.stream, history.checkpoints
    line_reports, build_reports = history.line_reports, history.build_reports
    seen_images = checkpoints[-1].images if checkpoints else 0
    chars = checkpoints[-1].chars if checkpoints else 0
    first = done_omitted = 0
    for end in sorted(due_at):
        if end < first:
            continue
        run = pieces[first : end + 1]
        if len(run) == 1:  # a step's few new nodes: no runs to merge
            stream.add_all(replaced.get(end, run[0].entries))
            line_reports.extend(run[0].line_reports)
            build_reports.extend(run[0].build_reports)
            chars += len(run[0].line) + (1 if checkpoints else 0)
        else:
            _feed(history, run, first, replaced)
            chars += sum(map(len, map(_line_of, run))) + len(run) - (0 if checkpoints else 1)
        while done_omitted < len(omitted) and omitted[done_omitted][0] <= end:
            history.omitted.append(omitted[done_omitted][1])
            done_omitted += 1
        between = run[:-1]
        if any(map(_images_of, between)) or any(map(_answers_of, between)):
            for piece in between:
                seen_images += piece.images
                checkpoints.append(Checkpoint(None, 0, 0, 0, 0, 0, piece.answers, seen_images, 0))
        elif between:  # the common case: one shared checkpoint, added in C
            checkpoints.extend([Checkpoint(None, 0, 0, 0, 0, 0, (), seen_images, 0)] * len(between))
        seen_images += run[-1].images
        checkpoints.append(
            Checkpoint(
                stream.state(),
                len(stream.messages),
                len(stream.messages[-1][1]) if stream.messages else 0,
                len(line_reports),
                len(build_reports),
                len(history.omitted),
                run[-1].answers,
                seen_images,
                chars,
            )
        )
        first = end + 1


def add_unkept(
    history: Extended,
    pieces: list[Piece],
    replaced: dict[int, tuple[Entry, ...]],
    omitted: list[tuple[int, dict[str, Any]]],
) -> None:
    """Add `pieces` to a history nothing continues from: in one go, no checkpoints."""
    _feed(history, pieces, 0, replaced)
    history.omitted.extend(entry for _, entry in omitted)


def _feed(
    history: Extended, run: list[Piece], first: int, replaced: dict[int, tuple[Entry, ...]]
) -> None:
    """Add the turns and reports of `run` (pieces from index `first` on) at once."""
    if replaced:
        swapped = (replaced.get(i, piece.entries) for i, piece in enumerate(run, first))
        history.stream.add_all(chain.from_iterable(swapped))
    else:
        history.stream.add_all(runs(run))
    history.line_reports.extend(chain.from_iterable(map(_line_reports, run)))
    history.build_reports.extend(chain.from_iterable(map(_build_reports, run)))


def due(
    tail: list[Node],
    pieces: list[Piece],
    opened: list[tuple[Node, Any, int]],
    stack: list[Node],
    done: int,
) -> set[int]:
    """The indices in `tail` whose checkpoints keep the hash state: the last, every
    SPACING-th (`done`: the checkpoints before), and those just before where later
    renders cut: an open node (`opened`: where a change of it takes effect) that follows
    none, a stack node, a node with images (the oldest image still sent moves on)."""
    if len(tail) <= 3:  # a step's few new nodes: finding the cuts costs more than all
        return set(range(len(tail)))
    found = {len(tail) - 1}
    found.update(range(SPACING - 1 - done % SPACING, len(tail), SPACING))
    found.update(compress(count(-1), map(_images_of, pieces)))
    cuts = {entry[2] for entry in opened}
    cuts.update(node.seq for node in stack)
    first = tail[0].seq
    for seq in cuts:
        if seq >= first:  # the tail is in seq order
            index = bisect.bisect_left(tail, seq, key=by_seq)
            # a run of open nodes (concurrent calls, their lines side by side) gets one
            # before it: a cut inside writes the rest of the run again, no more
            if index < len(tail) and tail[index].seq == seq and tail[index - 1].seq not in cuts:
                found.add(index - 1)
    return found


def cut(nodes: Chunks[Node], checkpoints: Chunks[Checkpoint], floor: int) -> int:
    """`floor` lowered to just after a checkpoint with the hash state (a continuation
    starts from one): the nodes between are written again."""
    wanted = at = nodes.bisect(floor, by_seq)
    while at and checkpoints[at - 1].state is None:
        at -= 1
    return floor if at == wanted else nodes[at].seq


def runs(pieces: list[Piece]) -> list[Entry]:
    """The pieces' entries, each run of plain turns of one role as one entry (their parts
    and canonical JSON joined: what merging them one by one makes), in C loops: a window
    is put together whole at every step."""
    entries: list[Entry] = []
    for role, run in groupby(pieces, _plain_of):
        if role is None:
            entries.extend(chain.from_iterable(map(_entries, run)))
            continue
        firsts = list(map(_first, map(_entries, run)))
        if len(firsts) == 1:
            entries.append(firsts[0])
        else:
            parts = list(chain.from_iterable(map(_parts_of, firsts)))
            entries.append((role, parts, None, ", ".join(map(_canon_of, firsts))))
    return entries


_entries = attrgetter("entries")
_plain_of = attrgetter("plain")
_first = itemgetter(0)
_parts_of = itemgetter(1)
_canon_of = itemgetter(3)
_images_of = attrgetter("images")
_answers_of = attrgetter("answers")
_line_of = attrgetter("line")
_line_reports = attrgetter("line_reports")
_build_reports = attrgetter("build_reports")
