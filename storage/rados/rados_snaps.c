/*
 * rados_snaps.c - the registry of running snapshots of a RADOS store
 * (store_snap_publish, store_snap_oldest; DESIGN §9.6, I19).
 *
 * Records live in the oracle's object NAME.ts (rados_ts.c), beside its
 * value "ts", one per handle:
 *
 *   key: "s/" boot id (32 hex digits) "-" pid "-" handle number
 *   value: u64 LE oldest snapshot | u64 LE lease end (µs of the publisher's
 *          clock: a duration from its write, not an order)
 *
 * A snapshot's timestamp is reserved by a guarded write of NAME.ts
 * (store_ts_snapshot) that also sets the handle's record to at most that
 * timestamp: registered from its first instant.  A snapshot that keeps
 * reading renews the record every quarter lease (txn/snapread.c).  A
 * collector (a commit's trim, `mrtx gc`) reads "ts" in the same read as
 * the first page of records, before any later page: every running
 * snapshot is either listed (its lease not ended) or was reserved after
 * that first read, so above the value "ts" held -- the safe point is at
 * most both.  That holds whatever the oracle's lead over any
 * clock.  A record outlives its handle by at most its lease (a crashed
 * process cannot pin history for longer), and the first reader to find one
 * expired removes it, guarded by its value (a handle that renewed it
 * meanwhile keeps it).  A handle whose snapshots ended leaves its record to
 * run out, or to be replaced by its next snapshot's reservation.
 */
#include "storage/sim_hooks.h"
#include "storage/rados/rados_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SNAP_VAL RSNAP_VAL
#define TS_KEY "ts"

static void snap_key(rstore *rs)
{
	static _Atomic unsigned handles;
	uint8_t boot[16];
	size_t n = 0;

	if (rs->snap_key[0])
		return;
	n = (size_t)snprintf(rs->snap_key, sizeof(rs->snap_key), "s/");
	mrtx__boot_id(boot);
	for (unsigned i = 0; i < 16; i++)
		n += (size_t)snprintf(rs->snap_key + n, sizeof(rs->snap_key) - n, "%02x", boot[i]);
	{
		uint64_t uniq = ((uint64_t)getpid() << 32) | atomic_fetch_add(&handles, 1);

		(void)mrtx__sim_random(&uniq, sizeof(uniq)); /* replayable in the simulator */
		snprintf(rs->snap_key + n, sizeof(rs->snap_key) - n, "-%ld-%u",
		         (long)(uniq >> 32), (unsigned)uniq);
	}
}

rkv rados_snap_record(rstore *rs, uint64_t oldest, uint64_t until_us, uint8_t *buf)
{
	snap_key(rs);
	mrtx__le64_put(buf, oldest);
	mrtx__le64_put(buf + 8, until_us);
	return (rkv){ MRTX_CSTR(rs->snap_key), MRTX_BYTES(buf, SNAP_VAL) };
}

int rados_store_snap_publish(store *st, uint64_t ts, uint64_t until_us)
{
	rstore *rs = RS(st);
	uint8_t v[SNAP_VAL];
	rkv set;
	rwrite w;
	int rc;

	if (rs->head.read_only)
		return 0;
	set = rados_snap_record(rs, ts, until_us, v);
	memset(&w, 0, sizeof(w));
	w.oid = rs->snaps_oid;
	w.create = 1;
	w.sets = &set;
	w.nsets = 1;
	atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
	rc = rconn_write(rs->conn, &w, 1);
	if (rc == RCONN_TIMEDOUT)
		return mrtx__seterr(MRTX_ESTORE, "%s: %s", rs->addr, mrtx_errmsg());
	if (rc)
		return rc;
	return w.result ? mrtx__seterr(MRTX_ESTORE, "%s: publishing a snapshot in %s: %s",
	                               rs->addr, rs->snaps_oid, strerror(-w.result)) : 0;
}

/* Remove an expired record, if it still holds what was read. */
static void drop_expired(rstore *rs, const rkv *kv)
{
	rguard g = { kv->key, kv->value, LIBRADOS_CMPXATTR_OP_EQ, 0 };
	rwrite w;

	memset(&w, 0, sizeof(w));
	w.oid = rs->snaps_oid;
	w.guards = &g;
	w.nguards = 1;
	w.rms = &kv->key;
	w.nrms = 1;
	atomic_fetch_add_explicit(&rs->write_txns, 1, memory_order_relaxed);
	(void)rconn_write(rs->conn, &w, 1); /* (best effort: the next reader tries again) */
}

/* Keeps I19 (DESIGN §10). */
int rados_store_snap_oldest(store *st, uint64_t now_us, uint64_t *oldest)
{
	rstore *rs = RS(st);
	mrtx_bytes after = MRTX_BYTES(NULL, 0), ts_key = MRTX_CSTR(TS_KEY);
	int dropped = 0, first = 1, rc = 0;
	mrtx_arena a;

	*oldest = UINT64_MAX;
	arena_init(&a);
	for (;;) {
		rget g;
		rread r;

		memset(&g, 0, sizeof(g));
		memset(&r, 0, sizeof(r));
		g.start_after = after;
		g.max = RLIST_MAX;
		r.oid = rs->snaps_oid;
		r.gets = &g;
		r.ngets = 1;
		if (first) { /* the oracle, in the read of the first page */
			r.keys = &ts_key;
			r.nkeys = 1;
		}
		atomic_fetch_add_explicit(&rs->read_txns, 1, memory_order_relaxed);
		if ((rc = rconn_read(rs->conn, &r, 1, &a))) {
			if (rc == RCONN_TIMEDOUT)
				rc = mrtx__seterr(MRTX_ESTORE, "%s: %s", rs->addr, mrtx_errmsg());
			break;
		}
		if (r.result == -ENOENT)
			break;
		for (size_t i = 0; first && i < r.nkvs; i++) {
			uint64_t o;

			/* a snapshot not listed below is reserved above it */
			if (rados_ts_decode(r.kvs[i].value, &o)) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: object %s holds a malformed "
				                  "timestamp", rs->addr, rs->snaps_oid);
				goto done;
			}
			*oldest = MRTX_MIN(*oldest, o);
		}
		first = 0;
		for (size_t i = 0; i < g.nkvs; i++) {
			const rkv *kv = &g.kvs[i];
			const uint8_t *p = kv->value.data;

			if (kv->key.size < 2 || memcmp(kv->key.data, "s/", 2) != 0 ||
			    (rs->snap_key[0] && kv->key.size == strlen(rs->snap_key) &&
			     memcmp(kv->key.data, rs->snap_key, kv->key.size) == 0))
				continue; /* (this handle's own: its live set is exact) */
			if (kv->value.size != SNAP_VAL) {
				rc = mrtx__seterr(MRTX_ECORRUPT, "%s: a malformed snapshot record in %s",
				                  rs->addr, rs->snaps_oid);
				goto done;
			}
			if (mrtx__le64_get(p + 8) > now_us)
				*oldest = MRTX_MIN(*oldest, mrtx__le64_get(p));
			else if (!rs->head.read_only && dropped++ < 4)
				drop_expired(rs, kv);
		}
		if (!g.more || !g.nkvs)
			break;
		after = g.kvs[g.nkvs - 1].key;
	}
done:
	arena_free(&a);
	return rc;
}
