"""OpenDocument files without LibreOffice: write a one-sheet .ods or a plain .odt, and
read a saved .ods's cells or any .odt/.ods's text, with zipfile and ElementTree.

Owns the ODF XML a desktop task's config writes and its evaluator reads; nothing else.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree
from xml.sax.saxutils import escape

__all__ = ["odf_text", "ods_cells", "write_ods", "write_odt"]

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
}
_MAX_REPEAT = 1000  # a saved sheet repeats empty cells a million times: keep the start
_MANIFEST = """<?xml version="1.0" encoding="UTF-8"?>
<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" \
manifest:version="1.2">
 <manifest:file-entry manifest:full-path="/" manifest:media-type="{mime}"/>
 <manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>
</manifest:manifest>"""
_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="{office}" xmlns:table="{table}" xmlns:text="{text}" \
office:version="1.2"><office:body>{body}</office:body></office:document-content>"""
_A1 = re.compile(r"^([A-Za-z]{1,3})([0-9]{1,7})$")


def _write(path: Path, mime: str, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), mime)  # stored, first, as ODF wants
        archive.writestr("META-INF/manifest.xml", _MANIFEST.format(mime=mime))
        archive.writestr("content.xml", _CONTENT.format(**_NS, body=body))


def write_ods(path: Path, rows: list[list[str | int | float]], sheet: str = "Sheet1") -> None:
    """A spreadsheet at `path` whose one sheet `sheet` holds `rows` from A1."""
    cells = []
    for row in rows:
        parts = []
        for value in row:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                parts.append(
                    f'<table:table-cell office:value-type="float" office:value="{value}">'
                    f"<text:p>{value}</text:p></table:table-cell>"
                )
            else:
                parts.append(
                    f'<table:table-cell office:value-type="string"><text:p>{escape(str(value))}'
                    "</text:p></table:table-cell>"
                )
        cells.append(f"<table:table-row>{''.join(parts)}</table:table-row>")
    body = (
        f'<office:spreadsheet><table:table table:name="{escape(sheet, {chr(34): "&quot;"})}">'
        f"{''.join(cells)}</table:table></office:spreadsheet>"
    )
    _write(path, "application/vnd.oasis.opendocument.spreadsheet", body)


def write_odt(path: Path, paragraphs: list[str]) -> None:
    """A text document at `path` of `paragraphs`."""
    body = "".join(f"<text:p>{escape(p)}</text:p>" for p in paragraphs)
    _write(path, "application/vnd.oasis.opendocument.text", f"<office:text>{body}</office:text>")


def _content(path: Path) -> ElementTree.Element:
    with zipfile.ZipFile(path) as archive, archive.open("content.xml") as file:
        return ElementTree.parse(file).getroot()


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


def _cell_text(cell: ElementTree.Element) -> str:
    return "\n".join("".join(p.itertext()) for p in cell.iter(_q("text:p")))


def ods_cells(path: Path, sheet: str | None = None) -> dict[str, tuple[str, float | None]]:
    """The non-empty cells of a sheet of the .ods at `path` (the first, or `sheet`) by A1
    name: (shown text, number or None). Raises KeyError for a sheet it lacks."""
    tables = list(_content(path).iter(_q("table:table")))
    chosen = next((t for t in tables if sheet is None or t.get(_q("table:name")) == sheet), None)
    if chosen is None:
        raise KeyError(f"no sheet {sheet!r}; sheets: {[t.get(_q('table:name')) for t in tables]}")
    cells: dict[str, tuple[str, float | None]] = {}
    row_number = 0
    for row in chosen.iter(_q("table:table-row")):
        rows = min(int(row.get(_q("table:number-rows-repeated"), "1")), _MAX_REPEAT)
        for _ in range(rows):
            row_number += 1
            column = 0
            for cell in row:
                if cell.tag not in (_q("table:table-cell"), _q("table:covered-table-cell")):
                    continue
                repeat = min(int(cell.get(_q("table:number-columns-repeated"), "1")), _MAX_REPEAT)
                text = _cell_text(cell)
                raw = cell.get(_q("office:value"))
                number = float(raw) if raw is not None else None
                for _ in range(repeat):
                    column += 1
                    if text or number is not None:
                        cells[f"{_column(column)}{row_number}"] = (text, number)
        if row_number > 100_000:
            break
    return cells


def _column(number: int) -> str:
    name = ""
    while number:
        number, rest = divmod(number - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def odf_text(path: Path) -> str:
    """The text of an .odt (or .ods) at `path`: its paragraphs, one a line."""
    root = _content(path)
    return "\n".join("".join(p.itertext()) for p in root.iter(_q("text:p")))
