"""One llm() exchange: the Runtime, llm()/allm(), and what a step does around the model.

Start at ambient.py (llm() and allm(), typed by what is asked) and runtime.py (the
Runtime); _exchange.py records one exchange, _step.py writes a step once
for the sync and async drivers, _ledger.py counts what requests cost, tools.py runs
tool turns, streaming.py streamed replies, compaction.py the summaries a long history
needs.
"""

from .ambient import allm, llm
from .compaction import count_tokens, summarize_history
from .runtime import Runtime, current_runtime
from .streaming import AsyncTextStream, TextStream

__all__ = [
    "AsyncTextStream",
    "Runtime",
    "TextStream",
    "allm",
    "count_tokens",
    "current_runtime",
    "llm",
    "summarize_history",
]
