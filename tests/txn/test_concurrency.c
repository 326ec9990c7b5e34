/*
 * test_concurrency.c - many writers on the same rows: processes and threads
 * incrementing shared counters through mrtx_run.  Serializability means no
 * increment is lost: every counter ends at exactly writers * N.
 */
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "txn/admin_test.h"

#define B(s) MRTX_CSTR(s)
#define WRITERS 4
#define N 200

static const struct {
	const char *table, *row;
} CTRS[3] = { { "c1", "x" }, { "c1", "y" }, { "c2", "x" } };

static int read_ctr(mrtx_txn *txn, int i, long *out)
{
	char buf[32];
	mrtx_bytes v;
	int rc = mrtx_get(txn, CTRS[i].table, B(CTRS[i].row), "f", B("n"), &v);

	if (rc == MRTX_NOTFOUND) {
		*out = 0;
		return 0;
	}
	if (rc)
		return rc;
	if (v.size == 0 || v.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, v.data, v.size);
	buf[v.size] = '\0';
	*out = strtol(buf, NULL, 10);
	return 0;
}

/* One transaction: read all three counters, write each plus one.  They
 * always move together, but reads are not a snapshot: a commit between two
 * reads shows unequal values.  Such a transaction cannot commit (validation
 * sees the first row changed); retry it at once. */
static int incr_all(mrtx_txn *txn, void *payload)
{
	long v[3];
	int rc;

	(void)payload;
	for (int i = 0; i < 3; i++)
		if ((rc = read_ctr(txn, i, &v[i])))
			return rc;
	if (v[0] != v[1] || v[1] != v[2])
		return MRTX_CONFLICT;
	for (int i = 0; i < 3; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%ld", v[i] + 1);
		if ((rc = mrtx_put(txn, CTRS[i].table, B(CTRS[i].row), "f", B("n"), B(buf))))
			return rc;
	}
	return 0;
}

static int incr_n(mrtx_db *db, int n)
{
	for (int i = 0; i < n; i++) {
		int rc = mrtx_run(db, incr_all, NULL, 100000);

		if (rc) {
			fprintf(stderr, "increment %d: %s (%s)\n", i, mrtx_strerror(rc), mrtx_errmsg());
			return rc;
		}
	}
	return 0;
}

static mrtx_db *open_store(const char *path)
{
	mrtx_options o = MRTX_OPTIONS_INIT;

	o.durability = MRTX_NOSYNC;
	return tu_open(path, &o);
}

static void check_counters(mrtx_db *db, long want)
{
	mrtx_txn *txn;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 0; i < 3; i++) {
		long v;

		assert_int_equal(read_ctr(txn, i, &v), 0);
		if (v != want)
			fail_msg("%s/%s = %ld, want %ld", CTRS[i].table, CTRS[i].row, v, want);
	}
	mrtx_abort(txn);
}

static mrtx_db *fresh(char **path, const char *tag)
{
	mrtx_db *db = tu_open_fresh(tag, path, NULL);

	assert_non_null(db);
	assert_int_equal(tu_table(db, "c1", "f", NULL), 0);
	assert_int_equal(tu_table(db, "c2", "f", NULL), 0);
	return db;
}

/* Checks I3 (DESIGN §10). */
static void test_processes(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path, "conc-proc");
	pid_t pids[WRITERS];

	(void)state;
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			/* the child opens the store itself */
			mrtx_db *cdb = open_store(path);

			_exit(cdb && incr_n(cdb, N) == 0 ? 0 : 1);
		}
	}
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(tu_wait(pids[w]), 0);
	check_counters(db, (long)WRITERS * N);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static void *thread_main(void *arg)
{
	return (void *)(intptr_t)incr_n(arg, N);
}

/* Checks I3 (DESIGN §10). */
static void test_threads(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path, "conc-thr");
	pthread_t th[WRITERS];

	(void)state;
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(pthread_create(&th[w], NULL, thread_main, db), 0);
	{
		intptr_t bad = 0;

		/* join every thread before any assertion can leave the test */
		for (int w = 0; w < WRITERS; w++) {
			void *ret = NULL;

			pthread_join(th[w], &ret);
			bad |= (intptr_t)ret;
		}
		assert_int_equal(bad, 0);
	}
	check_counters(db, (long)WRITERS * N);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * The same counters in MRTX_SYNC mode, threads and processes at once: the
 * path where a commit's meta page is flushed after LMDB's writer lock, by
 * the next writer's data sync or its own (lmdb_durable), with group
 * commits of one-phase transactions.  (Correctness only; TSan runs it.)
 */
