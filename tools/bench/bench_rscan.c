/*
 * bench_rscan.c - `mrtx bench rados://... --only scan`: a 100,000-row
 * forward scan (scan_100k) against a raw omap read of the same objects.
 *
 * The table holds 100,000 rows of one cell, k00000..k99999, over the
 * eight tablets bench_rados.c's store is pre-split into (12,500 rows
 * each; --quick fills the first tablet alone).  mrtx's side is a read-only transaction
 * scanning every row of family f and committing; the raw side reads every
 * omap key and value of each of the table's tablet objects, in pages of
 * 1024 pairs, one op a page, one object after another -- a dump of the
 * same objects with nothing else: no locks, versions or rows decoded.
 * The two alternate, one pass each per round, and the figure is rows a
 * second over all rounds.  --quick: 10,000 rows, fewer rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_int.h"

#ifdef MRTX_HAVE_RADOS

#include "storage/rados/rados_raw.h"
#include "txn/admin.h"

#define RS_ROWS 100000 /* --quick: a tenth */
#define RS_LOAD_BATCH 1000

static long rs_scan(mrtx_db *db)
{
	mrtx_scan_spec spec;
	mrtx_scanner *s;
	mrtx_txn *txn;
	mrtx_cell c;
	long rows = 0;
	int rc;

	memset(&spec, 0, sizeof(spec));
	spec.table = "t";
	spec.family = "f";
	if (mrtx_begin(db, &txn) || mrtx_scan_open(txn, &spec, &s))
		die("scan", mrtx_errmsg());
	while ((rc = mrtx_scan_next(s, &c)) == 0)
		rows++;
	mrtx_scan_close(s);
	if (rc != MRTX_NOTFOUND || mrtx_commit(txn))
		die("scan", mrtx_errmsg());
	return rows;
}

/* The tablet objects NAME.<id>.<seq> among the store's objects (not
 * NAME.meta, NAME.ts, NAME.snaps). */
static int is_tablet(const char *name, size_t plen)
{
	const char *p = name + plen, *dot = strchr(p, '.');

	return dot && dot != p && strspn(p, "0123456789abcdef") == (size_t)(dot - p) &&
	       dot[1] && strspn(dot + 1, "0123456789abcdef") == strlen(dot + 1);
}

int bench_rados_scan(bcfg *c, mrtx_db *db, rraw *raw, const char *store_prefix)
{
	long nrows = c->quick ? RS_ROWS / 10 : RS_ROWS;
	int rounds = c->quick ? 2 : 5;
	double t_m = 0, t_r = 0;
	unsigned long keys = 0;
	admin_counters a0, a1;
	char **names, prefix[256];
	size_t nnames, ntab = 0;

	for (long i = 0; i < nrows; i += RS_LOAD_BATCH) {
		mrtx_txn *txn;
		char row[32];
		int rc;

		if ((rc = mrtx_begin(db, &txn)))
			die("scan load", mrtx_errmsg());
		for (long j = i; j < i + RS_LOAD_BATCH && rc == 0; j++) {
			snprintf(row, sizeof(row), "k%05ld", j);
			rc = mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"), MRTX_CSTR("0"));
		}
		if (rc)
			mrtx_abort(txn);
		if (rc || mrtx_commit(txn))
			die("scan load", mrtx_errmsg());
	}
	snprintf(prefix, sizeof(prefix), "%s.", store_prefix);
	if (rraw_list_prefix(raw, prefix, &names, &nnames))
		die("scan", mrtx_errmsg());
	for (size_t i = 0; i < nnames; i++)
		if (is_tablet(names[i], strlen(prefix)))
			names[ntab++] = names[i];
		else
			free(names[i]);
	/* a first pass of each, untimed: caches, connections */
	if (rs_scan(db) != nrows)
		die("scan", "the scan did not see every row");
	admin_counters_get(db, &a0);
	for (int r = 0; r < rounds; r++) {
		double t0 = now_s();

		if (rs_scan(db) != nrows)
			die("scan", "the scan did not see every row");
		t_m += now_s() - t0;
		t0 = now_s();
		keys = 0;
		for (size_t i = 0; i < ntab; i++) {
			unsigned long k;

			if (rraw_omap_read_all(raw, names[i], &k))
				die("scan raw", mrtx_errmsg());
			keys += k;
		}
		t_r += now_s() - t0;
	}
	admin_counters_get(db, &a1);
	for (size_t i = 0; i < ntab; i++)
		free(names[i]);
	free(names);
	{
		double m = (double)nrows * rounds / t_m, b = (double)nrows * rounds / t_r;
		double reads = (double)(a1.read_txns - a0.read_txns) / rounds;

		if (c->json) {
			printf("{\"scan_100k\": {\"rows\": %ld, \"rounds\": %d, \"mrtx_rows_per_s\": %.0f, "
			       "\"raw_rows_per_s\": %.0f, \"ratio\": %.3f, \"target\": 0.5, "
			       "\"tablets\": %zu, \"raw_keys_per_pass\": %lu, "
			       "\"mrtx_object_reads_per_pass\": %.0f}}\n",
			       nrows, rounds, m, b, m / b, ntab, keys, reads);
			return 0;
		}
		printf("scan_100k: a forward scan of %ld rows (one cell each), %d rounds\n", nrows,
		       rounds);
		printf("  mrtx scan      %10.0f rows/s  (%.0f object reads a pass)\n", m, reads);
		printf("  raw omap read  %10.0f rows/s  (%lu keys in %zu tablet objects a pass)\n", b,
		       keys, ntab);
		printf("  ratio %.2f (goal >= 0.5: %s)\n", m / b, m / b >= 0.5 ? "met" : "not met");
	}
	return 0;
}

#endif
