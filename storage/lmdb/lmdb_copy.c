/*
 * lmdb_copy.c - the LMDB side of mrtx_backup (txn/backup.c): a consistent
 * copy of the environment's data file, and a forced sync.
 *
 * The copy is LMDB's own (mdb_env_copyfd2): one read transaction, so it is
 * the store as of one committed LMDB transaction, taken while writers go
 * on.  MDB_CP_COMPACT writes only the pages in use, renumbered; LMDB
 * refuses compaction (MDB_INCOMPATIBLE) for an environment that leaked
 * pages, and then the plain page-for-page copy is made instead.
 *
 * The file is written as dir/data.mdb.partial and renamed to data.mdb once
 * complete and synced, so a copy cut short (a crash, a full disk) never
 * looks like a store.
 */
#include "storage/lmdb/lmdb_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_ATTEMPTS 3 /* MDB_MAP_RESIZED: adopt the map, start over */

/* Does a transaction begin now (MDB_MAP_RESIZED: the map must grow first)? */
static int probe(store *st, void *arg)
{
	MDB_txn *t;
	int rc = mdb_txn_begin(st->env, NULL, MDB_RDONLY, &t);

	(void)arg;
	if (rc == 0)
		mdb_txn_abort(t);
	return rc;
}

/* The environment into fd (at offset 0), compacted when LMDB can. */
static int copy_env(store *st, int fd, const char *tmp)
{
	unsigned flags = MDB_CP_COMPACT;
	int rc = 0;

	for (int resized = 0; resized < COPY_ATTEMPTS;) {
		if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
			return mrtx__sys_err("backup", "truncate", tmp, errno);
		rc = mdb_env_copyfd2(st->env, fd, flags);
		if (rc == MDB_INCOMPATIBLE && flags) {
			flags = 0; /* a page leak: copy page for page */
			continue;
		}
		if (rc != MDB_MAP_RESIZED)
			break;
		/* Another process grew the map: adopt its size (as lmdb_txn_begin). */
		if ((rc = lmdb_remap(st, "copy environment", probe, NULL)) == MRTX_ESTORE)
			return rc;
		resized++;
	}
	if (rc > 0)
		return mrtx__sys_err("backup", "write", tmp, rc);
	if (rc)
		return lmdb_err(st, rc, "copy environment");
	return 0;
}

int lmdb_store_copy(store *st, const char *dir)
{
	char src[4096], tmp[4096], fin[4096];
	mode_t mode = 0600;
	struct stat sb;
	int fd, rc;

	if ((rc = mrtx__path_join(src, sizeof(src), st->path, "data.mdb", "backup")) ||
	    (rc = mrtx__path_join(tmp, sizeof(tmp), dir, "data.mdb.partial", "backup")) ||
	    (rc = mrtx__path_join(fin, sizeof(fin), dir, "data.mdb", "backup")))
		return rc;
	if (stat(src, &sb) == 0)
		mode = sb.st_mode & 0777; /* the copy is as private as the store */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		if (errno == EEXIST)
			return mrtx__seterr(MRTX_EEXIST, "backup: %s exists (another backup into "
			                    "%s, or one cut short: remove it)", tmp, dir);
		return mrtx__sys_err("backup", "create", tmp, errno);
	}
	rc = copy_env(st, fd, tmp);
	if (rc == 0 && fsync(fd) != 0)
		rc = mrtx__sys_err("backup", "sync", tmp, errno);
	if (close(fd) != 0 && rc == 0)
		rc = mrtx__sys_err("backup", "close", tmp, errno);
	if (rc == 0 && rename(tmp, fin) != 0)
		rc = mrtx__sys_err("backup", "rename", tmp, errno);
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return mrtx__sync_dir(dir, "backup");
}

/* A full sync proves nothing once one has failed (the latch, lmdb_io.c). */
int lmdb_store_sync(store *st)
{
	int rc = lmdb_io_failed(st);

	if (rc == 0 && (rc = mdb_env_sync(st->env, 1)) == 0)
		return 0;
	lmdb_io_latch(st, rc);
	return lmdb_err(st, rc, "sync");
}
