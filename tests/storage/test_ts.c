/*
 * test_ts.c - the store's timestamp source (store_ts_next; LMDB:
 * storage/lmdb/lmdb_ts.c): strictly increasing within a caller, unique and
 * in real-time order across threads and processes, above the floor, above
 * everything handed before a close, a lost page file or a reboot (another
 * boot id), and a read-only handle that reaches the ceiling is refused
 * rather than handed a timestamp nobody stored a bound for.  The first
 * three run on RADOS too (MRTX_TEST_STORE=rados, rados_suite), with fewer
 * timestamps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "txn/admin_test.h"
#include "lockcf/lock.h"

#define PER 20000

static uint64_t next_ts(mrtx_db *db, uint64_t floor)
{
	uint64_t t = 0;
	int rc = store_ts_next(mrtx__db_store(db), floor, &t);

	if (rc)
		print_error("store_ts_next: %d %s\n", rc, mrtx_errmsg());
	assert_int_equal(rc, 0);
	return t;
}

static mrtx_db *fresh(char **path)
{
	return tu_open_fresh("ts", path, NULL);
}

static void done(mrtx_db *db, char *path)
{
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* Timestamps a caller takes in the multi-caller tests: a RADOS batch is a
 * round trip to the cluster. */
static int per(void)
{
	return tu_rados() ? 400 : PER;
}

static void test_one_caller(void **state)
{
	char *path;
	mrtx_db *db;
	uint64_t prev = 0, now, t;

	(void)state;
	db = fresh(&path);
	now = mrtx__now_us();
	for (int i = 0; i < per(); i++) {
		t = next_ts(db, 0);
		assert_true(t > prev);
		prev = t;
	}
	/* wall-clock microseconds where the clock allows */
	assert_true(prev >= now);
	assert_true(prev < mrtx__now_us() + 2000000u);
	/* the floor */
	t = next_ts(db, prev + 5000000u);
	assert_true(t >= prev + 5000000u);
	assert_true(next_ts(db, 0) > t);
	assert_int_equal(store_ts_next(mrtx__db_store(db), UINT64_MAX - 5, &t), MRTX_EINVAL);
	done(db, path);
}

typedef struct tctx {
	mrtx_db *db;
	uint64_t *out;
} tctx;

