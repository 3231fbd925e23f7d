"""TetheredProcess: a process group that ends with the process that started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gui_harness.desktop._tether import TetheredProcess, group_gone, group_members

# the owner starts a group (a shell that starts a grandchild, as dbus-daemon activates
# services), reports its pid, then waits to be killed
_OWNER = """
import json, subprocess, sys, time
from gui_harness.desktop._tether import TetheredProcess
group = TetheredProcess(["sh", "-c", "sleep 600 & wait"], stdin=subprocess.DEVNULL)
print(json.dumps(group.pid), flush=True)
time.sleep(600)
"""


def _members_appear(group: int, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while len(members := group_members(group)) < count:
        assert time.monotonic() < deadline, f"group {group} has only {members}"
        time.sleep(0.01)
    return members


def test_the_group_ends_when_its_owner_is_killed():
    with subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE) as owner:
        try:
            assert owner.stdout is not None
            group = json.loads(owner.stdout.readline())
            members = _members_appear(group, 3)  # the shell, its sleep, the watcher
            owner.send_signal(signal.SIGKILL)  # no close, no atexit
            owner.wait()
            assert group_gone(group, 15), f"left running: {group_members(group)} of {members}"
        finally:
            owner.kill()


def test_release_after_stopping_the_group_leaves_no_watcher_and_release_alone_ends_it():
    stopped = TetheredProcess(["sleep", "600"], stdin=subprocess.DEVNULL)
    _members_appear(stopped.pid, 2)  # sleep and the watcher
    os.killpg(stopped.pid, signal.SIGTERM)
    stopped.wait(5)
    stopped.release()
    stopped.release()  # idempotent
    assert group_gone(stopped.pid, 5)

    released = TetheredProcess(["sleep", "600"], stdin=subprocess.DEVNULL)
    _members_appear(released.pid, 2)
    released.release()  # the watcher ends the group by itself
    assert released.wait(10) == -signal.SIGTERM
    assert group_gone(released.pid, 5)


def test_a_program_that_cannot_run_is_refused_as_popen_would():
    with pytest.raises(FileNotFoundError, match="no-such-program"):
        TetheredProcess(["no-such-program-here"])
    with pytest.raises(PermissionError):
        TetheredProcess([os.devnull])
