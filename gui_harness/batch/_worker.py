"""The local engine's worker process: `python -m gui_harness.batch._worker < SPEC-JSON`.

Runs one attempt (episode.run_episode) and exits; the result is in the store. A fresh
interpreter per episode, started by engines.LocalEngine in its own process group; the
spec comes on stdin, so the store URL (and its password) never shows in the process list.
"""

from __future__ import annotations

import json
import sys

from gui_harness.batch.episode import run_episode
from gui_harness.batch.tasks import BatchTask


def main(argv: list[str] | None = None) -> int:
    spec = json.loads(argv[0] if argv else sys.stdin.read())
    task = BatchTask.model_validate(spec["task"])
    run_episode(
        task, store=spec["store"], session=spec["session"], model=spec["model"],
        provider=spec.get("provider"),
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
