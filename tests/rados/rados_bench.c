/*
 * rados_bench.c - latency of guarded RADOS writes through storage/rados/
 * (not a test; not run by ctest).  Decides where a blind-write predicate
 * should run: on the OSD (a Lua cls call inside the write op) or in the
 * client (read the lock, then a write guarded by omap_cmp2 on those bytes).
 *
 *   build/tests/rados_bench ADDRESS [N]     e.g.
 *   build/tests/rados_bench 'rados://mrtx/bench?conf=/tmp/c/ceph.conf' 500
 *
 * Every write: create(IDEMPOTENT) + guard + set 2 cells (~16 B) on one of 256
 * objects.  Prints median / p90 / p99 of N single writes per variant
 * (variants interleaved op by op, so noise hits each alike) and the
 * throughput of batches of 4 and 64 writes to distinct objects
 * (rconn_write: all submitted at once, then waited for), with the OSDs' CPU
 * time per write when the conf sits in a scripts/rados-cluster.sh directory
 * (pid files in DIR/run).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/rados/rados_conn.h"

#define NOBJ 256
#define B(s) MRTX_BYTES((s), strlen(s))

static rconn *conn;
static char run_dir[600]; /* DIR/run of a scripts/rados-cluster.sh cluster, or "" */
static mrtx_buf lua_in = MRTX_BUF_INIT;
static char names[NOBJ][64];

/* "lock absent, or the lock's first byte is the input's" */
static const char LUA_PRED[] =
	"function pred(input, output)\n"
	"  local ok, v = pcall(objclass.map_get_val, 'lock')\n"
	"  if not ok then return 0 end\n"
	"  if string.sub(v:str(), 1, 1) == input:str() then return 0 end\n"
	"  return -125\n"
	"end\n"
	"objclass.register(pred)\n";

enum variant { CMP_ABSENT, LUA_ABSENT, CMP_LOCKED, LUA_LOCKED, READ_THEN_CMP, READ_ONLY, NVAR };
static const char *const vname[NVAR] = {
	"omap_cmp2 guard, lock absent", "lua predicate, lock absent",
	"omap_cmp2 guard, lock present", "lua predicate, lock present",
	"read lock, then omap_cmp2 write", "read lock only (no write)",
};

static void die(int rc, const char *what)
{
	fprintf(stderr, "rados_bench: %s: %s: %s\n", what, mrtx_strerror(rc), mrtx_errmsg());
	exit(1);
}

/* One guarded write on object i; objects >= NOBJ/2 hold lock = "S-lock". */
static void fill(rwrite *w, rguard *g, rexec *e, rkv *sets, enum variant v, int i, int seq)
{
	static char val[NOBJ * 2][24];
	int locked = v == CMP_LOCKED || v == LUA_LOCKED || v >= READ_THEN_CMP;
	int o = locked ? NOBJ / 2 + i % (NOBJ / 2) : i % (NOBJ / 2);
	char *vb = val[(seq % NOBJ) * 2 + (v & 1)];

	snprintf(vb, sizeof(val[0]), "value-%d", seq);
	sets[0] = (rkv){ B("d:a"), B(vb) };
	sets[1] = (rkv){ B("d:b"), B(vb) };
	*w = (rwrite){ .oid = names[o], .create = 1, .sets = sets, .nsets = 2 };
	if (v == LUA_ABSENT || v == LUA_LOCKED) {
		*e = (rexec){ "lua", "eval_bufferlist", MRTX_BYTES(lua_in.data, lua_in.size), 0 };
		w->execs = e;
		w->nexecs = 1;
	} else {
		*g = (rguard){ B("lock"), locked ? B("S-lock") : B(""), LIBRADOS_CMPXATTR_OP_EQ, 0 };
		w->guards = g;
		w->nguards = 1;
	}
}

static int one(enum variant v, int seq)
{
	rwrite w;
	rguard g;
	rexec e;
	rkv sets[2];
	int rc;

	fill(&w, &g, &e, sets, v, seq, seq);
	if (v >= READ_THEN_CMP) {
		mrtx_arena a;
		mrtx_bytes key = B("lock");
		rread r = { .oid = w.oid, .keys = &key, .nkeys = 1 };

		arena_init(&a);
		if ((rc = rconn_read(conn, &r, 1, &a)))
			die(rc, "read lock");
		if (r.nkvs != 1)
			die(MRTX_ESTORE, "lock missing");
		arena_free(&a);
		if (v == READ_ONLY)
			return 0;
	}
	if ((rc = rconn_write(conn, &w, 1)))
		die(rc, vname[v]);
	return w.result;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double now_ms(void)
{
	return (double)mrtx__mono_us() / 1e3;
}

/* CPU time (ms) the OSDs of a local scripts/rados-cluster.sh cluster have
 * used so far (pid files in DIR/run), or -1 when they cannot be found. */
static double osd_cpu_ms(void)
{
	double ms = 0;
	int found = 0;

	for (int i = 0; run_dir[0] && i < 16; i++) {
		char path[700], buf[1024];
		unsigned long ut, st;
		long pid;
		FILE *f;

		snprintf(path, sizeof(path), "%s/osd.%d.pid", run_dir, i);
		if (!(f = fopen(path, "r")))
			continue;
		pid = fscanf(f, "%ld", &pid) == 1 ? pid : -1;
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		if (pid <= 0 || !(f = fopen(path, "r")))
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			char *p = strrchr(buf, ')'); /* fields after the command name */

			if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			                &ut, &st) == 2) {
				ms += (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
				found++;
			}
		}
		fclose(f);
	}
	return found ? ms : -1;
}

