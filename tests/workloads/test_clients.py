"""Network clients inside the sandbox, a server outside on 127.0.0.1:
threaded and async clients in Python, Node worker_threads, Go
goroutines, curl over TLS with a test CA, git against a git daemon.
The sandbox gets `--net-allow 127.0.0.1:PORT`; every client writes what
it fetched into its directory (the COW mode commits it)."""
import os
import shutil
import subprocess
import textwrap

import pytest

import wl

PY = "/usr/bin/python3"
N = 50


@pytest.fixture
def server():
    s = wl.Server()
    yield s
    s.close()


def fetched(r, d):
    return (d / "fetched.txt").read_text()


THREADS = textwrap.dedent('''
    import sys, urllib.request
    from concurrent.futures import ThreadPoolExecutor
    port, n = int(sys.argv[1]), int(sys.argv[2])
    def get(i):
        with urllib.request.urlopen("http://127.0.0.1:%d/%d" % (port, i), timeout=30) as r:
            return r.read().decode()
    with ThreadPoolExecutor(max_workers=8) as ex:
        items = list(ex.map(get, range(n)))
    open("fetched.txt", "w").write("".join(items))
''')


def test_python_threadpool_client(tmp_path, server):
    got = wl.workload("python threads", tmp_path, [PY, "-c", THREADS, str(server.port), str(N)],
                      grants=["--net-allow", "127.0.0.1:%d" % server.port], output=fetched)
    assert got["bare"][1] == wl.expected_items(N)


ASYNC = textwrap.dedent('''
    import asyncio, sys
    port, n = int(sys.argv[1]), int(sys.argv[2])
    async def get(i):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"GET /%d HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n" % i)
        data = await r.read()
        w.close()
        return data.split(b"\\r\\n\\r\\n", 1)[1].decode()
    async def main():
        return await asyncio.gather(*(get(i) for i in range(n)))
    open("fetched.txt", "w").write("".join(asyncio.run(main())))
''')


def test_python_asyncio_client(tmp_path, server):
    got = wl.workload("python asyncio", tmp_path, [PY, "-c", ASYNC, str(server.port), str(N)],
                      grants=["--net-allow", "127.0.0.1:%d" % server.port], output=fetched)
    assert got["bare"][1] == wl.expected_items(N)


NODE = textwrap.dedent('''
    const { Worker, isMainThread, parentPort, workerData } = require("node:worker_threads");
    const fs = require("node:fs");
    if (isMainThread) {
      const [port, n] = process.argv.slice(2).map(Number);
      const W = 4, got = new Array(n);
      let left = W;
      for (let w = 0; w < W; w++) {
        const ids = [...Array(n).keys()].filter(i => i % W === w);
        const worker = new Worker(__filename, { workerData: { port, ids } });
        worker.on("message", ({ i, text }) => { got[i] = text; });
        worker.on("error", e => { console.error(e); process.exit(1); });
        worker.on("exit", () => {
          if (--left === 0) {
            fs.writeFileSync("fetched.txt", got.join(""));
            fs.promises.readdir(".").then(names => console.log(names.sort().join(" ")));
          }
        });
      }
    } else {
      (async () => {
        for (const i of workerData.ids) {
          const r = await fetch(`http://127.0.0.1:${workerData.port}/${i}`);
          parentPort.postMessage({ i, text: await r.text() });
        }
      })();
    }
''')


def test_node_worker_threads_fetch(tmp_path, server):
    wl.need("node")

    def setup(d):
        (d / "client.js").write_text(NODE)
        (d / "old.txt").write_text("x")

    # The listing is Node's async readdir (a libuv worker thread) after the
    # write: under COW it must show fetched.txt from the merged view.
    got = wl.workload("node worker_threads", tmp_path,
                      ["node", "client.js", str(server.port), str(N)], setup=setup,
                      grants=["--net-allow", "127.0.0.1:%d" % server.port],
                      output=lambda r, d: (r.stdout, fetched(r, d)))
    assert got["bare"][1] == ("client.js fetched.txt old.txt\n", wl.expected_items(N))


GO = textwrap.dedent('''
    package main

    import (
        "fmt"
        "io"
        "net/http"
        "os"
        "strings"
        "sync"
    )

    func main() {
        port := os.Args[1]
        const n = 50
        got := make([]string, n)
        errs := 0
        var mu sync.Mutex
        var wg sync.WaitGroup
        for i := 0; i < n; i++ {
            wg.Add(1)
            go func(i int) {
                defer wg.Done()
                r, err := http.Get(fmt.Sprintf("http://127.0.0.1:%s/%d", port, i))
                if err != nil {
                    mu.Lock(); errs++; mu.Unlock()
                    fmt.Fprintln(os.Stderr, err)
                    return
                }
                b, _ := io.ReadAll(r.Body)
                r.Body.Close()
                got[i] = string(b)
            }(i)
        }
        wg.Wait()
        os.WriteFile("fetched.txt", []byte(strings.Join(got, "")), 0644)
        fmt.Println("errors", errs)
    }
''')


