/*
 * fuzz_lock.c - the lock record decoder (lockcf/lock.c) on arbitrary bytes.
 *
 * Properties: lock_decode never crashes or reads out of bounds, and agrees
 * with lock_peek and with lock_is_stable_before (the one-row commit's
 * in-store condition); whatever decodes re-encodes to bytes that decode to
 * the same record, and that encoding is a fixed point (encode . decode is
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
	{
		/* the condition holds exactly for a decodable STABLE record with
		 * that tag and an older commit_ts (tag and bound taken from the
		 * input so that both outcomes occur) */
		uint8_t tag[LOCK_TAG_SIZE] = { 0 };
		uint64_t ts = UINT64_MAX;
		int want;

		if (size >= 3 + LOCK_TAG_SIZE + LOCK_TXNID_SIZE + 8 && (data[size - 1] & 1)) {
			/* the bound at the record's own commit_ts (fails), or one above */
			ts = 0;
			for (int i = 0; i < 8; i++)
				ts |= (uint64_t)data[3 + LOCK_TAG_SIZE + LOCK_TXNID_SIZE + i] << (8 * i);
			ts += (data[size - 1] & 2) && ts != UINT64_MAX;
		}

		if (size >= 3 + LOCK_TAG_SIZE)
			memcpy(tag, data + 3, LOCK_TAG_SIZE);
		want = rc == 0 && r.state == LOCK_STABLE && memcmp(r.tag, tag, LOCK_TAG_SIZE) == 0 &&
		       r.commit_ts < ts;
		if (lock_is_stable_before(MRTX_BYTES(data, size), tag, ts) != want)
			abort(); /* the in-store condition disagrees with decode */
	}
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
