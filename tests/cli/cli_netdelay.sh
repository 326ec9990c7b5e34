#!/usr/bin/env bash
# cli_netdelay.sh - the delay line that `scripts/rados-cluster.sh start DIR
# --rtt-ms=R` puts between the host and a cluster's network namespace
# (tools/netdelay/netdelay.c): a TCP echo server in a namespace of its own,
# reached through mrtx-netdelay holding each packet D ms each way.  Checks
# what the line is for, whatever the machine's speed: no round trip is
# shorter than 2 x D (a lower bound: a late packet only lengthens one),
# every byte comes back in order, the line counts what it forwarded, and
# the devices go with the process.  Bad arguments are refused.
#
# usage: cli_netdelay.sh PATH-TO-mrtx-netdelay   (run by ctest; needs root,
#        ip(8) and /dev/net/tun, else it says why and exits 77: skipped)
set -u
NAME=netdelay
. "$(dirname "$0")/../support/clilib.sh"
ND=$MRTX

expect_rc 2 "no arguments" "$ND"
expect_err 2 "microseconds" "a delay that is not a number" "$ND" a b 1x
expect_err 2 "microseconds" "a delay past 10 s" "$ND" a b 10000001

if [ "$(id -u)" != 0 ] || [ ! -w /dev/net/tun ] || ! command -v ip >/dev/null; then
	echo "skipped: needs root, ip(8) and /dev/net/tun"
	exit 77
fi
NS=mrtx-cli-netdelay-$$
if ! ip netns add "$NS" 2>"$TMP/err"; then
	echo "skipped: cannot create a network namespace: $(cat "$TMP/err")"
	exit 77
fi
DA=mxt$$h DB=mxt$$c
# (a subnet of this run's own: two runs at once must not route to each other)
NET=10.79.$(( $$ % 250 + 1 ))
if [ -n "$(ip -o addr show to "$NET.0/24" 2>/dev/null)" ]; then
	echo "skipped: addresses $NET.0/24 are in use on this host"
	ip netns del "$NS"
	exit 77
fi
PID= SRV=
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

D_MS=10
"$ND" "$DA" "$DB" $((D_MS * 1000)) "$TMP/pid" >"$TMP/nd.out" 2>&1 &
PID=$!
for _ in $(seq 100); do [ -s "$TMP/pid" ] && break; sleep 0.05; done
[ "$(cat "$TMP/pid" 2>/dev/null)" = "$PID" ] && ok || bad "the ready file holds the line's pid"
expect_err 1 "cannot create TUN device $DA" "a device that exists is refused" \
	timeout 5 "$ND" "$DA" x 0

ip link set "$DB" netns "$NS" &&
ip addr add "$NET.2" peer "$NET.1" dev "$DA" && ip link set "$DA" up &&
ip netns exec "$NS" ip link set lo up &&
ip netns exec "$NS" ip addr add "$NET.1" peer "$NET.2" dev "$DB" &&
ip netns exec "$NS" ip link set "$DB" up && ok || bad "set up the link"

cat >"$TMP/echo.py" <<'EOF'
import socket, sys, time
if sys.argv[1] == "serve":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.settimeout(30)
    s.bind((sys.argv[3], 7707)); s.listen(1)
    open(sys.argv[2], "w").write("up\n")
    c, _ = s.accept()
    c.settimeout(30)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(4096)
        if not d:
            break
        c.sendall(d)
else:
    floor = float(sys.argv[2])
    c = socket.create_connection((sys.argv[3], 7707), timeout=30)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    short = []
    for i in range(8):
        msg = (b"%d-" % i) * 500
        t = time.monotonic()
        c.sendall(msg)
        got = b""
        while len(got) < len(msg):
            d = c.recv(65536)
            if not d:
                sys.exit("connection closed")
            got += d
        ms = (time.monotonic() - t) * 1000
        if got != msg:
            sys.exit("round trip %d came back changed" % i)
        if ms < floor:
            short.append(ms)
    if short:
        sys.exit("round trips under %.1f ms: %s" % (floor, short))
    print("ok")
EOF
ip netns exec "$NS" "$PY" "$TMP/echo.py" serve "$TMP/up" "$NET.1" &
SRV=$!
for _ in $(seq 100); do [ -s "$TMP/up" ] && break; sleep 0.05; done
expect_out ok "every round trip at least 2 x $D_MS ms, bytes unchanged" \
	timeout 60 "$PY" "$TMP/echo.py" ask $((2 * D_MS)) "$NET.1"
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null
SRV=

kill -TERM "$PID"
wait "$PID"
rc=$?
PID=
[ "$rc" = 0 ] && ok || bad "the line exits 0 on SIGTERM (got $rc)"
grep -qE "^mrtx-netdelay: $DA->$DB [1-9][0-9]* sent [0-9]+ dropped, $DB->$DA [1-9][0-9]* sent" \
	"$TMP/nd.out" && ok || bad "the line reports packets each way: $(cat "$TMP/nd.out")"
ip link show "$DA" >/dev/null 2>&1 && bad "device $DA outlived the line" || ok
ip netns exec "$NS" ip link show "$DB" >/dev/null 2>&1 && bad "device $DB outlived the line" || ok
finish
