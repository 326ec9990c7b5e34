/*
 * rados_ts.c - the timestamp source of a RADOS store (store_ts_next;
 * DESIGN §9): many hosts, no clock bound assumed.
 *
 * The last timestamp handed out is the omap value "ts" (ts_put) of
 * the object NAME.ts.  A batch of k callers proposes t = max(last this
 * handle knows + 1, this host's clock in µs, the callers' floors) and
 * reserves t .. t + k - 1 with one guarded write: if the stored value is
 * below t, set it to t + k - 1.  RADOS applies the writes of one object
 * one at a time, so a batch sent after another's write was acknowledged
 * is compared against that write's value or a later one: every timestamp
 * is above every one handed out before its batch was sent (Percolator's
 * oracle, with the object as the oracle).  A guard that fails (another
 * handle got further) re-reads and proposes again, further ahead
 * (ts_reserve); a write whose outcome is unknown (a timeout) also
 * re-reads: a range it may have reserved is skipped, never handed twice;
 * two timeouts end the call (MRTX_ESTORE).  Each write is durable when
 * acknowledged, so nothing else is needed across crashes.
 *
 * Batching (Percolator's): callers that arrive while a batch is in flight
 * queue; when it returns, one of them sends the next batch for all of
 * them.  A caller never joins a batch already sent -- its timestamp must
 * exceed those handed out before it called.
 *
 *     queued ──(no batch in flight)──► leader: guarded write for all queued
 *        ▲                                      │ applied: hand t .. t+k-1
 *        └──── wait (another batch in flight)   │ guard false / unknown:
 *                                               └─ re-read, write again
 *
 * Cost: one guarded write round trip per batch (0.7–0.9 ms on a loopback
 * cluster here: `mrtx bench rados://... --only ts`), shared by every
 * caller of the batch.  A read-only handle never
 * writes: MRTX_EREADONLY.
 *
 * The oracle is the store's only order (DESIGN §9.1): every commit point,
 * one-row commits and recovery's fences included, is stamped from here
 * (rados_write.c); a transaction's start timestamp is one read of "ts"
 * (rados_store_ts_start); this host's clock only seeds a proposal.  A
 * batch with a snapshot's caller in it also sets the handle's record in
 * the registry of running snapshots, which shares this object
 * (rados_snaps.c), in the same guarded write: the snapshot is registered
 * by the write that hands out its timestamp.
 */
#include <errno.h>
#include <pthread.h>
#include <rados/librados.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/rados/rados_conn.h"
#include "storage/rados/rados_int.h"
#include "storage/rados/rados_store.h"

#define TS_KEY "ts"
#define TS_ATTEMPTS 64 /* guarded writes one batch tries before giving up */
#define TS_SIZE 10u    /* a stored timestamp: ten 7-bit digits, big-endian */

/* The OSD compares omap values as signed chars, so a value that must
 * order as its number (the guard below) keeps every byte under 128 (as
 * rgen_put does, rados_int.h). */
static void ts_put(uint8_t *p, uint64_t v)
{
	for (int i = TS_SIZE - 1; i >= 0; i--, v >>= 7)
		p[i] = (uint8_t)(v & 0x7f);
}

static int ts_get(const uint8_t *p, uint64_t *v)
{
	*v = 0;
	if (p[0] > 1) /* (70 bits of digits; a u64 leaves the first at 0 or 1) */
		return -1;
	for (unsigned i = 0; i < TS_SIZE; i++) {
		if (p[i] & 0x80)
			return -1;
		*v = *v << 7 | p[i];
	}
	return 0;
}

int rados_ts_decode(mrtx_bytes v, uint64_t *out)
{
	return v.size != TS_SIZE || ts_get(v.data, out) ? -1 : 0;
}

/* A caller waiting in a batch (on its own stack). */
struct rts_wait {
	uint64_t floor;
	int snap;            /* a snapshot's: register it (store_ts_snapshot) */
	const store_snap_set *set; /* ... with its handle's oldest running one,
	                      * asked by the leader just before its write; the
	                      * leader enters the snapshot after the write */
	uint64_t oldest;     /* the record a batch writes (rec): its minimum */
	uint64_t until;      /* ... protected until (this handle's clock) */
	uint64_t ts;
	int rc;
	int done;
	char msg[256]; /* the leader's error message, when rc */
	struct rts_wait *next;
};

/* The value NAME.ts holds now (0 when absent), read without writing. */
static int ts_fetch(rstore *rs, uint64_t *out)
{
	mrtx_bytes key = MRTX_CSTR(TS_KEY);
	mrtx_arena a;
	rread r;
	int rc;

	*out = 0;
	memset(&r, 0, sizeof(r));
	r.oid = rs->ts_oid;
	r.keys = &key;
	r.nkeys = 1;
	arena_init(&a);
	atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
	rc = rconn_read(rs->conn, &r, 1, &a);
	if (rc == 0) {
		for (size_t i = 0; i < r.nkvs; i++) {
			if (r.kvs[i].value.size != TS_SIZE || ts_get(r.kvs[i].value.data, out)) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: object %s holds a malformed "
				                  "timestamp", rs->addr, rs->ts_oid);
				*out = 0;
				break;
			}
		}
	} else if (rc == RCONN_TIMEDOUT) {
		rc = mrtx__seterr(MRTX_ESTORE, "%s: %s", rs->addr, mrtx_errmsg());
	}
	arena_free(&a);
	return rc;
}

