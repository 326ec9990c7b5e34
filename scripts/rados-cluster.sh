#!/usr/bin/env bash
# rados-cluster.sh - a throw-away Ceph cluster on 127.0.0.1 for mrtx's RADOS backend.
#
#   rados-cluster.sh start DIR [--cephx] [--delay-ms=R | --rtt-ms=R]
#                                          1 mon + 3 OSDs, pool `mrtx` (size 3, min_size 2,
#                                          8 PGs, autoscale off); returns when every PG is
#                                          writable; writes DIR/ceph.conf (and DIR/keyring).
#                                          --delay-ms=R: every message between a client and
#                                          an OSD, or between two OSDs, is held 0..R ms at
#                                          random on arrival (Ceph's ms_inject_delay_*), a
#                                          mean of R/2 each way: a network whose round trip
#                                          is R ms longer than loopback's (this kernel has no
#                                          netem; see BENCH.md)
#                                          --rtt-ms=R: the daemons run in a network namespace
#                                          of their own (mrtx-net-MON_PORT, address
#                                          10.77.X.1), reached from the host through a delay
#                                          line (tools/netdelay/netdelay.c, compiled into
#                                          DIR/run) that holds every packet R/2 ms each way:
#                                          every client round trip is R ms longer, the OSDs'
#                                          own traffic is not delayed; DIR/ceph.conf names
#                                          that address.  Needs root and /dev/net/tun.
#   rados-cluster.sh stop DIR              stop exactly the daemons started in DIR
#   rados-cluster.sh status DIR            daemons, pids, liveness (exit 1 if one is dead)
#   rados-cluster.sh ready DIR [SECONDS]   wait until every PG of the pool is writable
#   rados-cluster.sh kill-osd N[,M..] DIR     SIGKILL osd.N (and osd.M ...)
#   rados-cluster.sh min-size N DIR        set the pool's min_size (1..3); returns once the
#                                          mon has committed it
#   rados-cluster.sh restart-osd N[,M..] DIR  start them again, then wait until every PG is
#                                          writable (restart all the OSDs you killed in one
#                                          call: with two of three down, one back alone may
#                                          not make every PG writable)
#   rados-cluster.sh settled DIR [SECONDS] wait until no PG is remapped (the osdmap holds no
#                                          pg_temp: a restarted memstore OSD is backfilled,
#                                          and the remap's end makes its PGs peer again, a
#                                          pause writes would otherwise meet later), then
#                                          until every PG is writable
#
# Everything (conf, keyrings, mon store, OSD data, logs, pid files, sockets) lives under DIR;
# nothing listens outside 127.0.0.1 (or, with --rtt-ms, outside the cluster's own network
# namespace); no ceph-mgr.  Daemons are found only through the pid
# files under DIR/run, and a pid is signalled only if its command line names DIR/ceph.conf
# (a stale pid file never hits another process).
#
# Environment:
#   MON_PORT (41789)  PORT_MIN/PORT_MAX (41800/41999)  port of the mon, range of the OSDs
#   OBJECTSTORE       memstore (default; data lives in RAM, a killed OSD restarts empty and
#                     is backfilled) or bluestore (a sparse 2 GiB file per OSD)
#   NOSD (3)  POOL (mrtx)  PG (8)
#   READY_TIMEOUT (90)     seconds start/restart-osd wait for every PG to be writable
#   CEPH_TIMEOUT (20)      bound on every ceph/rados CLI call
#   STOP_TIMEOUT (15)      seconds between SIGTERM and SIGKILL in stop
#   NETDELAY               a built mrtx-netdelay to use for --rtt-ms instead of compiling one
#
# Every ceph/rados CLI call and every daemon start (whose parent waits for the
# daemon's init, which talks to the mon) is wrapped in `timeout`, so that a dead
# monitor never hangs this script.  A start that fails, or is interrupted, stops
# whatever it had started.
set -euo pipefail

usage() {
	echo "usage: $0 start DIR [--cephx] [--delay-ms=R | --rtt-ms=R] | stop DIR | status DIR | ready DIR [SECONDS]" \
	     "| settled DIR [SECONDS] | kill-osd N[,M..] DIR | restart-osd N[,M..] DIR" \
	     "| min-size N DIR" >&2
	exit 2
}