static void *taker(void *arg)
{
	tctx *c = arg;

	for (int i = 0; i < per(); i++)
		if (store_ts_next(mrtx__db_store(c->db), 0, &c->out[i])) {
			fprintf(stderr, "store_ts_next: %s\n", mrtx_errmsg());
			c->out[i] = 0;
		}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* every value nonzero and distinct */
static void assert_unique(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	assert_true(v[0] != 0);
	for (size_t i = 1; i < n; i++)
		if (v[i] == v[i - 1]) {
			print_error("timestamp %llu handed twice\n", (unsigned long long)v[i]);
			fail();
		}
}

static void test_threads_and_processes(void **state)
{
	enum { T = 4, P = 3 };
	pthread_t th[T];
	tctx c[T];
	uint64_t *all;
	char *path;
	mrtx_db *db;
	pid_t pid[P];

	(void)state;
	db = fresh(&path);
	/* processes write theirs to shared memory; this one's threads too */
	all = mmap(NULL, sizeof(uint64_t) * PER * (T + P), PROT_READ | PROT_WRITE,
	           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(all != MAP_FAILED);
	for (int p = 0; p < P; p++) {
		pid[p] = fork();
		assert_true(pid[p] >= 0);
		if (pid[p] == 0) {
			mrtx_db *cdb = tu_open(path, NULL);
			tctx cc = { cdb, all + (size_t)(T + p) * PER };

			if (!cdb)
				_exit(2);
			taker(&cc);
			for (int i = 1; i < per(); i++)
				if (cc.out[i] <= cc.out[i - 1])
					_exit(3);
			mrtx_close(cdb);
			_exit(0);
		}
	}
	for (int i = 0; i < T; i++) {
		c[i] = (tctx){ db, all + (size_t)i * PER };
		assert_int_equal(pthread_create(&th[i], NULL, taker, &c[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		for (int j = 1; j < per(); j++)
			assert_true(c[i].out[j] > c[i].out[j - 1]);
	}
	for (int p = 0; p < P; p++)
		assert_int_equal(tu_wait(pid[p]), 0);
	/* (a RADOS run fills only the first per() of each caller's PER) */
	for (int i = 1; i < T + P; i++)
		memmove(all + (size_t)i * per(), all + (size_t)i * PER, sizeof(uint64_t) * per());
	assert_unique(all, (size_t)per() * (T + P));
	/* near the clock: racing handles leave gaps, not a runaway counter
	 * (sorted: the last is the largest) */
	assert_true(all[(size_t)per() * (T + P) - 1] < mrtx__now_us() + 2000000u);
	munmap(all, sizeof(uint64_t) * PER * (T + P));
	done(db, path);
}

/* A call that begins after another returned, in another process, gets
 * more: parent a, then child b (told a), then parent c.
 * Checks I13 (DESIGN §10). */
static void test_real_time_order(void **state)
{
	int down[2], up[2];
	uint64_t a, b = 0, c;
	char *path;
	mrtx_db *db;
	pid_t pid;

	(void)state;
	db = fresh(&path);
	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *cdb = tu_open(path, NULL);
		uint64_t got, mine;

		close(down[1]);
		close(up[0]);

		for (int i = 0; i < 50; i++) {
			if (!cdb || read(down[0], &got, sizeof(got)) != sizeof(got))
				_exit(2);
			if (store_ts_next(mrtx__db_store(cdb), 0, &mine) || mine <= got)
				_exit(3);
			if (write(up[1], &mine, sizeof(mine)) != sizeof(mine))
				_exit(4);
		}
		mrtx_close(cdb);
		_exit(0);
	}
	close(down[0]); /* (a child that fails ends the pipes: no hang) */
	close(up[1]);
	/* ahead of the clock first: the order must come from the shared
	 * counter, not from time passing between the calls */
	(void)next_ts(db, mrtx__now_us() + 3600u * 1000000u);
	for (int i = 0; i < 50; i++) {
		a = next_ts(db, 0);
		assert_int_equal(write(down[1], &a, sizeof(a)), sizeof(a));
		assert_int_equal(read(up[0], &b, sizeof(b)), sizeof(b));
		assert_true(b > a);
		c = next_ts(db, 0);
		assert_true(c > b);
	}
	assert_int_equal(tu_wait(pid), 0);
	done(db, path);
}

static char *page_file(const char *path)
{
	char *f;

	assert_true(asprintf(&f, "%s/ts.shm", path) > 0);
	return f;
}

/* The page's layout (lmdb_ts.c): magic, boot id, store id, handed, ceiling. */
enum { PG_BOOT = 8, PG_STORE = 24, PG_HANDED = 40, PG_CEILING = 48, PG_BASE_TS = 64 };

/* Write (or, out non-NULL, read) n bytes of the page file at off. */
static void page_io(const char *pf, long off, const void *in, void *out, size_t n)
{
	FILE *f = fopen(pf, "r+b");

	assert_non_null(f);
	assert_int_equal(fseek(f, off, SEEK_SET), 0);
	if (out)
		assert_int_equal(fread(out, 1, n, f), n);
	else
		assert_int_equal(fwrite(in, 1, n, f), n);
	fclose(f);
}

/* Open the store, take a timestamp, close: it must be above min. */
static uint64_t reopen_next_above(const char *path, uint64_t min)
{
	mrtx_db *db = tu_open(path, NULL);
	uint64_t t;

	assert_non_null(db);
	t = next_ts(db, 0);
	assert_true(t > min);
	mrtx_close(db);
	return t;
}

/* The ring of snapshot timestamps after the page's header (lmdb_ts.c):
 * TS_RING slots of { txnid word, ts word }, ts's top bit "unsettled". */
enum { PG_RING = 4096, PG_RING_SLOTS = 4096 };
#define PG_UNSETTLED ((uint64_t)1 << 63)

/* Damage to the page never shows a wrong value nor makes the store
 * unopenable.  One bit, a ring entry's "unsettled" mark cleared under a
 * committed transaction whose secondary is still PREWRITTEN, would let a
 * read skip that row's lock and show the value before the commit: the
 * entry no longer matches its transaction and the read meets the lock.  A
 * counter past any timestamp is refused at open; one made to leap far
 * ahead raises the stored ceiling a minute at a time, never to where the
 * store would open nowhere. */
static void test_damaged_page(void **state)
{
	char *path, *pf;
	mrtx_db *db;
	mrtx_txn *txn;
	uint64_t h, c, cleared = 0;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path);
	pf = page_file(path);
	assert_int_equal(tu_table(db, "t", "f", NULL), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "a", "f:", "old"), MRTX_OK);
	assert_int_equal(tu_put_str(db, "t", "b", "f:", "old"), MRTX_OK);
	mrtx_close(db);
	assert_int_equal(mrtx__open_knobs(&db, path, NULL, &(mrtx__knobs){ 0, 1, 0 }), MRTX_OK);
	/* committed, its secondary left PREWRITTEN */
	assert_int_equal(mrtx_failpoints_set("commit.after_point=error"), MRTX_OK);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t", MRTX_CSTR("a"), "f", MRTX_CSTR(""), MRTX_CSTR("new")),
	                 MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t", MRTX_CSTR("b"), "f", MRTX_CSTR(""), MRTX_CSTR("new")),
	                 MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	assert_int_equal(mrtx_failpoints_set(NULL), MRTX_OK);
	for (long i = 0; i < PG_RING_SLOTS; i++) {
		uint64_t slot[2];

		page_io(pf, PG_RING + 16 * i, NULL, slot, sizeof(slot));
		if (slot[0] && (slot[1] & PG_UNSETTLED)) {
			slot[1] &= ~PG_UNSETTLED;
			page_io(pf, PG_RING + 16 * i + 8, &slot[1], NULL, 8);
			cleared++;
		}
	}
	assert_true(cleared > 0);
	assert_true(tu_cell_is(db, "t", MRTX_CSTR("a"), "f", MRTX_CSTR(""), MRTX_CSTR("new"), NULL));
	assert_true(tu_cell_is(db, "t", MRTX_CSTR("b"), "f", MRTX_CSTR(""), MRTX_CSTR("new"), NULL));
	mrtx_close(db);

	/* a counter past any timestamp: refused, named; the file removed,
	 * the store opens */
	h = (uint64_t)1 << 62;
	page_io(pf, PG_HANDED, &h, NULL, 8);
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ECORRUPT);
	assert_null(db);
	assert_non_null(strstr(mrtx_errmsg(), "ts.shm is damaged"));
	assert_int_equal(unlink(pf), 0);

	/* a base (the timestamp of a view older than the ring) past the
	 * counter: refused, named, where it would have stamped snapshots (and
	 * gc's safe point) in the future */
	db = tu_open(path, NULL);
	assert_non_null(db);
	(void)next_ts(db, 0);
	mrtx_close(db);
	page_io(pf, PG_HANDED, NULL, &h, 8);
	h += (uint64_t)1 << 40; /* (about 12 days) */
	page_io(pf, PG_BASE_TS, &h, NULL, 8);
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ECORRUPT);
	assert_null(db);
	assert_non_null(strstr(mrtx_errmsg(), "its base"));
	assert_int_equal(unlink(pf), 0);

	/* a counter leapt 36,000 years ahead: raises follow it by a minute
	 * each, commits go on, and so does the store after a reboot */
	db = tu_open(path, NULL);
	assert_non_null(db);
	(void)next_ts(db, 0);
	h = (uint64_t)1 << 60;
	page_io(pf, PG_HANDED, &h, NULL, 8);
	for (int i = 0; i < 4; i++) {
		page_io(pf, PG_CEILING, NULL, &c, 8);
		assert_true(next_ts(db, c) >= c); /* (at the ceiling: a raise) */
	}
	assert_int_equal(tu_put_str(db, "t", "a", "f:", "later"), MRTX_OK);
	page_io(pf, PG_CEILING, NULL, &c, 8);
	assert_true(c < h + 10u * 60u * 1000000u);
	mrtx_close(db);
	assert_int_equal(unlink(pf), 0); /* (a reboot: from the stored ceiling) */
	db = tu_open(path, NULL);
	assert_non_null(db);
	assert_true(tu_cell_is(db, "t", MRTX_CSTR("a"), "f", MRTX_CSTR(""), MRTX_CSTR("later"),
	                       NULL));
	assert_int_equal(tu_put_str(db, "t", "b", "f:", "after"), MRTX_OK);
	free(pf);
	done(db, path);
}

