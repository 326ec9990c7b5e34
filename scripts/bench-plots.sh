#!/usr/bin/env bash
# bench-plots.sh - the scaling curves of BENCH.md §2.8.  Runs
# `MRTX bench DIR --only scaling --json [BENCH-OPTION...]` (or reads the
# JSON of an earlier run), keeps that JSON as OUTDIR/scaling.json, turns it
# into one data file per sweep and durability, and draws with gnuplot:
#   OUTDIR/scaling-threads.svg  transfers/s against threads (1..16)
#   OUTDIR/scaling-rows.svg     txn/s and rows/s against rows per
#                               transaction (1..256)
# both axes logarithmic; sync solid, nosync dashed.
#
# usage: scripts/bench-plots.sh MRTX DIR [OUTDIR] [-- BENCH-OPTION...]
#        scripts/bench-plots.sh --from JSON [OUTDIR]
# OUTDIR defaults to docs/bench.  e.g.
#   scripts/bench-plots.sh build-rel/mrtx /tmp/bench -- --durability both
# Needs python3 and gnuplot (Debian: apt-get install gnuplot-nox); installs
# nothing.
set -euo pipefail

usage() {
	sed -n 's/^# \{0,1\}//; /^usage:/,/^Needs/p' "$0" | sed '/^Needs/,$d' >&2
	exit 2
}

for tool in python3 gnuplot; do
	command -v "$tool" >/dev/null ||
		{ echo "bench-plots.sh: $tool is missing (Debian: python3, gnuplot-nox)" >&2; exit 1; }
done

[ $# -ge 2 ] || usage
if [ "$1" = --from ]; then
	json=$2
	out=${3:-docs/bench}
	[ -r "$json" ] || { echo "bench-plots.sh: $json: cannot read" >&2; exit 1; }
	mrtx=
else
	mrtx=$1
	dir=$2
	shift 2
	out=docs/bench
	if [ $# -gt 0 ] && [ "$1" != -- ]; then
		out=$1
		shift
	fi
	[ $# -eq 0 ] || { [ "$1" = -- ] && shift; } || usage
fi
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "$mrtx" ]; then
	"$mrtx" bench "$dir" --only scaling --json "$@" >"$tmp/scaling.json"
	json=$tmp/scaling.json
fi
[ "$json" -ef "$out/scaling.json" ] || cp "$json" "$out/scaling.json"

# one file per sweep and durability: threads-sync.dat, rows-nosync.dat, ...
# (columns in SIDES order; NaN for an absent side)
python3 - "$out/scaling.json" "$tmp" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))['scaling']
sides = ['mrtx', 'lmdb', 'rocksdb_pessimistic', 'rocksdb_optimistic']
def num(v):
    return 'NaN' if v is None else repr(v)
for sweep, units in (('threads', ['txn']), ('rows', ['txn', 'rows'])):
    files = {}
    for p in d[sweep]:
        f = files.setdefault(p['durability'],
                             open('%s/%s-%s.dat' % (sys.argv[2], sweep, p['durability']), 'w'))
        cols = [str(p[sweep])] + [num(p['%s_%s_per_s' % (s, u)]) for u in units for s in sides]
        f.write(' '.join(cols) + '\n')
    for f in files.values():
        f.close()
EOF

# plot commands for every durability run: column base+i for side i;
# "key" gives NaN series that only fill the shared key
names=(mrtx LMDB 'RocksDB pess.' 'RocksDB opt.')
plots() { # SWEEP BASE|key
	local sep= mode dt i src cmd=
	for mode in sync nosync; do
		[ -e "$tmp/$1-$mode.dat" ] || continue
		[ $mode = sync ] && dt=1 || dt=2
		for i in 0 1 2 3; do
			if [ "$2" = key ]; then
				src="NaN with linespoints title '${names[$i]} $mode'"
			else
				src="'$tmp/$1-$mode.dat' using 1:$(($2 + i)) with linespoints notitle"
			fi
			cmd+="$sep$src lc $((i + 1)) dt $dt pt 7 ps 0.6"
			sep=", "
		done
	done
	echo "$cmd"
}

# the panels above one shared key
key_panel='set origin 0,0
set size 1,0.2
unset title
unset logscale
unset border
unset tics
unset xlabel
unset ylabel
unset grid
set xrange [0:1]
set yrange [0:1]
set key center center horizontal maxcols 4 samplen 2 width 1'

gnuplot <<EOF
set datafile missing "NaN"
set linetype 1 lc rgb "#d62728" lw 2
set linetype 2 lc rgb "#1f77b4" lw 2
set linetype 3 lc rgb "#2ca02c" lw 2
set linetype 4 lc rgb "#9467bd" lw 2
set format y "%.0s%c"
set grid
set logscale xy

set terminal svg size 900,520 dynamic font "sans,12" background rgb "white"
set output "$out/scaling-threads.svg"
set multiplot title "interactive transfers (read 2 of 1,000 balances, think 200 µs, write 2)"
set origin 0,0.2
set size 1,0.74
set xlabel "threads (one process)"
set ylabel "transfers/s"
set xtics (1, 2, 4, 8, 16)
set xrange [0.8:20]
plot $(plots threads 2)
$key_panel
plot $(plots threads key)
unset multiplot

set terminal svg size 1100,520 dynamic font "sans,12" background rgb "white"
set output "$out/scaling-rows.svg"
set multiplot title "one thread, transactions of N blind puts (16-byte values, distinct rows of 100,000)"
set border
set tics
set grid
set autoscale y
set logscale xy
set xtics (1, 2, 4, 8, 16, 32, 64, 128, 256)
set xrange [0.8:320]
set xlabel "rows per transaction"
set origin 0,0.2
set size 0.5,0.74
set title "transactions/s"
set ylabel "txn/s"
plot $(plots rows 2)
set origin 0.5,0.2
set title "rows/s (txn/s × rows)"
set ylabel "rows/s"
plot $(plots rows 6)
$key_panel
plot $(plots rows key)
unset multiplot
EOF
echo "bench-plots.sh: wrote $out/scaling.json, $out/scaling-threads.svg, $out/scaling-rows.svg"
