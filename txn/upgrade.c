/*
 * upgrade.c - mrtx_upgrade: convert an older store in place (the backend
 * does the work, storage/lmdb/lmdb_upgrade.c and
 * storage/rados/rados_upgrade.c; this layer knows the lock records that
 * say which commit wrote a row's cells, and their order keys).
 */
#include "txn_int.h"

/* The version of a format-3 row's cells, from its lock: the commit that
 * wrote them, a STABLE record's (1: not STABLE, a transaction in flight:
 * the upgrade refuses those; -1: malformed). */
static int row_ts(const void *lock, size_t n, uint64_t *ts)
{
	_Alignas(16) uint8_t buf[1024];
	mrtx_arena a;
	lock_rec r;
	int rc;

	arena_init_buf(&a, buf, sizeof(buf));
	rc = lock_decode(&r, MRTX_BYTES(lock, n), &a);
	if (rc == 0)
		*ts = r.commit_ts;
	arena_free(&a);
	return rc ? -1 : r.state != LOCK_STABLE;
}

int mrtx_upgrade(const char *path, uint64_t *cells)
{
	uint64_t n = 0;
	int rc, was;

	mrtx__clearerr();
	if (cells)
		*cells = 0;
	if (!path || !*path)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_upgrade: path is required");
	if ((rc = mrtx__fp_from_env())) /* (upgrade.after_batch, as mrtx_open arms) */
		return mrtx__seterr(rc, "MRTX_FAILPOINTS: %s", mrtx__fp_env_error());
	rc = store_upgrade(path, row_ts, lock_order_key, &n, &was);
	if (cells)
		*cells = n;
	return rc;
}
