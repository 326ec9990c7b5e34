/*
 * lmdb_io.c - failed writes and syncs of data.mdb (DESIGN §8, "Failed
 * writes and syncs"): telling a commit that failed writing its pages (a
 * full disk: nothing at risk, the handle goes on) from one whose sync
 * failed (the latch: no write until the store is reopened, nothing more
 * reported durable).
 *
 * LMDB commits a write txn in three steps: it writes the txn's pages,
 * fdatasyncs them, then writes the meta page.
 *
 *   page write fails (ENOSPC, EDQUOT, a short write on a full file system)
 *       nothing committed; the pages it wrote are pages no meta page points
 *       at, the next commit writes its own, no write-back failed
 *       -> a definite error; the handle goes on        (lmdb_commit_io_failed)
 *   sync fails, in the commit or after it (lmdb_durable, a read's sync)
 *       the kernel may have dropped pages it could not write back -- the
 *       meta pages of the commits since the last good sync among them --
 *       and reports that once: no later success proves them written
 *       -> the latch                                          (lmdb_io_latch)
 *   meta page write fails
 *       LMDB refuses every txn from then on (MDB_PANIC) -> the latch
 */
#include "storage/lmdb/lmdb_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Less free space than this after a short write: the file system is full
 * (a write that falls short for want of space wrote what fit, leaving
 * next to nothing; the margin allows for other files shrinking). */
#define FS_FULL_BYTES (1u << 20)

const char lmdb_latch_why[] = "data.mdb may lack what the last commits wrote, so this "
                              "handle takes no more writes (reads go on): close every "
                              "handle of the store in this process and reopen it";

int lmdb_io_failed(store *st)
{
	return atomic_load(&st->io_failed);
}

int lmdb_is_io_errno(int rc)
{
	return rc > 0 && rc != ENOMEM && rc != EINVAL;
}

/*
 * Once the latch is set, every I/O error message says what that means for
 * the handle: the error that set it, as its own cause; any other, beside
 * it.
 */
int lmdb_latched_err(store *st, int code, int rc, const char *step)
{
	int failed = lmdb_io_failed(st);

	if (rc == failed)
		return mrtx__seterr(code, "store %s: %s: %s; %s", st->path, step, strerror(rc),
		                    lmdb_latch_why);
	return mrtx__seterr(code, "store %s: %s: %s (a write or sync of data.mdb failed earlier: "
	                    "%s; %s)", st->path, step, strerror(rc), strerror(failed),
	                    lmdb_latch_why);
}

/*
 * The latch.  LMDB itself goes on accepting write txns after a failed
 * sync; they would build on pages the kernel may have dropped and be
 * acknowledged without being durable (the lesson of PostgreSQL's
 * "fsyncgate").  So from the first failed sync on, no commit past
 * st->synced is reported durable (lmdb_durable: MRTX_EUNKNOWN for its
 * commit; a read's sync: MRTX_ESTORE), no later write txn starts
 * (lmdb_txn_begin), and reads go on: the map shows what was committed.
 * Nothing clears it but a reopen, which starts over from the file as the
 * kernel then shows it.  The first errno is kept, for the messages; one
 * that is no I/O error (ENOMEM, EINVAL) sets nothing.
 * Keeps I24 (DESIGN §10).
 */
void lmdb_io_latch(store *st, int err)
{
	int none = 0;

	if (lmdb_is_io_errno(err))
		(void)atomic_compare_exchange_strong(&st->io_failed, &none, err);
}

/*
 * Open st->wb_fd, once, before this process's first write txn: the kernel
 * reports a write-back error to a descriptor that was open when it
 * happened, so one opened after a failure says nothing of it.  Through
 * /proc/self/fd, a new open of LMDB's own file whatever the working
 * directory or the path became since; else by the path, if it is still
 * the same file.  -1 when neither works: lmdb_commit_io_failed then takes
 * every failed commit for a failed sync.
 */
void lmdb_wb_open(store *st)
{
	struct stat a, b;
	char file[4096];
	mdb_filehandle_t lfd;
	int fd;

	st->wb_opened = 1;
	st->wb_fd = -1;
	if (mdb_env_get_fd(st->env, &lfd) != 0 || fstat(lfd, &a) != 0)
		return;
	snprintf(file, sizeof(file), "/proc/self/fd/%d", lfd);
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0 &&
	    snprintf(file, sizeof(file), "%s/data.mdb", st->ts_dir ? st->ts_dir : st->path) <
	    (int)sizeof(file))
		fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)) {
		close(fd);
		fd = -1;
	}
	st->wb_fd = fd;
}

/* Almost no space left where data.mdb is (for whoever writes it: root may
 * use the blocks reserved for it): what makes a write fall short. */
static int fs_full(store *st)
{
	struct statvfs sv;
	unsigned long long avail;

	if (statvfs(st->path, &sv) != 0)
		return 0;
	avail = (unsigned long long)(geteuid() == 0 ? sv.f_bfree : sv.f_bavail) * sv.f_frsize;
	return avail < FS_FULL_BYTES;
}

/* Did LMDB stop on a failed meta page write (MDB_PANIC)?  A read txn's
 * begin says: LMDB refuses every txn once it has. */
static int lmdb_stopped(store *st)
{
	MDB_txn *probe;
	int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &probe);

	if (rc == 0)
		mdb_txn_abort(probe);
	return rc == MDB_PANIC;
}

/*
 * mdb_txn_commit failed with an I/O error rc (under st->wmu); returns the
 * errno to report, having set the latch unless the failure was a page
 * write.  mdb_txn_commit does not say which call failed.  The kernel
 * reports a write-back error once to every open file description of the
 * file (Linux 4.13 and later), so an fdatasync through our own descriptor
 * (lmdb_wb_open, open since before this txn) tells: it fails if any
 * write-back failed since its last check -- a failed sync -- and when it
 * succeeds, everything written so far is on disk.  LMDB reports a short
 * write as EIO: taken as ENOSPC when the file system is then full, as a
 * failed sync otherwise (a device error: the latch is the safe side).
 * Keeps I24 (DESIGN §10).
 */
int lmdb_commit_io_failed(store *st, int rc)
{
	int clean = st->wb_fd >= 0 && fdatasync(st->wb_fd) == 0 && !lmdb_stopped(st);

	if (clean && rc == EIO) {
		if (fs_full(st))
			rc = ENOSPC;
		else
			clean = 0;
	}
	if (!clean)
		lmdb_io_latch(st, rc);
	return rc;
}
