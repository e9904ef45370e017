#!/bin/sh
# Run inside the test image by tests/containers/run.sh (busybox sh).
# CT_CONFIG names the configuration: default, docker, user, readonly.
# Functional CLI checks must work; every hostile probe is first shown to
# work outside the sandbox (the control), then to be denied inside.
# Prints "ok NAME" or "FAIL NAME: why"; exits 1 if anything failed.

fails=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
# expect NAME WANT CMD...: CMD's stdout (last line) must be WANT
expect() {
	name=$1 want=$2
	shift 2
	got=$("$@" 2>/tmp/ct-err | tail -n 1)
	if [ "$got" = "$want" ]; then ok "$name"; else fail "$name" "got '$got', want '$want' ($(tail -n 2 /tmp/ct-err | tr '\n' ' '))"; fi
}
SL="sandlock run -r /bin -r /etc"
W=$(mktemp -d /work/ct.XXXXXX)
echo "config=$CT_CONFIG uid=$(id -u) nofile=$(ulimit -n)"

# ---------------- functional ----------------
expect echo hi $SL -- /bin/echo hi
expect exit-status 3 sh -c "$SL -- /bin/sh -c 'exit 3'; echo \$?"
expect write-tree data sh -c "$SL -w $W -- /bin/sh -c 'echo data > $W/f' && cat $W/f"
expect proc-listing yes $SL -r /proc -- /bin/sh -c 'ls /proc | grep -q "^[0-9]" && echo yes'
expect timeout 124 sh -c "$SL -t 0.5 -- /bin/sleep 10; echo \$?"
expect many-fds ok $SL -- /bin/sh -c 'ulimit -n 64 && /bin/true && echo ok'
mkdir -p "$W/cow/d" && echo a >"$W/cow/d/a"
expect cow-listing "a b" $SL -r /dev -w "$W/cow" --workdir "$W/cow" -C "$W/cow" -- \
	/bin/sh -c 'echo b > d/b && echo $(ls d)'
expect cow-committed b cat "$W/cow/d/b"
expect cow-abort gone sh -c "$SL -w $W/cow --workdir $W/cow -C $W/cow --on-exit abort -- \
	/bin/sh -c 'echo x > new'; [ -e $W/cow/new ] || echo gone"
$SL -r /dev -w "$W/cow" --workdir "$W/cow" -C "$W/cow" --max-disk 64K -- \
	/bin/sh -c 'head -c 200000 /dev/zero > big; echo status=$?' >/tmp/ct-out 2>&1
expect max-disk "status=1 capped" sh -c "echo \$(grep -o 'status=[0-9]*' /tmp/ct-out) \$([ \$(wc -c < $W/cow/big) -le 65536 ] && echo capped)"
# --no-randomize-memory needs a personality the default profiles refuse:
# either it works, or the run is refused up front saying why.
expect no-randomize ok sh -c "out=\$($SL --no-randomize-memory -r /proc -- /bin/cat /proc/self/personality 2>&1); case \$out in *0040000*|*'ADDR_NO_RANDOMIZE) is refused here'*) echo ok;; *) echo \$out;; esac"
expect check-runs yes sh -c 'sandlock check >/dev/null && echo yes'
expect check-json yes sh -c 'sandlock check --json | grep -q "\"listener\"" && echo yes'

# ---------------- hostile: files ----------------
echo secret >"$W/secret"
expect file-control secret cat "$W/secret"
expect file-read-denied denied sh -c "$SL -- /bin/cat $W/secret >/dev/null 2>&1 || echo denied"
expect file-write-denied denied sh -c "$SL -r $W -- /bin/sh -c 'echo x > $W/secret' 2>/dev/null || echo denied"
expect file-unchanged secret cat "$W/secret"

# ---------------- hostile: network (TCP on loopback) ----------------
port=$((20000 + $$ % 10000))
nc -l -p $port </dev/null >/dev/null 2>&1 &
sleep 0.3
expect tcp-control ok contain stream 2 0 connect $port
nc -l -p $port </dev/null >/dev/null 2>&1 &
ncpid=$!
sleep 0.3
expect tcp-denied errno=EACCES $SL -- /bin/contain stream 2 0 connect $port
expect tcp-allowed ok $SL --net-allow "127.0.0.1:$port" -- /bin/contain stream 2 0 connect $port
kill $ncpid 2>/dev/null

# ---------------- a server in the sandbox, reached from outside it ----------------
# Where pidfd_getfd is refused (docker), its bind and listen are performed
# by sandlock on a socket of its own, with the options busybox set on its
# socket (SO_REUSEADDR), installed in its place.
sport=$((port + 1))
mkdir -p "$W/www" && echo served >"$W/www/index.html"
httpd -f -p "127.0.0.1:$sport" -h "$W/www" &
hpid=$!
sleep 0.3
expect server-control served wget -q -O - "http://127.0.0.1:$sport/index.html"
kill $hpid; wait $hpid 2>/dev/null
# The rule kinds that have sandlock perform the bind: a granted port, a
# deny list, the port map (on a port no earlier server's TIME_WAIT holds:
# it binds a taken port elsewhere).
rport=$((port + 3))
for rule in "--net-allow-bind $sport" "--net-deny-bind 1-1023" "--port-remap --net-allow-bind $rport"; do
	p=$sport
	case $rule in --port-remap*) p=$rport ;; esac
	$SL -r "$W/www" $rule -- /bin/httpd -f -p "127.0.0.1:$p" -h "$W/www" &
	hpid=$!
	sleep 0.5
	expect "server-reached ($rule)" served wget -q -O - "http://127.0.0.1:$p/index.html"
	kill $hpid; wait $hpid 2>/dev/null
