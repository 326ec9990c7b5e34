/*
 * store_walk.c - visit every row of a table in batches, through the seam.
 *
 * Each batch is one snapshot (store_scan_rows); the next starts after the
 * last row of the previous one, so rows written meanwhile behind the walk
 * are not seen and rows ahead of it are.  Used by the recovery sweep, the
 * check and the tool's listings.
 */
#include "store.h"

#include <string.h>

int store_walk(store *st, const store_table *t, const store_filter *f, size_t batch,
               store_batch_fn fn, void *payload)
{
	store_range r = { { NULL, 0 }, 0, { NULL, 0 } };
	uint8_t last[MRTX_MAX_KEY];
	int rc = 0, more = 1;

	while (more && rc == 0) {
		mrtx_arena a;
		store_row *rows;
		size_t n = 0;

		arena_init(&a);
		rc = store_scan_rows(st, t, &r, 0, f, batch, &a, &rows, &n, &more);
		if (rc == 0 && n)
			rc = fn(t, rows, n, &a, payload);
		if (rc == 0 && n) {
			/* lock keys are raw rows: at most MRTX_MAX_KEY bytes (LMDB) */
			size_t len = MRTX_MIN(rows[n - 1].row.size, sizeof(last));

			memcpy(last, rows[n - 1].row.data, len);
			r.lo = MRTX_BYTES(last, len);
			r.lo_excl = 1;
		}
		if (n == 0)
			more = 0;
		arena_free(&a);
	}
	return rc;
}