#define SYNC_N 40

static mrtx_db *open_sync(const char *path)
{
	mrtx_options o = MRTX_OPTIONS_INIT; /* MRTX_SYNC */

	return tu_open(path, &o);
}

static void *sync_thread(void *arg)
{
	return (void *)(intptr_t)incr_n(arg, SYNC_N);
}

static void test_sync_mode(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path, "conc-sync"), *sdb;
	pthread_t th[WRITERS];
	pid_t pid;
	intptr_t bad = 0;

	(void)state;
	mrtx_close(db); /* (fresh opened it nosync; one environment per process) */
	assert_non_null(sdb = open_sync(path));
	if ((pid = fork()) == 0) {
		mrtx_db *cdb = open_sync(path);

		_exit(cdb && incr_n(cdb, SYNC_N) == 0 ? 0 : 1);
	}
	assert_true(pid > 0);
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(pthread_create(&th[w], NULL, sync_thread, sdb), 0);
	for (int w = 0; w < WRITERS; w++) {
		void *ret = NULL;

		pthread_join(th[w], &ret);
		bad |= (intptr_t)ret;
	}
	assert_int_equal(bad, 0);
	assert_int_equal(tu_wait(pid), 0);
	check_counters(sdb, (long)(WRITERS + 1) * SYNC_N);
	mrtx_close(sdb);
	tu_rmrf(path);
	free(path);
}

/* Threads and processes at once, each thread with its own mrtx_db handle on
 * the same directory (one shared environment per process). */
static void test_mixed(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path, "conc-mix");
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *cdb = open_store(path);

		_exit(cdb && incr_n(cdb, N / 2) == 0 ? 0 : 1);
	}
	{
		pthread_t th[2];
		mrtx_db *dbs[2];

		for (int w = 0; w < 2; w++) {
			assert_non_null(dbs[w] = open_store(path));
			assert_int_equal(pthread_create(&th[w], NULL, thread_main, dbs[w]), 0);
		}
		intptr_t bad = 0;

		for (int w = 0; w < 2; w++) {
			void *ret = NULL;

			pthread_join(th[w], &ret);
			bad |= (intptr_t)ret;
			mrtx_close(dbs[w]);
		}
		assert_int_equal(bad, 0);
	}
	assert_int_equal(tu_wait(pid), 0);
	check_counters(db, 2L * N + N / 2);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* ------------------------------------------------- bank under SIGKILL */

static const struct {
	const char *table, *row;
} ACCTS[4] = { { "c1", "a0" }, { "c1", "a1" }, { "c2", "a0" }, { "c2", "a9" } };

typedef struct transfer {
	int from, to;
	long amount;
} transfer;

static int read_acct(mrtx_txn *txn, int i, long *out)
{
	char buf[32];
	mrtx_bytes v;
	int rc = mrtx_get(txn, ACCTS[i].table, B(ACCTS[i].row), "f", B("bal"), &v);

	if (rc)
		return rc;
	if (v.size == 0 || v.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, v.data, v.size);
	buf[v.size] = '\0';
	*out = strtol(buf, NULL, 10);
	return 0;
}

static int write_acct(mrtx_txn *txn, int i, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	return mrtx_put(txn, ACCTS[i].table, B(ACCTS[i].row), "f", B("bal"), B(buf));
}

static int do_transfer(mrtx_txn *txn, void *payload)
{
	const transfer *t = payload;
	long a, b;
	int rc;

	if ((rc = read_acct(txn, t->from, &a)) || (rc = read_acct(txn, t->to, &b)) ||
	    (rc = write_acct(txn, t->from, a - t->amount)) ||
	    (rc = write_acct(txn, t->to, b + t->amount)))
		return rc;
	return 0;
}

/* A writer that transfers until killed; some arm a crash failpoint. */
/* A bank writer; ready (or -1) gets a byte once its handle is open (and
 * so, on RADOS, its client registered for fencing). */