/* Above everything handed before: across a close, a lost page file, a
 * page from another boot, and a page pushed past the stored ceiling. */
static void test_restarts(void **state)
{
	char *path, *pf;
	mrtx_db *db;
	uint64_t max, c, h;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path);
	pf = page_file(path);
	/* far ahead of the clock: the ceiling is raised there */
	max = next_ts(db, mrtx__now_us() + 3600u * 1000000u);
	mrtx_close(db);

	/* reopen */
	max = reopen_next_above(path, max);

	/* the page's file lost (as after a crash): from the stored ceiling */
	assert_int_equal(unlink(pf), 0);
	max = reopen_next_above(path, max);

	/* a page of another boot (its boot id zeroed) with its counter zeroed:
	 * the stored ceiling still bounds */
	page_io(pf, PG_BOOT, (uint8_t[16]){ 0 }, NULL, 16);
	page_io(pf, PG_HANDED, (uint8_t[8]){ 0 }, NULL, 8);
	max = reopen_next_above(path, max);

	/* a page of another boot whose counter is past the stored ceiling
	 * (the page reached the disk, the raise's sync had not -- or the
	 * ceiling is read from a snapshot older than a live process's raise):
	 * the counter is kept, never lowered */
	page_io(pf, PG_CEILING, NULL, &c, 8);
	h = c + 10u * 1000000u;
	page_io(pf, PG_BOOT, (uint8_t[16]){ 0 }, NULL, 16);
	page_io(pf, PG_HANDED, &h, NULL, 8);
	max = reopen_next_above(path, h);

	/* another store's page (its store id changed): refused, not reset --
	 * by the open of a writer, which maps it to record its commits */
	page_io(pf, PG_STORE, "XXXXXXXXXXXXXXXX", NULL, 16);
	db = NULL;
	assert_int_equal(mrtx_open(&db, path, NULL), MRTX_ECORRUPT);
	assert_null(db);
	assert_non_null(strstr(mrtx_errmsg(), "another store"));
	/* removed while the store is closed: from the stored ceiling */
	assert_int_equal(unlink(pf), 0);
	(void)reopen_next_above(path, max);
	free(pf);
	tu_rmrf(path);
	free(path);
}

