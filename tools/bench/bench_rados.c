/*
 * bench_rados.c - `mrtx bench rados://POOL/NAME[?...]`: what the protocol
 * costs against plain guarded RADOS writes of the same rows.
 *
 *   single_row   a one-row transaction (4 cells, blind puts) against one
 *                guarded compound write of the same cells on one object
 *   multi_row    a 4-row transaction on a table pre-split into 8 tablets
 *                against 4 guarded writes of the same rows, one per row on
 *                its tablet's object, sent at once (aio)
 *   one_tablet   a 4-row transaction whose rows all lie in one tablet (a
 *                one-phase commit: one guarded write of the tablet, DESIGN
 *                §5.3) against one guarded write of the same rows on one
 *                object
 *   ts           the store's timestamp source (admin_ts_next), by one thread
 *                and by 8: one guarded write of NAME.ts per batch (reported)
 *   scan         (--only scan, not in the default run) a 100,000-row
 *                forward scan against a raw omap read of the same tablet
 *                objects (bench_rscan.c)
 *   latency      the median commit latency of an N-row transaction, N = 1
 *                .. 64, beside raw guarded writes of the same N rows (one op
 *                per object, all sent at once): a commit costs round trips,
 *                not rows.  Both are also given in round trips: divided by
 *                the raw write of one row, so that the figures carry over
 *                to a network whose round trip is longer (a cluster started
 *                with rados-cluster.sh --delay-ms emulates one).  Commit
 *                latency is until mrtx_commit returns (at
 *                the commit point); the tail it leaves to the handle's
 *                worker is flushed, untimed, before the raw sample.  In
 *                single_row and multi_row each side's time includes the
 *                flush of its tails at the end of each slice.
 *
 * Both sides run in this process on the same cluster, alternating in short
 * slices (alternate() in bench.c), one request stream at a time: the
 * figures are latency-bound, as a client's are.  Every store the run
 * creates is named NAME-b<pid>-<n>, and every object under NAME-b<pid>- is
 * removed at the end (also when the run dies of an error).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_int.h"

#ifdef MRTX_HAVE_RADOS

#include "txn/admin.h"

#define MULTI_TABLETS 8
#define MULTI_ROWS 100000
#define MAX_LAT_ROWS 64

typedef struct rfix {
	rraw *raw;
	char *base, *params; /* rados://POOL/NAME and "?..." (or "") */
	const char *name;    /* NAME, inside base */
	char prefix[160];    /* NAME-b<pid>- : every object of this run */
	int seq;
	char single_oid[200];
	char multi_oid[MULTI_TABLETS][200];
} rfix;

/* The row of multi-row transactions numbered k, and its tablet. */
static void multi_row_name(char *buf, size_t n, int k)
{
	snprintf(buf, n, "k%05d", k);
}

static int multi_tablet(int k)
{
	return k / (MULTI_ROWS / MULTI_TABLETS);
}

/* A fresh store NAME-b<pid>-<seq> with table t (family f), pre-split into
 * MULTI_TABLETS tablets at the multi-row workload's row ranges. */
static mrtx_db *rstore_open(rfix *x)
{
	static const char *const fams[] = { "f" };
	char split[MULTI_TABLETS - 1][16];
	mrtx_bytes splits[MULTI_TABLETS - 1];
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;
	char *addr;

	o.create = MRTX_CREATE_IF_MISSING; /* (a fresh store each time) */
	if (asprintf(&addr, "%s-b%ld-%d%s", x->base, (long)getpid(), x->seq++, x->params) < 0)
		die("alloc", "out of memory");
	for (int i = 1; i < MULTI_TABLETS; i++) {
		multi_row_name(split[i - 1], sizeof(split[i - 1]), i * (MULTI_ROWS / MULTI_TABLETS));
		splits[i - 1] = MRTX_CSTR(split[i - 1]);
	}
	if (mrtx_open(&db, addr, &o) ||
	    mrtx_create_table_split(db, "t", fams, 1, splits, MULTI_TABLETS - 1))
		die("open", mrtx_errmsg());
	free(addr);
	return db;
}

/* The run's objects are removed on the way out of a die() too. */
static rfix *cleanup_fix;
static void cleanup_at_exit(void);
static void rfix_close(rfix *x);