/* The last value known to be stored (rs->ts_mu held by the leader only). */
static int ts_read(rstore *rs)
{
	int rc;

	rs->ts_known = 0;
	if ((rc = ts_fetch(rs, &rs->ts_last)) == 0)
		rs->ts_known = 1;
	return rc;
}

int rados_store_ts_now(store *st, uint64_t *out)
{
	return ts_fetch(RS(st), out);
}

/*
 * Reserve k timestamps, the first at least floor: *first.  The guard is
 * "stored < t" (absent is the empty value, below any), which keeps the
 * stored value increasing and our range above it (ts_put's digits compare
 * as the numbers), and "stored > the last value this handle knew stored,
 * less one", which a value damaged to compare below that fails.  A value
 * the handle does not know is read first (ts_read: a malformed one is
 * MRTX_ECORRUPT, not written over).  Damage that compares above what the
 * handle knew passes both (DESIGN §9.1: an exact guard would starve).
 * After a failed guard this handle re-reads and proposes again; after
 * two, it also aims ahead -- 1 ms, doubling with each further failure --
 * so that a handle racing one that streams its batches back to back
 * (whose next write lands in any read-to-write window) still gets
 * through: the cost is a gap in the timestamps, never a repeat.  Handles
 * merely taking turns need no margin (the re-read suffices), so the
 * counter stays near the clock.
 */
static int ts_reserve(store *st, size_t k, uint64_t floor, const struct rts_wait *rec,
                      uint64_t *first)
{
	rstore *rs = RS(st);
	int timeouts = 0;

	for (int attempt = 0; attempt < TS_ATTEMPTS; attempt++) {
		uint8_t lt[TS_SIZE], gt[TS_SIZE], want[TS_SIZE], rv[RSNAP_VAL];
		rguard g[2];
		rkv set[2];
		rwrite w;
		uint64_t t;
		int rc;

		/* (a value this handle has not seen stored is read first -- its
		 * first reservation, or after a guard failed -- so that one that
		 * is malformed is reported, MRTX_ECORRUPT, never written over) */
		if (!rs->ts_known && (rc = ts_read(rs)))
			return rc;
		/* (above every value this handle knows, ts_hint; the clock
		 * only seeds the proposal: the guard decides the order) */
		t = MRTX_MAX(MRTX_MAX(MRTX_MAX(rs->ts_last, atomic_load(&rs->ts_hint)) + 1,
		                      store_now_us(st)), floor);
		if (attempt >= 2)
			t += (uint64_t)1000u << (attempt < 12 ? attempt - 2 : 10);
		ts_put(lt, t);
		ts_put(want, t + k - 1);
		ts_put(gt, rs->ts_last - 1);
		g[0] = (rguard){ MRTX_CSTR(TS_KEY), MRTX_BYTES(lt, TS_SIZE), LIBRADOS_CMPXATTR_OP_LT, 0 };
		/* The stored value only grows, so it is at least the last this
		 * handle knew stored (above that less one: the OSD compares EQ,
		 * LT and GT only); one that compares below was damaged since --
		 * cut short, a digit's top bit set (a negative char) -- and the
		 * guard fails, the value is read again and reported. */
		g[1] = (rguard){ MRTX_CSTR(TS_KEY), MRTX_BYTES(gt, TS_SIZE), LIBRADOS_CMPXATTR_OP_GT, 0 };
		set[0] = (rkv){ MRTX_CSTR(TS_KEY), MRTX_BYTES(want, TS_SIZE) };
		if (rec) /* (registered by the write that hands it out) */
			set[1] = rados_snap_record(rs, MRTX_MIN(rec->oldest, t), rec->until, rv);
		memset(&w, 0, sizeof(w));
		w.oid = rs->ts_oid;
		w.create = 1;
		w.guards = g;
		w.nguards = rs->ts_last ? 2 : 1; /* (0: absent, the empty value) */
		w.sets = set;
		w.nsets = rec ? 2 : 1;
		atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
		rc = rconn_write(rs->conn, &w, 1);
		if (rc == 0 && w.result == 0) {
			uint64_t h = atomic_load(&rs->ts_hint);

			rs->ts_last = t + k - 1;
			*first = t;
			while (h < rs->ts_last &&
			       !atomic_compare_exchange_weak(&rs->ts_hint, &h, rs->ts_last))
				;
			return 0;
		}
		rs->ts_known = 0; /* moved by another handle, or unknown: re-read */
		if (rc == RCONN_TIMEDOUT && ++timeouts == 2)
			return mrtx__seterr(MRTX_ESTORE, "%s: writes of the timestamp object %s timed "
			                    "out twice", rs->addr, rs->ts_oid);
		if (rc && rc != RCONN_TIMEDOUT)
			return rc;
	}
	return mrtx__seterr(MRTX_ESTORE, "%s: the timestamp object %s changed under each of %d "
	                    "guarded writes (other handles taking timestamps)", rs->addr,
	                    rs->ts_oid, TS_ATTEMPTS);
}

