/*
 * test_backup.c - mrtx_backup: the copy of a live store opens as a store of
 * its own, holds no lock that is not STABLE, passes the check, and holds
 * exactly the transactions committed when it was taken:
 *
 *   - abandoned transactions (writer exited at a failpoint) are rolled
 *     forward or back in the copy as their primary says;
 *   - transactions whose writer is ALIVE (a child sleeping at a failpoint,
 *     with a lock expiry of ten minutes) are settled in the copy all the
 *     same, while the source keeps them held;
 *   - backups taken while writer threads of this process and writer
 *     processes (forked, killed at the end wherever they are) move money
 *     between accounts keep the bank total exact;
 *   - a destination that is a file or a non-empty directory is refused and
 *     left as it was; NULL arguments and a missing parent fail cleanly.
 *
 * LMDB only (tests/cli/cli_data.sh checks that a RADOS store refuses backups).
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "recovery/check.h"
#include "txn/admin_test.h"

#define B(s) MRTX_CSTR(s)
#define HUGE_TTL 600000u
#define EXIT_FP 99

typedef struct fx {
	mrtx_db *db;
	char *path; /* the source store */
	char *dir;  /* a scratch directory for destinations */
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	mrtx_options o = MRTX_OPTIONS_INIT;

	o.durability = MRTX_NOSYNC;
	o.lock_ttl_ms = HUGE_TTL;
	o.lock_wait_ms = 50;
	if (!f || !(f->db = tu_open_fresh("backup", &f->path, &o)) ||
	    !(f->dir = tu_fsdir("backup-dest")))
		return -1;
	if (tu_table(f->db, "ta", "f", "g", NULL) || tu_table(f->db, "tb", "f", NULL))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;

	mrtx_failpoints_set(NULL);
	mrtx_close(f->db);
	tu_rmrf(f->path);
	tu_rmrf(f->dir);
	free(f->path);
	free(f->dir);
	free(f);
	return 0;
}

static char *dest_path(const fx *f, const char *name)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", f->dir, name) > 0);
	return p;
}

/* Lock records by state in the store (check_store's census), and findings. */
static void census(mrtx_db *db, check_stats *s)
{
	assert_int_equal(check_store(mrtx__db_store(db), s, NULL, NULL), 0);
}

static unsigned long held(const check_stats *s)
{
	return s->by_state[1] + s->by_state[2] + s->by_state[3];
}

/* The copy: opens, no lock held, no finding at all (check --strict). */
static mrtx_db *open_clean_copy(const char *dest)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	check_stats s;
	mrtx_db *db;

	o.lock_wait_ms = 1; /* a lock left in the copy would fail a read at once */
	db = tu_open(dest, &o);
	assert_non_null(db);
	census(db, &s);
	if (held(&s) || s.corrupt || s.resolvable || s.live)
		fail_msg("copy %s: %lu locks held, %lu corrupt, %lu resolvable, %lu live", dest,
		         held(&s), s.corrupt, s.resolvable, s.live);
	return db;
}

static void expect_cell(mrtx_db *db, const char *table, const char *row, const char *want)
{
	char buf[64];
	int rc = tu_get_str(db, table, row, "f:v", buf, sizeof(buf));

	if (!want) {
		if (rc != MRTX_NOTFOUND)
			fail_msg("%s/%s: rc %s, want absent", table, row, mrtx_strerror(rc));
		return;
	}
	if (rc != MRTX_OK)
		fail_msg("%s/%s: rc %s (%s), want '%s'", table, row, mrtx_strerror(rc),
		         mrtx_errmsg(), want);
	if (strcmp(buf, want) != 0)
		fail_msg("%s/%s is '%s', want '%s'", table, row, buf, want);
}

/* ------------------------------------------------------------ writers */