static void batch(enum variant v, size_t depth, int total)
{
	rwrite *w = calloc(depth, sizeof(*w));
	rguard *g = calloc(depth, sizeof(*g));
	rexec *e = calloc(depth, sizeof(*e));
	rkv *sets = calloc(depth * 2, sizeof(*sets));
	double t0 = now_ms(), t, cpu0 = osd_cpu_ms(), cpu;
	int done = 0, rc;

	if (!w || !g || !e || !sets)
		die(MRTX_ENOMEM, "batch");
	while (done < total) {
		for (size_t i = 0; i < depth; i++)
			fill(&w[i], &g[i], &e[i], &sets[2 * i], v, done + (int)i, done + (int)i);
		if ((rc = rconn_write(conn, w, depth)))
			die(rc, "batch");
		for (size_t i = 0; i < depth; i++)
			if (w[i].result)
				die(MRTX_ESTORE, "batch op failed its guard");
		done += (int)depth;
	}
	t = now_ms() - t0;
	cpu = osd_cpu_ms();
	printf("  batch of %2zu, %-32s %6d writes in %6.0f ms: %6.0f writes/s, %.2f ms per batch",
	       depth, vname[v], done, t, done / t * 1e3, t / (done / (double)depth));
	if (cpu0 >= 0 && cpu >= 0)
		printf(", OSD CPU %.0f us/write", (cpu - cpu0) * 1e3 / done);
	printf("\n");
	free(w);
	free(g);
	free(e);
	free(sets);
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 500, rc;
	double *lat[NVAR];
	raddr addr;

	if (argc < 2 || n < 10) {
		fprintf(stderr, "usage: rados_bench rados://POOL/NAME?conf=PATH [N >= 10]\n");
		return 2;
	}
	if ((rc = raddr_parse(&addr, argv[1])) || (rc = rconn_open(&conn, &addr, NULL)))
		die(rc, "connect");
	if ((rc = rlua_encode(&lua_in, LUA_PRED, "pred", B("S"))))
		die(rc, "lua");
	if (addr.conf && strlen(addr.conf) < sizeof(run_dir) - 8) {
		char *slash;

		snprintf(run_dir, sizeof(run_dir), "%s", addr.conf);
		slash = strrchr(run_dir, '/');
		snprintf(slash ? slash + 1 : run_dir, 8, "run");
	}
	for (int i = 0; i < NOBJ; i++)
		snprintf(names[i], sizeof(names[i]), "%s.bench.%d", addr.name, i);
	/* objects of the second half hold a lock starting with 'S' */
	for (int i = NOBJ / 2; i < NOBJ; i++) {
		rkv set = { B("lock"), B("S-lock") };
		rwrite w = { .oid = names[i], .create = 1, .sets = &set, .nsets = 1 };

		if ((rc = rconn_write(conn, &w, 1)))
			die(rc, "setup");
	}
	for (int i = 0; i < 100; i++) /* warm up: objects, Lua, connections */
		for (int v = 0; v < NVAR; v++)
			one((enum variant)v, i);
	for (int v = 0; v < NVAR; v++)
		if (!(lat[v] = malloc((size_t)n * sizeof(double))))
			die(MRTX_ENOMEM, "lat");
	for (int i = 0; i < n; i++)
		for (int v = 0; v < NVAR; v++) {
			double t0 = now_ms();

			if (one((enum variant)v, 1000 + i))
				die(MRTX_ESTORE, "a guard failed");
			lat[v][i] = now_ms() - t0;
		}
	printf("single guarded writes (create + guard + set 2 cells), n=%d each, ms:\n", n);
	for (int v = 0; v < NVAR; v++) {
		qsort(lat[v], (size_t)n, sizeof(double), dcmp);
		printf("  %-34s median %.3f  p90 %.3f  p99 %.3f\n", vname[v], lat[v][n / 2],
		       lat[v][n * 9 / 10], lat[v][n * 99 / 100]);
		free(lat[v]);
	}
	printf("batches (rconn_write: submit all, wait for all), distinct objects:\n");
	batch(CMP_ABSENT, 4, 2000);
	batch(CMP_ABSENT, 64, 6400);
	batch(LUA_ABSENT, 4, 2000);
	batch(LUA_ABSENT, 64, 6400);
	batch(LUA_LOCKED, 64, 6400);
	buf_free(&lua_in);
	rconn_close(conn);
	raddr_free(&addr);
	return 0;
}