def test_go_50_concurrent_requests(tmp_path, server):
    wl.need("go")

    def setup(d):
        (d / "main.go").write_text(GO)
        (d / "go.mod").write_text("module wlclient\n\ngo 1.19\n")

    # The build happens inside too, with no downloads (no requirements,
    # GOPROXY=off) and GOCACHE/GOPATH in a directory of the test, warmed
    # by one bare build first (the standard library's objects), granted -w.
    cache = tmp_path / "gocache"
    env = {"GOPROXY": "off", "GOFLAGS": "-mod=mod", "GO111MODULE": "on", "CGO_ENABLED": "0",
           "GOCACHE": str(cache / "build"), "GOPATH": str(cache / "path")}
    warm = tmp_path / "warm"
    warm.mkdir()
    setup(warm)
    subprocess.run(["go", "build", "-o", "client", "."], cwd=warm, check=True,
                   env=dict(os.environ, **env), capture_output=True)
    script = 'go build -o client . && ./client "$1"'
    got = wl.workload("go 50 requests", tmp_path / "runs",
                      ["sh", "-c", script, "sh", str(server.port)], setup=setup, env=env,
                      grants=["--net-allow", "127.0.0.1:%d" % server.port, "-w", str(cache)],
                      output=lambda r, d: (r.stdout, fetched(r, d)), skip=("client",))
    assert got["bare"][1] == ("errors 0\n", wl.expected_items(N))


def test_curl_https_with_a_test_ca(tmp_path):
    wl.need("curl", "openssl")
    pki = tmp_path / "pki"
    pki.mkdir()

    def ssl(*args):
        subprocess.run(["openssl", *args], cwd=pki, check=True, capture_output=True)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=sandlock workload test CA")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
        "-subj", "/CN=localhost")
    (pki / "ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext")
    srv = wl.Server(certfile=str(pki / "srv.pem"), keyfile=str(pki / "srv.key"))
    try:
        script = 'for i in 1 2 3; do curl -sS --fail --cacert "$1" -o "got$i" ' \
                 '"https://127.0.0.1:$2/$i"; done; cat got1 got2 got3; ' \
                 'curl -sS -o /dev/null "https://127.0.0.1:$2/x" 2>&1 | grep -c "certificate"'
        got = wl.workload("curl https", tmp_path,
                          ["sh", "-c", script, "sh", str(pki / "ca.pem"), str(srv.port)],
                          grants=["--net-allow", "127.0.0.1:%d" % srv.port, "-r", str(pki)])
        # without --cacert the test CA is unknown: curl says so, in every mode
        assert got["bare"][1] == "item 1\nitem 2\nitem 3\n1\n"
    finally:
        srv.close()


GIT_ENV = {"GIT_AUTHOR_NAME": "wl", "GIT_AUTHOR_EMAIL": "wl@example.invalid",
           "GIT_COMMITTER_NAME": "wl", "GIT_COMMITTER_EMAIL": "wl@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def test_git_clone_push_fetch_against_git_daemon(tmp_path):
    wl.need("git")
    if subprocess.run(["git", "daemon", "-h"], capture_output=True).returncode not in (0, 129):
        pytest.skip("git daemon is not installed")
    env = dict(os.environ, **GIT_ENV)
    served = tmp_path / "served"
    seed = tmp_path / "seed"
    for d in (served, seed):
        d.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(seed)], check=True, env=env)
    (seed / "README").write_text("hello\n")
    subprocess.run(["git", "-C", str(seed), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(seed), "commit", "-qm", "first"], check=True, env=env)
    port = wl.free_port()
    daemon = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all",
                               "--enable=receive-pack", "--base-path=%s" % served,
                               "--listen=127.0.0.1", "--port=%d" % port, str(served)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wl.wait_port(port, daemon)
        url = "git://127.0.0.1:%d/repo.git" % port
        script = textwrap.dedent('''
            set -e
            git clone -q "$1" clone
            cd clone
            echo "from $2" > change.txt
            git add change.txt
            git commit -qm "change from $2"
            git push -q origin main
            git fetch -q origin
            git log --format='%H %s' origin/main
            git status --porcelain
        ''')

        def setup(d):
            shutil.rmtree(served / "repo.git", ignore_errors=True)
            subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(served / "repo.git")],
                           check=True, env=env, capture_output=True)

        got = wl.workload("git daemon", tmp_path / "runs", ["sh", "-c", script, "sh", url, "x"],
                          setup=setup, env=GIT_ENV,
                          grants=["--net-allow", "127.0.0.1:%d" % port],
                          output=lambda r, d: (r.stdout, subprocess.run(
                              ["git", "--git-dir", str(served / "repo.git"), "log",
                               "--format=%H %s", "main"], capture_output=True, text=True,
                              env=env).stdout), skip=("index", "FETCH_HEAD", "ORIG_HEAD"))
        log, served_log = got["bare"][1]
        assert log.splitlines()[0].endswith("change from x") and log == served_log
    finally:
        daemon.terminate()
        daemon.wait()
