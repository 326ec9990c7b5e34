/*
 * backup.c - mrtx_backup: a consistent copy of a live LMDB store with no
 * transaction left in flight in it.
 *
 *   1 DEST must be missing or an empty directory (never overwritten); the
 *     copy is built in DEST/.mrtx-backup-partial/ so that DEST holds a
 *     store only once the backup is complete.  The call holds an flock on
 *     that directory while it runs: a DEST holding only the directory of
 *     a backup that died (its flock free) is cleared and used, one whose
 *     backup runs is refused.
 *   2 store_copy: LMDB's copy of the environment as of one committed LMDB
 *     transaction.  Every protocol step is an LMDB transaction, so the copy
 *     is a state a crash of every writer at that instant would leave.
 *   3 No writer will ever finish those transactions in the copy, whatever
 *     their owners' pids say (they are processes of the source, maybe
 *     alive on this host): the recovery sweep settles every lock as
 *     abandoned (force), forward when its primary is past the commit point,
 *     else back -- exactly the transactions committed at that instant stay.
 *   4 The copy's lock family is checked (check_store): no finding and no
 *     lock that is not STABLE, or the backup fails.
 *   5 Synced, closed, its data.mdb moved to DEST (its lock.mdb and ts.shm
 *     dropped: LMDB makes a new lock.mdb at the first open, and mrtx a new
 *     ts.shm from the timestamp ceiling data.mdb keeps), DEST synced.
 *
 * The copy keeps the source's store id: its lock records carry it, and it
 * is the same store's data.  Environments are shared by directory (device
 * and inode), so the copy opens as a store of its own even in the process
 * that holds the source.
 */
#include "txn_int.h"
#include "../recovery/check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAGE ".mrtx-backup-partial"

typedef struct bpaths {
	char stage[4096];      /* DEST/.mrtx-backup-partial */
	char stage_data[4096]; /* its data.mdb */
	char stage_part[4096]; /* its data.mdb.partial (store_copy's) */
	char stage_lock[4096]; /* its lock.mdb */
	char stage_ts[4096];   /* its ts.shm (storage/lmdb/lmdb_ts.c) */
	char dest_data[4096];  /* DEST/data.mdb */
} bpaths;

/* Remove the staging directory p->stage and what a backup puts in it. */
static void stage_remove(const bpaths *p)
{
	unlink(p->stage_data);
	unlink(p->stage_part);
	unlink(p->stage_lock);
	unlink(p->stage_ts);
	rmdir(p->stage);
}

/* Is fd (locked) still the directory at path?  A backup that cleared a
 * dead one's directory, or another that made it anew, may have moved the
 * path on between the open and the lock. */
static int same_dir(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* DEST holds only the staging directory: a backup's that died (its flock
 * free: cleared, 0) or one that runs (MRTX_EEXIST). */
static int stage_leftover(const char *dest, const bpaths *p)
{
	int fd = open(p->stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : mrtx__sys_err("mrtx_backup", "open", p->stage, errno);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;

		rc = err == EWOULDBLOCK ?
		     mrtx__seterr(MRTX_EEXIST, "mrtx_backup: a backup into %s is running", dest) :
		     mrtx__sys_err("mrtx_backup", "lock", p->stage, err);
	} else if (!same_dir(fd, p->stage)) {
		rc = mrtx__seterr(MRTX_EEXIST, "mrtx_backup: a backup into %s is running", dest);
	} else {
		stage_remove(p);
		if (rmdir(p->stage) != 0 && errno != ENOENT) /* (files of its own in it) */
			rc = mrtx__seterr(MRTX_EEXIST, "mrtx_backup: %s holds %s/ with files no "
			                  "backup makes: remove it", dest, STAGE);
	}
	close(fd);
	return rc;
}

/* DEST missing (created: *created = 1) or an empty directory (or one that
 * holds only a dead backup's staging directory, cleared). */
static int dest_prepare(const char *dest, const bpaths *p, int *created)
{
	struct dirent *e;
	struct stat sb;
	int stage = 0;
	DIR *d;

	*created = 0;
	if (stat(dest, &sb) != 0) {
		if (errno != ENOENT)
			return mrtx__sys_err("mrtx_backup", "stat", dest, errno);
		if (mkdir(dest, 0700) != 0)
			return mrtx__sys_err("mrtx_backup", "create directory", dest, errno);
		*created = 1;
		return 0;
	}
	if (!S_ISDIR(sb.st_mode))
		return mrtx__seterr(MRTX_EEXIST, "mrtx_backup: %s exists and is not a directory "
		                    "(a backup goes into a new or empty directory)", dest);
	if (!(d = opendir(dest)))
		return mrtx__sys_err("mrtx_backup", "open directory", dest, errno);
	errno = 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, STAGE) == 0)
			stage = 1;
		else if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			break;
	if (!e && errno) {
		int err = errno;

		closedir(d);
		return mrtx__sys_err("mrtx_backup", "read directory", dest, err);
	}
	closedir(d);
	if (e)
		return mrtx__seterr(MRTX_EEXIST, "mrtx_backup: %s is not empty (a backup never "
		                    "overwrites; use a new or empty directory)", dest);
	return stage ? stage_leftover(dest, p) : 0;
}

/* The first finding of check_store, for the error message. */
typedef struct first_issue {
	char text[256];
	int any;
} first_issue;

