"""gui_harness under cua-auto-harness, a peer's conformance suite for computer-use action
layers: a Backend (its contract: boot, exec, inject, screenshot, teardown) over a real
VirtualDesktop, whose "guest" is a bubblewrap sandbox on this machine, and run_conformance.

Every injected action goes gui_harness's own way: normalize_action, resolve, Policy.check
and X11Desktop.execute. The suite's probe (a fullscreen Tk app) and its XRecord tap judge
what arrived. Start at run_conformance(); `autoharness test --adapter
gui_harness.bench.conformance:GuiHarnessBackend` runs the same from its command line.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gui_harness.actions import Policy, resolve
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.errors import ActionRejected, DesktopError, InvalidAction
from gui_harness.normalize import normalize_action
from openprogram.errors import UsageError
from openprogram.operations.process import paths_under_tmp

try:
    from autoharness import contracts
    from autoharness.adapters import SutExecutionError
    from autoharness.backend import Backend, GenericProbeAdapter
    from autoharness.driver import run_catalog
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"the conformance run needs cua-auto-harness ({exc.name} is missing):"
        ' pip install "openprogram[dev]"'
    ) from exc

__all__ = ["POLICY_REFUSED", "GuestShell", "GuiHarnessBackend", "run_conformance", "to_action"]

SCREEN = (1920, 1080)
"""The screen the suite's runner catalog is written for (its points reach 1908, 1072)."""
POLICY_REFUSED = "refused by gui_harness's policy: "
"""How a not-measurable reason starts when the backend's Policy refused the entry."""
_INEXPRESSIBLE = "gui_harness cannot express it: "
# the guest's shell. The suite asks its probes through `curl -s -m N URL` (hundreds of
# times a run: every 0.15 s while it waits for quiet); the agent answers those itself, in
# the guest's network, as curl would (the body, whatever the HTTP status; exit 7 when
# nothing answers, 28 on a timeout), rather than start a shell and a curl for each
_GUEST_AGENT = r"""
import json, os, re, signal, socket, subprocess, sys, urllib.error, urllib.request
CURL = re.compile(r"curl -s -m (\d+) (http://127\.0\.0\.1:\d+/\S*)")
def fetch(seconds, url):
    try:
        with urllib.request.urlopen(url, timeout=seconds) as answer:
            return 0, answer.read()
    except urllib.error.HTTPError as answer:
        return 0, answer.read()
    except (TimeoutError, socket.timeout):
        return 28, b""
    except (urllib.error.URLError, OSError) as error:
        timed_out = isinstance(getattr(error, "reason", None), (TimeoutError, socket.timeout))
        return (28 if timed_out else 7), b""
for line in sys.stdin:
    request = json.loads(line)
    asked = CURL.fullmatch(request["cmd"])
    if asked is not None:
        rc, body = fetch(int(asked.group(1)), asked.group(2))
        reply = {"rc": rc, "out": body.decode("utf-8", "replace")}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        continue
    child = subprocess.Popen(["/bin/sh", "-c", request["cmd"]], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        out, _ = child.communicate(timeout=request["timeout"])
        reply = {"rc": child.returncode, "out": out.decode("utf-8", "replace")}
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        reply = {"rc": 124, "out": ""}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""


class GuestShell:
    """A "guest" for the suite on this machine: shell commands run in a bubblewrap sandbox
    with its own /tmp, network (loopback only) and process ids, so the suite's fixed probe
    paths and ports, and its `pkill -f`, reach only what it started there. `python3` in
    it is this interpreter (tkinter and python-xlib for the probes); the X display's
    socket is shared. Raises DesktopError when bubblewrap is missing or cannot start."""

    def __init__(self, display: str) -> None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise DesktopError("the conformance guest needs bubblewrap: apt-get install bubblewrap")
        self._bin = tempfile.mkdtemp(prefix="gui-guest-bin-")
        shim = Path(self._bin, "python3")
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        shim.chmod(0o755)
        path = f"/tmp/.guest-bin:{os.environ.get('PATH', '/usr/bin:/bin')}"
        argv = [
            bwrap, "--dev-bind", "/", "/", "--tmpfs", "/tmp",
            # a checkout or venv under /tmp (a CI clone) stays visible, read-only
            *[arg for path in paths_under_tmp() for arg in ("--ro-bind", path, path)],
            "--bind", "/tmp/.X11-unix", "/tmp/.X11-unix", "--ro-bind", self._bin, "/tmp/.guest-bin",
            "--unshare-pid", "--unshare-net", "--proc", "/proc", "--die-with-parent",
            "--setenv", "PATH", path, "--setenv", "DISPLAY", display, "--chdir", "/tmp",
            sys.executable, "-c", _GUEST_AGENT,
        ]  # fmt: skip
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        try:
            rc, out = self.run("echo ready", timeout=30)
            if (rc, out.strip()) != (0, "ready"):
                raise DesktopError(f"the bubblewrap guest did not start (rc={rc}, {out!r})")
        except BaseException:
            self.close()
            raise

    def run(self, command: str, timeout: float = 120) -> tuple[int, str]:
        """Run `command` with /bin/sh in the guest; (exit status, stdout). 124 on timeout."""
        with self._lock:
            assert self._process.stdin is not None and self._process.stdout is not None
            try:
                self._process.stdin.write(json.dumps({"cmd": command, "timeout": timeout}) + "\n")
                self._process.stdin.flush()
                line = self._process.stdout.readline()
            except (BrokenPipeError, OSError) as exc:
                raise DesktopError(f"the conformance guest is gone: {exc}") from exc
        if not line:
            raise DesktopError("the conformance guest is gone (it closed its output)")
        reply = json.loads(line)
        return int(reply["rc"]), str(reply["out"])

    def close(self) -> None:
        """Stop the guest: everything it started dies with its process namespace."""
        if self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGKILL)
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                stream.close()
        shutil.rmtree(self._bin, ignore_errors=True)


def to_action(action: Any) -> dict[str, Any]:
    """One of the suite's canonical actions as a computer-use action dict, for
    normalize_action: the spellings a model would use (count, modifiers, key names)."""
    if isinstance(action, contracts.Click):
        return {"type": "click", "x": action.x, "y": action.y, "button": action.button,
                "count": action.count, "modifiers": list(action.modifiers)}  # fmt: skip
    if isinstance(action, (contracts.ButtonPress, contracts.ButtonRelease)):
        kind = "mouse_down" if isinstance(action, contracts.ButtonPress) else "mouse_up"
        return {"type": kind, "x": action.x, "y": action.y, "button": action.button}
    if isinstance(action, contracts.Move):
        return {"type": "move", "x": action.x, "y": action.y}
    if isinstance(action, contracts.Drag):
        # its pace: step_delay_ms between the path's points, as the suite's xdotool runs it
        duration = action.step_delay_ms * (len(action.path) - 1)
        return {"type": "drag", "path": [list(p) for p in action.path], "button": action.button,
                "modifiers": list(action.modifiers), "duration_ms": duration}  # fmt: skip
    if isinstance(action, contracts.Scroll):
        return {"type": "scroll", "x": action.x, "y": action.y, "scroll_y": action.dy_ticks,
                "scroll_x": action.dx_ticks, "modifiers": list(action.modifiers)}  # fmt: skip
    if isinstance(action, contracts.KeyChord):
        return {"type": "keypress", "keys": list(action.keys)}
    if isinstance(action, contracts.TypeText):
        return {"type": "type", "text": action.text}
    raise InvalidAction(f"the suite's action {action!r} has no gui_harness counterpart")


class GuiHarnessBackend(Backend):  # type: ignore[misc]  # autoharness has no type hints
    """gui_harness as the suite's system under test, on a VirtualDesktop of SCREEN pixels
    with a window manager. `policy` checks every action as the agent's does (default:
    Policy()); an entry it refuses is reported not measurable, its reason starting with
    POLICY_REFUSED. `options={"policy": "open"}` (`-O policy=open`) denies no keys."""

    guest_display = ":0"
    supports_raw_tap = True
    options = ("policy",)  # what `autoharness test -O key=value` may set

    def __init__(
        self,
        env_dir: str | None = None,
        *,
        policy: Policy | None = None,
        options: Mapping[str, object] | None = None,
    ) -> None:
        chosen = dict(options or {}).get("policy", "default")
        if chosen not in ("default", "open"):
            raise UsageError(f"policy={chosen!r} is not 'default' or 'open'")
        self.policy = policy or (Policy(deny_keys=()) if chosen == "open" else Policy())
        self._screen: VirtualDesktop | None = None
        self._guest: GuestShell | None = None

    def boot(self) -> None:
        self._screen = VirtualDesktop(SCREEN, accessibility=False)
        try:  # the suite tears down only after a setup that succeeded
            self._screen.start()
            assert self._screen.display is not None
            self.guest_display = self._screen.display
            self._guest = GuestShell(self._screen.display)
        except BaseException:
            self.teardown()
            raise

    def exec(self, cmd: str, timeout: int = 120) -> tuple[int, str]:
        if self._guest is None:
            raise DesktopError("boot() the backend before exec()")
        return self._guest.run(cmd, timeout=timeout)

    def supports(self, action: Any) -> str | None:
        try:
            self._checked(action, held=())
        except InvalidAction as exc:
            return f"{_INEXPRESSIBLE}{exc}"
        except ActionRejected as exc:
            return f"{POLICY_REFUSED}{exc.reason}"
        return None

    def inject(self, action: Any) -> None:
        if self._screen is None:
            raise DesktopError("boot() the backend before inject()")
        desktop = self._screen.desktop
        try:
            desktop.execute(self._checked(action, held=desktop.held_keys))
        except (InvalidAction, ActionRejected, DesktopError) as exc:
            raise SutExecutionError(f"{type(exc).__name__}: {exc}") from exc

    def screenshot(self, dst_path: str) -> None:
        if self._screen is None:
            raise DesktopError("boot() the backend before screenshot()")
        # the least compression: a 1920x1080 PNG at the default level took a second or
        # more a step under load, and the suite reads its pixels, not its size
        self._screen.screenshot().save(dst_path, "PNG", compress_level=1)

    def teardown(self) -> None:
        guest, self._guest = self._guest, None
        if guest is not None:
            guest.close()
        screen, self._screen = self._screen, None
        if screen is not None:
            screen.close()

    def _checked(self, action: Any, *, held: Sequence[str]) -> Any:
        """The action as gui_harness's agent would run it: normalised, resolved, checked."""
        ours = resolve(normalize_action(to_action(action)))
        self.policy.check(ours, SCREEN, held=held)
        return ours