static void bank_writer(const char *path, int idx, int ready)
{
	static const char *const fps[] = { "commit.after_prewrite", "commit.after_validate",
		                           "commit.after_point", "commit.after_secondaries",
		                           "store.after_row_write", "recover.after_abort",
		                           "recover.after_forward" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;
	unsigned seed = (unsigned)getpid() * 2654435761u;

	o.durability = MRTX_NOSYNC;
	o.lock_ttl_ms = 600000; /* only owner death may free a lock quickly */
	if (mrtx__open_knobs(&db, path, &o, &(mrtx__knobs){ idx % 2, 0, 0 }))
		_exit(2);
	if (ready >= 0 && (write(ready, "r", 1) != 1 || close(ready)))
		_exit(4);
	if (rand_r(&seed) % 2) {
		char spec[96];

		snprintf(spec, sizeof(spec), "%s=kill@%d", fps[rand_r(&seed) % 7],
		         1 + rand_r(&seed) % 40);
		if (mrtx_failpoints_set(spec))
			_exit(3);
	}
	for (;;) {
		transfer t;
		int rc;

		t.from = rand_r(&seed) % 4;
		t.to = (t.from + 1 + rand_r(&seed) % 3) % 4;
		t.amount = 1 + rand_r(&seed) % 10;
		rc = mrtx_run(db, do_transfer, &t, 1000);
		if (rc && rc != MRTX_CONFLICT && rc != MRTX_ELOCKED && rc != MRTX_EUNKNOWN) {
			fprintf(stderr, "bank writer: %s (%s)\n", mrtx_strerror(rc), mrtx_errmsg());
			_exit(5);
		}
	}
}

static void test_bank_with_kills(void **state)
{
	char *path;
	mrtx_db *db = fresh(&path, "conc-bank");
	pid_t pids[3];
	unsigned seed = 12345;
	mrtx_txn *txn;
	long sum = 0;
	int bad = 0;

	(void)state;
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(write_acct(txn, i, 100), 0);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	for (int w = 0; w < 3; w++) {
		if ((pids[w] = fork()) == 0)
			bank_writer(path, w, -1);
		assert_true(pids[w] > 0);
	}
	for (int round = 0; round < 40; round++) {
		int w = (int)(rand_r(&seed) % 3), st;

		usleep(2000 + rand_r(&seed) % 30000);
		kill(pids[w], SIGKILL);
		st = tu_wait(pids[w]);
		/* killed by us or by its failpoint; anything else is a failure */
		bad |= st != 128 + SIGKILL;
		if ((pids[w] = fork()) == 0)
			bank_writer(path, w + 3 * (round + 1), -1);
		assert_true(pids[w] > 0);
	}
	for (int w = 0; w < 3; w++) {
		kill(pids[w], SIGKILL);
		bad |= tu_wait(pids[w]) != 128 + SIGKILL;
	}
	/* one more writer, killed once its handle is open: a dead owner that
	 * no live writer can have fenced, whatever the machine's speed (the
	 * others' may all have been fenced by the writers that met their
	 * locks, or killed before they registered) */
	{
		int ready[2];
		char c;

		assert_int_equal(pipe(ready), 0);
		if ((pids[0] = fork()) == 0) {
			close(ready[0]);
			bank_writer(path, 3 * 41 + 1, ready[1]);
		}
		assert_true(pids[0] > 0);
		close(ready[1]);
		assert_int_equal(read(ready[0], &c, 1), 1);
		close(ready[0]);
		kill(pids[0], SIGKILL);
		bad |= tu_wait(pids[0]) != 128 + SIGKILL;
	}
	assert_int_equal(bad, 0);
	/* On RADOS a killed writer's requests that had reached the cluster may
	 * still be applied after its process is gone.  A sweep first fences
	 * the clients of every dead owner (the OSD blocklist: rados_fence.c),
	 * so none lands after it: from here on the check is exact. */
	{
		recover_opts ro = { 0, 0, 0 };
		recover_stats st;

		assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
		if (tu_rados()) {
			assert_true(st.fenced > 0);
			assert_int_equal(st.fence_denied, 0);
		}
	}
	/* Money is conserved, whatever was cut short, and every lock is settled. */
	{
		recover_opts ro = { 0, 0, 1 };
		recover_stats st;
		int rc = 0;

		sum = 0;
		assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
		for (int i = 0; i < 4; i++) {
			long v;

			if ((rc = read_acct(txn, i, &v)) != 0)
				break;
			fprintf(stderr, "bank: %s/%s = %ld\n", ACCTS[i].table, ACCTS[i].row, v);
			sum += v;
		}
		if (rc == 0)
			rc = mrtx_commit(txn);
		else
			mrtx_abort(txn);
		if (rc != MRTX_OK)
			fprintf(stderr, "bank: check: %s (%s)\n", mrtx_strerror(rc), mrtx_errmsg());
		assert_int_equal(rc, MRTX_OK);
		assert_int_equal(sum, 400);
		assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
		assert_int_equal(st.errors, 0);
		assert_int_equal(st.locks_seen, 0);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* --------------------------------------- tails without a secondary */

/*
 * Two-phase commits that each read one row and write another: the tail of
 * each (tail.c) has no secondary, only its primary's release.  Over RADOS
 * the handle's tail thread runs such tails in batches.  With
 * commit.after_secondaries=error no tail ever reaches the release list,
 * so a batch of them has not one op to send, and the worker never sized
 * its buffer for a batch: the batch must still run (UBSan found a copy of
 * zero ops into that missing buffer).  Every write stays visible: the
 * next transaction on the row rolls forward the primary a tail left
 * COMMITTED, and the last ones are read at the end.
 */
#define TAIL_THREADS 4
#define TAIL_N 40

typedef struct tail_writer {
	mrtx_db *db;
	int id, i;
} tail_writer;

static int read_one_write_one(mrtx_txn *txn, void *payload)
{
	const tail_writer *t = payload;
	char row[16], val[16];
	mrtx_bytes v;
	int rc = mrtx_get(txn, "c1", B("shared"), "f", B("n"), &v);

	if (rc != 0 && rc != MRTX_NOTFOUND)
		return rc;
	snprintf(row, sizeof(row), "w%d", t->id);
	snprintf(val, sizeof(val), "%d", t->i);
	return mrtx_put(txn, "c2", B(row), "f", B("n"), B(val));
}

static void *tail_writer_main(void *arg)
{
	tail_writer *t = arg;

	for (t->i = 0; t->i < TAIL_N; t->i++) {
		int rc = mrtx_run(t->db, read_one_write_one, t, 1000);

		if (rc) {
			fprintf(stderr, "writer %d, commit %d: %s (%s)\n", t->id, t->i,
			        mrtx_strerror(rc), mrtx_errmsg());
			return (void *)(intptr_t)1;
		}
	}
	return NULL;
}

/* Checks I8 (DESIGN §10). */
static void test_tails_without_secondaries(void **state)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	char *path;
	mrtx_db *db;
	mrtx_txn *txn;
	pthread_t th[TAIL_THREADS];
	tail_writer tw[TAIL_THREADS];
	intptr_t bad = 0;
	long hits;

	(void)state;
	o.durability = MRTX_NOSYNC;
	assert_non_null(db = tu_open_fresh_k("conc-tails", &path, &o, &(mrtx__knobs){ 0, 1, 0 }));
	assert_int_equal(tu_table(db, "c1", "f", NULL), 0);
	assert_int_equal(tu_table(db, "c2", "f", NULL), 0);
	assert_int_equal(mrtx_failpoints_set("commit.after_secondaries=error"), MRTX_OK);
	for (int w = 0; w < TAIL_THREADS; w++) {
		tw[w].db = db;
		tw[w].id = w;
		assert_int_equal(pthread_create(&th[w], NULL, tail_writer_main, &tw[w]), 0);
	}
	for (int w = 0; w < TAIL_THREADS; w++) {
		void *ret = NULL;

		pthread_join(th[w], &ret);
		bad |= (intptr_t)ret;
	}
	assert_int_equal(mrtx_flush(db), MRTX_OK); /* every tail ran */
	hits = mrtx_failpoint_hits("commit.after_secondaries");
	assert_int_equal(mrtx_failpoints_set(NULL), MRTX_OK);
	assert_int_equal(bad, 0);
	/* once per tail */
	assert_int_equal(hits, TAIL_THREADS * TAIL_N);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int w = 0; w < TAIL_THREADS; w++) {
		char row[16], last[16];
		mrtx_bytes v;

		snprintf(row, sizeof(row), "w%d", w);
		snprintf(last, sizeof(last), "%d", TAIL_N - 1);
		assert_int_equal(mrtx_get(txn, "c2", B(row), "f", B("n"), &v), MRTX_OK);
		assert_int_equal(v.size, strlen(last));
		assert_memory_equal(v.data, last, v.size);
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_processes),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_sync_mode),
		cmocka_unit_test(test_mixed),
		cmocka_unit_test(test_bank_with_kills),
		cmocka_unit_test(test_tails_without_secondaries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