static int ts_take(store *st, rts_wait *me, uint64_t *out);

int rados_store_ts_next(store *st, uint64_t floor, uint64_t *out)
{
	rts_wait me;

	memset(&me, 0, sizeof(me));
	me.floor = floor;
	return ts_take(st, &me, out);
}

int rados_store_ts_snapshot(store *st, const store_snap_set *set, uint64_t until_us,
                            uint64_t *out)
{
	rts_wait me;

	memset(&me, 0, sizeof(me));
	me.snap = !RS(st)->head.read_only;
	me.set = set;
	me.until = until_us;
	return ts_take(st, &me, out);
}

/* Keeps I17, I19 (DESIGN §10). */
static int ts_take(store *st, rts_wait *mep, uint64_t *out)
{
	rstore *rs = RS(st);
	int led = 0;

	*out = 0;
	if (mep->floor >= (uint64_t)1 << 63)
		return mrtx__seterr(MRTX_EINVAL, "timestamp floor %llu is out of range",
		                    (unsigned long long)mep->floor);
	if (rs->head.read_only)
		return mrtx__seterr(MRTX_EREADONLY, "%s: a timestamp is a write to the store, and "
		                    "this handle is read-only", rs->addr);
	pthread_mutex_lock(&rs->ts_mu);
	*rs->ts_tail = mep;
	rs->ts_tail = &mep->next;
	while (!mep->done) {
		rts_wait *batch, *w, rec;
		uint64_t first = 0, fl = 0;
		size_t k = 0;
		int rc;

		if (rs->ts_busy) {
			pthread_cond_wait(&rs->ts_cv, &rs->ts_mu);
			continue;
		}
		/* lead: take every queued caller (this one among them) */
		batch = rs->ts_queue;
		rs->ts_queue = NULL;
		rs->ts_tail = &rs->ts_queue;
		rs->ts_busy = 1;
		led = 1;
		memset(&rec, 0, sizeof(rec));
		rec.oldest = UINT64_MAX;
		for (w = batch; w; w = w->next) {
			k++;
			fl = MRTX_MAX(fl, w->floor);
			if (w->snap) {
				rec.snap = 1;
				rec.until = MRTX_MAX(rec.until, w->until);
			}
		}
		pthread_mutex_unlock(&rs->ts_mu);
		/* (the set is asked now, after the previous batch entered its
		 * snapshots: each one reserved before is in it) */
		for (w = batch; w; w = w->next)
			if (w->snap)
				rec.oldest = MRTX_MIN(rec.oldest, w->set->oldest(w->set->arg));
		/* (the leader alone touches ts_last / ts_known: ts_busy) */
		rc = ts_reserve(st, k, fl, rec.snap ? &rec : NULL, &first);
		if (rc == 0 && rec.snap) /* (its result is ignored: wait, sleep) */
			(void)FAILPOINT(FP_TS_BEFORE_ENTER);
		/* (snapshots entered in their sets before the next batch) */
		for (w = batch; w; w = w->next) {
			w->ts = rc ? 0 : first++;
			if (rc == 0 && w->set)
				w->set->enter(w->set->arg, w->ts);
		}
		pthread_mutex_lock(&rs->ts_mu);
		for (w = batch; w; w = w->next) {
			w->rc = rc;
			if (rc)
				snprintf(w->msg, sizeof(w->msg), "%s", mrtx_errmsg());
			w->done = 1;
		}
		rs->ts_busy = 0;
		pthread_cond_broadcast(&rs->ts_cv);
	}
	pthread_mutex_unlock(&rs->ts_mu);
	if (mep->rc && !led) /* (the message was the leader thread's) */
		return mrtx__seterr(mep->rc, "%s", mep->msg);
	if (mep->rc)
		return mep->rc;
	*out = mep->ts;
	return 0;
}

int rados_store_ts_known(store *st, uint64_t *out)
{
	*out = atomic_load(&RS(st)->ts_hint);
	return 0;
}

int rados_store_ts_start(store *st, uint64_t *out)
{
	rstore *rs = RS(st);
	uint64_t v;
	int rc;

	*out = 0;
	if ((rc = ts_fetch(rs, &v)))
		return rc;
	rados_store_ts_learn(st, v);
	*out = atomic_load(&rs->ts_hint);
	return 0;
}

void rados_store_ts_learn(store *st, uint64_t ts)
{
	rstore *rs = RS(st);
	uint64_t h = atomic_load(&rs->ts_hint);

	while (h < ts && !atomic_compare_exchange_weak(&rs->ts_hint, &h, ts))
		;
}
