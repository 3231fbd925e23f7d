"""HTML pages: the one autoescaping Jinja2 environment every report renders through.

Owns the environment (autoescape on, so every value shown is escaped and only what a
caller marks `trusted` is not), the templates it loads (`templates/` here, or
"package:name" beside another package, e.g. gui_harness's), the one stylesheet every
page and notebook view inlines (style.css, its parts scoped: `.opv` views, `.opo`
operations, `.ope` evals, `.opt` trajectories, `.opl` the live pages), and writing a
page atomically. Standard library and Jinja2 only: every layer may render. Start at
render().
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2
    import markupsafe

__all__ = ["STYLE", "render", "trusted", "write_page"]

STYLE = "<style>\n" + files(__name__).joinpath("style.css").read_text("utf-8") + "</style>"
"""The one stylesheet as a <style> element: every page and notebook view inlines it."""


def _load(name: str) -> str:
    package, _, file = name.rpartition(":")
    if package:
        return files(package).joinpath(*file.split("/")).read_text("utf-8")
    return files(__name__).joinpath("templates", file).read_text("utf-8")


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    import jinja2  # on the first page: `import openprogram` stays light

    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals["style"] = trusted(STYLE)
    return environment


def trusted(text: str) -> markupsafe.Markup:
    """`text` as HTML to place as it is (markup the caller built or was given as trusted);
    every other value a template shows is escaped."""
    import markupsafe

    return markupsafe.Markup(text)


def render(template: str, /, **values: Any) -> str:
    """The template `template` (a file of templates/, or "package:file" beside that
    package) rendered with `values`, each escaped unless `trusted`."""
    return _environment().get_template(template).render(**values)


def write_page(target: Path, page: str) -> Path:
    """Write `page` to `target` through a temporary file beside it renamed over it, so a
    reader never sees half a page; readable by all (0644). Returns `target`."""
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(page)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
