"""Pipelines of sandboxes: Stage | Stage | Stage, and Gather (as_, +, |,
sandlock.inputs), each stage with its own policy, on real processes."""
import os
import time

import pytest

import sandlock
from sandlock import _native
from conftest import PY, REPO, SYSTEM, alive, asan_host, ASAN_GUEST_READ

BOX = SYSTEM + ["/dev/null"]


@pytest.fixture
def secret(tmpdir_path):
    p = os.path.join(tmpdir_path, "secret")
    with open(p, "w") as f:
        f.write("classified\n")
    return p


def test_three_stages_one_denied_a_file_the_others_read(secret, tmpdir_path):
    reader = sandlock.Sandbox(fs_readable=BOX + [tmpdir_path], timeout=60)
    blind = sandlock.Sandbox(fs_readable=BOX, timeout=60)
    # Control: the middle stage's probe does read the file when allowed.
    probe = ["sh", "-c", "x=$(cat %s) && echo LEAK >&2; tr a-z A-Z" % secret]
    assert b"LEAK" in reader.run(probe).stderr
    pipe = (
        reader.cmd(["cat", secret])
        | blind.cmd(probe)
        | reader.cmd(["sh", "-c", "cat; cat %s" % secret])
    )
    r = pipe.run()
    assert r.stdout == b"CLASSIFIED\nclassified\n"
    middle = pipe.results[1]
    assert b"LEAK" not in middle.stderr and b"Permission denied" in middle.stderr
    assert r.success


def test_exit_status_is_the_last_stages():
    sb = sandlock.Sandbox(fs_readable=BOX, timeout=60)
    assert (sb.cmd(["false"]) | sb.cmd(["true"])).run().success
    r = (sb.cmd(["true"]) | sb.cmd(["sh", "-c", "exit 3"])).run()
    assert r.exit_code == 3 and not r.success


def test_reference_example_two_sandboxes():
    a = sandlock.Sandbox(fs_readable=BOX)
    b = sandlock.Sandbox(fs_readable=BOX)
    result = (a.cmd(["echo", "hello"]) | b.cmd(["tr", "a-z", "A-Z"])).run()
    assert result.stdout == b"HELLO\n"


def test_last_stage_to_a_file(tmpdir_path):
    sb = sandlock.Sandbox(fs_readable=BOX, timeout=60)
    path = os.path.join(tmpdir_path, "out")
    with open(path, "wb") as f:
        r = (sb.cmd(["echo", "abc"]) | sb.cmd(["rev"])).run(stdout=f)
    assert r.stdout == b""
    with open(path, "rb") as f:
        assert f.read() == b"cba\n"


def test_timeout_ends_every_stage():
    sb = sandlock.Sandbox(fs_readable=BOX)
    pipe = sb.cmd(["sh", "-c", "echo $$; exec sleep 1000"]) | sb.cmd(["sh", "-c", "head -n1; sleep 1000"])
    t0 = time.monotonic()
    r = pipe.run(timeout=0.5)
    assert time.monotonic() - t0 < 10
    assert r.reason == sandlock.ExitReason.TIMEOUT
    assert not r.success and "timed out" in r.error
    first = int(r.stdout)
    assert not alive(first)


def test_timeout_bounds_the_whole_pipeline_even_if_the_last_stage_ends():
    sb = sandlock.Sandbox(fs_readable=BOX)
    # the last stage ends on its own (head), the first runs on: the
    # pipeline as a whole timed out, so it is not a success
    pipe = sb.cmd(["sh", "-c", "echo one; exec sleep 1000"]) | sb.cmd(["head", "-n1"])
    r = pipe.run(timeout=0.5)
    assert r.stdout == b"one\n" and not r.success and "timed out" in r.error


def test_a_pipeline_needs_two_stages():
    sb = sandlock.Sandbox(fs_readable=BOX)
    with pytest.raises(ValueError, match="at least 2"):
        sandlock.Pipeline([sb.cmd(["true"])])
    assert sb.cmd(["echo", "x"]).run().stdout == b"x\n"  # a lone Stage still runs


