"""Servers inside the sandbox, clients outside: Python's http.server,
redis-server, PostgreSQL (initdb + postgres on a unix socket in a
directory of the test), each also without pidfd_getfd (wl.NOGETFD: as
in a container under Docker's default profile).  Each server is stopped the way its operator
would (SIGTERM or SIGINT to the server, redis SHUTDOWN) and
must exit 0, so the COW mode commits what it wrote (logs, databases).
A signal goes to the server process itself: one sent to `sandlock run`
ends the sandbox at once (SIGKILL), so nothing would be committed."""
import os
import shutil
import signal
import subprocess
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

import wl

PY = "/usr/bin/python3"


def children(pid):
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
            out += [int(x) for x in f.read().split()]
    return out


def signal_server(proc, sig, bare):
    """Send sig to the server process itself.  Bare that is proc; inside,
    the command under the sandbox's init (`sandlock run` -> init ->
    command): a SIGTERM to `sandlock run` ends the sandbox with SIGKILL
    (cli/signals.c), with no graceful stop and no commit."""
    if bare:
        proc.send_signal(sig)
        return
    (init,) = children(proc.pid)
    for pid in children(init):
        os.kill(pid, sig)


def serve(name, tmp_path, argv, grants, setup, client, stop, modes=wl.MODES + (wl.NOGETFD,),
          skip=(), user=None):
    """For each mode: fresh DIR, start argv inside, client(dir) -> answers,
    stop(proc), then the exit status and DIR's tree; all must match bare."""
    work = tmp_path / "work"
    got = {}
    for mode in modes:
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        setup(work)
        prefix = []
        if user:
            shutil.chown(work, user, user)
            for dirpath, dirs, files in os.walk(work):
                for n in dirs + files:
                    shutil.chown(os.path.join(dirpath, n), user, user)
            prefix = ["setpriv", "--reuid", user, "--regid", user, "--clear-groups"]
        t0 = time.perf_counter()
        proc = wl.spawn(mode, prefix + argv, work, grants, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True) if not user else subprocess.Popen(
            prefix + (argv if mode == "bare" else wl.sandbox_argv(mode, work, grants) + argv),
            cwd=str(work), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            answers = client(work, proc)
            stop(proc, mode == "bare")
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        wl.TIMES.setdefault((name, mode), []).append(time.perf_counter() - t0)
        got[mode] = (proc.returncode, answers, wl.tree(work, skip))
        assert got[mode] == got["bare"], (mode, got[mode][:2], got["bare"][:2], err[-2000:])
    return got


HTTP_SERVER = textwrap.dedent('''
    import http.server, signal, sys
    class H(http.server.SimpleHTTPRequestHandler):
        def log_message(self, fmt, *args):
            with open("access.log", "a") as f:
                f.write("%s\\n" % self.path)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
    try:
        srv.serve_forever()
    except SystemExit:
        srv.server_close()
''')


def test_python_http_server_inside(tmp_path):
    port = wl.free_port()

    def setup(d):
        (d / "index.html").write_text("<p>hello</p>\n")
        (d / "data.txt").write_text("data\n" * 100)

    def client(d, proc):
        wl.wait_port(port, proc)
        return [urllib.request.urlopen("http://127.0.0.1:%d/%s" % (port, p), timeout=30).read()
                for p in ("", "data.txt", "index.html")]

    got = serve("http.server inside", tmp_path, [PY, "-c", HTTP_SERVER, str(port)],
                ["--net-allow-bind", str(port)], setup, client,
                lambda p, bare: signal_server(p, signal.SIGTERM, bare))
    assert got["bare"][0] == 0 and got["bare"][1][1] == b"data\n" * 100
    assert "access.log" in got["cow"][2]


def test_redis_server_inside(tmp_path):
    wl.need("redis-server", "redis-cli")
    port = wl.free_port()
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", ".",
            "--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
            "--logfile", ""]

    def cli(*args):
        return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                              text=True, timeout=30).stdout

    def client(d, proc):
        wl.wait_port(port, proc)
        answers = [cli("SET", "k%d" % i, "v%d" % i) for i in range(20)]
        answers += [cli("GET", "k7"), cli("DBSIZE"), cli("INCRBY", "n", "5")]
        cli("SHUTDOWN", "SAVE")  # writes dump.rdb, exits 0
        return answers

    got = serve("redis-server inside", tmp_path, argv, ["--net-allow-bind", str(port)],
                lambda d: None, client, lambda p, bare: None, skip=("dump.rdb",))
    assert got["bare"][0] == 0 and got["bare"][1][-3:] == ["v7\n", "20\n", "5\n"]


