/*
 * demo.c - real multi-row, multi-table transactions on a fresh LMDB store.
 *
 * Opens (creating) a store, makes two tables, funds accounts spread over
 * both, then runs concurrent transfers from several threads through
 * mrtx_run, each moving money between two rows (often in different tables)
 * and appending an audit entry to a third row.  At the end it checks the
 * invariant every bank demo must keep: the total is unchanged.
 *
 *   usage: mrtx-demo STORE_DIR [TRANSFERS_PER_THREAD]
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrtx.h"

#define NACCOUNTS 8
#define NTHREADS 4
#define START_BALANCE 1000

static const char *const tables[2] = { "checking", "savings" };

struct transfer {
	int from, to;
	int64_t amount;
	unsigned seed;
};

static void account(int i, const char **table, char row[16])
{
	*table = tables[i % 2];
	snprintf(row, 16, "acct-%02d", i);
}

/*
 * Amounts are stored as decimal text, so `mrtx get`/`mrtx scan` show them as
 * numbers.  Anything else in a balance cell is MRTX_ECORRUPT.
 */
static int parse_amount(mrtx_bytes v, int64_t *out)
{
	char num[24], *end;

	if (v.size == 0 || v.size >= sizeof(num))
		return MRTX_ECORRUPT;
	memcpy(num, v.data, v.size);
	num[v.size] = '\0';
	errno = 0;
	*out = strtoll(num, &end, 10);
	return errno || *end ? MRTX_ECORRUPT : 0;
}

static int read_balance(mrtx_txn *txn, int i, int64_t *out)
{
	const char *table;
	char row[16];
	mrtx_bytes v;
	int rc;

	account(i, &table, row);
	rc = mrtx_get(txn, table, MRTX_CSTR(row), "bal", MRTX_CSTR("v"), &v);
	if (rc)
		return rc;
	return parse_amount(v, out);
}

static int write_balance(mrtx_txn *txn, int i, int64_t bal)
{
	const char *table;
	char row[16], num[24];

	account(i, &table, row);
	snprintf(num, sizeof(num), "%" PRId64, bal);
	return mrtx_put(txn, table, MRTX_CSTR(row), "bal", MRTX_CSTR("v"), MRTX_CSTR(num));
}

/* One transfer: read two balances, move money if covered, log it. */
static int do_transfer(mrtx_txn *txn, void *payload)
{
	struct transfer *t = payload;
	int64_t a, b;
	char q[32], num[24];
	int rc;

	if ((rc = read_balance(txn, t->from, &a)) || (rc = read_balance(txn, t->to, &b)))
		return rc;
	if (a < t->amount)
		return 0; /* insufficient funds: commit a read-only txn */
	if ((rc = write_balance(txn, t->from, a - t->amount)) ||
	    (rc = write_balance(txn, t->to, b + t->amount)))
		return rc;
	snprintf(q, sizeof(q), "%d->%d", t->from, t->to);
	snprintf(num, sizeof(num), "%" PRId64, t->amount);
	return mrtx_put(txn, "savings", MRTX_CSTR("audit"), "log", MRTX_CSTR(q),
	                MRTX_CSTR(num));
}

struct worker {
	mrtx_db *db;
	int n, id, failed;
	long committed;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct transfer t;

	t.seed = 1234u + (unsigned)w->id;
	for (int i = 0; i < w->n; i++) {
		int rc;

		t.from = rand_r(&t.seed) % NACCOUNTS;
		t.to = (t.from + 1 + rand_r(&t.seed) % (NACCOUNTS - 1)) % NACCOUNTS;
		t.amount = 1 + rand_r(&t.seed) % 100;
		rc = mrtx_run(w->db, do_transfer, &t, 50);
		if (rc) {
			fprintf(stderr, "mrtx-demo: transfer: %s: %s\n", mrtx_strerror(rc),
			        mrtx_errmsg());
			w->failed = 1;
			return NULL;
		}
		w->committed++;
	}
	return NULL;
}

static int fund(mrtx_txn *txn, void *payload)
{
	(void)payload;
	for (int i = 0; i < NACCOUNTS; i++) {
		int rc = write_balance(txn, i, START_BALANCE);
		if (rc)
			return rc;
	}
	return 0;
}

struct total {
	int64_t sum;
};

static int sum_all(mrtx_txn *txn, void *payload)
{
	struct total *t = payload;

	t->sum = 0;
	for (int i = 0; i < NACCOUNTS; i++) {
		int64_t b;
		int rc = read_balance(txn, i, &b);

		if (rc)
			return rc;
		printf("  %-8s acct-%02d  %6" PRId64 "\n", tables[i % 2], i, b);
		t->sum += b;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const fams[] = { "bal", "log" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	struct total tot;
	mrtx_db *db;
	long committed = 0;
	int n = argc > 2 ? atoi(argv[2]) : 200, rc, failed = 0;

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: mrtx-demo STORE_DIR [TRANSFERS_PER_THREAD]\n");
		return 2;
	}
	o.durability = MRTX_NOMETASYNC;
	if ((rc = mrtx_open(&db, argv[1], &o))) {
		fprintf(stderr, "mrtx-demo: open: %s\n", mrtx_errmsg());
		return 1;
	}
	for (int i = 0; i < 2; i++)
		if ((rc = mrtx_create_table(db, tables[i], fams, 2))) {
			fprintf(stderr, "mrtx-demo: create-table: %s\n", mrtx_errmsg());
			return 1;
		}
	if ((rc = mrtx_run(db, fund, NULL, 10))) {
		fprintf(stderr, "mrtx-demo: fund: %s\n", mrtx_errmsg());
		return 1;
	}
	printf("funded %d accounts in 2 tables with %d each; running %d threads x %d "
	       "transfers\n", NACCOUNTS, START_BALANCE, NTHREADS, n);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ db, n, i, 0, 0 };
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		committed += w[i].committed;
		failed |= w[i].failed;
	}
	if ((rc = mrtx_run(db, sum_all, &tot, 10))) {
		fprintf(stderr, "mrtx-demo: audit: %s\n", mrtx_errmsg());
		return 1;
	}
	printf("%ld transfers committed; total %" PRId64 " (expected %d): %s\n", committed,
	       tot.sum, NACCOUNTS * START_BALANCE,
	       tot.sum == NACCOUNTS * START_BALANCE && !failed ? "OK" : "BROKEN");
	mrtx_close(db);
	return tot.sum == NACCOUNTS * START_BALANCE && !failed ? 0 : 1;
}