GATHER_FDS = r"""
import os, sys
print(sys.stdin.read().strip(), os.read(3, 100).decode().strip(),
      os.read(4, 100).decode().strip(), os.environ["_SANDLOCK_GATHER"])
try:
    os.fstat(5)
except OSError:
    print("no fd 5")
"""


def test_gather_consumer_gets_last_source_on_stdin_and_others_on_3_4():
    sb = sandlock.Sandbox(fs_readable=BOX, timeout=60)
    a, b, c = (sb.cmd(["echo", n]) for n in ("A", "B", "C"))
    g = a.as_("a") + b.as_("b") + c.as_("c")
    assert [s.name for s in g.sources] == ["a", "b", "c"]
    assert isinstance(g.sources[0], sandlock.NamedStage) and g.sources[0].stage is a
    r = (g | sb.cmd([PY, "-c", GATHER_FDS])).run()
    assert r.success, r.stderr
    assert r.stdout == b"C A B a:3,b:4,c:0\nno fd 5\n"


def test_named_stage_takes_stage_then_name():
    sb = sandlock.Sandbox(fs_readable=BOX)
    st = sb.cmd(["true"])
    ns = sandlock.NamedStage(st, "x")
    assert (ns.stage, ns.name) == (st, "x")
    with pytest.raises(TypeError):
        sandlock.NamedStage("x", st)


def test_failing_stage_start_leaves_nothing_running():
    sb = sandlock.Sandbox(fs_readable=BOX, timeout=60)
    pipe = sb.cmd(["sleep", "1000"]) | sb.cmd(["no-such-command-here"])
    before = set(os.listdir("/proc"))
    with pytest.raises(sandlock.SandlockError):
        pipe.run()
    # The first stage (started before the second failed) is gone.
    for pid in set(os.listdir("/proc")) - before:
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    assert not f.read().startswith(b"sleep\x001000")
            except FileNotFoundError:
                pass


CONSUMER = r"""
from sandlock import inputs
print(sorted(inputs.keys()), "data" in inputs, "nope" in inputs)
print(inputs["code"].strip(), inputs["data"].strip(), len(inputs["big"]))
"""


def test_gather_feeds_named_outputs_to_the_consumer(secret, tmpdir_path):
    lib = os.path.dirname(_native.LIB_PATH)
    py = os.path.join(REPO, "python")
    consumer_box = sandlock.Sandbox(
        fs_readable=BOX + [py, lib] + ASAN_GUEST_READ, timeout=60,
        env=asan_host({"PYTHONPATH": py, "SANDLOCK_LIB": _native.LIB_PATH}))
    data_box = sandlock.Sandbox(fs_readable=BOX + [tmpdir_path], timeout=60)
    code_box = sandlock.Sandbox(fs_readable=BOX, timeout=60)
    g = (data_box.cmd(["cat", secret]).as_("data")
         + code_box.cmd(["echo", "print(1)"]).as_("code")
         + code_box.cmd([PY, "-c", "print('x' * 300000)"]).as_("big"))
    assert isinstance(g, sandlock.Gather)
    gp = g | consumer_box.cmd([PY, "-c", CONSUMER])
    r = gp.run()
    assert r.success, r.stderr
    assert r.stdout == b"['big', 'code', 'data'] True False\nprint(1) classified 300001\n"
    # The consumer itself could not read the secret: only its producer could.
    assert not consumer_box.run(["cat", secret]).success


def test_gather_names_are_checked():
    sb = sandlock.Sandbox(fs_readable=BOX)
    with pytest.raises(ValueError):
        sb.cmd(["true"]).as_("a,b")
    with pytest.raises(ValueError):
        sb.cmd(["true"]).as_("x") + sb.cmd(["true"]).as_("x")
    with pytest.raises(TypeError):
        sb.cmd(["true"]).as_("x") + sb.cmd(["true"])


def test_inputs_outside_a_gather_is_empty():
    assert len(sandlock.inputs) == 0 or os.environ.get("_SANDLOCK_GATHER")