static int on_issue(const check_issue *is, void *payload)
{
	first_issue *f = payload;

	if (!f->any)
		snprintf(f->text, sizeof(f->text), "%s in table '%s': %s", is->kind,
		         is->table->name, is->detail);
	f->any = 1;
	return 0;
}

/* Steps 3 and 4 on the copy in p->stage, then synced. */
static int settle_copy(const char *source, const bpaths *p)
{
	store_opts so = { .durability = MRTX_SYNC, .lock_order = lock_order_key };
	recover_opts ro = { 0, 1, 0 }; /* never wait; force: no writer lives here */
	recover_stats rs;
	check_stats cs;
	first_issue fi = { "", 0 };
	store *st;
	int rc;

	if ((rc = store_open(&st, p->stage, &so)))
		return rc;
	if ((rc = recover_sweep(st, &ro, &rs, NULL, NULL)))
		goto out;
	if (rs.errors) {
		rc = mrtx__seterr(MRTX_ECORRUPT, "mrtx_backup: %lu locks in the copy of %s could "
		                  "not be settled (run `mrtx check` on the source)", rs.errors,
		                  source);
		goto out;
	}
	if ((rc = check_store(st, &cs, on_issue, &fi)))
		goto out;
	if (fi.any || cs.by_state[LOCK_PREWRITTEN] || cs.by_state[LOCK_COMMITTED] ||
	    cs.by_state[LOCK_ABORTED]) {
		rc = mrtx__seterr(MRTX_ECORRUPT, "mrtx_backup: the copy of %s fails its check "
		                  "after settling (%s; run `mrtx check` on the source)", source,
		                  fi.any ? fi.text : "a lock is still held");
		goto out;
	}
	rc = store_sync(st);
out:
	store_close(st);
	return rc;
}

int mrtx_backup(mrtx_db *db, const char *dest)
{
	int rc, created = 0, staged = 0, lockfd = -1, lockerr = 0;
	bpaths p;

	mrtx__clearerr();
	if (!db || !dest || !*dest)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_backup: db and dest_dir are required");
	if (!store_has(db->st, STORE_CAP_FILES))
		return mrtx__seterr(MRTX_ENOTSUP, "mrtx_backup: %s is a RADOS store: backup is not "
		                    "supported there (copy its tables with `mrtx dump` and "
		                    "`mrtx load`)", store_path(db->st));
	{
		store_info info;

		/* Without lock.mdb, writers in other processes cannot see this
		 * reader: they may reuse the pages of the snapshot being copied. */
		if ((rc = store_get_info(db->st, &info)))
			return rc;
		if (info.lockless)
			return mrtx__seterr(MRTX_EINVAL, "mrtx_backup: %s was opened without its "
			                    "lock.mdb (read-only, not writable here): a copy could "
			                    "be torn by a writer; back it up as a user who can write "
			                    "lock.mdb", store_path(db->st));
	}
#define JOIN(out, dir, name) mrtx__path_join(out, sizeof(out), dir, name, "mrtx_backup")
	if ((rc = JOIN(p.stage, dest, STAGE)) || (rc = JOIN(p.stage_data, p.stage, "data.mdb")) ||
	    (rc = JOIN(p.stage_part, p.stage, "data.mdb.partial")) ||
	    (rc = JOIN(p.stage_lock, p.stage, "lock.mdb")) ||
	    (rc = JOIN(p.stage_ts, p.stage, "ts.shm")) ||
	    (rc = JOIN(p.dest_data, dest, "data.mdb")))
		return rc;
#undef JOIN
	if ((rc = dest_prepare(dest, &p, &created)))
		return rc;
	if (mkdir(p.stage, 0700) != 0) {
		rc = errno == EEXIST ?
		     mrtx__seterr(MRTX_EEXIST, "mrtx_backup: another backup into %s began", dest) :
		     mrtx__sys_err("mrtx_backup", "create directory", p.stage, errno);
		goto fail;
	}
	staged = 1;
	/* held to the end: a later call sees this backup running */
	if ((lockfd = open(p.stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    flock(lockfd, LOCK_EX | LOCK_NB) != 0)
		lockerr = errno;
	else if (!same_dir(lockfd, p.stage))
		lockerr = ENOENT;
	if (lockerr) {
		/* (the directory gone or locked: another backup cleared it as a
		 * dead one's, and the path is not this call's to remove) */
		int err = lockerr;

		rc = err == EWOULDBLOCK || err == ENOENT ?
		     mrtx__seterr(MRTX_EEXIST, "mrtx_backup: another backup into %s began", dest) :
		     mrtx__sys_err("mrtx_backup", "lock", p.stage, err);
		staged = err != EWOULDBLOCK && err != ENOENT;
		goto fail;
	}
	if ((rc = store_copy(db->st, p.stage)) || (rc = settle_copy(store_path(db->st), &p)))
		goto fail;
	if (rename(p.stage_data, p.dest_data) != 0) {
		rc = mrtx__sys_err("mrtx_backup", "rename", p.stage_data, errno);
		goto fail;
	}
	unlink(p.stage_lock);
	unlink(p.stage_ts);
	rmdir(p.stage);
	if ((rc = mrtx__sync_dir(dest, "mrtx_backup")) == 0)
		goto out;
	unlink(p.dest_data);
fail:
	if (staged)
		stage_remove(&p);
	if (created)
		rmdir(dest);
out:
	if (lockfd >= 0)
		close(lockfd);
	return rc;
}
