#!/usr/bin/env bash
# `make test-containers`: sandlock inside real containers (podman + runc).
#
# Builds a minimal image from packages at test time (busybox-static's
# /bin/busybox, the static build/sandlock, the probe helpers linked
# statically, /usr/bin/python3 with the modules a server uses), imports it with `podman import`, and runs
# tests/containers/inside.sh in it under four configurations:
#   default     podman's own default seccomp profile
#   docker      a Docker-like profile made here from the installed one:
#               ptrace, process_vm_readv/writev and pidfd_getfd allowed only
#               with CAP_SYS_PTRACE (EPERM otherwise), as Docker's and
#               Kubernetes' RuntimeDefault
#   user        --user 1000:1000
#   readonly    --read-only with a tmpfs /tmp
#   kube        the Kubernetes pod spec of docs/containers.md, played by
#               `podman kube play` (its image and command replaced by
#               these): non-root, read-only root, no capability,
#               RuntimeDefault, emptyDir volumes
# Skips (exit 0, with the reason) only when podman cannot start a
# container on this machine at all.  Leaves no image, container or file.
#
# Usage: tests/containers/run.sh [BUILD_DIR]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
tag="sandlock-ct-$$"
image="localhost/$tag:test"
work=$(mktemp -d /tmp/sandlock-ct.XXXXXX)

cleanup() {
	[ -f "$work/pod.yaml" ] && podman kube down "$work/pod.yaml" >/dev/null 2>&1
	podman rmi -f "$image" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

skip() {
	echo "SKIP test-containers: $*"
	exit 0
}

command -v podman >/dev/null || skip "podman is not installed (apt-get install podman runc)"
runtime=$(command -v runc || true)
[ -n "$runtime" ] || runtime=/usr/sbin/runc
[ -x "$runtime" ] || skip "runc is not installed"
[ -x /bin/busybox ] || { echo "test-containers: /bin/busybox missing (busybox-static)"; exit 1; }

# ---- the image: a rootfs tarball from packages ----
root="$work/root"
mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,home/user,work}
chmod 1777 "$root/tmp" "$root/work"
chown 1000:1000 "$root/home/user"
cp /bin/busybox "$root/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done
cp "$build/sandlock" "$root/bin/sandlock"
for h in contain netprobe dnsd; do
	cc -O2 -std=c11 -D_GNU_SOURCE -static -o "$root/bin/$h" "$repo/tests/c/helpers/$h.c" \
		-lpthread 2>/dev/null
done
# A static musl program: musl's resolver binds a UDP socket and sends each
# query with an address (the images people run: Alpine, static Go/Rust
# with musl).  Without musl-gcc (musl-tools) its checks say they skip.
if [ -x "$build/helpers/resolve-musl" ]; then
	cp "$build/helpers/resolve-musl" "$root/bin/resolve-musl"
fi
# Python, for a real Python server (http.server): the interpreter, the
# modules an HTTP server and client import (found by running one here),
# and the libraries of both, each at its own path.
copy_file() { mkdir -p "$root$(dirname "$1")" && cp -L "$1" "$root$1"; }
if [ -x /usr/bin/python3 ]; then
	{
		echo /usr/bin/python3
		/usr/bin/python3 -I - <<'EOF'
import http.server, sys, threading, urllib.request
srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=srv.handle_request).start()
urllib.request.urlopen("http://127.0.0.1:%d/" % srv.server_port).read()
srv.server_close()
for m in list(sys.modules.values()):
    if getattr(m, "__file__", "<").startswith("/"):
        print(m.__file__)
EOF
	} >"$work/py-files" 2>/dev/null
	while read -r f; do copy_file "$f"; done <"$work/py-files"
	grep -e /usr/bin/python3 -e '\.so$' "$work/py-files" | xargs -n 1 ldd 2>/dev/null |
		grep -o '/[^ ]*' | sort -u | while read -r f; do copy_file "$f"; done
	cp "$here/pysrv.py" "$root/pysrv.py"
fi
printf 'nameserver 127.0.0.1\n' >"$root/etc/resolv.conf"
cp "$here/inside.sh" "$root/inside.sh"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\n' >"$root/etc/group"
tar -C "$root" -cf "$work/rootfs.tar" .
# PATH: the pod spec's command names `sandlock` as any image would.
podman import --change "ENV PATH=/bin" "$work/rootfs.tar" "$image" >/dev/null

