/*
 * fuzz_lock.c - the lock record decoder (lockcf/lock.c) on arbitrary bytes.
 *
 * Properties: lock_decode never crashes or reads out of bounds, and agrees
 * with lock_peek; whatever decodes re-encodes to bytes that decode to the
 * same record, and that encoding is a fixed point (encode . decode is
 * canonical).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lockcf/lock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_rec(const lock_rec *a, const lock_rec *b)
{
	if (a->state != b->state || a->flags != b->flags || a->commit_ts != b->commit_ts ||
	    memcmp(a->tag, b->tag, sizeof(a->tag)) || memcmp(a->txn, b->txn, sizeof(a->txn)))
		return 0;
	if (a->state == LOCK_STABLE)
		return 1;
	return a->expiry_ms == b->expiry_ms && a->owner.pid == b->owner.pid &&
	       a->owner.start_time == b->owner.start_time && a->nredo == b->nredo &&
	       a->nsecondaries == b->nsecondaries && a->prev_commit_ts == b->prev_commit_ts;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mrtx_arena a;
	lock_rec r, r2;
	mrtx_bytes enc, enc2;
	uint8_t state, txn[LOCK_TXNID_SIZE];
	int rc, prc;

	arena_init(&a);
	rc = lock_decode(&r, MRTX_BYTES(data, size), &a);
	prc = lock_peek(MRTX_BYTES(data, size), &state, txn);
	if (rc == 0) {
		if (prc != 0 || state != r.state || memcmp(txn, r.txn, sizeof(txn)))
			abort(); /* peek disagrees with decode */
		if (lock_encode(&r, &a, &enc) == 0) {
			if (lock_decode(&r2, enc, &a) != 0 || !same_rec(&r, &r2))
				abort(); /* encode(decode(x)) does not decode to the same */
			if (lock_encode(&r2, &a, &enc2) != 0 || enc2.size != enc.size ||
			    memcmp(enc.data, enc2.data, enc.size) != 0)
				abort(); /* encoding is not canonical */
		}
	} else if (rc != MRTX_ECORRUPT) {
		abort(); /* malformed input must be MRTX_ECORRUPT */
	}
	arena_free(&a);
	return 0;
}