static void test_read_only(void **state)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	char *path;
	mrtx_db *db, *ro;
	uint64_t t, u, far;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path);
	/* a writer made the page and its ceiling, 10 s ahead of the clock:
	 * the reader's first call is well below it */
	t = next_ts(db, mrtx__now_us() + 10u * 1000000u);
	mrtx_close(db);
	o.read_only = 1;
	ro = tu_open(path, &o);
	assert_non_null(ro);
	u = next_ts(ro, 0);
	assert_true(u > t);
	/* past the ceiling a read-only handle may not go */
	far = u + 3600u * 1000000u;
	assert_int_equal(store_ts_next(mrtx__db_store(ro), far, &t), MRTX_EREADONLY);
	assert_int_equal(t, 0);
	mrtx_close(ro);
	/* a writer raises it; then a reader may */
	db = tu_open(path, NULL);
	t = next_ts(db, far);
	assert_true(t >= far);
	mrtx_close(db);
	ro = tu_open(path, &o);
	assert_non_null(ro);
	assert_true(next_ts(ro, 0) > t);
	mrtx_close(ro);
	tu_rmrf(path);
	free(path);
}

/* RADOS: a close and reopen keeps counting up; a read-only handle never
 * writes, so it takes none. */
static void test_rados_reopen_read_only(void **state)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	char *path;
	mrtx_db *db;
	uint64_t t, u = 1;

	(void)state;
	if (!tu_rados())
		skip();
	db = fresh(&path);
	t = next_ts(db, mrtx__now_us() + 3600u * 1000000u);
	mrtx_close(db);
	db = tu_open(path, NULL);
	assert_true(next_ts(db, 0) > t);
	mrtx_close(db);
	o.read_only = 1;
	db = tu_open(path, &o);
	assert_non_null(db);
	assert_int_equal(store_ts_next(mrtx__db_store(db), 0, &u), MRTX_EREADONLY);
	assert_int_equal(u, 0);
	done(db, path);
}

/* A handle opened by a relative path finds the same page after the
 * process changes directory (the path is resolved at open). */
static void test_chdir(void **state)
{
	char *path, *slash, cwd[4096];
	mrtx_db *db, *rel;
	uint64_t a;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh(&path);
	a = next_ts(db, mrtx__now_us() + 3600u * 1000000u);
	mrtx_close(db);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	slash = strrchr(path, '/');
	assert_non_null(slash);
	*slash = 0;
	assert_int_equal(chdir(path), 0);
	rel = tu_open(slash + 1, NULL);
	assert_non_null(rel);
	assert_int_equal(chdir("/"), 0);
	assert_true(next_ts(rel, 0) > a);
	mrtx_close(rel);
	assert_int_equal(chdir(cwd), 0);
	*slash = '/';
	tu_rmrf(path);
	free(path);
}