def test_postgresql_initdb_and_server_inside(tmp_path):
    bindir = Path("/usr/lib/postgresql")
    versions = sorted(bindir.glob("*/bin/initdb")) if bindir.exists() else []
    if not versions or not shutil.which("psql"):
        pytest.skip("postgresql is not installed")
    try:
        import pwd
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no postgres user (postgres refuses to run as root)")
    if os.geteuid() != 0:
        pytest.skip("needs root to run the server as the postgres user")
    pgbin = versions[-1].parent
    # pytest's base directory is root's alone: the postgres user works in one of its own
    import tempfile
    top = Path(tempfile.mkdtemp(prefix="sandlock-wl-pg-", dir="/tmp"))
    os.chmod(top, 0o755)
    try:
        run_postgres(top, pgbin)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run_postgres(tmp_path, pgbin):
    port = wl.free_port()
    # The socket lives outside DIR: a socket bound in a COW workdir is made
    # in the layer, out of reach of the clients outside (the test after
    # the next has its clients inside).
    sockdir = tmp_path / "sock"
    sockdir.mkdir()
    shutil.chown(sockdir, "postgres", "postgres")
    script = textwrap.dedent('''
        set -e
        "$1/initdb" -D data -U wl --auth=trust --no-sync >/dev/null
        exec "$1/postgres" -D data -k "$3" -p "$2" -c listen_addresses= -c fsync=off
    ''')

    def psql(d, sql):
        return subprocess.run(["psql", "-h", str(sockdir), "-p", str(port), "-U", "wl", "-d", "postgres",
                               "-Atc", sql], capture_output=True, text=True, timeout=60).stdout

    def client(d, proc):
        sock = sockdir / (".s.PGSQL.%d" % port)
        deadline = time.time() + 120
        while not (sock.exists() and psql(d, "select 1") == "1\n"):  # a rendezvous
            assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
            time.sleep(0.1)
        return [psql(d, "create table t (id int, name text)"),
                psql(d, "insert into t select i, 'n' || i from generate_series(1, 1000) i"),
                psql(d, "select count(*), sum(id) from t")]

    # postgres refuses to run as root: the whole run is the postgres user's.
    got = serve("postgresql inside", tmp_path,
                ["sh", "-c", script, "sh", str(pgbin), str(port), str(sockdir)],
                # shmget (sysv_ipc) for its main segment; /dev/shm for the dynamic ones
                ["--extra-allow-syscalls", "sysv_ipc", "-w", "/dev/shm", "-w", str(sockdir)],
                lambda d: None, client,
                lambda p, bare: signal_server(p, signal.SIGINT, bare),  # fast shutdown, exit 0
                skip=("data",), user="postgres")
    assert got["bare"][1][-1] == "1000|500500\n"
    assert got["bare"][0] == 0


# Servers whose unix socket lives in the project directory, with their
# clients in the same sandbox: under --workdir the socket is made in the
# copy-on-write layer (never in DIR, never committed: docs/cow-chroot.md).
SSH_AGENT = textwrap.dedent('''
    eval "$(ssh-agent -a "$PWD/agent.sock" -s)" >/dev/null
    ssh-add -l; echo "ssh-add: $?"
    test -S agent.sock && echo "a socket"
    ssh-agent -k >/dev/null
    while [ -e agent.sock ]; do sleep 0.05; done
    echo done > log
''')


@pytest.mark.parametrize("mode", wl.MODES[1:] + (wl.NOGETFD,))
def test_ssh_agent_socket_in_the_workdir(tmp_path, mode):
    wl.need("ssh-agent", "ssh-add")
    got = wl.workload("ssh-agent in DIR", tmp_path, ["sh", "-c", SSH_AGENT],
                      modes=("bare", mode), timeout=120)
    assert got["bare"][1] == "The agent has no identities.\nssh-add: 1\na socket\n"
    assert sorted(got[mode][2]) == ["log"]


PG_IN_DIR = textwrap.dedent('''
    set -e
    "$1/initdb" -D data -U wl --auth=trust --no-sync >/dev/null
    mkdir sock
    "$1/pg_ctl" -D data -l /dev/null -w -o "-k $PWD/sock -p $2 -c listen_addresses= -c fsync=off" start >/dev/null
    psql -h "$PWD/sock" -p "$2" -U wl -d postgres -Atc "create table t (id int)" \\
        -c "insert into t select generate_series(1, 1000)" -c "select count(*), sum(id) from t"
    "$1/pg_ctl" -D data -m fast -w stop >/dev/null
    ls -A sock
''')


def test_postgresql_socket_dir_in_the_workdir(tmp_path):
    """PostgreSQL's socket directory inside DIR, psql in the same sandbox;
    the run commits the database, never the socket or its lock file's
    socket."""
    bindir = Path("/usr/lib/postgresql")
    versions = sorted(bindir.glob("*/bin/initdb")) if bindir.exists() else []
    if not versions or not shutil.which("psql") or os.geteuid() != 0:
        pytest.skip("needs postgresql, psql and root (to run it as the postgres user)")
    import pwd
    import tempfile
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no postgres user")
    top = Path(tempfile.mkdtemp(prefix="sandlock-wl-pgdir-", dir="/tmp"))
    os.chmod(top, 0o755)
    try:
        work, port = top / "work", wl.free_port()
        argv = ["sh", "-c", PG_IN_DIR, "sh", str(versions[-1].parent), str(port)]
        prefix = ["setpriv", "--reuid", "postgres", "--regid", "postgres", "--clear-groups"]
        grants = ["--extra-allow-syscalls", "sysv_ipc", "-w", "/dev/shm"]
        got = {}
        for mode in wl.MODES + (wl.NOGETFD,):
            if work.exists():
                shutil.rmtree(work)
            work.mkdir()
            shutil.chown(work, "postgres", "postgres")
            full = argv if mode == "bare" else wl.sandbox_argv(mode, work, grants) + argv
            t0 = time.perf_counter()
            r = subprocess.run(prefix + full, cwd=str(work), capture_output=True, text=True,
                               timeout=300)
            wl.TIMES.setdefault(("postgresql socket in DIR", mode), []).append(
                time.perf_counter() - t0)
            got[mode] = (r.returncode, r.stdout, wl.tree(work, ("data",)))
            assert got[mode] == got["bare"], (mode, got[mode][:2], r.stderr[-2000:])
        assert got["bare"][:2] == (0, "CREATE TABLE\nINSERT 0 1000\n1000|500500\n"), got["bare"]
        assert sorted(got["cow"][2]) == ["sock"]  # the directory, empty
    finally:
        shutil.rmtree(top, ignore_errors=True)
