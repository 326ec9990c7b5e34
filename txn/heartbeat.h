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
 * The thread starts with the first hb_start of a handle, together with
 * the handle's tail thread (tail.h), and both are joined by
 * hb_shutdown (mrtx_close) and before a fork (restarted after it in the
 * parent).  It sleeps until the earliest due entry (on the monotonic
 * clock) and refreshes every due entry in one store call, so one slow
 * refresh does not hold back the others; a commit shorter than half its
 * lock TTL costs two mutex round trips and no store call.
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
	uint64_t expiry_ms;  /* the record's expiry as last written */
	uint64_t retry_ms;   /* after a failed refresh: not before then */
	uint32_t ttl_ms;
	int registered;      /* 0: no thread could be started; no refreshes */
	int busy;            /* a refresh is in flight (the thread's) */
	int uncertain;       /* a refresh's outcome is unknown (store error or
	                        MRTX_EUNKNOWN): hb_stop re-reads the primary */
};

struct mrtx_db;

/*
 * Register the primary (t, row) whose prewrite is the encoded record bytes
 * with expiry expiry_ms (t and row borrowed until hb_stop; bytes copied)
 * for refreshes every ttl_ms / 2.  If no thread can be started the commit
 * goes on without refreshes (as before there was a heartbeat).
 * @return MRTX_OK; MRTX_ENOMEM (no copy of the bytes).
 */
int hb_start(struct mrtx_db *db, hb_entry *e, const store_table *t, mrtx_bytes row,
             mrtx_bytes bytes, uint64_t expiry_ms, uint32_t ttl_ms);
/*
 * Unregister e, after a refresh in flight; *cur receives the primary's
 * current bytes, copied into a.  When a refresh's outcome was unknown, the
 * primary is re-read: if it holds our record with another expiry, those
 * bytes.  Returns MRTX_OK or MRTX_ENOMEM (e is unregistered all the same;
 * *cur is empty).
 */
int hb_stop(struct mrtx_db *db, hb_entry *e, mrtx_arena *a, mrtx_bytes *cur);
/* Initialise the handle's heartbeat state (mrtx_open; a forked child). */
void hb_init(struct mrtx_db *db);
/* Stop and join the handle's heartbeat thread (mrtx_close). */
void hb_shutdown(struct mrtx_db *db);

/* Start db's heartbeat and tail threads if they are not running (as the
 * first hb_start does).  1 when the tail thread runs; 0 when the handle
 * has none (the no_threads knob, or the threads could not start). */
int hb_threads(mrtx_db *db);

#endif