/* Three rows in two tables, "new" into each: p1 is the primary. */
static int write3(mrtx_db *db, const char *p1, const char *p2, const char *p3,
                  const char *val)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	if ((rc = mrtx_put(txn, "ta", B(p1), "f", B("v"), B(val))) ||
	    (rc = mrtx_put(txn, "ta", B(p2), "f", B("v"), B(val))) ||
	    (rc = mrtx_put(txn, "tb", B(p3), "f", B("v"), B(val)))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

/* A child that opens the store, arms fp, and runs write3 on rows
 * <tag>1, <tag>2, <tag>3. */
static pid_t spawn_writer(const char *path, const char *fp, const char *tag)
{
	pid_t pid = fork();

	if (pid == 0) {
		mrtx_options o = MRTX_OPTIONS_INIT;
		char r1[16], r2[16], r3[16];
		mrtx_db *db;
		int rc;

		o.durability = MRTX_NOSYNC;
		o.lock_ttl_ms = HUGE_TTL;
		if (mrtx_open(&db, path, &o) || mrtx_failpoints_set(fp))
			_exit(2);
		snprintf(r1, sizeof(r1), "%s1", tag);
		snprintf(r2, sizeof(r2), "%s2", tag);
		snprintf(r3, sizeof(r3), "%s3", tag);
		rc = write3(db, r1, r2, r3, "new");
		_exit(rc == 0 ? 0 : 10);
	}
	assert_true(pid > 0);
	return pid;
}

/* The lock state of one row (-1: no lock record). */
static int row_state(mrtx_db *db, const char *table, const char *row)
{
	store *st = mrtx__db_store(db);
	const store_table *t;
	store_rowref ref;
	store_row cur;
	mrtx_arena a;
	uint8_t state, txn[LOCK_TXNID_SIZE];
	int rc;

	assert_int_equal(store_table_find(st, table, &t), 0);
	ref.table = t;
	ref.row = B(row);
	arena_init(&a);
	rc = store_read_locks(st, &ref, 1, &a, &cur);
	assert_int_equal(rc, 0);
	if (!cur.has_lock) {
		arena_free(&a);
		return -1;
	}
	assert_int_equal(lock_peek(cur.lock, &state, txn), 0);
	arena_free(&a);
	return state;
}

/* Wait (polling; no duration is judged) until the child's three rows hold
 * the given states. */
static void wait_states(mrtx_db *db, pid_t pid, const char *tag, int s1, int s23)
{
	char r1[16], r2[16], r3[16];
	int st;

	snprintf(r1, sizeof(r1), "%s1", tag);
	snprintf(r2, sizeof(r2), "%s2", tag);
	snprintf(r3, sizeof(r3), "%s3", tag);
	for (;;) {
		if (row_state(db, "ta", r1) == s1 && row_state(db, "ta", r2) == s23 &&
		    row_state(db, "tb", r3) == s23)
			return;
		if (waitpid(pid, &st, WNOHANG) == pid)
			fail_msg("writer %s finished before its locks were in place", tag);
		usleep(1000);
	}
}

/* ---------------------------------------------------------------- tests */

/* Writers that died after the commit point (forward) and before it (back). */
static void test_abandoned(void **state)
{
	fx *f = *state;
	char *dest = dest_path(f, "copy");
	check_stats before, after;
	mrtx_db *copy;

	assert_int_equal(write3(f->db, "a1", "a2", "a3", "old"), 0);
	assert_int_equal(write3(f->db, "b1", "b2", "b3", "old"), 0);
	assert_int_equal(tu_wait(spawn_writer(f->path, "commit.after_point=exit", "a")), EXIT_FP);
	assert_int_equal(tu_wait(spawn_writer(f->path, "commit.after_prewrite=exit", "b")),
	                 EXIT_FP);
	assert_int_equal(tu_wait(spawn_writer(f->path, "commit.after_prewrite=exit", "c")),
	                 EXIT_FP); /* rows never written before: back to absent */
	census(f->db, &before);
	assert_true(held(&before) >= 9);

	assert_int_equal(mrtx_backup(f->db, dest), MRTX_OK);

	copy = open_clean_copy(dest);
	expect_cell(copy, "ta", "a1", "new");
	expect_cell(copy, "ta", "a2", "new");
	expect_cell(copy, "tb", "a3", "new");
	expect_cell(copy, "ta", "b1", "old");
	expect_cell(copy, "ta", "b2", "old");
	expect_cell(copy, "tb", "b3", "old");
	expect_cell(copy, "ta", "c1", NULL);
	expect_cell(copy, "tb", "c3", NULL);
	/* the copy is a store of its own: writes there leave the source alone */
	assert_int_equal(tu_put_str(copy, "ta", "z", "f:v", "copy only"), 0);
	mrtx_close(copy);
	/* the source was only read: its locks are as they were */
	census(f->db, &after);
	assert_int_equal(held(&after), held(&before));
	expect_cell(f->db, "ta", "z", NULL);
	expect_cell(f->db, "ta", "a1", "new"); /* (this read settles the source) */
	free(dest);
}

/*
 * Writers alive at the backup: one sleeping after its commit point, one
 * after its prewrites, both with ten-minute locks.  The copy settles both
 * (forward, back); the source still holds them.
 */
static void test_live_owners(void **state)
{
	fx *f = *state;
	char *dest = dest_path(f, "live");
	pid_t fwd, back;
	mrtx_db *copy;

	assert_int_equal(write3(f->db, "l1", "l2", "l3", "old"), 0);
	assert_int_equal(write3(f->db, "m1", "m2", "m3", "old"), 0);
	fwd = spawn_writer(f->path, "commit.after_point=sleep:600000", "l");
	back = spawn_writer(f->path, "commit.after_prewrite=sleep:600000", "m");
	wait_states(f->db, fwd, "l", 2 /* COMMITTED */, 1 /* PREWRITTEN */);
	wait_states(f->db, back, "m", 1, 1);

	assert_int_equal(mrtx_backup(f->db, dest), MRTX_OK);

	copy = open_clean_copy(dest);
	expect_cell(copy, "ta", "l1", "new");
	expect_cell(copy, "ta", "l2", "new");
	expect_cell(copy, "tb", "l3", "new");
	expect_cell(copy, "ta", "m1", "old");
	expect_cell(copy, "ta", "m2", "old");
	expect_cell(copy, "tb", "m3", "old");
	mrtx_close(copy);
	/* still held in the source by their live owners */
	assert_int_equal(row_state(f->db, "ta", "l1"), 2);
	assert_int_equal(row_state(f->db, "ta", "m1"), 1);
	kill(fwd, SIGKILL);
	kill(back, SIGKILL);
	tu_wait(fwd);
	tu_wait(back);
	free(dest);
}

/* ------------------------------------------------------- bank under load */

#define ACCOUNTS 16
#define WRITERS 2 /* threads of this process */
#define PROCS 2   /* writer processes */
#define START 1000
#define BACKUPS 4

typedef struct bank {
	mrtx_db *db;
	atomic_int stop;
	atomic_ulong *commits; /* shared with the writer processes */
	atomic_uint seed;
} bank;

static void acct_name(int i, char *buf, size_t n, const char **table)
{
	*table = i % 2 ? "tb" : "ta"; /* two tables: multi-table commits */
	snprintf(buf, n, "acct%02d", i);
}

typedef struct xfer {
	int from, to;
	long amount;
} xfer;

static int get_long(mrtx_txn *txn, int i, long *out)
{
	char row[16], buf[32];
	const char *t;
	mrtx_bytes v;
	int rc;

	acct_name(i, row, sizeof(row), &t);
	if ((rc = mrtx_get(txn, t, B(row), "f", B("v"), &v)))
		return rc;
	if (v.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, v.data, v.size);
	buf[v.size] = '\0';
	*out = strtol(buf, NULL, 10);
	return 0;
}

static int put_long(mrtx_txn *txn, int i, long val)
{
	char row[16], buf[32];
	const char *t;

	acct_name(i, row, sizeof(row), &t);
	snprintf(buf, sizeof(buf), "%ld", val);
	return mrtx_put(txn, t, B(row), "f", B("v"), B(buf));
}

static int xfer_fn(mrtx_txn *txn, void *p)
{
	const xfer *x = p;
	long a, b;
	int rc;

	if ((rc = get_long(txn, x->from, &a)) || (rc = get_long(txn, x->to, &b)))
		return rc;
	return (rc = put_long(txn, x->from, a - x->amount)) ? rc :
	       put_long(txn, x->to, b + x->amount);
}

static void *writer_main(void *p)
{
	bank *bk = p;
	unsigned seed = atomic_fetch_add(&bk->seed, 7919u);

	while (!atomic_load(&bk->stop)) {
		xfer x;
		int rc;

		x.from = (int)(rand_r(&seed) % ACCOUNTS);
		x.to = (int)((unsigned)(x.from + 1 + rand_r(&seed) % (ACCOUNTS - 1)) % ACCOUNTS);
		x.amount = (long)(rand_r(&seed) % 50);
		rc = mrtx_run(bk->db, xfer_fn, &x, 100);
		if (rc == MRTX_OK)
			atomic_fetch_add(bk->commits, 1);
		else if (rc != MRTX_CONFLICT && rc != MRTX_ELOCKED)
			return (void *)(intptr_t)rc;
	}
	return NULL;
}

/* A writer process: its own store handle, commits pausing after their
 * commit point, until the parent kills it. */
static pid_t spawn_bank_writer(const char *path, atomic_ulong *commits, unsigned seed)
{
	pid_t pid = fork();

	if (pid == 0) {
		mrtx_options o = MRTX_OPTIONS_INIT;
		bank bk;

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test kills its writers */
		o.durability = MRTX_NOSYNC;
		o.lock_ttl_ms = HUGE_TTL;
		o.lock_wait_ms = 50;
		memset(&bk, 0, sizeof(bk));
		bk.commits = commits;
		atomic_store(&bk.seed, seed);
		if (mrtx_open(&bk.db, path, &o) ||
		    mrtx_failpoints_set("commit.after_point=sleep:2"))
			_exit(2);
		writer_main(&bk); /* returns only on an error */
		_exit(3);
	}
	assert_true(pid > 0);
	return pid;
}

static long bank_total(mrtx_db *db)
{
	long sum = 0;
	mrtx_txn *txn;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	for (int i = 0; i < ACCOUNTS; i++) {
		long v;
		int rc = get_long(txn, i, &v);

		if (rc)
			fail_msg("account %d: %s (%s)", i, mrtx_strerror(rc), mrtx_errmsg());
		sum += v;
	}
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	return sum;
}

static void test_bank_under_load(void **state)
{
	fx *f = *state;
	pthread_t th[WRITERS];
	pid_t procs[PROCS];
	atomic_ulong *commits;
	bank bk;

	commits = mmap(NULL, sizeof(*commits), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	               -1, 0);
	assert_true(commits != MAP_FAILED);
	atomic_init(commits, 0);
	memset(&bk, 0, sizeof(bk));
	bk.db = f->db;
	bk.commits = commits;
	atomic_store(&bk.seed, tu_rng());
	{
		mrtx_txn *txn;

		assert_int_equal(mrtx_begin(f->db, &txn), MRTX_OK);
		for (int i = 0; i < ACCOUNTS; i++)
			assert_int_equal(put_long(txn, i, START), MRTX_OK);
		assert_int_equal(mrtx_commit(txn), MRTX_OK);
	}
	/* every commit pauses after its commit point: a copy taken meanwhile
	 * nearly always holds a transaction half way through its commit */
	/* the processes first: no thread of ours holds a lock when we fork */
	for (int w = 0; w < PROCS; w++)
		procs[w] = spawn_bank_writer(f->path, commits, tu_rng());
	assert_int_equal(mrtx_failpoints_set("commit.after_point=sleep:2"), 0);
	for (int w = 0; w < WRITERS; w++)
		assert_int_equal(pthread_create(&th[w], NULL, writer_main, &bk), 0);
	for (int b = 0; b < BACKUPS; b++) {
		unsigned long c0 = atomic_load(commits);
		char name[16], *dest;
		mrtx_db *copy;

		while (atomic_load(commits) < c0 + 10) { /* the writers are writing */
			for (int w = 0; w < PROCS; w++) {
				int st;

				if (waitpid(procs[w], &st, WNOHANG) == procs[w])
					fail_msg("writer process %d exited (status %d)", (int)procs[w], st);
			}
			usleep(1000);
		}
		snprintf(name, sizeof(name), "bank%d", b);
		dest = dest_path(f, name);
		assert_int_equal(mrtx_backup(f->db, dest), MRTX_OK);
		copy = open_clean_copy(dest);
		assert_int_equal(bank_total(copy), (long)ACCOUNTS * START);
		mrtx_close(copy);
		free(dest);
	}
	atomic_store(&bk.stop, 1);
	for (int w = 0; w < WRITERS; w++) {
		void *ret;

		pthread_join(th[w], &ret);
		if (ret)
			fail_msg("writer: %s", mrtx_strerror((int)(intptr_t)ret));
	}
	/* killed wherever they are: their locks are settled by the reads below */
	for (int w = 0; w < PROCS; w++) {
		kill(procs[w], SIGKILL);
		tu_wait(procs[w]);
	}
	assert_int_equal(mrtx_failpoints_set(NULL), 0);
	assert_int_equal(bank_total(f->db), (long)ACCOUNTS * START);
	munmap(commits, sizeof(*commits));
}

/* ------------------------------------------------------ refusals, errors */

static unsigned count_entries(const char *dir)
{
	char cmd[4200];
	unsigned n = 0;
	FILE *p;
	int c;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	assert_non_null(p = popen(cmd, "r"));
	while ((c = fgetc(p)) != EOF)
		n += c == '\n';
	pclose(p);
	return n;
}

static void test_refusals(void **state)
{
	fx *f = *state;
	char *full = dest_path(f, "full"), *file = dest_path(f, "file");
	char *inner, *nested = dest_path(f, "no/such/parent");
	char *empty = dest_path(f, "empty");
	struct stat sb;
	FILE *fp;
	mrtx_db *copy;

	assert_int_equal(tu_put_str(f->db, "ta", "r", "f:v", "x"), 0);
	assert_int_equal(mrtx_backup(NULL, full), MRTX_EINVAL);
	assert_int_equal(mrtx_backup(f->db, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_backup(f->db, ""), MRTX_EINVAL);

	/* a non-empty directory: refused, left exactly as it was */
	assert_int_equal(mkdir(full, 0700), 0);
	assert_true(asprintf(&inner, "%s/keep.txt", full) > 0);
	assert_non_null(fp = fopen(inner, "w"));
	fputs("precious", fp);
	fclose(fp);
	assert_int_equal(mrtx_backup(f->db, full), MRTX_EEXIST);
	assert_non_null(strstr(mrtx_errmsg(), "not empty"));
	assert_int_equal(count_entries(full), 1);
	assert_int_equal(stat(inner, &sb), 0);
	assert_int_equal(sb.st_size, 8);

	/* a file: refused, untouched */
	assert_non_null(fp = fopen(file, "w"));
	fputs("data", fp);
	fclose(fp);
	assert_int_equal(mrtx_backup(f->db, file), MRTX_EEXIST);
	assert_int_equal(stat(file, &sb), 0);
	assert_true(S_ISREG(sb.st_mode) && sb.st_size == 4);

	/* the source itself is not empty either */
	assert_int_equal(mrtx_backup(f->db, f->path), MRTX_EEXIST);

	/* a missing parent: a store error, nothing created */
	assert_int_equal(mrtx_backup(f->db, nested), MRTX_ESTORE);
	assert_int_equal(count_entries(f->dir), 2);

	/* an existing empty directory is fine; only data.mdb lands in it */
	assert_int_equal(mkdir(empty, 0700), 0);
	assert_int_equal(mrtx_backup(f->db, empty), MRTX_OK);
	assert_int_equal(count_entries(empty), 1);
	copy = open_clean_copy(empty);
	expect_cell(copy, "ta", "r", "x");
	mrtx_close(copy);
	/* and a second backup into it is refused */
	assert_int_equal(mrtx_backup(f->db, empty), MRTX_EEXIST);
	free(inner);
	free(full);
	free(file);
	free(nested);
	free(empty);
}

/* A failure while settling the copy (a recovery failpoint's error) leaves
 * nothing behind: not the copy, not the directory the call created. */
static void test_failure_cleans_up(void **state)
{
	fx *f = *state;
	char *dest = dest_path(f, "failed");
	struct stat sb;

	assert_int_equal(write3(f->db, "a1", "a2", "a3", "old"), 0);
	assert_int_equal(tu_wait(spawn_writer(f->path, "commit.after_point=exit", "a")), EXIT_FP);
	assert_int_equal(mrtx_failpoints_set("recover.after_forward=error"), 0);
	assert_int_equal(mrtx_backup(f->db, dest), MRTX_ESTORE);
	assert_int_equal(mrtx_failpoints_set(NULL), 0);
	assert_int_equal(stat(dest, &sb), -1);
	assert_int_equal(errno, ENOENT);
	/* and it works once the fault is gone */
	assert_int_equal(mrtx_backup(f->db, dest), MRTX_OK);
	mrtx_close(open_clean_copy(dest));
	free(dest);
}

/* A backup killed half way leaves DEST/.mrtx-backup-partial/: the next
 * backup into DEST clears it, unless a backup holds it (running). */
static void test_killed_backup_leftover(void **state)
{
	fx *f = *state;
	char *dest = dest_path(f, "leftover"), stage[600], file[700];
	int fd, lk;

	assert_int_equal(write3(f->db, "a1", "a2", "a3", "v"), 0);
	snprintf(stage, sizeof(stage), "%s/.mrtx-backup-partial", dest);
	snprintf(file, sizeof(file), "%s/data.mdb", stage);
	assert_int_equal(mkdir(dest, 0700), 0);
	assert_int_equal(mkdir(stage, 0700), 0);
	assert_true((fd = open(file, O_CREAT | O_WRONLY, 0600)) >= 0);
	assert_int_equal(write(fd, "torn", 4), 4);
	close(fd);
	/* a backup running into dest: refused, its directory untouched */
	assert_true((lk = open(stage, O_RDONLY | O_DIRECTORY)) >= 0);
	assert_int_equal(flock(lk, LOCK_EX), 0);
	assert_int_equal(mrtx_backup(f->db, dest), MRTX_EEXIST);
	assert_non_null(strstr(mrtx_errmsg(), "is running"));
	assert_int_equal(access(file, F_OK), 0);
	close(lk);
	/* its process gone: cleared, and the backup made */
	assert_int_equal(mrtx_backup(f->db, dest), MRTX_OK);
	assert_int_equal(access(stage, F_OK), -1);
	mrtx_close(open_clean_copy(dest));
	free(dest);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_abandoned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_owners, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bank_under_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_cleans_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_backup_leftover, setup, teardown),
	};

	if (tu_rados()) {
		fprintf(stderr, "test_backup: LMDB only (mrtx_backup refuses RADOS stores)\n");
		return 0;
	}
	tu_rng_seed(12345);
	/* These tests stop writers between the steps of the two-phase protocol
	 * (DESIGN §5.2) and look at the locks they leave: every handle opened
	 * here uses it (the two_phase knob, txn_test.h).  One-phase commits on LMDB
	 * (§5.3) have their own crash tests in test_txn. */
	setenv("MRTX_TWO_PHASE", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
