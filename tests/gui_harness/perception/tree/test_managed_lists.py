"""Long lists that manage their items, read from the accessibility tree: the file
dialogs of Qt (FeatherPad's Open) and GTK 3 (Mousepad's) on a folder of 1 000 files,
whose views report MANAGES_DESCENDANTS and 4 004 children (a header of 4 cells, then 4
cells a file): Qt's a tree (no table), GTK's a table that is no spreadsheet. Their
visible files come out as components at their boxes, read with a bounded number of
calls. One FeatherPad and one Mousepad for the module."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gui_harness.actions import Click, Keypress, Scroll
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Component
from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._tree_list import ListRead
from gui_harness.perception.tree._tree_node import Element
from gui_harness.perception.tree._tree_walk import AppWalk
from tests.gui_harness.perception.tree.test_desktop_accessibility import SCREEN, wait_for

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon"),
    pytest.mark.skipif(
        shutil.which("featherpad") is None or shutil.which("mousepad") is None,
        reason="featherpad or mousepad is not installed (scripts/setup.sh --dev)",
    ),
]

FILES = 1000
_DIALOG = 16  # AT-SPI's ROLE_DIALOG
CHILDREN = 4 + 4 * FILES  # the view's header cells, then name, size, type, date a file


def files(snapshot: AccessibilitySnapshot) -> dict[str, Component]:
    """The file names among the snapshot's components."""
    return {
        c.label: c
        for c in snapshot.components
        if c.label is not None and c.label.startswith("file") and c.label.endswith(".txt")
    }