static void rfix_open(rfix *x, const char *uri)
{
	const char *q = strchr(uri, '?'), *slash;

	memset(x, 0, sizeof(*x));
	x->base = q ? strndup(uri, (size_t)(q - uri)) : strdup(uri);
	x->params = strdup(q ? q : "");
	if (!x->base || !x->params)
		die("alloc", "out of memory");
	slash = strrchr(x->base, '/');
	x->name = slash ? slash + 1 : x->base;
	if (rraw_open(&x->raw, uri))
		die("connect", mrtx_errmsg());
	snprintf(x->prefix, sizeof(x->prefix), "%s-b%ld-", x->name, (long)getpid());
	cleanup_fix = x;
	atexit(cleanup_at_exit);
	snprintf(x->single_oid, sizeof(x->single_oid), "%sraw.s", x->prefix);
	for (int i = 0; i < MULTI_TABLETS; i++)
		snprintf(x->multi_oid[i], sizeof(x->multi_oid[i]), "%sraw.m%d", x->prefix, i);
}

static void cleanup_at_exit(void)
{
	rfix *x = cleanup_fix;

	cleanup_fix = NULL;
	if (x)
		rfix_close(x);
}

static void rfix_close(rfix *x)
{
	unsigned long n = 0;

	if (rraw_remove_prefix(x->raw, x->prefix, &n))
		fprintf(stderr, "mrtx: bench: removing the objects %s*: %s\n", x->prefix,
		        mrtx_errmsg());
	rraw_close(x->raw);
	free(x->base);
	free(x->params);
}

/* ----------------------------------------------------------------- ops */

static int op_single_raw(fixture *f, unsigned *seed, long i)
{
	rfix *x = f->ext;
	char row[32];
	const char *oid = x->single_oid;
	mrtx_bytes b;

	(void)seed;
	snprintf(row, sizeof(row), "r%08ld", i % 10000);
	b = MRTX_CSTR(row);
	return rraw_put_rows(x->raw, &oid, &b, 1, 4);
}

struct rows_payload {
	int n;
	char rows[MAX_LAT_ROWS][16];
};

/* n distinct rows of the multi-row range. */
static void pick_rows(struct rows_payload *p, int n, unsigned *seed)
{
	p->n = n;
	for (int r = 0; r < n; r++) {
		int k, dup;

		do {
			k = rand_r(seed) % MULTI_ROWS;
			multi_row_name(p->rows[r], sizeof(p->rows[r]), k);
			dup = 0;
			for (int j = 0; j < r; j++)
				dup |= strcmp(p->rows[j], p->rows[r]) == 0;
		} while (dup);
	}
}

static int rows_fn(mrtx_txn *txn, void *arg)
{
	struct rows_payload *p = arg;
	char v[16];
	int rc = 0;

	memset(v, 'v', sizeof(v));
	for (int r = 0; r < p->n && rc == 0; r++)
		rc = mrtx_put(txn, "t", MRTX_CSTR(p->rows[r]), "f", MRTX_CSTR("q0"),
		              MRTX_BYTES(v, sizeof(v)));
	return rc;
}

static int put_rows_mrtx(fixture *f, struct rows_payload *p)
{
	return mrtx_run(f->db, rows_fn, p, 100);
}

static int put_rows_raw(fixture *f, struct rows_payload *p)
{
	rfix *x = f->ext;
	const char *oids[MAX_LAT_ROWS];
	mrtx_bytes rows[MAX_LAT_ROWS];

	for (int r = 0; r < p->n; r++) {
		oids[r] = x->multi_oid[multi_tablet(atoi(p->rows[r] + 1))];
		rows[r] = MRTX_CSTR(p->rows[r]);
	}
	return rraw_put_rows(x->raw, oids, rows, (size_t)p->n, 1);
}

/* Counted over the multi_row phase: transactions and raw rounds run, and
 * the objects the raw side wrote (one op per distinct tablet). */
static unsigned long multi_txns, multi_raws, multi_raw_objs;

static int op_multi_mrtx(fixture *f, unsigned *seed, long i)
{
	struct rows_payload p;
	int rc;

	(void)i;
	pick_rows(&p, 4, seed);
	if ((rc = put_rows_mrtx(f, &p)) == 0)
		multi_txns++;
	return rc;
}

static int op_multi_raw(fixture *f, unsigned *seed, long i)
{
	struct rows_payload p;
	unsigned seen = 0;
	int rc;

	(void)i;
	pick_rows(&p, 4, seed);
	if ((rc = put_rows_raw(f, &p)) == 0) {
		for (int r = 0; r < p.n; r++)
			seen |= 1u << multi_tablet(atoi(p.rows[r] + 1));
		multi_raws++;
		multi_raw_objs += (unsigned long)__builtin_popcount(seen);
	}
	return rc;
}