/* The ceiling raise in the durable modes (MRTX_SYNC waits for the flush;
 * MRTX_NOMETASYNC forces one): the calls work and keep increasing across
 * raises and a reopen.  (That the raise survives an OS crash is argued in
 * lmdb_ts.c, not simulated here.) */
static void test_durable_modes(void **state)
{
	static const int modes[] = { MRTX_SYNC, MRTX_NOMETASYNC };

	(void)state;
	if (tu_rados())
		skip();
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		mrtx_options o = MRTX_OPTIONS_INIT;
		uint64_t t, u;
		char *path;
		mrtx_db *db;

		o.durability = modes[m];
		db = tu_open_fresh("tsd", &path, &o);
		assert_non_null(db);
		t = next_ts(db, 0);
		for (int i = 1; i <= 3; i++) { /* each floor past the ceiling: a raise */
			u = next_ts(db, mrtx__now_us() + (uint64_t)i * 3600u * 1000000u);
			assert_true(u > t);
			t = u;
		}
		mrtx_close(db);
		db = tu_open(path, &o);
		assert_non_null(db);
		assert_true(next_ts(db, 0) > t);
		done(db, path);
	}
}

/* ---- commit stamps and snapshot timestamps (LMDB) ---- */

#define SROWS 12
#define SREADS 300

/* A writer process: blind puts of unique values to 1-3 random rows until
 * the deadline, each committed with its timestamp logged to log as
 * "row value ts".  Half the writers commit in two phases. */
static void stamp_writer(const char *path, int two_phase, const char *log, unsigned id,
                         unsigned long commits, volatile int *stop)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	FILE *f = fopen(log, "w");
	mrtx_db *db;
	unsigned long n = 0, done = 0;

	o.durability = MRTX_NOSYNC;
	if (!f || !(db = tu_open_k(path, &o, &(mrtx__knobs){ 0, two_phase, 0 })))
		_exit(2);
	tu_rng_seed(id * 7919u + 1);
	/* (a writer left behind by a failed test stops: at its parent's
	 * death, and after a hundred times its commits) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while ((done < commits || !*stop) && done < 100 * commits && getppid() != 1) {
		unsigned k = 1 + tu_rng() % 3, rows[3];
		char val[3][32];
		mrtx_txn *txn;
		uint64_t ts;
		int rc = 0;

		if (mrtx_begin(db, &txn))
			_exit(3);
		for (unsigned i = 0; i < k && rc == 0; i++) {
			char row[8];

			rows[i] = tu_rng() % SROWS;
			snprintf(row, sizeof(row), "r%02u", rows[i]);
			snprintf(val[i], sizeof(val[i]), "w%u.%lu.%u", id, n, i);
			rc = mrtx_put(txn, "t", MRTX_BYTES(row, strlen(row)), "f", MRTX_BYTES("q", 1),
			              MRTX_BYTES(val[i], strlen(val[i])));
		}
		n++;
		if (rc) {
			mrtx_abort(txn);
			_exit(4);
		}
		rc = mrtx_commit_ts(txn, &ts);
		if (rc == MRTX_CONFLICT || rc == MRTX_ELOCKED)
			continue;
		if (rc || ts == 0)
			_exit(5);
		done++;
		/* (a row written twice: the later put wins) */
		for (unsigned i = 0; i < k; i++) {
			int later = 0;

			for (unsigned j = i + 1; j < k; j++)
				later |= rows[j] == rows[i];
			if (!later)
				fprintf(f, "r%02u %s %llu\n", rows[i], val[i], (unsigned long long)ts);
		}
	}
	fclose(f);
	mrtx_close(db);
	_exit(0);
}

typedef struct obs {
	uint64_t snap;
	char val[SROWS][32];
} obs;

typedef struct wlog {
	char row[8], val[32];
	uint64_t ts;
} wlog;

static int wlog_by_val(const void *a, const void *b)
{
	return strcmp(((const wlog *)a)->val, ((const wlog *)b)->val);
}