# ---- the Docker-like profile, from the installed one ----
python3 - "$work/docker-like.json" <<'EOF'
import json, sys
src = "/usr/share/containers/seccomp.json"
d = json.load(open(src))
ptrace = ["pidfd_getfd", "process_vm_readv", "process_vm_writev", "ptrace"]
for rule in d["syscalls"]:
    if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("includes") and not rule.get("args"):
        rule["names"] = [n for n in rule["names"] if n not in ptrace]
d["syscalls"].append({"names": ptrace, "action": "SCMP_ACT_ALLOW",
                      "includes": {"caps": ["CAP_SYS_PTRACE"]}, "excludes": {}})
d["syscalls"].append({"names": ptrace, "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                      "includes": {}, "excludes": {"caps": ["CAP_SYS_PTRACE"]}})
json.dump(d, open(sys.argv[1], "w"))
EOF

# Limits no higher than ours (runc must be able to set them), and low
# enough to be the "low RLIMIT_NOFILE" case.
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 1024 ] && nofile=1024
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
podman_run=(podman --cgroup-manager cgroupfs run --rm --runtime "$runtime" --network none
	--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

out=$("${podman_run[@]}" "$image" /bin/true 2>&1) ||
	skip "podman cannot start a container here: $(echo "$out" | tail -n1)"

status=0
run_config() {
	local name=$1
	shift
	echo "== $name"
	if "${podman_run[@]}" -e CT_CONFIG="$name" "$@" "$image" /bin/sh /inside.sh; then
		echo "== $name: passed"
	else
		echo "== $name: FAILED"
		status=1
	fi
}
run_config default
run_config docker --security-opt "seccomp=$work/docker-like.json"
run_config user --user 1000:1000
run_config readonly --read-only --tmpfs /tmp:rw,mode=1777 --tmpfs /work:rw,mode=1777

# ---- the documented pod spec, as `podman kube play` runs it ----
# The spec is taken from docs/containers.md, so the page shows what ran;
# only the image and the command (inside.sh instead of the user's tool)
# are replaced.  kube play has no --ulimit:
# the same limits come from a containers.conf of ours.
kube_config() {
	echo "== kube"
	python3 - "$repo/docs/containers.md" "$image" >"$work/pod.yaml" <<'EOF'
import re, sys
doc = open(sys.argv[1]).read()
spec = re.search(r"## Kubernetes.*?```yaml\n(.*?)```", doc, re.S).group(1)
spec = spec.replace("image: IMAGE", "image: " + sys.argv[2])
spec, n = re.subn(r"command: \[.*?\]",
                  'command: ["/bin/sh", "/inside.sh"]\n'
                  '      env: [{ name: CT_CONFIG, value: kube }]', spec, flags=re.S)
assert n == 1, "no command in the pod spec"
sys.stdout.write(spec)
EOF
	printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' \
		"$nofile" "$nofile" "$nproc" "$nproc" >"$work/containers.conf"
	local pod=(env CONTAINERS_CONF="$work/containers.conf" podman --cgroup-manager cgroupfs
		--runtime "$runtime")
	local name code
	name=$(sed -n 's/^  name: //p' "$work/pod.yaml" | head -n1)-$(sed -n 's/^    - name: //p' "$work/pod.yaml" | head -n1)
	if ! "${pod[@]}" kube play "$work/pod.yaml" >"$work/play.log" 2>&1; then
		cat "$work/play.log"
		echo "== kube: FAILED (kube play)"
		status=1
		return
	fi
	code=$("${pod[@]}" wait "$name")
	"${pod[@]}" logs "$name"
	"${pod[@]}" kube down "$work/pod.yaml" >/dev/null 2>&1
	rm -f "$work/pod.yaml"
	if [ "$code" = 0 ]; then
		echo "== kube: passed"
	else
		echo "== kube: FAILED (exit $code)"
		status=1
	fi
}
if command -v catatonit >/dev/null || [ -x /usr/libexec/podman/catatonit ]; then
	kube_config
else
	echo "test-containers: catatonit missing (apt-get install catatonit): kube play cannot make its pod"
	status=1
fi
[ $status -eq 0 ] && echo "test-containers: all configurations passed"
exit $status