/* 4 distinct rows of the first tablet's range. */
static void pick_one_tablet(struct rows_payload *p, unsigned *seed)
{
	p->n = 4;
	for (int r = 0; r < 4; r++) {
		int dup;

		do {
			multi_row_name(p->rows[r], sizeof(p->rows[r]),
			               rand_r(seed) % (MULTI_ROWS / MULTI_TABLETS));
			dup = 0;
			for (int j = 0; j < r; j++)
				dup |= strcmp(p->rows[j], p->rows[r]) == 0;
		} while (dup);
	}
}

static int op_one_tablet_mrtx(fixture *f, unsigned *seed, long i)
{
	struct rows_payload p;

	(void)i;
	pick_one_tablet(&p, seed);
	return put_rows_mrtx(f, &p);
}

static int op_one_tablet_raw(fixture *f, unsigned *seed, long i)
{
	struct rows_payload p;

	(void)i;
	pick_one_tablet(&p, seed);
	return put_rows_raw(f, &p); /* (one op: every row on tablet 0's object) */
}

/* Objects per transaction of the multi_row phase (admin_counters). */
typedef struct objs {
	double mrtx_w, mrtx_r, raw_w;
} objs;

/* ------------------------------------------------------------ latency */

typedef struct lat {
	int rows;
	double mrtx_ms, raw_ms; /* medians */
	long samples;
} lat;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n ? v[n / 2] : 0;
}

/* Both sides' first writes to an OSD open its connection (handshakes,
 * authentication: several round trips), which is no commit's cost: before
 * the first sample each side writes 64 rows (every tablet, in all
 * likelihood every OSD) twice, untimed. */
static void latency_warm(fixture *f)
{
	unsigned seed = 7;

	for (int i = 0; i < 2; i++) {
		struct rows_payload p;
		int rc;

		pick_rows(&p, 64, &seed);
		if (put_rows_mrtx(f, &p))
			die("latency (warm-up)", mrtx_errmsg());
		(void)mrtx_flush(f->db);
		if ((rc = put_rows_raw(f, &p)) && rc != MRTX_CONFLICT)
			die("latency (raw warm-up)", mrtx_errmsg());
	}
}

/* Alternate one N-row transaction and N raw writes for secs per side, and
 * for at least LAT_MIN_SAMPLES each (a long round trip leaves few samples
 * in a short run: the median of fewer says little). */
#define LAT_MIN_SAMPLES 9
static void latency(fixture *f, int nrows, double secs, lat *out)
{
	enum { CAP = 100000 };
	double *m = malloc(CAP * sizeof(*m)), *b = malloc(CAP * sizeof(*b));
	double tm = 0, tb = 0;
	long nm = 0, nb = 0;
	unsigned sm = 11, sb = 11;

	if (!m || !b)
		die("alloc", "out of memory");
	while ((tm < secs || tb < secs || nm < LAT_MIN_SAMPLES || nb < LAT_MIN_SAMPLES) &&
	       nm < CAP && nb < CAP) {
		struct rows_payload p;
		double t0;
		int rc;

		pick_rows(&p, nrows, &sm);
		t0 = now_s();
		if ((rc = put_rows_mrtx(f, &p)))
			die("latency", mrtx_errmsg());
		m[nm] = now_s() - t0;
		tm += m[nm++];
		/* the commit's tail (txn/tail.h) ends before the raw sample, so
		 * that it slows neither: this is commit latency as the caller
		 * sees it, the tail's cost is in the multi_row ratio */
		(void)mrtx_flush(f->db);
		pick_rows(&p, nrows, &sb);
		t0 = now_s();
		if ((rc = put_rows_raw(f, &p)) && rc != MRTX_CONFLICT)
			die("latency (raw)", mrtx_errmsg());
		b[nb] = now_s() - t0;
		tb += b[nb++];
	}
	*out = (lat){ nrows, median(m, nm) * 1e3, median(b, nb) * 1e3, nm };
	free(m);
	free(b);
}

/* ------------------------------------------------------------- report */