static int wlog_by_row_ts(const void *a, const void *b)
{
	const wlog *x = a, *y = b;
	int c = strcmp(x->row, y->row);

	return c ? c : x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The commit stamp of a value (0: the initial one); w sorted by value. */
static uint64_t ts_of(const wlog *w, size_t n, const char *val)
{
	wlog key;
	const wlog *e;

	if (strcmp(val, "init") == 0)
		return 0;
	snprintf(key.val, sizeof(key.val), "%s", val);
	if (!(e = bsearch(&key, w, n, sizeof(*w), wlog_by_val)))
		fail_msg("value %s was read but never committed", val);
	return e ? e->ts : 0;
}

/* The newest commit to row stamped at or below snap (0: none); w sorted
 * by row, then timestamp. */
static uint64_t newest_at(const wlog *w, size_t n, const char *row, uint64_t snap)
{
	uint64_t best = 0;
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first entry of row */
		size_t mid = (lo + hi) / 2;

		if (strcmp(w[mid].row, row) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && strcmp(w[lo].row, row) == 0 && w[lo].ts <= snap; lo++)
		best = w[lo].ts;
	return best;
}

/*
 * A transaction's snapshot timestamp T separates the commits it sees from
 * those it does not, whatever commits race it: with four writer processes
 * (two of them two-phase) committing to the rows, each read of all rows
 * in one transaction must show, per row, the value of the newest commit
 * stamped at or below T.  Commit timestamps are unique per row write and
 * increase with each row's history.  Fails with timestamps taken before
 * the commit's write (the wall clock at commit): a commit stamped lower
 * can then land after a snapshot that a higher one is already in.
 * Checks I13, I16 (DESIGN §10).
 */
static void test_commit_stamps(void **state)
{
	enum { W = 4, WCOMMITS = 100 };
	char *path, *logs[W];
	pid_t pids[W];
	mrtx_db *db;
	obs *o;
	wlog *w = NULL, *wv;
	size_t nw = 0, cw = 0, nobs = 0;
	volatile int *stop;

	(void)state;
	if (tu_rados())
		skip(); /* (longjmps out: nothing may be allocated above) */
	db = fresh(&path);
	o = calloc(SREADS, sizeof(*o));
	assert_non_null(o);
	stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(stop != MAP_FAILED);
	*stop = 0;
	assert_int_equal(tu_table(db, "t", "f", NULL), 0);
	for (unsigned r = 0; r < SROWS; r++) {
		char row[8];

		snprintf(row, sizeof(row), "r%02u", r);
		assert_int_equal(tu_put_str(db, "t", row, "f:q", "init"), 0);
	}
	/* The reader makes SREADS reads while the writers commit; the writers
	 * go on until it is done, and each makes WCOMMITS commits at least:
	 * counts, not a time, so a slow machine runs longer instead of
	 * checking less. */
	for (int i = 0; i < W; i++) {
		assert_true(asprintf(&logs[i], "%s/w%d.log", path, i) > 0);
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			stamp_writer(path, i & 1, logs[i], (unsigned)i + 1, WCOMMITS, stop);
	}
	for (unsigned tries = 0; nobs < SREADS; tries++) {
		mrtx_txn *txn;
		int rc = 0;

		if (tries >= 20u * SREADS) { /* (reads keep meeting locks: a writer died) */
			*stop = 1;
			fail_msg("%zu of %u reads in %u tries", nobs, SREADS, tries);
		}
		assert_int_equal(mrtx_begin(db, &txn), 0);
		for (unsigned r = 0; r < SROWS && rc == 0; r++) {
			char row[8];
			mrtx_bytes v;

			snprintf(row, sizeof(row), "r%02u", r);
			rc = mrtx_get(txn, "t", MRTX_BYTES(row, strlen(row)), "f", MRTX_BYTES("q", 1),
			              &v);
			if (rc == 0) {
				assert_true(v.size < sizeof(o[nobs].val[r]));
				memcpy(o[nobs].val[r], v.data, v.size);
				o[nobs].val[r][v.size] = 0;
			}
		}
		if (rc == 0) {
			o[nobs].snap = mrtx_txn_snapshot_ts(txn);
			assert_true(o[nobs].snap > 0);
			nobs++;
		} else {
			assert_true(rc == MRTX_ELOCKED || rc == MRTX_CONFLICT);
		}
		mrtx_abort(txn);
		mrtx__sleep_us(2000);
	}
	*stop = 1;
	for (int i = 0; i < W; i++)
		assert_int_equal(tu_wait(pids[i]), 0);
	munmap((void *)stop, sizeof(*stop));
	for (int i = 0; i < W; i++) {
		FILE *f = fopen(logs[i], "r");
		wlog e;
		unsigned long long ts;

		assert_non_null(f);
		while (fscanf(f, "%7s %31s %llu", e.row, e.val, &ts) == 3) {
			e.ts = ts;
			if (nw == cw) {
				cw = cw ? 2 * cw : 1024;
				w = realloc(w, cw * sizeof(*w));
				assert_non_null(w);
			}
			w[nw++] = e;
		}
		fclose(f);
		free(logs[i]);
	}
	print_message("%u reads of every row beside %zu row writes logged\n", SREADS, nw);
	assert_true(nw >= W * WCOMMITS); /* (a row each commit at least) */
	/* wv: by value, to find what a read saw; w: by row and timestamp */
	wv = malloc(nw * sizeof(*w));
	assert_non_null(wv);
	memcpy(wv, w, nw * sizeof(*w));
	qsort(wv, nw, sizeof(*w), wlog_by_val);
	/* each row's commits have distinct timestamps */
	qsort(w, nw, sizeof(*w), wlog_by_row_ts);
	for (size_t i = 1; i < nw; i++)
		if (strcmp(w[i - 1].row, w[i].row) == 0 && w[i - 1].ts == w[i].ts)
			fail_msg("two commits to %s stamped %llu", w[i].row,
			         (unsigned long long)w[i].ts);
	/* every row's lock carries its last commit's stamp, secondaries of
	 * two-phase commits included (rolled forward with the primary's) */
	{
		store *st = mrtx__db_store(db);
		const store_table *t;

		assert_int_equal(store_table_find(st, "t", &t), 0);
		for (unsigned r = 0; r < SROWS; r++) {
			char row[8];
			store_filter f = STORE_FILTER_ALL;
			mrtx_arena a;
			store_row sr;
			lock_rec rec;
			uint64_t last = newest_at(w, nw, (snprintf(row, sizeof(row), "r%02u", r), row),
			                          UINT64_MAX);

			f.lock_only = 1;
			arena_init(&a);
			assert_int_equal(store_read_row(st, t, MRTX_BYTES(row, strlen(row)), &f, &a,
			                                &sr), 0);
			assert_true(sr.has_lock);
			assert_int_equal(lock_decode(&rec, sr.lock, &a), 0);
			assert_int_equal(rec.state, LOCK_STABLE);
			/* its last commit's stamp -- or, when the last to touch it was a
			 * two-phase commit that failed after prewriting it blind, the
			 * STABLE(zero id, bound) its rollback leaves (DESIGN §5.2),
			 * whose bound is above that stamp */
			if (last && rec.commit_ts != last) {
				static const uint8_t zero[LOCK_TXNID_SIZE];

				if (memcmp(rec.txn, zero, LOCK_TXNID_SIZE) != 0 || rec.commit_ts < last)
					fail_msg("%s: lock stamped %llu, its last commit %llu", row,
					         (unsigned long long)rec.commit_ts,
					         (unsigned long long)last);
			}
			arena_free(&a);
		}
	}
	for (size_t k = 0; k < nobs; k++) {
		for (unsigned r = 0; r < SROWS; r++) {
			char row[8];
			uint64_t seen, want;

			snprintf(row, sizeof(row), "r%02u", r);
			seen = ts_of(wv, nw, o[k].val[r]);
			want = newest_at(w, nw, row, o[k].snap);
			if (seen != want)
				fail_msg("read %d of %s at snapshot %llu shows the commit stamped %llu, "
				         "not the newest at or below it (%llu)", (int)k, row,
				         (unsigned long long)o[k].snap, (unsigned long long)seen,
				         (unsigned long long)want);
		}
	}
	free(wv);
	free(w);
	free(o);
	done(db, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rados_reopen_read_only),
		cmocka_unit_test(test_one_caller),
		cmocka_unit_test(test_threads_and_processes),
		cmocka_unit_test(test_real_time_order),
		cmocka_unit_test(test_restarts),
		cmocka_unit_test(test_damaged_page),
		cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_chdir),
		cmocka_unit_test(test_durable_modes),
		cmocka_unit_test(test_commit_stamps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
