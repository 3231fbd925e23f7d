"""Runs the Python blocks of one documentation page in order, in one namespace, the way
a reader pastes them into one interpreter; exits 1 naming the block that failed.

Usage: python _run_blocks.py BLOCKS.json (a list of [label, source]).
"""

from __future__ import annotations

import json
import sys
import traceback


def main(path: str) -> int:
    with open(path, encoding="utf-8") as stream:
        blocks = json.load(stream)
    namespace: dict[str, object] = {"__name__": "__main__"}
    for label, source in blocks:
        try:
            exec(compile(source, label, "exec"), namespace)
        except Exception:
            print(f"FAILED {label}", file=sys.stderr)
            traceback.print_exc()
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
