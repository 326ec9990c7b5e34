/*
 * bench_scan.c - `mrtx bench DIR --only longscan`: a read-only scan of a
 * 100,000-row table while 8 threads write to it.
 *
 * The scan runs in a read-only transaction and commits; a commit that
 * fails validation (a writer changed the range since the scan read it)
 * is retried from the start, as mrtx_run would, until it commits or the
 * deadline passes.  On LMDB the scan reads one snapshot and commits at its
 * first attempt, and on RADOS too (DESIGN §9: every read at the snapshot's
 * timestamp, a read-only commit not validated); where reads are
 * optimistic (a store without snapshots), enough write load can keep it
 * from ever committing.  The report says how
 * many attempts it made and whether one committed, beside the writers'
 * throughput over the same time.  Not part of the default run, whose
 * ratios it would not change.  Default durability (MRTX_SYNC).  --quick:
 * 10,000 rows and 5 s.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_int.h"

#define LS_ROWS 100000 /* --quick: a tenth */
#define LS_WRITERS 8
#define LS_LOAD_BATCH 1000

typedef struct ls_writer {
	mrtx_db *db;
	long rows;
	int *stop; /* read and set with __atomic builtins */
	unsigned seed;
	long n;
} ls_writer;

static void ls_row(char *row, size_t size, long i)
{
	snprintf(row, size, "r%08ld", i);
}

/* One blind one-row write of a random row, until told to stop. */
static void *ls_write(void *arg)
{
	ls_writer *w = arg;
	char row[32], v[16];

	memset(v, 'w', sizeof(v));
	while (!__atomic_load_n(w->stop, __ATOMIC_RELAXED)) {
		mrtx_txn *txn;
		int rc;

		ls_row(row, sizeof(row), (long)rand_r(&w->seed) % w->rows);
		if ((rc = mrtx_begin(w->db, &txn)))
			die("longscan writer", mrtx_errmsg());
		if ((rc = mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"),
		                   MRTX_BYTES(v, 16))))
			mrtx_abort(txn);
		else
			rc = mrtx_commit(txn);
		if (rc == 0)
			w->n++;
		else if (rc != MRTX_CONFLICT && rc != MRTX_ELOCKED)
			die("longscan writer", mrtx_errmsg());
	}
	return NULL;
}

/* One attempt: scan every row in a read-only transaction and commit.
 * 0 (committed, *rows counted), MRTX_CONFLICT or MRTX_ELOCKED (retried, as
 * mrtx_run would), or dies. */
static int ls_scan(mrtx_db *db, long *rows)
{
	mrtx_scan_spec spec;
	mrtx_scanner *s;
	mrtx_txn *txn;
	mrtx_cell c;
	int rc;

	*rows = 0;
	memset(&spec, 0, sizeof(spec));
	spec.table = "t";
	spec.family = "f";
	if ((rc = mrtx_begin(db, &txn)) || (rc = mrtx_scan_open(txn, &spec, &s)))
		die("longscan scan", mrtx_errmsg());
	while ((rc = mrtx_scan_next(s, &c)) == 0)
		(*rows)++;
	mrtx_scan_close(s);
	if (rc != MRTX_NOTFOUND) {
		mrtx_abort(txn);
		if (rc == MRTX_CONFLICT || rc == MRTX_ELOCKED)
			return rc;
		die("longscan scan", mrtx_errmsg());
	}
	rc = mrtx_commit(txn);
	if (rc && rc != MRTX_CONFLICT && rc != MRTX_ELOCKED)
		die("longscan commit", mrtx_errmsg());
	return rc;
}

int bench_longscan(bcfg *c)
{
	fixture f;
	int rc;

	fixture_open(c, &f, MRTX_SYNC);
	rc = bench_longscan_on(c, f.db);
	fixture_close(&f);
	return rc;
}

int bench_longscan_on(bcfg *c, mrtx_db *db)
{
	long nrows = c->quick ? LS_ROWS / 10 : LS_ROWS;
	double deadline_s = c->quick ? 5 : 30, t0, tw, t_done = -1, first_s = 0, elapsed, wsecs;
	pthread_t th[LS_WRITERS];
	ls_writer w[LS_WRITERS];
	int stop = 0;
	long rows = 0, writes = 0;
	int attempts = 0;

	for (long i = 0; i < nrows; i += LS_LOAD_BATCH) {
		mrtx_txn *txn;
		char row[32];
		int rc;

		if ((rc = mrtx_begin(db, &txn)))
			die("longscan load", mrtx_errmsg());
		for (long j = i; j < i + LS_LOAD_BATCH && rc == 0; j++) {
			ls_row(row, sizeof(row), j);
			rc = mrtx_put(txn, "t", MRTX_CSTR(row), "f", MRTX_CSTR("q0"), MRTX_CSTR("0"));
		}
		if (rc)
			mrtx_abort(txn);
		if (rc || mrtx_commit(txn))
			die("longscan load", mrtx_errmsg());
	}
	/* the scan alone, once, for scale */
	t0 = now_s();
	if (ls_scan(db, &rows) || rows != nrows)
		die("longscan", "the scan without writers did not see every row");
	first_s = now_s() - t0;
	tw = now_s();
	for (int i = 0; i < LS_WRITERS; i++) {
		w[i] = (ls_writer){ db, nrows, &stop, 1000u + (unsigned)i, 0 };
		if (pthread_create(&th[i], NULL, ls_write, &w[i]))
			die("longscan", "cannot start a writer");
	}
	t0 = now_s();
	while (now_s() - t0 < deadline_s) {
		attempts++;
		if (ls_scan(db, &rows) == 0) {
			t_done = now_s() - t0;
			break;
		}
	}
	elapsed = now_s() - t0;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < LS_WRITERS; i++) {
		pthread_join(th[i], NULL);
		writes += w[i].n;
	}
	wsecs = now_s() - tw; /* the writers' own time, start to join */
	if (c->json) {
		printf("{\"longscan\": {\"rows\": %ld, \"writers\": %d, \"durability\": \"sync\", "
		       "\"scan_alone_s\": %.3f, \"attempts\": %d, \"committed\": %s, "
		       "\"seconds\": %.3f, \"deadline_s\": %.0f, \"writer_txn_per_s\": %.1f}}\n",
		       nrows, LS_WRITERS, first_s, attempts, t_done >= 0 ? "true" : "false",
		       t_done >= 0 ? t_done : elapsed, deadline_s, (double)writes / wsecs);
		return 0;
	}
	printf("longscan: a read-only scan of %ld rows, alone: %.3f s\n", nrows, first_s);
	if (t_done >= 0)
		printf("longscan: under %d writers (sync, one-row blind writes): committed at "
		       "attempt %d after %.3f s\n", LS_WRITERS, attempts, t_done);
	else
		printf("longscan: under %d writers (sync, one-row blind writes): no attempt "
		       "committed in %.1f s (%d attempts; deadline %.0f s)\n", LS_WRITERS, elapsed,
		       attempts, deadline_s);
	printf("longscan: writers meanwhile: %.0f txn/s in all\n", (double)writes / wsecs);
	return 0;
}
