"""The run's timeout bounds the whole run, also when a handler does not return.

The handler below blocks until the test lets it go: a run that waited for
it would never return (the helper thread's join would time out), and the
handler's late answer must change nothing once it comes.
"""
import errno
import os
import threading

import pytest

import sandlock
from sandlock.handler import Handler, NotifAction
from conftest import SYSTEM


class Stuck(Handler):
    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.returned = threading.Event()

    def _block(self):
        self.entered.set()
        self.release.wait(60)
        self.returned.set()
        return NotifAction.errno(errno.EPERM)


class StuckSync(Stuck):
    def handle(self, ctx):
        return self._block()


class StuckAsync(Stuck):
    async def handle(self, ctx):
        return self._block()


def _threads():
    return len(os.listdir("/proc/self/task"))


@pytest.mark.parametrize("cls", [StuckSync, StuckAsync])
def test_timeout_returns_while_a_handler_is_stuck(cls):
    h = cls()
    sb = sandlock.Sandbox(fs_readable=SYSTEM, timeout=1)
    before = _threads()
    out = {}
    t = threading.Thread(target=lambda: out.update(r=sb.run_with_handlers(
        ["/bin/pwd"], [("getcwd", h)])))
    t.start()
    t.join(60)
    try:
        assert not t.is_alive(), "run_with_handlers waited for the stuck handler"
        assert h.entered.is_set() and not h.returned.is_set()
        r = out["r"]
        assert r.reason == sandlock.ExitReason.TIMEOUT
        assert not r.success
    finally:
        h.release.set()
    assert h.returned.wait(60)
    # The abandoned thread finishes on its own once its handler returns.
    for _ in range(3000):
        if _threads() <= before:
            break
        threading.Event().wait(0.01)
    assert _threads() <= before
    # ... and the interpreter is still sound: another run works.
    r = sandlock.Sandbox(fs_readable=SYSTEM, timeout=30).run(["/bin/echo", "ok"])
    assert r.stdout == b"ok\n"
