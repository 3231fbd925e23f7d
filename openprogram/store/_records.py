"""The bytes of a journal (journal.py): its header line, its generation and its framed
records, written by a Journal and read back checked, so that a file nobody of ours
wrote (a forged record, a marshal bomb) is refused before anything in it is decoded.

Format 2: a JSON header line padded to 8 bytes, the generation whose records are the
file's (8 bytes), then records, each a node row's values marshalled after a FRAME
(length, CRC-32, generation). Format 1, still read: the header line, then records after
a FRAME_1 (length, CRC-32) up to the file's end. Records are read one at a time, so a
file however long (grown by another process) costs at most RECORDS_LIMIT to read.
"""

from __future__ import annotations

import json
import marshal
import struct
import zlib
from collections.abc import Callable

from openprogram.store.format import NodeRow

VERSION = 2
"""The journal format written."""
_MARSHAL = 4  # a format every later Python reads
FRAME = struct.Struct("<IIQ")  # a record's length, CRC-32 and generation, before it
FRAME_1 = struct.Struct("<II")  # format 1: a record's length and CRC-32
SLOT = struct.Struct("<Q")  # the generation whose records are the file's; never 0 (zeros)
FRAME_LIMIT = 8 << 20
"""The largest record a journal holds (bytes); a bigger one is committed at once."""
RECORDS_LIMIT = 64 << 20
"""The most a journal's records take (bytes, frames included); a record that would pass
it is committed at once. A reader refuses records past it as damaged, unread."""
_NUMBER, _TEXT, _NONE = (int, float), str, type(None)
_OPTIONAL_TEXT = (_TEXT, _NONE)
_FIELDS: tuple[type | tuple[type, ...], ...] = (
    int, _TEXT, _TEXT, _TEXT, _OPTIONAL_TEXT, _TEXT, _NUMBER, (*_NUMBER, _NONE),
    (int, _NONE), _OPTIONAL_TEXT, _OPTIONAL_TEXT, _OPTIONAL_TEXT,
)  # fmt: skip
"""The types of a NodeRow's fields, checked on every record read back."""


def header(session: str, owner: str, generation: int) -> bytes:
    """The header line of a new journal, padded so that the generation after it is
    aligned (one store changes it), and that first generation."""
    line = json.dumps({"journal": VERSION, "session": session, "owner": owner})
    return line.encode() + b" " * (-(len(line) + 1) % 8) + b"\n" + SLOT.pack(generation)


def record(row: NodeRow, with_input: bool, generation: int) -> bytes:
    """A record as written: its frame, then the row's values (its input left out unless
    `with_input`). Its data is len(record) - FRAME.size bytes."""
    data = marshal.dumps(row[:] if with_input else (*row[:9], None, *row[10:]), _MARSHAL)
    return FRAME.pack(len(data), zlib.crc32(data), generation) + data


def body_records(version: int, read: Callable[[int], bytes]) -> tuple[list[NodeRow], bool, int]:
    """The whole records of a journal of `version` after its header line, whether it
    ends in a torn one, and its generation (0 in format 1, which has none). `read(n)`
    gives the next `n` bytes of the file (fewer at its end). Raises Damaged."""
    if version == 1:
        return (*_records(read, FRAME_1), 0)
    slot = read(SLOT.size)
    if len(slot) < SLOT.size:  # it died writing the header: no record in it
        return [], False, 0
    (generation,) = SLOT.unpack(slot)
    return (*_records(read, FRAME, generation, SLOT.size), generation)


class Damaged(ValueError):
    """A journal that no writer of ours could have written as it is."""


def _records(
    read: Callable[[int], bytes],
    frame: struct.Struct,
    generation: int | None = None,
    offset: int = 0,
) -> tuple[list[NodeRow], bool]:
    """The whole records `read` gives, and whether they end in a torn one (the process
    died writing it: it never returned, so nothing was lost). Format 2 (`generation`
    given): the records end at the first of another generation (an earlier batch's, or
    the reserved space's zeros); format 1: at the file's end. `offset`: where the
    records start after the header, for messages. Raises Damaged, before reading it,
    for a record no writer writes: over FRAME_LIMIT, or ending past RECORDS_LIMIT."""
    rows: list[NodeRow] = []
    at = 0
    while head := read(frame.size):
        if len(head) < frame.size:
            return rows, generation is None
        size, crc, *of = frame.unpack(head)
        if generation is not None and of[0] != generation:
            return rows, False
        where = f"byte {offset + at:,}"
        if size > FRAME_LIMIT:
            raise Damaged(f"a record at {where} claims {size:,} bytes (at most {FRAME_LIMIT:,})")
        if at + frame.size + size > RECORDS_LIMIT:
            raise Damaged(f"the record at {where} ends past {RECORDS_LIMIT:,} bytes of records")
        data = read(size)
        if len(data) < size or zlib.crc32(data) != crc:
            return rows, True
        if not _flat_tuple(data, len(_FIELDS)):
            raise Damaged(f"the record at {where} is not a node row")
        try:
            values = marshal.loads(data)
        except (EOFError, ValueError, TypeError) as exc:
            raise Damaged(f"the record at {where} does not decode: {exc}") from None
        if not _is_row(values):
            raise Damaged(f"the record at {where} is not a node row")
        rows.append(NodeRow(*values))
        at += frame.size + size
    return rows, False


_LENGTH_4 = frozenset(b"uatA")  # marshal: a string with a 4-byte length
_LENGTH_1 = frozenset(b"zZ")  # a string with a 1-byte length
_FIXED = {ord("N"): 0, ord("T"): 0, ord("F"): 0, ord("i"): 4, ord("g"): 8, ord("r"): 4}


def _flat_tuple(data: bytes, items: int) -> bool:
    """Whether `data` is the marshal of a tuple of `items` Nones, bools, ints, floats
    and strings, as append() writes, and nothing else: checked before marshal.loads,
    which allocates what any container claims (a 14-byte input can claim 2**31 items)."""
    if len(data) < 2:
        return False
    code = data[0] & 0x7F
    if code == ord(")"):
        count, at = data[1], 2
    elif code == ord("(") and len(data) >= 5:
        count, at = int.from_bytes(data[1:5], "little", signed=True), 5
    else:
        return False
    if count != items:
        return False
    for _ in range(items):
        if at >= len(data):
            return False
        code = data[at] & 0x7F
        at += 1
        if code in _FIXED:
            at += _FIXED[code]
        elif code in _LENGTH_1 and at < len(data):
            at += 1 + data[at]
        elif code in _LENGTH_4 and at + 4 <= len(data):
            size = int.from_bytes(data[at : at + 4], "little", signed=True)
            if size < 0:
                return False
            at += 4 + size
        elif code == ord("l") and at + 4 <= len(data):  # an int of 15-bit digits
            at += 4 + 2 * abs(int.from_bytes(data[at : at + 4], "little", signed=True))
        else:
            return False
    return at == len(data)


def _is_row(values: object) -> bool:
    return (
        isinstance(values, tuple)
        and len(values) == len(_FIELDS)
        and all(isinstance(v, kind) for v, kind in zip(values, _FIELDS, strict=True))
    )