done
expect server-port-denied denied sh -c "$SL -r $W/www --net-allow-bind $((sport + 1)) -- \
	/bin/httpd -f -p 127.0.0.1:$sport -h $W/www >/dev/null 2>&1 || echo denied"

# A Python server (http.server, SO_REUSEADDR set before its bind), run
# twice on one port: the second bind goes past the TIME_WAIT the first
# one's closed connection left only with the option carried over to the
# socket sandlock binds where pidfd_getfd is refused.
fetch() { # URL: its body, retried while the server starts
	for i in $(seq 1 50); do
		wget -q -O - "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
if [ -x /usr/bin/python3 ]; then
	pport=$((port + 5))
	/usr/bin/python3 -I /pysrv.py $pport >/dev/null &
	expect py-server-control "python served" fetch "http://127.0.0.1:$pport/"
	wait
	for round in 1 2; do
		$SL -r /usr -r /lib -r /lib64 -r /pysrv.py --net-allow-bind $pport -- \
			/usr/bin/python3 -I /pysrv.py $pport >/dev/null &
		expect "py-server-reached-$round" "python served" fetch "http://127.0.0.1:$pport/"
		wait
	done
else
	echo "skip py-server: no /usr/bin/python3 on the host"
fi

# ---------------- hostile: unix sockets ----------------
mkdir -p "$W/sock"
netprobe unix-listen "$W/sock/s" 30 >/dev/null &
lpid=$!
sleep 0.3
expect unix-control ok netprobe unix-connect "$W/sock/s"
# Outside every granted tree: never reached; inside one: reached.  (Where
# pidfd_getfd is refused, the Docker-like profile, the connect is made on
# a socket like the caller's that replaces it, and `sandlock check` says so.)
expect unix-denied errno=EACCES $SL -- /bin/netprobe unix-connect "$W/sock/s"
expect unix-granted ok $SL -w "$W/sock" -- /bin/netprobe unix-connect "$W/sock/s"
if [ "$CT_CONFIG" = docker ]; then
	expect check-explains yes sh -c 'sandlock check | grep -q "pidfd_getfd is refused" && echo yes'
	expect check-json-explains yes sh -c 'sandlock check --json | grep -q "\"listener\":\"SCM_RIGHTS" && echo yes'
fi
kill $lpid 2>/dev/null

# ---------------- name lookups: musl's resolver ----------------
# It binds an unconnected UDP socket and sends each query with an address
# (sendto): where pidfd_getfd is refused (docker), the bind is performed on
# a socket sandlock makes and keeps in the program's place, the sends on
# that one, each destination checked.  The server needs port 53 (root).
if [ ! -x /bin/resolve-musl ]; then
	echo "skip musl-resolver: no static musl program in the image (apt-get install musl-tools)"
elif [ "$(id -u)" != 0 ]; then
	echo "skip musl-resolver: the test's DNS server needs port 53 (root)"
elif ! grep -q '^nameserver 127.0.0.1$' /etc/resolv.conf; then
	echo "skip musl-resolver: the runtime replaced /etc/resolv.conf"
else
	dnsd 53 10.9.8.7 60 >/tmp/ct-dnsd &
	dpid=$!
	sleep 0.3
	expect musl-resolver-control 10.9.8.7 resolve-musl fake.test
	expect musl-resolver 10.9.8.7 $SL --net-allow udp://127.0.0.1:53 -- /bin/resolve-musl fake.test
	expect musl-resolver-other-server-denied denied sh -c \
		"$SL --net-allow udp://127.0.0.2:53 -- /bin/resolve-musl fake.test >/dev/null 2>&1 || echo denied"
	kill $dpid 2>/dev/null
fi

# ---------------- hostile: signals ----------------
sleep 60 &
victim=$!
expect signal-control yes sh -c "kill -0 $victim && echo yes"
expect signal-denied denied sh -c "$SL -- /bin/kill -TERM $victim 2>/dev/null || echo denied"
expect signal-victim-alive yes sh -c "kill -0 $victim && echo yes"
kill $victim

# ---------------- hostile: limits ----------------
expect procs-control 8 sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; jobs -p | wc -l'
wait
expect procs-limited limited sh -c "$SL -P 4 -- /bin/sh -c 'for i in 1 2 3 4 5 6 7 8; do /bin/sleep 1 & done; wait' 2>&1 | grep -q -i 'resource\|fork\|again' && echo limited"
expect memory-limited limited sh -c "$SL -r /dev -m 32M -- /bin/sh -c 'head -c 100000000 /dev/zero | tr -d x | sort >/dev/null' >/dev/null 2>&1 || echo limited"

rm -rf "$W"
echo "$CT_CONFIG: $fails failed"
[ $fails -eq 0 ]