static void report(const bcfg *c, const bres *r, size_t n, const lat *l, size_t nl,
                   const objs *o)
{
	if (c->json) {
		printf("{\"store\": \"rados\", \"quick\": %s, \"phase_seconds\": %.2f, "
		       "\"rounds\": %d, \"workloads\": [",
		       c->quick ? "true" : "false", c->phase_s, c->rounds);
		for (size_t i = 0; i < n; i++) {
			printf("%s\n  {\"name\": \"%s\", \"durability\": \"%s\", "
			       "\"mrtx_ops_per_s\": %.1f, ", i ? "," : "", r[i].name, r[i].mode,
			       r[i].mrtx_ops);
			if (r[i].has_base)
				printf("\"baseline_ops_per_s\": %.1f, \"ratio\": %.3f, "
				       "\"target\": %.2f, ", r[i].base_ops,
				       r[i].base_ops > 0 ? r[i].mrtx_ops / r[i].base_ops : 0.0,
				       r[i].target);
			else
				printf("\"baseline_ops_per_s\": null, \"ratio\": null, "
				       "\"target\": null, ");
			printf("\"threads\": %d, \"processes\": 0, \"unit\": \"%s\", "
			       "\"baseline\": %s}", r[i].threads, r[i].unit,
			       r[i].has_base ? "\"raw guarded RADOS writes\"" : "null");
		}
		printf("\n], ");
		if (o)
			printf("\"multi_row_objects_per_txn\": {\"mrtx_written\": %.2f, "
			       "\"mrtx_read\": %.2f, \"baseline_written\": %.2f}, ",
			       o->mrtx_w, o->mrtx_r, o->raw_w);
		printf("\"latency_by_rows\": [");
		for (size_t i = 0; i < nl; i++)
			printf("%s{\"rows\": %d, \"mrtx_median_ms\": %.3f, "
			       "\"baseline_median_ms\": %.3f, \"mrtx_round_trips\": %.2f, "
			       "\"baseline_round_trips\": %.2f, \"samples\": %ld}",
			       i ? ", " : "", l[i].rows, l[i].mrtx_ms, l[i].raw_ms,
			       l[i].mrtx_ms / l[0].raw_ms, l[i].raw_ms / l[0].raw_ms, l[i].samples);
		printf("]}\n");
		return;
	}
	if (n)
		printf("%-12s %-11s %8s %14s %14s %8s %8s\n", "workload", "durability", "par",
		       "mrtx ops/s", "rados ops/s", "ratio", "target");
	for (size_t i = 0; i < n; i++) {
		char par[16];

		snprintf(par, sizeof(par), "%dt", r[i].threads);
		if (r[i].has_base)
			printf("%-12s %-11s %8s %14.0f %14.0f %8.2f %8s%.1f\n", r[i].name, r[i].mode,
			       par, r[i].mrtx_ops, r[i].base_ops, r[i].mrtx_ops / r[i].base_ops, ">= ",
			       r[i].target);
		else
			printf("%-12s %-11s %8s %14.0f %14s %8s %11s\n", r[i].name, r[i].mode, par,
			       r[i].mrtx_ops, "-", "-", "report");
	}
	if (o)
		printf("multi_row objects per transaction: mrtx writes %.2f and reads %.2f, "
		       "raw writes %.2f\n", o->mrtx_w, o->mrtx_r, o->raw_w);
	if (nl) {
		printf("%scommit latency by rows (medians; raw: the same rows, one guarded op per "
		       "object, all sent at once; rt: in raw one-row writes):\n", n ? "\n" : "");
		for (size_t i = 0; i < nl; i++)
			printf("  %2d rows: mrtx %7.2f ms %5.2f rt   raw %7.2f ms %5.2f rt   "
			       "(%ld samples)\n", l[i].rows, l[i].mrtx_ms, l[i].mrtx_ms / l[0].raw_ms,
			       l[i].raw_ms, l[i].raw_ms / l[0].raw_ms, l[i].samples);
		printf("  mrtx %d rows / %d rows: %.2f\n", l[nl - 1].rows, l[0].rows,
		       l[nl - 1].mrtx_ms / l[0].mrtx_ms);
	}
}