CMD=${1:-}; [ -n "$CMD" ] || usage; shift
OSD_ARG=
case $CMD in
min-size) OSD_ARG=${1:-}; [ -n "$OSD_ARG" ] || usage; shift
	[[ $OSD_ARG =~ ^[1-3]$ ]] || { echo "$0: min_size must be 1, 2 or 3: $OSD_ARG" >&2; exit 2; } ;;
kill-osd|restart-osd) OSD_ARG=${1:-}; [ -n "$OSD_ARG" ] || usage; shift
	[[ $OSD_ARG =~ ^[0-9]+(,[0-9]+)*$ ]] ||
		{ echo "$0: osd ids must be numbers separated by commas: $OSD_ARG" >&2; exit 2; } ;;
start|stop|status|ready|settled) ;;
*) usage ;;
esac
DIR=${1:-}; [ -n "$DIR" ] || usage; shift
CEPHX=0
DELAY_MS=0
RTT_MS=0
READY_ARG=
for a in "$@"; do
	case $a in
	--cephx) [ "$CMD" = start ] || usage; CEPHX=1 ;;
	--delay-ms=*) [ "$CMD" = start ] || usage; DELAY_MS=${a#--delay-ms=}
		[[ $DELAY_MS =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
			{ echo "$0: --delay-ms takes milliseconds (a number): $DELAY_MS" >&2; exit 2; } ;;
	--rtt-ms=*) [ "$CMD" = start ] || usage; RTT_MS=${a#--rtt-ms=}
		[[ $RTT_MS =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v r="$RTT_MS" 'BEGIN { exit !(r > 0 && r <= 10000) }' ||
			{ echo "$0: --rtt-ms takes milliseconds, above 0 and at most 10000: $RTT_MS" >&2; exit 2; } ;;
	*) { [ "$CMD" = ready ] || [ "$CMD" = settled ]; } && [[ $a =~ ^[0-9]+$ ]] || usage; READY_ARG=$a ;;
	esac
done

MON_PORT=${MON_PORT:-41789}
PORT_MIN=${PORT_MIN:-41800}
PORT_MAX=${PORT_MAX:-41999}
OBJECTSTORE=${OBJECTSTORE:-memstore}
NOSD=${NOSD:-3}
POOL=${POOL:-mrtx}
PG=${PG:-8}
READY_TIMEOUT=${READY_TIMEOUT:-90}
CEPH_TIMEOUT=${CEPH_TIMEOUT:-20}
STOP_TIMEOUT=${STOP_TIMEOUT:-15}
if [ "$DELAY_MS" != 0 ] && [ "$RTT_MS" != 0 ]; then
	echo "$0: --delay-ms and --rtt-ms are two ways to slow the network: give one" >&2; exit 2
fi
case $OBJECTSTORE in memstore|bluestore) ;; *) echo "$0: OBJECTSTORE must be memstore or bluestore" >&2; exit 2 ;; esac

if [ "$CMD" = start ]; then mkdir -p "$DIR"; fi
[ -d "$DIR" ] || { echo "$0: $CMD: no such directory: $DIR" >&2; exit 1; }
DIR=$(cd "$DIR" && pwd)
CONF=$DIR/ceph.conf
RUN=$DIR/run
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# where the daemons listen, and the prefix that runs a command beside them
# (set from DIR/net when the cluster was started with --rtt-ms)
ADDR=127.0.0.1
NSX=()
if [ -s "$DIR/net" ]; then
	read -r NETNS ADDR <"$DIR/net"
	NSX=(ip netns exec "$NETNS")
fi

log() { printf 'rados-cluster: %s\n' "$*" >&2; }
die() { log "$CMD: $*"; exit 1; }
now_ms() { date +%s%3N; }
ceph_() { timeout "$CEPH_TIMEOUT" "${NSX[@]}" ceph -c "$CONF" --connect-timeout 10 "$@"; }

# ---------------------------------------------------------------- daemons by pid file

# pid of daemon NAME (mon.a, osd.0) if it runs with our conf, else nothing.
daemon_pid() {
	local f=$RUN/$1.pid p
	[ -s "$f" ] || return 0
	p=$(<"$f")
	[[ $p =~ ^[0-9]+$ ]] || return 0
	[ -r "/proc/$p/cmdline" ] || return 0
	tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- "$CONF" && echo "$p" || true
}

# Names of the daemons that have a pid file in DIR/run.
daemon_names() {
	local f
	for f in "$RUN"/*.pid; do [ -e "$f" ] && basename "$f" .pid; done
	return 0
}

running_any() {
	local n
	for n in $(daemon_names); do [ -n "$(daemon_pid "$n")" ] && return 0; done
	return 1
}

# SIGTERM the given pids, SIGKILL whichever is still there after STOP_TIMEOUT.
terminate() {
	local p deadline
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	deadline=$(( $(date +%s) + STOP_TIMEOUT ))
	for p in "$@"; do
		while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
		if kill -0 "$p" 2>/dev/null; then log "pid $p ignored SIGTERM for ${STOP_TIMEOUT}s: SIGKILL"; kill -KILL "$p" 2>/dev/null || true; fi
	done
}

# OSDs first: an OSD stopping tells the mon and waits for it (osd_mon_shutdown_timeout).
stop_all() {
	local n p pids=() names=() mon=()
	for n in $(daemon_names); do
		p=$(daemon_pid "$n")
		[ -n "$p" ] || continue
		names+=("$n")
		if [[ $n == mon.* ]]; then mon+=("$p"); else pids+=("$p"); fi
	done
	terminate "${pids[@]}"
	terminate "${mon[@]}"
	pids+=("${mon[@]}")
	rm -f "$RUN"/*.pid
	log "stopped ${#pids[@]} daemon(s)${names[*]:+: ${names[*]}}"
	net_down
}

# ---------------------------------------------------------------- --rtt-ms

# The cluster's network namespace and the delay line to it:
#
#   host: client --> mxdPORTh 10.77.X.2 ==[mrtx-netdelay: R/2 ms each way]==
#         mxdPORTc 10.77.X.1 (namespace mrtx-net-PORT): mon, OSDs
#
# Both TUN devices are made by mrtx-netdelay in the host's namespace; one is
# then moved into the cluster's (its file descriptor stays attached), and
# both go with the process.  DIR/net ("NAMESPACE ADDRESS") is written once
# this run has made the namespace, so that a stop, or the cleanup of a failed
# start, removes only what this DIR made.
NDPID=   # the delay line this run started (before its pid file exists)

# Is pid $1 this DIR's delay line?  (Its ready file, DIR/netdelay.pid, is
# in its command line.)
ours_line() {
	[[ ${1:-} =~ ^[0-9]+$ ]] && [ -r "/proc/$1/cmdline" ] &&
		tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF -- "$DIR/netdelay.pid"
}

# Does a process that is not one of this DIR's daemons run in namespace $1?
foreign_in_ns() {
	local q
	for q in $(ip netns pids "$1" 2>/dev/null); do
		tr '\0' ' ' 2>/dev/null <"/proc/$q/cmdline" | grep -qF -- "$CONF" || return 0
	done
	return 1
}

net_up() {
	local oct=$(( MON_PORT % 251 + 1 )) bin us i host deva devb rt list
	NETNS=mrtx-net-$MON_PORT
	ADDR=10.77.$oct.1 host=10.77.$oct.2 deva=mxd${MON_PORT}h devb=mxd${MON_PORT}c
	[ -w /dev/net/tun ] || die "--rtt-ms needs /dev/net/tun, writable (root)"
	command -v ip >/dev/null || die "--rtt-ms needs ip(8) (Debian's iproute2)"
	list=$(ip netns list 2>/dev/null || true)
	! grep -qw -- "$NETNS" <<<"$list" ||
		die "network namespace $NETNS exists (a cluster on mon port $MON_PORT, or one not stopped)"
	[ -z "$(ip -o addr show to "10.77.$oct.0/24" 2>/dev/null)" ] ||
		die "addresses 10.77.$oct.0/24 are in use (a cluster whose mon port leaves the same remainder by 251?)"
	bin=${NETDELAY:-$RUN/mrtx-netdelay}
	if [ -z "${NETDELAY:-}" ]; then
		cc -std=c11 -O2 -Wall -Wextra -o "$bin" "$SRC/tools/netdelay/netdelay.c" \
			2>"$DIR/log/netdelay-cc.log" || die "cannot compile the delay line: $DIR/log/netdelay-cc.log"
	fi
	us=$(awk -v r="$RTT_MS" 'BEGIN { printf "%d", r * 500 }')
	rm -f "$DIR/netdelay.pid"
	# (real-time priority where allowed: a delay line that waits for a core
	# behind the OSDs would add their scheduling to every round trip; a
	# session of its own, as the daemons have, so that a ^C to the caller of
	# start leaves it running with them)
	rt=()
	if chrt -f 50 true 2>/dev/null; then rt=(chrt -f 50); fi
	setsid "${rt[@]}" "$bin" "$deva" "$devb" "$us" "$DIR/netdelay.pid" >"$DIR/log/netdelay.log" 2>&1 &
	NDPID=$!
	for i in $(seq 50); do
		[ -s "$DIR/netdelay.pid" ] || ! kill -0 "$NDPID" 2>/dev/null && break
		sleep 0.1
	done
	[ -s "$DIR/netdelay.pid" ] || die "the delay line did not start: $DIR/log/netdelay.log"
	ip netns add "$NETNS" || die "cannot create network namespace $NETNS"
	echo "$NETNS $ADDR" >"$DIR/net"
	ip link set "$devb" netns "$NETNS" &&
	ip addr add "$host" peer "$ADDR" dev "$deva" && ip link set "$deva" up &&
	ip netns exec "$NETNS" ip link set lo up &&
	ip netns exec "$NETNS" ip addr add "$ADDR" peer "$host" dev "$devb" &&
	ip netns exec "$NETNS" ip link set "$devb" up || die "cannot set up the link to $NETNS"
	NSX=(ip netns exec "$NETNS")
	log "namespace $NETNS at $ADDR, behind a delay line of ${RTT_MS} ms a round trip (pid $(<"$DIR/netdelay.pid"))"
}

# Stop this DIR's delay line and remove the namespace it made.
net_down() {
	local ns a p
	p=$(cat "$DIR/netdelay.pid" 2>/dev/null || true)
	[ -n "$p" ] || p=$NDPID
	if ours_line "$p"; then
		terminate "$p"
		log "delay line stopped: $(tail -1 "$DIR/log/netdelay.log" 2>/dev/null)"
	fi
	if [ -s "$DIR/net" ]; then
		read -r ns a <"$DIR/net"
		if foreign_in_ns "$ns"; then
			log "namespace $ns left alone: processes of another cluster run in it"
		else
			ip netns del "$ns" 2>/dev/null || true
		fi
	fi
	rm -f "$DIR/net" "$DIR/netdelay.pid"
	NSX=() ADDR=127.0.0.1 NETNS= NDPID=
}

# ---------------------------------------------------------------- configuration

write_conf() {
	local fsid=$1 auth=none keyring_line=
	if [ "$CEPHX" = 1 ]; then auth=cephx; keyring_line="keyring = $DIR/keyring"; fi
	cat >"$CONF" <<EOF
# written by mrtx scripts/rados-cluster.sh
[global]
fsid = $fsid
mon_host = v2:$ADDR:$MON_PORT
public_addr = $ADDR
cluster_addr = $ADDR
ms_bind_ipv4 = true
ms_bind_ipv6 = false
ms_bind_msgr1 = false
ms_bind_port_min = $PORT_MIN
ms_bind_port_max = $PORT_MAX
auth_cluster_required = $auth
auth_service_required = $auth
auth_client_required = $auth
auth_allow_insecure_global_id_reclaim = false
$keyring_line
run_dir = $RUN
crash_dir = $DIR/crash
exporter_sock_dir = $RUN
log_to_stderr = false
err_to_stderr = true
log_max_recent = 1000
# one host: replicate across OSDs, and let one OSD report a dead peer
osd_crush_chooseleaf_type = 0
mon_osd_reporter_subtree_level = osd
mon_osd_min_down_reporters = 1
osd_pool_default_size = 3
osd_pool_default_min_size = 2
osd_pool_default_pg_num = $PG
osd_pool_default_pgp_num = $PG
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_delete = true
mon_warn_on_pool_no_app = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
mon_warn_on_too_few_osds = false
mon_data_avail_warn = 2
mon_data_avail_crit = 1
# fast failure detection for tests (defaults 6 s / 20 s)
osd_heartbeat_interval = 1
osd_heartbeat_grace = 5
mon_osd_adjust_heartbeat_grace = false
mon_osd_adjust_down_out_interval = false

[mon]
mon_data = $DIR/mon/\$name
# commit map changes (pool, OSD ids, OSD boot, peering) after 0.1 s, not 1 s
paxos_propose_interval = 0.1
# daemons only: clients (tests, several at once) get no log file or admin socket
admin_socket = $RUN/\$name.asok
pid_file = $RUN/\$name.pid
log_file = $DIR/log/\$name.log
mon_cluster_log_file = $DIR/log/cluster.log
keyring = \$mon_data/keyring

[osd]
osd_data = $DIR/osd/\$id
# daemons only: clients (tests, several at once) get no log file or admin socket
admin_socket = $RUN/\$name.asok
pid_file = $RUN/\$name.pid
log_file = $DIR/log/\$name.log
keyring = \$osd_data/keyring
osd_objectstore = $OBJECTSTORE
memstore_device_bytes = 1073741824
bluestore_block_size = 2147483648
bluestore_block_create = true
bluestore_fsck_on_mount = false
bluestore_cache_size = 67108864
osd_memory_target = 536870912
osd_op_num_shards = 2
osd_op_num_threads_per_shard = 1
# a killed memstore OSD comes back empty and is backfilled: without the
# pauses meant for disks (0.1 s an op on an hdd), in seconds, not minutes
osd_recovery_sleep = 0
osd_recovery_sleep_hdd = 0
osd_recovery_sleep_ssd = 0
osd_recovery_sleep_hybrid = 0
osd_max_backfills = 8
osd_recovery_max_active = 8
# the lua object class (blind-write predicates) is not in the default lists
osd_class_load_list = *
osd_class_default_list = *
EOF
	if [ "$DELAY_MS" != 0 ]; then
		local max
		max=$(awk -v r="$DELAY_MS" 'BEGIN { printf "%.6f", r / 1000 }')
		cat >>"$CONF" <<EOF
# --delay-ms=$DELAY_MS: each message from a client or another OSD is held 0..R ms
# at random on arrival (mean R/2), and each reply at the client likewise
ms_inject_delay_type = client osd
ms_inject_delay_probability = 1
ms_inject_delay_max = $max

[client]
ms_inject_delay_type = osd
ms_inject_delay_probability = 1
ms_inject_delay_max = $max
EOF
	fi
}

# Keyrings for cephx: mon., client.admin, osd.N (each in its data dir), client.mrtx.
# All go into the mon's initial keyring, so the mon knows them from mkfs on.
make_keyrings() {
	local i k=$DIR/mon-bootstrap.keyring
	ceph-authtool --create-keyring "$k" --gen-key -n mon. --cap mon 'allow *' >/dev/null
	ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n client.admin \
		--cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
	ceph-authtool "$DIR/keyring" --gen-key -n client.mrtx \
		--cap mon 'allow r' --cap osd "allow rwx pool=$POOL" >/dev/null
	ceph-authtool "$k" --import-keyring "$DIR/keyring" >/dev/null
	for i in $(seq 0 $((NOSD - 1))); do
		mkdir -p "$DIR/osd/$i"
		ceph-authtool --create-keyring "$DIR/osd/$i/keyring" --gen-key -n "osd.$i" \
			--cap mon 'allow profile osd' --cap osd 'allow *' --cap mgr 'allow profile osd' >/dev/null
		ceph-authtool "$k" --import-keyring "$DIR/osd/$i/keyring" >/dev/null
	done
	chmod 600 "$DIR/keyring" "$k"
}

# ---------------------------------------------------------------- readiness

# One object name per PG of the pool.  An object's PG depends only on its name's hash
# and pg_num, so the mon maps candidate names once and the first name seen for each
# PG is kept in DIR/pg-probe.names.  start asks in its one bootstrap CLI session
# (probe_map_cmds, then probe_names_from on its output); later calls ask again only
# if the file is missing.

# Names FROM..TO (each `osd map` costs ~45 ms of the python CLI; for 8 PGs the
# first 18 names cover every PG, so start asks for 3*PG and asks more only if needed).
probe_map_cmds() {
	local i
	for i in $(seq "$1" "$2"); do echo "osd map $POOL pgprobe.$i"; done
}

probe_names_from() {  # CLI output on stdin (appended to DIR/pg-probe.map)
	local f=$DIR/pg-probe.names
	cat >>"$DIR/pg-probe.map"
	sed -n "s/.*object '\(pgprobe\.[0-9]*\)' -> pg [0-9a-f.]* (\([0-9a-f.]*\)).*/\2 \1/p" \
		"$DIR/pg-probe.map" | awk '!seen[$1]++ { print $2 }' >"$f.tmp" || true
	if [ "$(wc -l <"$f.tmp")" -ne "$PG" ]; then
		rm -f "$f.tmp"; return 1
	fi
	mv "$f.tmp" "$f"
}

probe_names() {
	if [ ! -s "$DIR/pg-probe.names" ]; then
		rm -f "$DIR/pg-probe.map"
		probe_map_cmds 0 $((PG * 16)) | ceph_ 2>/dev/null | probe_names_from || {
			log "could not find one object name for each of the $PG PGs"; return 1; }
	fi
	cat "$DIR/pg-probe.names"
}

# Until a write to an object of every PG succeeds (all PGs active), at most $1 seconds.
wait_ready() {
	local limit=$1 t0 deadline names n ok p pids
	t0=$(now_ms); deadline=$(( $(date +%s) + limit ))
	names=$(probe_names) || return 1
	while :; do
		pids=()
		for n in $names; do
			echo ready | timeout 6 "${NSX[@]}" rados -c "$CONF" --rados-osd-op-timeout 3 \
				--rados-mon-op-timeout 3 -p "$POOL" put "$n" - 2>/dev/null &
			pids+=($!)
		done
		ok=1
		for p in "${pids[@]}"; do wait "$p" || ok=0; done
		if [ "$ok" = 1 ]; then
			log "all $PG PGs of pool $POOL writable (waited $(( $(now_ms) - t0 )) ms)"
			return 0
		fi
		[ "$(date +%s)" -lt "$deadline" ] || { log "pool $POOL not writable after ${limit}s"; return 1; }
		sleep 0.2
	done
}

# ---------------------------------------------------------------- commands

START_OK=0
START_JOBS=()   # background OSD mkfs+start jobs: each bounded by timeouts
start_cleanup() {
	local p
	if [ "$START_OK" != 1 ]; then
		log "start failed: stopping what it started (logs in $DIR/log)"
		# an interrupted start may leave OSD jobs running: let them end (each
		# is bounded) so that no daemon appears after the stop
		for p in "${START_JOBS[@]}"; do wait "$p" 2>/dev/null || true; done
		stop_all || true
	fi
}

do_start() {
	local t0 fsid i p uuids=() mkfs_key=()
	if [ -f "$CONF" ] && running_any; then
		die "a cluster is already running in $DIR (stop it first)"
	fi
	net_down
	rm -rf "$DIR"/{mon,osd,run,log,crash,monmap,ceph.conf,keyring,mon-bootstrap.keyring,pg-probe.names,pg-probe.map}
	mkdir -p "$DIR"/{mon/ceph-a,run,log,crash}
	trap start_cleanup EXIT
	trap 'exit 1' INT TERM HUP
	t0=$(now_ms)
	if [ "$RTT_MS" != 0 ]; then net_up; fi
	fsid=$(cat /proc/sys/kernel/random/uuid)
	write_conf "$fsid"
	if [ "$CEPHX" = 1 ]; then
		make_keyrings
		mkfs_key=(--keyring "$DIR/mon-bootstrap.keyring")
	fi
	monmaptool --create --fsid "$fsid" --addv a "[v2:$ADDR:$MON_PORT]" "$DIR/monmap" >/dev/null
	timeout "$CEPH_TIMEOUT" "${NSX[@]}" ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" "${mkfs_key[@]}" \
		>"$DIR/log/mon-mkfs.log" 2>&1 || die "mon mkfs failed: $DIR/log/mon-mkfs.log"
	timeout "$CEPH_TIMEOUT" "${NSX[@]}" ceph-mon -c "$CONF" -i a 2>>"$DIR/log/mon-mkfs.log" || die "ceph-mon failed: $DIR/log/mon.a.log"
	[ -n "$(daemon_pid mon.a)" ] || die "ceph-mon exited (port $MON_PORT taken?): $DIR/log/mon.a.log"
	log "mon.a pid $(daemon_pid mon.a) on $ADDR:$MON_PORT ($(( $(now_ms) - t0 )) ms)"
	for i in $(seq 0 $((NOSD - 1))); do uuids+=("$(cat /proc/sys/kernel/random/uuid)"); done
	# OSD mkfs (it only fetches the monmap) runs beside the bootstrap session; an
	# OSD starts once both are done (it needs its id from `osd new`).
	for i in $(seq 0 $((NOSD - 1))); do
		mkdir -p "$DIR/osd/$i"
		timeout "$CEPH_TIMEOUT" "${NSX[@]}" ceph-osd -c "$CONF" -i "$i" --mkfs --osd-uuid "${uuids[$i]}" \
			>"$DIR/log/osd-start.$i.log" 2>&1 &
		START_JOBS+=($!)
	done
	# The pool, the OSD ids and the PG probe names need only the mon: one CLI
	# session (a python start-up costs 0.5-2 s on a loaded machine).  size 3,
	# min_size 2 and autoscale off come from the osd_pool_default_* above (each
	# `osd pool set` would cost a map commit); checked here.
	{
		echo "osd pool create $POOL $PG $PG replicated"
		for i in $(seq 0 $((NOSD - 1))); do echo "osd new ${uuids[$i]} $i"; done
		echo "osd pool get $POOL size"
		echo "osd pool get $POOL min_size"
		echo "osd pool get $POOL pg_autoscale_mode"
		probe_map_cmds 0 $((PG * 3 - 1))
	} | ceph_ >"$DIR/log/bootstrap.out" 2>&1 || die "mon commands failed: $DIR/log/bootstrap.out"
	if grep -qi "error" "$DIR/log/bootstrap.out" || ! grep -qx "size: 3" "$DIR/log/bootstrap.out" ||
	   ! grep -qx "min_size: 2" "$DIR/log/bootstrap.out" ||
	   ! grep -qx "pg_autoscale_mode: off" "$DIR/log/bootstrap.out"; then
		die "mon commands failed (or pool $POOL is not size 3 / min_size 2 / autoscale off): $DIR/log/bootstrap.out"
	fi
	if ! probe_names_from <"$DIR/log/bootstrap.out"; then
		probe_map_cmds $((PG * 3)) $((PG * 16)) | ceph_ 2>/dev/null | probe_names_from ||
			die "could not find one object name for each of the $PG PGs: $DIR/pg-probe.map"
	fi
	log "pool $POOL and $NOSD OSD ids created ($(( $(now_ms) - t0 )) ms)"
	for p in "${START_JOBS[@]}"; do wait "$p" || die "OSD mkfs failed: $DIR/log/osd-start.*.log"; done
	START_JOBS=()
	for i in $(seq 0 $((NOSD - 1))); do
		timeout "$CEPH_TIMEOUT" "${NSX[@]}" ceph-osd -c "$CONF" -i "$i" >>"$DIR/log/osd-start.$i.log" 2>&1 &
		START_JOBS+=($!)
	done
	for p in "${START_JOBS[@]}"; do wait "$p" || die "an OSD failed to start: $DIR/log/osd-start.*.log"; done
	for i in $(seq 0 $((NOSD - 1))); do
		[ -n "$(daemon_pid "osd.$i")" ] || die "osd.$i exited: $DIR/log/osd.$i.log"
	done
	log "$NOSD OSDs ($OBJECTSTORE) started ($(( $(now_ms) - t0 )) ms)"
	wait_ready "$READY_TIMEOUT" || die "pool $POOL never became writable"
	START_OK=1
	trap - EXIT INT TERM HUP
	log "cluster up in $(( $(now_ms) - t0 )) ms: conf $CONF$([ "$CEPHX" = 1 ] && echo ", keyring $DIR/keyring (client.admin, client.mrtx)")"
}

do_status() {
	local n p bad=0 any=0
	for n in $(daemon_names); do
		any=1
		p=$(daemon_pid "$n")
		if [ -n "$p" ]; then
			echo "$n pid $p alive rss_kib $(awk '/VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null)"
		else
			echo "$n pid $(cat "$RUN/$n.pid" 2>/dev/null) DEAD"; bad=1
		fi
	done
	[ "$any" = 1 ] || { echo "no daemons in $DIR"; return 1; }
	if [ -n "$(daemon_pid mon.a)" ]; then
		ceph_ osd stat 2>&1 | head -1 || true
	fi
	return $bad
}

do_kill_osd() {
	local id p
	for id in ${OSD_ARG//,/ }; do
		p=$(daemon_pid "osd.$id")
		[ -n "$p" ] || die "osd.$id is not running"
		kill -KILL "$p"
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
		log "osd.$id (pid $p) killed"
	done
}

do_restart_osd() {
	local t0 id
	[ -f "$CONF" ] || die "no cluster in $DIR"
	for id in ${OSD_ARG//,/ }; do
		[ -d "$DIR/osd/$id" ] || die "no osd.$id in $DIR"
		[ -z "$(daemon_pid "osd.$id")" ] || die "osd.$id is running"
	done
	t0=$(now_ms)
	for id in ${OSD_ARG//,/ }; do
		timeout "$CEPH_TIMEOUT" "${NSX[@]}" ceph-osd -c "$CONF" -i "$id" 2>>"$DIR/log/osd-start.$id.log" ||
			die "ceph-osd $id failed: $DIR/log/osd.$id.log"
		log "osd.$id restarted, pid $(daemon_pid "osd.$id")"
	done
	wait_ready "$READY_TIMEOUT" || die "pool $POOL not writable after restarting osd.$OSD_ARG"
	log "osd.$OSD_ARG back, every PG writable after $(( $(now_ms) - t0 )) ms"
}

# Wait (up to $1 s) until the osdmap holds no pg_temp, then until every PG is writable.
wait_settled() {
	local limit=$1 t0 deadline
	t0=$(now_ms); deadline=$(( $(date +%s) + limit ))
	while ceph_ osd dump 2>/dev/null | grep -q '^pg_temp'; do
		[ "$(date +%s)" -lt "$deadline" ] ||
			{ log "PGs still remapped after ${limit}s"; return 1; }
		sleep 1
	done
	log "no PG remapped (waited $(( $(now_ms) - t0 )) ms)"
	wait_ready "$limit"
}

do_min_size() {
	[ -f "$CONF" ] || die "no cluster in $DIR"
	ceph_ osd pool set "$POOL" min_size "$OSD_ARG" >/dev/null 2>"$DIR/log/min-size.err" ||
		die "osd pool set $POOL min_size $OSD_ARG failed: $(cat "$DIR/log/min-size.err")"
	log "pool $POOL min_size $OSD_ARG"
}

case $CMD in
min-size) do_min_size ;;
start) do_start ;;
stop) stop_all ;;
status) do_status ;;
ready) wait_ready "${READY_ARG:-$READY_TIMEOUT}" ;;
settled) [ -f "$CONF" ] || die "no cluster in $DIR"; wait_settled "${READY_ARG:-$READY_TIMEOUT}" ;;
kill-osd) do_kill_osd ;;
restart-osd) do_restart_osd ;;
esac