def selected(snapshot: AccessibilitySnapshot) -> list[str]:
    """The selected files' names."""
    return sorted(name for name, c in files(snapshot).items() if "selected" in c.states)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of FILES empty files."""
    home = tmp_path_factory.mktemp("many-files")
    for number in range(1, FILES + 1):
        (home / f"file{number:04d}.txt").touch()
    return home


@pytest.fixture(scope="module")
def dialog(folder: Path) -> Iterator[tuple[VirtualDesktop, AccessibilitySource]]:
    """FeatherPad's Open dialog showing its home folder of FILES empty files."""
    home = folder
    app = App(["featherpad"], env={"HOME": str(home)}, cwd=str(home), timeout=60.0)
    with VirtualDesktop(SCREEN, [app]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
        wait_for(source, lambda s: any(c.label == "Open" for c in s.components))
        desktop.execute(Keypress(keys=["ctrl", "o"]))
        # the dialog shown with its folder listed (a fresh read says so) before the kept
        # source reads it: these tests are about a kept tree; a view read while its
        # folder was still being listed is test_a_file_view_filled_after_it_was_read_...
        fresh = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
        try:
            wait_for(fresh, lambda s: "file0001.txt" in files(s), limit=60)
        finally:
            fresh.close()
        read = wait_for(source, lambda s: "file0001.txt" in files(s), limit=30)
        assert "file0001.txt" in files(read), _kept(source, read)
        yield desktop, source
        source.close()


def _kept(source: AccessibilitySource, snapshot: AccessibilitySnapshot) -> str:
    """What a kept source holds of its managed lists, for a failure's message."""
    lists = [
        (e.path, e.role, e.count, e.states, e.run and (e.run.items, e.run.last, e.run.failed))
        for tree in source._trees.values()
        if tree.walk is not None
        for e in tree.walk.elements
        if e.states & (1 << atspi.MANAGES_DESCENDANTS)
    ]
    return (
        f"files {sorted(files(snapshot))[:5]}, note {snapshot.note!r}, calls {snapshot.calls}, "
        f"watching {source._watch is not None and source._watch.watching}, lists {lists}"
    )


def test_a_long_managed_list_gives_its_visible_items_with_bounded_calls(dialog):
    desktop, _ = dialog
    # a source that kept nothing: the whole tree is walked, the long list included
    source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
    try:
        snapshot = wait_for(source, lambda s: "file0001.txt" in files(s), limit=30)
    finally:
        source.close()
    shown = files(snapshot)
    assert snapshot.note is None, snapshot.note  # nothing left to pixels
    # the files the view shows, from the first on, and none it does not show
    assert {f"file{n:04d}.txt" for n in range(1, 13)} <= set(shown), sorted(shown)
    assert 12 <= len(shown) < 40, sorted(shown)
    numbers = sorted(int(name[4:8]) for name in shown)
    assert numbers == list(range(1, len(numbers) + 1))
    # one under another, in order, within the dialog
    boxes = [shown[f"file{n:04d}.txt"].box for n in numbers]
    assert all(a[1] + a[3] <= b[1] for a, b in itertools.pairwise(boxes))
    cancel = next(c for c in snapshot.components if c.label == "Cancel")
    assert all(box[1] + box[3] <= cancel.box[1] for box in boxes)
    # bounded: a bisection (about log2 of 4 004 children) and the visible rows, where
    # enumerating the list would ask at least two calls (role, states) of each child
    assert snapshot.calls < 1200, snapshot.calls
    assert snapshot.calls < 2 * CHILDREN / 6


def test_a_click_on_a_visible_item_selects_that_file(dialog):
    desktop, source = dialog
    seen = wait_for(source, lambda s: "file0007.txt" in files(s), limit=30)
    assert "file0007.txt" in files(seen), _kept(source, seen)
    target = files(seen)["file0007.txt"]
    source.mark()
    desktop.execute(Click(x=target.center[0], y=target.center[1]))
    assert source.wait_caught_up(timeout=30.0)
    after = wait_for(source, lambda s: selected(s) == ["file0007.txt"], limit=30)
    assert selected(after) == ["file0007.txt"]  # (another's deselection may come a little later)


def test_a_scrolled_list_gives_the_items_it_shows_now(dialog):
    """Qt scrolls its view without an event: a source that kept the tree asks each
    long list whether its last visible item is where it was (a few calls a snapshot)."""
    desktop, source = dialog
    # settled: the registry, then the list's count and last item (a loaded machine may
    # still be delivering the last test's events: waited out)
    # (the dialog's five managed lists' counts and the long one's last item: 8 calls; the
    # main window's tab bar's count and its tab's state: 2)
    kept = wait_for(source, lambda s: s.calls <= 10 and "file0001.txt" in files(s), limit=30)
    assert kept.calls <= 10 and "file0001.txt" in files(kept), _kept(source, kept)
    first = files(kept)["file0001.txt"]
    source.mark()
    desktop.execute(Scroll(x=first.center[0], y=first.center[1], scroll_y=10))
    assert source.wait_caught_up(timeout=30.0)
    scrolled = wait_for(source, lambda s: "file0001.txt" not in files(s), limit=30)
    shown = files(scrolled)
    assert "file0001.txt" not in shown and len(shown) >= 12, sorted(shown)
    numbers = sorted(int(name[4:8]) for name in shown)
    assert numbers[0] > 1 and numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    # where the first file was, another now is
    assert any(abs(c.box[1] - first.box[1]) <= 2 for c in shown.values())


def test_a_long_list_that_showed_nothing_is_read_again(dialog, monkeypatch):
    """A long list read while it showed no item (still laid out on a loaded machine;
    here its first read made to fail) is read again by the next snapshot, though the
    app sent no event."""
    desktop, _ = dialog
    source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
    start = ListRead.start

    def fails_once(self: ListRead, send, found) -> None:
        monkeypatch.setattr(ListRead, "start", start)
        self.failed = True

    try:
        shown = files(wait_for(source, lambda s: bool(files(s)), limit=30))
        source.close()
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
        monkeypatch.setattr(ListRead, "start", fails_once)
        blind = source.snapshot()
        assert not files(blind)
        assert "not read item by item" in (blind.note or ""), blind.note
        seen = source.snapshot()
        assert set(files(seen)) == set(shown), (sorted(files(seen)), sorted(shown))
    finally:
        source.close()


def test_a_window_read_before_it_showed_is_walked_when_it_sends_a_window_event(dialog, monkeypatch):
    """A source that read the dialog's window before it showed (on a loaded machine,
    the instant between Qt making the dialog and showing it: here its first read is made
    to see it so) had nothing below it read; the window's next event, though only a
    window event with no change of its showing state, has it walked: its files come."""
    desktop, _ = dialog
    fresh = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
    shown = files(wait_for(fresh, lambda s: bool(files(s)), limit=30))
    fresh.close()
    decide = AppWalk._decide
    window: list[str] = []

    def before_it_shows(self: AppWalk, element: Element) -> None:
        if not window and len(element.order) == 1 and element.role == _DIALOG:
            window.append(element.path)
            element.states &= ~(1 << atspi.SHOWING)
        decide(self, element)

    monkeypatch.setattr(AppWalk, "_decide", before_it_shows)
    source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
    try:
        blind = source.snapshot()
        assert window and not files(blind), sorted(files(blind))
        watch = source._watch
        assert watch is not None and watch.watching
        counted = watch.events_from  # the window event, as the watch would report it
        monkeypatch.setattr(watch, "events_from", lambda app: counted(app) + 1)
        monkeypatch.setattr(
            watch, "paths_since", lambda app, count: {window[0]: {"Window:Activate"}}
        )
        seen = source.snapshot()
        assert set(files(seen)) == set(shown), (sorted(files(seen)), sorted(shown))
    finally:
        source.close()


def test_a_list_scrolled_in_a_step_that_changed_something_else_is_read_again(dialog):
    """The same silent scroll, then a click on the file name field (an event): the read
    that follows the event checks the kept list too."""
    desktop, source = dialog
    snapshot = wait_for(
        source,
        lambda s: bool(files(s)) and any(c.label == "File name:" for c in s.components),
        limit=30,
    )
    before = files(snapshot)
    assert before, _kept(source, snapshot)
    top = before[min(before)]
    field = next(c for c in snapshot.components if c.label == "File name:")
    desktop.execute(Scroll(x=top.center[0], y=top.center[1], scroll_y=5))
    desktop.wait_settled(timeout=5.0)
    source.mark()
    desktop.execute(Click(x=field.center[0], y=field.center[1]))
    assert source.wait_caught_up(timeout=30.0)
    after = files(source.snapshot())  # one read: the one the click's events call for
    assert after and min(after) > min(before), (min(before), sorted(after))


def _file_rows(
    snapshot: AccessibilitySnapshot,
) -> tuple[dict[str, Component], list[int], list[Component]]:
    """A file view's files, their numbers in order, and the components on their rows."""
    shown = files(snapshot)
    numbers = sorted(int(name[4:8]) for name in shown)
    if not numbers:
        return shown, numbers, []
    boxes = [shown[f"file{n:04d}.txt"].box for n in numbers]
    rows = [
        c
        for c in snapshot.components
        if boxes[0][1] <= c.center[1] < boxes[-1][1] and c.box[0] >= boxes[0][0]
    ]
    return shown, numbers, rows


def _whole(snapshot: AccessibilitySnapshot) -> bool:
    """Whether a read shows file0500.txt's folder with every visible row's cells: a read
    without failed calls, four cells (name, size, type, date) a row at least."""
    shown, numbers, rows = _file_rows(snapshot)
    return "file0500.txt" in shown and snapshot.note is None and len(rows) >= 4 * (len(numbers) - 1)


def test_a_gtk3_file_view_gives_its_visible_files_and_a_click_selects_one(folder):
    """GTK 3's file chooser lists files in a table that manages its cells (no A1 names:
    not a spreadsheet); its cells that show are read too, and the cell holding a file's
    icon and name is named by it. Mousepad with file0500.txt open shows its folder,
    scrolled to that file. The dialog fills its view after it shows (a read taken then
    finds rows whose cells are not there yet, or gone mid-read): the kept source is read
    until a read shows the rows whole, as an agent's look after the action settles."""
    app = App(["mousepad", str(folder / "file0500.txt")], env={"HOME": str(folder)}, timeout=60)
    with VirtualDesktop(SCREEN, [app]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
        try:
            wait_for(source, lambda s: any(c.label == "File" for c in s.components), limit=60)
            source.mark()
            desktop.execute(Keypress(keys=["ctrl", "o"]))
            source.wait_caught_up(timeout=60.0)
            snapshot = wait_for(source, _whole, limit=60)
            shown, numbers, rows = _file_rows(snapshot)
            assert 20 <= len(numbers) < 60 and 500 in numbers, numbers
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
            assert snapshot.note is None, snapshot.note
            boxes = [shown[f"file{n:04d}.txt"].box for n in numbers]
            assert all(a[1] + a[3] <= b[1] for a, b in itertools.pairwise(boxes))
            # a row's cells: the name (holding the file's icon and name: one target),
            # size, type and date; nothing unnamed is left of the icon
            assert len(rows) >= 4 * (len(boxes) - 1), sorted(
                (c.box[1], c.box[0], c.kind, c.label) for c in rows
            )
            assert all(c.label for c in rows), [c for c in rows if not c.label]
            fresh = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10)
            whole = fresh.snapshot()
            fresh.close()
            # the whole app; the file view's share: its visible rows' cells and what
            # they hold (about 50 calls a row), where enumerating it would take 8 000+
            assert set(files(whole)) == set(shown)
            assert whole.calls < 2 * CHILDREN / 3, whole.calls
            target = shown[f"file{numbers[3]:04d}.txt"]
            source.mark()
            desktop.execute(Click(x=target.center[0], y=target.center[1]))
            # the click makes the dialog send some 26 000 events: read as they come
            assert source.wait_caught_up(timeout=60.0)
            after = wait_for(source, lambda s: selected(s) == [target.label], limit=30)
            assert selected(after) == [target.label], (after.note, after.calls)
        finally:
            source.close()


def test_a_file_view_filled_after_it_was_read_gives_the_new_files(tmp_path):
    """Qt adds a folder's files to its view without an event (a dialog that opened
    before the folder was listed, on a loaded machine): a source that kept the tree
    asks each managed list for its count, and reads again one that changed, short
    (3 files, then 8) or grown long (1 008)."""
    app = App(["featherpad"], env={"HOME": str(tmp_path)}, cwd=str(tmp_path), timeout=60.0)

    def add(first: int, last: int) -> None:
        for number in range(first, last + 1):
            (tmp_path / f"file{number:04d}.txt").touch()

    add(1, 3)
    with VirtualDesktop(SCREEN, [app]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
        try:
            wait_for(source, lambda s: any(c.label == "Open" for c in s.components))
            desktop.execute(Keypress(keys=["ctrl", "o"]))
            three = wait_for(source, lambda s: len(files(s)) == 3, limit=60)
            assert sorted(files(three)) == ["file0001.txt", "file0002.txt", "file0003.txt"]
            add(4, 8)
            eight = wait_for(source, lambda s: len(files(s)) == 8, limit=60)
            want = [f"file{n:04d}.txt" for n in range(1, 9)]
            assert sorted(files(eight)) == want, _kept(source, eight)
            add(9, 1008)
            long = wait_for(source, lambda s: "file0012.txt" in files(s), limit=60)
            fresh = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10)
            whole = fresh.snapshot()
            fresh.close()
            kept, read = sorted(files(long)), sorted(files(whole))
            assert kept == read, (kept, read)
            assert 12 <= len(files(long)) < 40
        finally:
            source.close()
