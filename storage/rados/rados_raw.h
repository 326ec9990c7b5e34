/*
 * rados_raw.h - plain guarded RADOS writes, without mrtx's protocol: the
 * baseline `mrtx bench rados://...` compares transactions against, and the
 * clean-up of the stores a benchmark created.  No librados type appears
 * here, so tools/ can use it without including <rados/librados.h>.
 *
 * A raw row write is what a program using librados directly would send to
 * write one row atomically: one compound op on one object, guarded by
 * omap_cmp on the row's lock key (the same key encoding mrtx uses, absent
 * here, so the guard holds), then the row's cells set.  Rows of one object
 * share one op (a guard per row); ops on different objects are submitted
 * at once (aio) and waited for together.
 */
#ifndef MRTX_RADOS_RAW_H
#define MRTX_RADOS_RAW_H

#include <stddef.h>

#include "mrtx.h"

typedef struct rraw rraw;

/*
 * Connect to the cluster and pool of the store address uri (rados://...;
 * its NAME is not used).  *out is set only on success; rraw_close it.
 * @return MRTX_OK; MRTX_EINVAL (not a valid rados:// address);
 *   MRTX_ESTORE, MRTX_ENOTSTORE (no such pool), MRTX_ENOMEM as rconn_open.
 */
int rraw_open(rraw **out, const char *uri);
/* Disconnect.  NULL is fine. */
void rraw_close(rraw *r);

/*
 * Write n rows at once: row i to object oids[i], guarded by "the lock key
 * of rows[i] is absent", setting cells cells (family 0, qualifiers q0,
 * q1, ...; 16-byte values); one op per distinct object.  Waits for all.
 * @return MRTX_OK when every guarded op applied; MRTX_CONFLICT when a guard
 *   was false; MRTX_EINVAL (n or cells 0 or over 1024, a row of 0 or over
 *   MRTX_MAX_ROW bytes); MRTX_ESTORE (a timeout included: the bench has no
 *   use for the outcome); MRTX_ENOMEM.
 */
int rraw_put_rows(rraw *r, const char *const *oids, const mrtx_bytes *rows, size_t n,
                  int cells);

/*
 * Remove every object of the pool whose name starts with prefix (non-empty)
 * and store in *removed how many were.  Lists the whole pool: meant for
 * benchmarks and tests on pools of their own.
 * @return MRTX_OK; MRTX_EINVAL (empty prefix); MRTX_ESTORE; MRTX_ENOMEM.
 */
int rraw_remove_prefix(rraw *r, const char *prefix, unsigned long *removed);

/*
 * The names of the pool's objects that start with prefix (non-empty), in
 * strcmp order, into *out (*n of them; free each and the array with free()).
 * Lists the whole pool.
 * @return MRTX_OK; MRTX_EINVAL (empty prefix); MRTX_ESTORE; MRTX_ENOMEM.
 */
int rraw_list_prefix(rraw *r, const char *prefix, char ***out, size_t *n);

/*
 * Read every omap key and value of object oid, as a program that dumps it
 * would: omap_get_vals2 in pages of up to 1024 pairs, one read op a page,
 * each page after the last key of the one before.  *keys: how many pairs
 * were read.  A missing object has none.
 * @return MRTX_OK; MRTX_ESTORE (a timeout included); MRTX_ENOMEM.
 */
int rraw_omap_read_all(rraw *r, const char *oid, unsigned long *keys);

#endif
