"""Skills: a folder of SKILL.md files offered to a model by name (`skills_tool`).

Owns finding the skills of a folder (`read_skills`), reading one SKILL.md safely and the
`use_skill(name)` tool. A skill file is read only when it is a regular file inside the
folder, reached without following a symbolic link, at most SKILL_BYTES and UTF-8 text;
the same checks run when a skill is used as when the folder is listed. Start at
skills_tool().
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openprogram.agentic.function import agentic_function
from openprogram.echo import echo
from openprogram.errors import UsageError

__all__ = ["SKILL_BYTES", "Skill", "read_skills", "skills_tool"]

SKILL_BYTES = 256 << 10
"""The largest SKILL.md read (bytes): a larger one is refused, never sent to a model whole."""
_FRONT = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_FOLDER = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
"""A skill file is opened without following a link and without waiting (a FIFO)."""


class Skill:
    """One SKILL.md: its name and description (from the front matter) and its path."""

    def __init__(self, name: str, description: str, path: Path, root: Path | None = None) -> None:
        self.name = name
        self.description = description
        self.path = path
        self.root = root if root is not None else path.parent  # the folder it must be in

    def text(self) -> str:
        """The instructions: the file after its front matter, read again with the checks
        of the listing (PermissionError or ValueError, which the model is told, when it no
        longer passes them)."""
        text = read_skill_file(self.root, self.path)
        found = _fields(text)
        if found.get("name") != self.name:
            raise PermissionError(
                f"{str(self.path)!r} no longer names the skill {self.name!r} in its front "
                "matter; list the skills again"
            )
        return _FRONT.sub("", text, count=1).strip()

    def __repr__(self) -> str:
        return f"Skill({self.name!r}, {self.description!r})"


def read_skill_file(root: Path, path: Path) -> str:
    """The text of `path`, a file inside folder `root`, opened one folder at a time from
    `root` without following links. PermissionError for a link anywhere on the way or a
    file that is not regular (a FIFO, a device); ValueError for one over SKILL_BYTES or
    not UTF-8 text."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise PermissionError(f"{str(path)!r} is outside the skills folder {str(root)!r}") from None
    if not parts or ".." in parts:
        raise PermissionError(f"{str(path)!r} is not a file inside {str(root)!r}")
    try:
        folder = os.open(root, _FOLDER)
    except OSError as exc:
        raise PermissionError(f"the skills folder {str(root)!r} cannot be opened: {exc}") from None
    try:
        for part in parts[:-1]:
            inner = _open(part, _FOLDER, folder, path, "a folder on its way")
            os.close(folder)
            folder = inner
        fd = _open(parts[-1], _FILE, folder, path, "it")
    finally:
        os.close(folder)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise PermissionError(f"{str(path)!r} is not a regular file; a skill is a text file")
        if found.st_size > SKILL_BYTES:
            raise ValueError(
                f"{str(path)!r} is {found.st_size:,} bytes; a skill is at most "
                f"{SKILL_BYTES:,} bytes (split it, or link to files it names)"
            )
        data = os.read(fd, SKILL_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > SKILL_BYTES:  # it grew since fstat
        raise ValueError(f"{str(path)!r} is over {SKILL_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{str(path)!r} is not UTF-8 text (byte {exc.start} is "
            f"{data[exc.start : exc.start + 1]!r})"
        ) from None


def _open(name: str, flags: int, folder: int, path: Path, what: str) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise PermissionError(
                f"{str(path)!r} is not read: {what} is a symbolic link (links are not "
                "followed, inside the skills folder or out of it)"
            ) from None
        raise PermissionError(f"{str(path)!r} cannot be read: {exc.strerror}") from None


def _fields(text: str) -> dict[str, str]:
    match = _FRONT.match(text)
    fields: dict[str, str] = {}
    for line in (match.group(1) if match else "").splitlines():
        key, colon, value = line.partition(":")
        if colon and not line.startswith((" ", "\t")):
            fields[key.strip()] = value.strip().strip("'\"")
    return fields


def read_skills(folder: str | os.PathLike[str]) -> list[Skill]:
    """The skills of `folder`: every SKILL.md in it or in its subfolders, by name (a
    linked subfolder is not entered). Raises UsageError for a file without front matter
    naming `name` and `description`, two skills of one name, and a SKILL.md that is a
    link, not a regular file, over SKILL_BYTES or not UTF-8 text."""
    root = Path(folder)
    if not root.is_dir():
        raise UsageError(f"skills folder {str(root)!r} does not exist")
    root = root.resolve()
    skills: dict[str, Skill] = {}
    found = []
    for where, folders, files in os.walk(root):  # links to folders are not followed
        folders.sort()
        if "SKILL.md" in files:
            found.append(Path(where) / "SKILL.md")
    for path in sorted(found):
        try:
            fields = _fields(read_skill_file(root, path))
        except (PermissionError, ValueError) as exc:  # the folder's owner must fix it
            raise UsageError(f"{exc}; fix the skills folder or remove the file") from None
        if not fields.get("name") or not fields.get("description"):
            raise UsageError(
                f"{str(path)!r} needs front matter with a name and a description:\n"
                "---\nname: pdf-forms\ndescription: Fill in PDF forms\n---"
            )
        if fields["name"] in skills:
            raise UsageError(
                f"two skills are named {echo(fields['name'], 80)}: "
                f"{str(skills[fields['name']].path)!r} and {str(path)!r}"
            )
        skills[fields["name"]] = Skill(fields["name"], fields["description"], path, root)
    return list(skills.values())


def skills_tool(folder: str | os.PathLike[str]) -> Callable[..., Any]:
    """A `use_skill(name)` tool over the skills of `folder` (read_skills): its spec lists
    each skill's name and description; a call returns the skill's instructions, read
    again with the listing's checks (a file changed into a link or a FIFO since is an
    error the model is told)."""
    skills = {skill.name: skill for skill in read_skills(folder)}
    if not skills:
        raise UsageError(f"skills folder {str(folder)!r} holds no SKILL.md")
    listing = " ".join(f"{name}: {skill.description}." for name, skill in skills.items())

    def use_skill(name: str) -> str:
        skill = skills[name]
        return f"# skill {skill.name} (from {skill.path.parent})\n\n{skill.text()}"

    use_skill.__doc__ = (
        "Load the instructions of a skill before doing a task it covers. Skills: " + listing
    )
    tool = agentic_function(
        use_skill, input={"name": {"options": list(skills), "description": "the skill's name"}}
    )
    return tool
