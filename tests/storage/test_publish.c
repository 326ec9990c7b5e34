/*
 * test_publish.c - a commit LMDB wrote but never published (LMDB).
 *
 * An LMDB writer commits by writing its meta page and then publishing its
 * transaction id to readers in the lock file.  A writer killed between the
 * two leaves a commit in the file that readers do not see: they read the
 * published id and the meta page before it, until the next writer takes
 * LMDB's writer lock (whose owner-died recovery publishes the newest meta
 * page).  A transaction whose view missed such a commit, but met its locks
 * and validated against the store, conflicted with nobody alive.
 *
 * A writer only stopped there (SIGSTOP) is alive, and its commit has not
 * returned: readers do not wait for it.
 *
 * The writer is stopped exactly there: this program defines pwrite, which
 * liblmdb calls for its meta page (no write map), and a child armed for it
 * kills itself right after the next meta page write of data.mdb.  It is
 * armed at the commit's failpoint commit.after_validate, whose wait:PATH
 * action polls access(PATH): this program's access arms the kill and lets
 * the commit go on, so the write killed is the commit's own (a two-phase
 * commit's: its commit point, after the prewrites).
 *
 * Checks I16 (DESIGN §10).
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define B(s) MRTX_CSTR(s)

/* 0: off; SIGKILL or SIGSTOP: the signal to raise after the next meta
 * page write; stop_instead asks the arming for SIGSTOP */
static volatile sig_atomic_t kill_after_meta, stop_instead;

/* Does fd name a data.mdb? */
static int is_data_file(int fd)
{
	char link[64], target[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, target, sizeof(target) - 1)) <= 0)
		return 0;
	target[n] = '\0';
	return n >= 8 && strcmp(target + n - 8, "data.mdb") == 0;
}

/* liblmdb's pwrite (interposed): the write itself, then -- armed, and the
 * write one of data.mdb's two meta pages -- death before LMDB publishes. */
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	long r = syscall(SYS_pwrite64, fd, buf, n, off);

	if (kill_after_meta && r >= 0 && off < 2 * (off_t)sysconf(_SC_PAGESIZE) &&
	    is_data_file(fd)) {
		int sig = kill_after_meta;

		kill_after_meta = 0;
		raise(sig);
	}
	return (ssize_t)r;
}

#define ARM_PATH "/proc/mrtx-test-publish-arm"

/* The failpoint's poll (interposed): the arming path exists, and arms. */
int access(const char *path, int mode);
int access(const char *path, int mode)
{
	if (strcmp(path, ARM_PATH) == 0) {
		kill_after_meta = stop_instead ? SIGSTOP : SIGKILL;
		return 0;
	}
	return (int)syscall(SYS_faccessat, AT_FDCWD, path, mode, 0);
}

static mrtx_db *open_db(const char *path, int two_phase)
{
	mrtx_options o = MRTX_OPTIONS_INIT;

	o.durability = MRTX_NOSYNC;
	return tu_open_k(path, &o, &(mrtx__knobs){ 0, two_phase, 0 });
}

static int put2(mrtx_db *db, const char *a, const char *b)
{
	mrtx_txn *txn;
	int rc;

	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	if ((rc = mrtx_put(txn, "t", B("a"), "f", B("q"), B(a))) ||
	    (rc = mrtx_put(txn, "t", B("b"), "f", B("q"), B(b)))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

static void expect(mrtx_txn *txn, const char *row, const char *want)
{
	mrtx_bytes v;

	assert_int_equal(mrtx_get(txn, "t", B(row), "f", B("q"), &v), MRTX_OK);
	assert_int_equal(v.size, strlen(want));
	assert_memory_equal(v.data, want, v.size);
}

/* A child commits (in two phases, or one) and dies right after the meta
 * page of the commit's write (two-phase: of its commit point); returns
 * once it is dead. */
static void commit_and_die(const char *path, int two_phase)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *db = open_db(path, two_phase);

		if (!db)
			_exit(2);
		if (mrtx_failpoints_set("commit.after_validate=wait:" ARM_PATH))
			_exit(3);
		(void)put2(db, "2", "2");
		_exit(4); /* (never: the first meta page write kills) */
	}
	assert_int_equal(tu_wait(pid), 128 + SIGKILL);
}

/* A child that commits and stops (SIGSTOP) right after the meta page of
 * its commit: alive, between its meta page and publishing.  Returns its
 * pid, stopped. */
static pid_t stopped; /* a child stopped by commit_and_stop, not yet reaped */

static pid_t commit_and_stop(const char *path)
{
	pid_t pid;
	int st;

	stop_instead = 1;
	pid = fork();
	stop_instead = 0;
	assert_true(pid >= 0);
	if (pid == 0) {
		mrtx_db *db = open_db(path, 0);

		stop_instead = 1;
		if (!db || mrtx_failpoints_set("commit.after_validate=wait:" ARM_PATH))
			_exit(3);
		(void)put2(db, "2", "2");
		_exit(0);
	}
	stopped = pid;
	while (waitpid(pid, &st, WUNTRACED) < 0)
		assert_int_equal(errno, EINTR);
	assert_true(WIFSTOPPED(st));
	return pid;
}

