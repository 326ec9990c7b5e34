/*
 * heartbeat.h - keep a committing transaction's primary lock unexpired.
 *
 * A multi-row commit holds PREWRITTEN locks from its prewrite to its commit
 * point.  Whoever meets them decides from the primary's record: an owner on
 * this host that is dead, or a record past its expiry (the only test for an
 * owner on another host), gets the transaction aborted.  A commit that is
 * alive but slow -- a long validation of scanned ranges, a store call
 * waiting on an OSD -- must not be aborted under it, so while it runs, one
 * thread per db handle extends its primary's expiry before it passes:
 *
 *      hb_start (prewrite built, not yet sent)
 *         |
 *         v            the db's heartbeat thread, each pass, for an entry
 *     registered ---   due (now >= expiry - ttl/2) and not busy:
 *         |        \     busy; CAS primary  cur -> cur with expiry now + ttl
 *         |         \      (the bytes patched in place: lock_set_expiry)
 *         |         \      applied: cur, expiry = the new ones
 *         |          \     failed:  nothing (the prewrite has not landed yet,
 *         |           \             or the lock is no longer ours: the
 *         |            \            commit point will find out)
 *         |             `- not busy
 *         v
 *      hb_stop (before the commit point, or before rolling back): waits out
 *         a refresh in flight, unregisters, returns the primary's current
 *         bytes -- what the next conditional write on it must expect
 *
 * The refresh changes nothing but the expiry, so everything that compares
 * the transaction's own prewrite (validation of scanned ranges) ignores the
 * expiry field (lock_same_but_expiry).  Only the primary is refreshed:
 * every decision about a transaction is read off its primary.
 *
 * The thread starts with the first hb_start of a handle and is joined by
 * hb_shutdown (mrtx_close).  It sleeps until the earliest due entry; a
 * commit shorter than half its lock TTL costs two mutex round trips and no
 * store call.
 */
#ifndef MRTX_TXN_HEARTBEAT_H
#define MRTX_TXN_HEARTBEAT_H

#include "../lockcf/lock.h"

typedef struct hb_entry hb_entry;
struct hb_entry {
	hb_entry *next;
	const store_table *t;
	mrtx_bytes row;
	uint8_t *cur;        /* the primary's bytes as last written (owned) */
	size_t ncur;
	uint64_t expiry_ms;
	uint32_t ttl_ms;
	int busy;            /* a refresh is in flight (the thread's) */
	unsigned long refreshes;
};

struct mrtx_db;

/*
 * Register the primary (t, row) whose prewrite is the encoded record bytes
 * (t and row borrowed until hb_stop; bytes copied) for refreshes every
 * ttl_ms / 2.
 * @return MRTX_OK; MRTX_ENOMEM (no copy of the bytes, or no thread: then
 *   nothing is registered).
 */
int hb_start(struct mrtx_db *db, hb_entry *e, const store_table *t, mrtx_bytes row,
             mrtx_bytes bytes, uint32_t ttl_ms);
/*
 * Unregister e, after a refresh in flight; *cur receives the primary's
 * current bytes, copied into a.  Returns MRTX_OK or MRTX_ENOMEM (e is
 * unregistered all the same; *cur is empty).
 */
int hb_stop(struct mrtx_db *db, hb_entry *e, mrtx_arena *a, mrtx_bytes *cur);
/* Stop and join the handle's heartbeat thread (mrtx_close). */
void hb_shutdown(struct mrtx_db *db);

#endif
