/*
 * check_file.c - check_file: the deep check of a store's file
 * (store_check_file), given what only this layer knows, the lock record
 * (lockcf/lock.h): each record must decode and carry the store's tag,
 * and the commit timestamp of a STABLE or COMMITTED one goes to the store
 * to hold against the timestamp ceiling.
 */
#include "check.h"

#include <stdio.h>
#include <string.h>

static int lock_check(const void *lock, size_t size, const uint8_t tag[8],
                      uint64_t *commit_ts, char *why, size_t whylen)
{
	static const char prefix[] = "lock record: ";
	_Alignas(16) uint8_t buf[1024];
	mrtx_arena a;
	lock_rec r;
	int rc;

	*commit_ts = 0;
	arena_init_buf(&a, buf, sizeof(buf));
	rc = lock_decode(&r, MRTX_BYTES(lock, size), &a);
	if (rc) {
		const char *m = mrtx_errmsg();

		if (strncmp(m, prefix, sizeof(prefix) - 1) == 0)
			m += sizeof(prefix) - 1;
		snprintf(why, whylen, "%s", *m ? m : mrtx_strerror(rc));
	} else if (tag && memcmp(r.tag, tag, LOCK_TAG_SIZE) != 0) {
		snprintf(why, whylen, "another store's tag");
		rc = MRTX_ECORRUPT;
	} else if (r.state == LOCK_STABLE || r.state == LOCK_COMMITTED) {
		*commit_ts = r.commit_ts; /* (a stamp: a commit point took it) */
	}
	arena_free(&a);
	return rc;
}

int check_file(const char *path, int (*damage)(const store_damage *d, void *payload),
               void (*table)(const char *name, int damaged, void *payload), void *payload,
               store_file_stats *stats)
{
	store_file_opts o = { damage, table, lock_check, lock_order_key, payload };

	return store_check_file(path, &o, stats);
}
