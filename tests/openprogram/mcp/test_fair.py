"""FairOperations (mcp/_fair.py): slots handed to clients in turn, at most half to one,
and given back exactly once, also when a lost operation is submitted again."""

from __future__ import annotations

from typing import Any

from openprogram.mcp._fair import FairOperations
from openprogram.operations import Operation
from openprogram.operations.operation import kind_of
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds


class Held:
    """A manager that starts what it is given and ends it when told (lost the first
    time for ids in `lose`), reporting as a real manager does."""

    def __init__(self, lose: set[str] = frozenset()) -> None:
        self.running: dict[str, Any] = {}
        self.lose = set(lose)

    def submit(self, operation: Operation, kind: Any, report: Any) -> None:
        if report(operation.id, "running", None):
            self.running[operation.id] = report

    def end(self, id: str) -> None:
        report = self.running.pop(id)
        report(id, "lost" if id in self.lose else "done", None)
        self.lose.discard(id)

    def cancel(self, id: str) -> bool:
        return False

    def close(self) -> None:
        pass


def test_slots_go_to_clients_in_turn_and_come_back_after_a_lost_operation_runs_again():
    manager = Held()
    fair = FairOperations(running=4, managers=lambda kind: manager)
    kind = kind_of("test.noop", 1)
    ended: list[str] = []

    def reporter(client: str, operation: Operation) -> Any:
        def report(id: str, what: str, value: Any) -> bool:
            if what == "lost":  # as the tracker does for an idempotent kind
                fair.submit(client, operation, kind, report)
            elif what == "done":
                ended.append(id)
            return True

        return report

    a = [Operation("test.noop", {"value": i}) for i in range(6)]
    b = Operation("test.noop", {"value": "b"})
    for operation in a:
        fair.submit("a", operation, kind, reporter("a", operation))
    assert list(manager.running) == [a[0].id, a[1].id]  # half the slots: a's share
    fair.submit("b", b, kind, reporter("b", b))
    assert b.id in manager.running  # at once: a's waiting ones do not hold it back
    manager.lose.add(a[0].id)
    manager.end(a[0].id)  # lost: submitted again, behind a's others; a[2] takes the slot
    assert a[2].id in manager.running and a[0].id not in manager.running
    assert fair.waiting() == 4
    for _ in range(20):
        for id in list(manager.running):
            manager.end(id)
    assert sorted(ended) == sorted([o.id for o in a] + [b.id])
    assert fair.waiting() == 0 and not fair._busy and not fair._live  # every slot back


def test_a_lost_operation_that_runs_again_at_once_holds_one_slot():
    manager = Held()
    fair = FairOperations(running=4, managers=lambda kind: manager)
    kind = kind_of("test.noop", 1)
    operation, ended = Operation("test.noop", {}), []

    def report(id: str, what: str, value: Any) -> bool:
        if what == "lost":
            fair.submit("c", operation, kind, report)
        elif what == "done":
            ended.append(id)
        return True

    fair.submit("c", operation, kind, report)
    manager.lose.add(operation.id)
    manager.end(operation.id)  # lost, and started again in the slot it gave back
    assert operation.id in manager.running and fair._busy == {"c": 1}
    manager.end(operation.id)
    assert ended == [operation.id] and not fair._busy and not fair._live