int bench_rados(bcfg *c, const char *uri, const char *only)
{
	/* (the first is the unit of the round trips) */
	static const int sizes[] = { 1, 2, 4, 8, 16, 32, 64 };
	bres r[7];
	lat l[sizeof(sizes) / sizeof(sizes[0])];
	size_t n = 0, nl = 0;
	objs o = { 0, 0, 0 }, *op = NULL;
	fixture f;
	rfix x;

	if (only && strcmp(only, "single_row") && strcmp(only, "multi_row") &&
	    strcmp(only, "one_tablet") && strcmp(only, "latency") && strcmp(only, "ts") &&
	    strcmp(only, "snapshot") && strcmp(only, "longscan") && strcmp(only, "scan")) {
		fprintf(stderr, "mrtx: bench: workload '%s' is not run on a RADOS store "
		        "(single_row, multi_row, one_tablet, latency, ts, snapshot, longscan, "
		        "scan)\n", only);
		return 2;
	}
	rfix_open(&x, uri);
	memset(&f, 0, sizeof(f));
	f.ext = &x;
	f.db = rstore_open(&x);
	if (only && (strcmp(only, "longscan") == 0 || strcmp(only, "scan") == 0)) {
		char store_prefix[200];
		int rc;

		snprintf(store_prefix, sizeof(store_prefix), "%s%d", x.prefix, x.seq - 1);
		rc = strcmp(only, "scan") == 0 ? bench_rados_scan(c, f.db, x.raw, store_prefix) :
		                                 bench_longscan_on(c, f.db);

		mrtx_close(f.db);
		cleanup_fix = NULL;
		rfix_close(&x);
		return rc;
	}
	if (!only || strcmp(only, "single_row") == 0) {
		alternate(c, &f, op_single_mrtx, op_single_raw, &r[n]);
		r[n] = (bres){ "single_row", "replicated", r[n].mrtx_ops, r[n].base_ops, 0.9, 1, 1, 0,
		               "txn/s" };
		n++;
	}
	if (!only || strcmp(only, "multi_row") == 0) {
		admin_counters a, b;

		admin_counters_get(f.db, &a);
		alternate(c, &f, op_multi_mrtx, op_multi_raw, &r[n]);
		admin_counters_get(f.db, &b);
		if (multi_txns && multi_raws) {
			o.mrtx_w = (double)(b.write_txns - a.write_txns) / (double)multi_txns;
			o.mrtx_r = (double)(b.read_txns - a.read_txns) / (double)multi_txns;
			o.raw_w = (double)multi_raw_objs / (double)multi_raws;
			op = &o;
		}
		r[n] = (bres){ "multi_row", "replicated", r[n].mrtx_ops, r[n].base_ops, 0.5, 1, 1, 0,
		               "txn/s" };
		n++;
	}
	if (!only || strcmp(only, "one_tablet") == 0) {
		alternate(c, &f, op_one_tablet_mrtx, op_one_tablet_raw, &r[n]);
		r[n] = (bres){ "one_tablet", "replicated", r[n].mrtx_ops, r[n].base_ops, 0.9, 1, 1,
		               0, "txn/s" };
		n++;
	}
	if (!only || strcmp(only, "ts") == 0) {
		double secs = c->rounds * c->phase_s / 2;

		r[n++] = (bres){ "ts", "replicated", bench_ts_rate(f.db, 1, secs), 0, 0, 0, 1, 0,
		                 "ts/s" };
		r[n++] = (bres){ "ts", "replicated", bench_ts_rate(f.db, MULTI_THREADS, secs), 0, 0,
		                 0, MULTI_THREADS, 0, "ts/s" };
	}
	if (!only || strcmp(only, "snapshot") == 0) {
		/* (a read-only transaction's first read takes its snapshot) */
		if (mrtx_put_row(f.db, "snaprow", 1))
			die("snapshot", mrtx_errmsg());
		r[n++] = (bres){ "snapshot", "replicated",
		                 bench_snapshot_rate(f.db, "snaprow", c->rounds * c->phase_s / 2),
		                 0, 0, 0, 1, 0, "txn/s" };
	}
	if (!only || strcmp(only, "latency") == 0) {
		latency_warm(&f);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			latency(&f, sizes[i], c->quick ? 0.3 : 1.5, &l[nl++]);
	}
	mrtx_close(f.db);
	report(c, r, n, l, nl, op);
	cleanup_fix = NULL;
	rfix_close(&x);
	return 0;
}

#else /* !MRTX_HAVE_RADOS */

int bench_rados(bcfg *c, const char *uri, const char *only)
{
	(void)c;
	(void)only;
	fprintf(stderr, "mrtx: bench: %s: this mrtx was built without the RADOS backend\n", uri);
	return 1;
}

#endif