def run_conformance(
    out_dir: str | Path,
    *,
    files: Sequence[str] = (),
    entries: Sequence[str] = (),
    reps: int | None = 1,
    policy: Policy | None = None,
) -> dict[str, Any]:
    """Run the suite's runner catalog (its `files`, e.g. ["keys"], else all; only the ids
    in `entries` when given) through GuiHarnessBackend, `reps` times each (None: the
    catalog's own count); returns the suite's report (report.json and report.md are
    written to `out_dir`) with `policy_refused` and `inexpressible` added."""
    import autoharness

    catalog = Path(autoharness.__file__).parent / "catalogs" / "runner"
    chosen = [catalog / f"{name}.json" for name in files] or sorted(catalog.glob("*.json"))
    loaded = [entry for path in chosen for entry in contracts.load_catalog(path)]
    if entries:
        loaded = [entry for entry in loaded if entry.id in entries]
    adapter = GenericProbeAdapter(GuiHarnessBackend(policy=policy), name="gui_harness")
    try:
        report: dict[str, Any] = run_catalog(adapter, loaded, Path(out_dir), reps_override=reps)
    finally:  # the suite tears down itself only once its probes are up
        adapter.teardown()
    report["policy_refused"] = [
        item for item in report["not_measurable"] if item["reason"].startswith(POLICY_REFUSED)
    ]
    report["inexpressible"] = [
        item for item in report["not_measurable"] if item["reason"].startswith(_INEXPRESSIBLE)
    ]
    return report