/* (the stopped child never outlives its test, even a failed one) */
static int kill_stopped(void **state)
{
	(void)state;
	if (stopped > 0) {
		kill(stopped, SIGKILL);
		(void)tu_wait(stopped);
		stopped = 0;
	}
	return 0;
}

/* A fresh store with table t, rows a and b at "1" (LMDB only: the
 * interposed pwrite is LMDB's). */
static mrtx_db *fresh_store(const char *tag, char **path)
{
	const char *const fams[] = { "f" };
	mrtx_db *db = tu_open_fresh(tag, path, NULL);

	assert_non_null(db);
	assert_int_equal(mrtx_create_table(db, "t", fams, 1), MRTX_OK);
	assert_int_equal(put2(db, "1", "1"), MRTX_OK);
	return db;
}

/* One transaction reads a and b as want, and commits. */
static void expect_both(mrtx_db *db, const char *want)
{
	mrtx_txn *txn;

	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	expect(txn, "a", want);
	expect(txn, "b", want);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
}

static void done(mrtx_db *db, char *path)
{
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* A one-phase commit killed before it was published: the next
 * transaction reads it. */
static void test_new_view_sees_unpublished(void **state)
{
	char *path;
	mrtx_db *db;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh_store("publish", &path);
	commit_and_die(path, 0);
	expect_both(db, "2");
	done(db, path);
}

/* A two-phase commit killed right after its commit point was written: a
 * reader whose view opens on another row, and then meets the commit's
 * locks, reads it committed, and its read-only commit (which validates:
 * it met locks) does not conflict -- no writer is alive.  A view without
 * the commit read its rows as before it, and the settling of its locks
 * (a write: LMDB publishes) then made that a conflict. */
static void test_reader_meets_unpublished_commit(void **state)
{
	char *path;
	mrtx_db *db;
	mrtx_txn *txn;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh_store("publish2", &path);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "t", B("c"), "f", B("q"), B("c")), MRTX_OK);
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	commit_and_die(path, 1);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	expect(txn, "c", "c");
	expect(txn, "a", "2");
	expect(txn, "b", "2");
	assert_int_equal(mrtx_commit(txn), MRTX_OK);
	done(db, path);
}

/* The lock file damaged while the store is open: the transaction id LMDB
 * publishes to readers (u64 at byte 48 of lock.mdb: LMDB 0.9's lock
 * header on a 64-bit host, a robust mutex before it) moved past the newest
 * commit in data.mdb.  A view would hold an older commit under that id,
 * the meta page slot it names being an older one's: the read fails with
 * MRTX_ECORRUPT naming lock.mdb, never with a stale result. */
static void test_published_id_past_data(void **state)
{
	char *path, lock[4096];
	uint64_t id0, id1, bad;
	mrtx_txn *txn;
	mrtx_bytes v;
	mrtx_db *db;
	int fd, rc;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh_store("publish3", &path);
	snprintf(lock, sizeof(lock), "%s/lock.mdb", path);
	assert_true((fd = open(lock, O_RDWR)) >= 0);
	assert_int_equal(pread(fd, &id0, 8, 48), 8);
	assert_int_equal(put2(db, "3", "3"), MRTX_OK);
	assert_int_equal(pread(fd, &id1, 8, 48), 8);
	assert_true(id1 == id0 + 1); /* (the published id is there) */
	bad = id1 + 1;
	assert_int_equal(pwrite(fd, &bad, 8, 48), 8);
	assert_int_equal(mrtx_begin(db, &txn), MRTX_OK);
	rc = mrtx_get(txn, "t", B("a"), "f", B("q"), &v);
	if (rc != MRTX_ECORRUPT || !strstr(mrtx_errmsg(), "lock.mdb"))
		fail_msg("a published id past the data: %s (%s)", mrtx_strerror(rc),
		         mrtx_errmsg());
	mrtx_abort(txn);
	assert_int_equal(pwrite(fd, &id1, 8, 48), 8);
	close(fd);
	expect_both(db, "3");
	done(db, path);
}

/* A live writer stopped between its meta page and publishing is never
 * waited for: a reader reads the store as before that commit (which has
 * not returned), at once; once the writer is dead, the commit is read. */
static void test_stopped_writer_not_waited_for(void **state)
{
	char *path;
	mrtx_db *db;
	pid_t pid;

	(void)state;
	if (tu_rados())
		skip();
	db = fresh_store("publish3", &path);
	pid = commit_and_stop(path);
	alarm(20); /* (a reader that waits for the stopped writer hangs here) */
	expect_both(db, "1");
	alarm(0);
	kill(pid, SIGKILL);
	stopped = 0;
	assert_int_equal(tu_wait(pid), 128 + SIGKILL);
	expect_both(db, "2");
	done(db, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_stopped_writer_not_waited_for, kill_stopped),
		cmocka_unit_test(test_new_view_sees_unpublished),
		cmocka_unit_test(test_reader_meets_unpublished_commit),
		cmocka_unit_test(test_published_id_past_data),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
