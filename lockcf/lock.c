/*
 * lock.c - the lock record: its byte format, its state machine and its
 * owner (format and arrows in lock.h; DESIGN §4).
 *
 * Why the format is hand-written and strict: the encoded bytes are the
 * condition of every conditional write (store_cond.lock), so one record must
 * have exactly one encoding - decode(b) succeeds only when encode(decode(b))
 * == b.  And the bytes come from a shared store that a crashed, older or
 * buggy process may have written, so the decoder trusts no length and
 * allocates nothing before checking that the input can hold it.
 *
 * Why the owner carries boot id and start time: a pid alone is recycled.
 * With both, recovery can prove that the process holding a lock is gone and
 * resolve the lock at once instead of waiting for its expiry (Haeinsa #44).
 * Anything it cannot prove (another host, another boot, unreadable /proc)
 * counts as alive.
 */
#include "lock.h"
#include "storage/sim_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/rand.h>

/* version, state, flags, tag, txn, commit_ts */
#define HEAD_SIZE (3u + LOCK_TAG_SIZE + LOCK_TXNID_SIZE + 8u)
/* expiry, owner (boot id, pid, start), prev txn, prev commit_ts */
#define BODY_SIZE (8u + 16u + 4u + 8u + LOCK_TXNID_SIZE + 8u)
/* Smallest encodings of one list item: bounds a count before allocating. */
#define REF_MIN_SIZE (2u + 1u + 2u + 1u)
#define MUT_MIN_SIZE (1u + 1u + 2u + 4u)

#define LOCK_F_ALL (LOCK_F_SECONDARY | LOCK_F_PREV_ABSENT)
#define LOCK_TO_ABSENT 255u

/* ================================================================ sizes */

static int size_add(size_t *sz, size_t n)
{
	if (n > SIZE_MAX - *sz)
		return mrtx__seterr(MRTX_ETOOBIG, "lock record: size overflow");
	*sz += n;
	return 0;
}

static int ref_size(const lock_ref *ref, const char *what, size_t *sz)
{
	if (ref->table.size == 0)
		return mrtx__seterr(MRTX_EINVAL, "lock record: %s table name is empty", what);
	if (ref->table.size > MRTX_MAX_NAME)
		return mrtx__seterr(MRTX_ETOOBIG, "lock record: %s table name is %zu bytes (max %u)",
		                    what, ref->table.size, MRTX_MAX_NAME);
	if (ref->row.size == 0)
		return mrtx__seterr(MRTX_EINVAL, "lock record: %s row is empty", what);
	if (ref->row.size > MRTX_MAX_ROW)
		return mrtx__seterr(MRTX_ETOOBIG, "lock record: %s row is %zu bytes (max %u)",
		                    what, ref->row.size, MRTX_MAX_ROW);
	return size_add(sz, 4u + ref->table.size + ref->row.size);
}

static int mut_size(const store_mut *m, size_t i, size_t *sz)
{
	if (m->kind < STORE_MUT_PUT || m->kind > STORE_MUT_DEL_ROW)
		return mrtx__seterr(MRTX_EINVAL, "lock record: redo[%zu] has unknown kind %u",
		                    i, m->kind);
	if (m->qual.size > MRTX_MAX_KEY)
		return mrtx__seterr(MRTX_ETOOBIG, "lock record: redo[%zu] qualifier is %zu bytes (max %u)",
		                    i, m->qual.size, MRTX_MAX_KEY);
	if (m->value.size > MRTX_MAX_VALUE)
		return mrtx__seterr(MRTX_ETOOBIG, "lock record: redo[%zu] value is %zu bytes (max %u)",
		                    i, m->value.size, MRTX_MAX_VALUE);
	return size_add(sz, MUT_MIN_SIZE + m->qual.size + m->value.size);
}

static int secondaries_size(const lock_rec *r, size_t *sz)
{
	int rc;

	if (r->nsecondaries > UINT32_MAX)
		return mrtx__seterr(MRTX_ETOOBIG, "lock record: %zu secondaries", r->nsecondaries);
	rc = size_add(sz, 4u);
	for (size_t i = 0; !rc && i < r->nsecondaries; i++)
		rc = ref_size(&r->secondaries[i], "secondary", sz);
	return rc;
}

static int redo_size(const lock_rec *r, size_t *sz)
{
	int rc;

	if (r->nredo > UINT32_MAX)
		return mrtx__seterr(MRTX_ETOOBIG, "lock record: %zu redo entries", r->nredo);
	rc = size_add(sz, 4u);
	for (size_t i = 0; !rc && i < r->nredo; i++)
		rc = mut_size(&r->redo[i], i, sz);
	return rc;
}

static int body_size(const lock_rec *r, size_t *sz)
{
	int rc;

	*sz += BODY_SIZE;
	if (r->flags & LOCK_F_SECONDARY)
		rc = ref_size(&r->primary, "primary", sz);
	else
		rc = secondaries_size(r, sz);
	return rc ? rc : redo_size(r, sz);
}

/* Validate r and compute its encoded size.  STABLE encodes only the head. */
static int rec_size(const lock_rec *r, size_t *sz)
{
	if (r->state > LOCK_ABORTED)
		return mrtx__seterr(MRTX_EINVAL, "lock record: invalid state %u", r->state);
	*sz = HEAD_SIZE;
	if (r->state == LOCK_STABLE)
		return 0;
	if (r->flags & ~LOCK_F_ALL)
		return mrtx__seterr(MRTX_EINVAL, "lock record: unknown flags 0x%02x", r->flags);
	return body_size(r, sz);
}

size_t lock_encoded_size(const lock_rec *r)
{
	size_t sz = 0;

	return rec_size(r, &sz) ? 0 : sz;
}

/* ================================================================ encode */

typedef struct wr {
	uint8_t *p;
} wr;

static void put_le(wr *w, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*w->p++ = (uint8_t)(v >> (8u * i));
}

static void put_raw(wr *w, const void *p, size_t n)
{
	if (n)
		memcpy(w->p, p, n);
	w->p += n;
}

static void put_ref(wr *w, const lock_ref *ref)
{
	put_le(w, ref->table.size, 2);
	put_raw(w, ref->table.data, ref->table.size);
	put_le(w, ref->row.size, 2);
	put_raw(w, ref->row.data, ref->row.size);
}

static void put_mut(wr *w, const store_mut *m)
{
	put_le(w, m->kind, 1);
	put_le(w, m->fid, 1);
	put_le(w, m->qual.size, 2);
	put_raw(w, m->qual.data, m->qual.size);
	put_le(w, m->value.size, 4);
	put_raw(w, m->value.data, m->value.size);
}

static void put_body(wr *w, const lock_rec *r)
{
	put_le(w, r->expiry_ms, 8);
	put_raw(w, r->owner.boot_id, sizeof(r->owner.boot_id));
	put_le(w, r->owner.pid, 4);
	put_le(w, r->owner.start_time, 8);
	put_raw(w, r->prev_txn, LOCK_TXNID_SIZE);
	put_le(w, r->prev_commit_ts, 8);
	if (r->flags & LOCK_F_SECONDARY) {
		put_ref(w, &r->primary);
	} else {
		put_le(w, r->nsecondaries, 4);
		for (size_t i = 0; i < r->nsecondaries; i++)
			put_ref(w, &r->secondaries[i]);
	}
	put_le(w, r->nredo, 4);
	for (size_t i = 0; i < r->nredo; i++)
		put_mut(w, &r->redo[i]);
}

int lock_encode(const lock_rec *r, mrtx_arena *a, mrtx_bytes *out)
{
	size_t sz = 0;
	uint8_t *buf;
	wr w;
	int rc;

	if ((rc = rec_size(r, &sz)) != 0)
		return rc;
	if (!(buf = arena_alloc(a, sz)))
		return MRTX_ENOMEM;
	w.p = buf;
	put_le(&w, LOCK_VERSION, 1);
	put_le(&w, r->state, 1);
	/* A STABLE record carries no flags: whatever r holds, write 0. */
	put_le(&w, r->state == LOCK_STABLE ? 0 : r->flags, 1);
	put_raw(&w, r->tag, LOCK_TAG_SIZE);
	put_raw(&w, r->txn, LOCK_TXNID_SIZE);
	put_le(&w, r->commit_ts, 8);
	if (r->state != LOCK_STABLE)
		put_body(&w, r);
	*out = MRTX_BYTES(buf, sz);
	return 0;
}

/* ================================================================ decode */

typedef struct rd {
	const uint8_t *p;
	size_t left;
} rd;

static int truncated(const rd *r, const char *field)
{
	return mrtx__seterr(MRTX_ECORRUPT, "lock record: truncated at %s (%zu bytes left)",
	                    field, r->left);
}

static int get_raw(rd *r, size_t n, const uint8_t **out, const char *field)
{
	if (n > r->left)
		return truncated(r, field);
	*out = r->p;
	r->p += n;
	r->left -= n;
	return 0;
}

static int get_le(rd *r, size_t n, uint64_t *v, const char *field)
{
	const uint8_t *p = NULL;
	int rc;

	if ((rc = get_raw(r, n, &p, field)) != 0)
		return rc;
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v |= (uint64_t)p[i] << (8u * i);
	return 0;
}

static int get_copy(rd *r, void *dst, size_t n, const char *field)
{
	const uint8_t *p = NULL;
	int rc;

	if ((rc = get_raw(r, n, &p, field)) != 0)
		return rc;
	memcpy(dst, p, n);
	return 0;
}

/* A u16/u32-prefixed byte string whose length must lie in [min, max]. */
static int get_str(rd *r, size_t lenw, size_t min, size_t max, mrtx_bytes *out,
                   const char *field)
{
	const uint8_t *p = NULL;
	uint64_t n;
	int rc;

	if ((rc = get_le(r, lenw, &n, field)) != 0)
		return rc;
	if (n < min || n > max)
		return mrtx__seterr(MRTX_ECORRUPT, "lock record: %s length %llu out of range %zu..%zu",
		                    field, (unsigned long long)n, min, max);
	if ((rc = get_raw(r, (size_t)n, &p, field)) != 0)
		return rc;
	*out = MRTX_BYTES(p, (size_t)n);
	return 0;
}

static int get_ref(rd *r, lock_ref *ref, const char *what)
{
	char tf[32], rf[32];
	int rc;

	snprintf(tf, sizeof(tf), "%s table", what);
	snprintf(rf, sizeof(rf), "%s row", what);
	if ((rc = get_str(r, 2, 1, MRTX_MAX_NAME, &ref->table, tf)) != 0)
		return rc;
	return get_str(r, 2, 1, MRTX_MAX_ROW, &ref->row, rf);
}

static int get_mut(rd *r, store_mut *m)
{
	uint64_t kind, fid;
	int rc;

	if ((rc = get_le(r, 1, &kind, "redo kind")) != 0)
		return rc;
	if (kind < STORE_MUT_PUT || kind > STORE_MUT_DEL_ROW)
		return mrtx__seterr(MRTX_ECORRUPT, "lock record: unknown redo kind %u",
		                    (unsigned)kind);
	if ((rc = get_le(r, 1, &fid, "redo family")) != 0)
		return rc;
	m->kind = (uint8_t)kind;
	m->fid = (uint8_t)fid;
	if ((rc = get_str(r, 2, 0, MRTX_MAX_KEY, &m->qual, "redo qualifier")) != 0)
		return rc;
	return get_str(r, 4, 0, MRTX_MAX_VALUE, &m->value, "redo value");
}

/*
 * Read a u32 item count and allocate that many items of `size` bytes, after
 * checking that the rest of the input could hold them: a garbled count
 * must not turn into a huge allocation.
 */
static int get_array(rd *r, size_t min_item, size_t size, mrtx_arena *a, void **out,
                     size_t *count, const char *field)
{
	uint64_t n;
	int rc;

	*out = NULL;
	*count = 0;
	if ((rc = get_le(r, 4, &n, field)) != 0)
		return rc;
	if (n > r->left / min_item)
		return mrtx__seterr(MRTX_ECORRUPT, "lock record: %s %llu cannot fit in %zu bytes",
		                    field, (unsigned long long)n, r->left);
	if (n == 0)
		return 0;
	if (!(*out = arena_alloc(a, (size_t)n * size)))
		return MRTX_ENOMEM;
	*count = (size_t)n;
	return 0;
}

static int get_secondaries(rd *r, lock_rec *out, mrtx_arena *a)
{
	void *arr;
	int rc;

	if ((rc = get_array(r, REF_MIN_SIZE, sizeof(lock_ref), a, &arr, &out->nsecondaries,
	                    "secondaries count")) != 0)
		return rc;
	out->secondaries = arr;
	for (size_t i = 0; i < out->nsecondaries; i++)
		if ((rc = get_ref(r, &out->secondaries[i], "secondary")) != 0)
			return rc;
	return 0;
}

static int get_redo(rd *r, lock_rec *out, mrtx_arena *a)
{
	void *arr;
	int rc;

	if ((rc = get_array(r, MUT_MIN_SIZE, sizeof(store_mut), a, &arr, &out->nredo,
	                    "redo count")) != 0)
		return rc;
	out->redo = arr;
	for (size_t i = 0; i < out->nredo; i++)
		if ((rc = get_mut(r, &out->redo[i])) != 0)
			return rc;
	return 0;
}

static int get_head(rd *r, lock_rec *out)
{
	uint64_t v;
	int rc;

	if ((rc = get_le(r, 1, &v, "version")) != 0)
		return rc;
	if (v != LOCK_VERSION)
		return mrtx__seterr(MRTX_ECORRUPT, "lock record: unknown version %u", (unsigned)v);
	if ((rc = get_le(r, 1, &v, "state")) != 0)
		return rc;
	if (v > LOCK_ABORTED)
		return mrtx__seterr(MRTX_ECORRUPT, "lock record: invalid state %u", (unsigned)v);
	out->state = (uint8_t)v;
	if ((rc = get_le(r, 1, &v, "flags")) != 0)
		return rc;
	if ((v & ~(uint64_t)LOCK_F_ALL) || (out->state == LOCK_STABLE && v))
		return mrtx__seterr(MRTX_ECORRUPT, "lock record: invalid flags 0x%02x for %s",
		                    (unsigned)v, lock_state_name(out->state));
	out->flags = (uint8_t)v;
	if ((rc = get_copy(r, out->tag, LOCK_TAG_SIZE, "store tag")) != 0 ||
	    (rc = get_copy(r, out->txn, LOCK_TXNID_SIZE, "txn id")) != 0)
		return rc;
	return get_le(r, 8, &out->commit_ts, "commit_ts");
}

static int get_body(rd *r, lock_rec *out, mrtx_arena *a)
{
	uint64_t pid;
	int rc;

	if ((rc = get_le(r, 8, &out->expiry_ms, "expiry")) != 0 ||
	    (rc = get_copy(r, out->owner.boot_id, 16, "owner boot id")) != 0 ||
	    (rc = get_le(r, 4, &pid, "owner pid")) != 0 ||
	    (rc = get_le(r, 8, &out->owner.start_time, "owner start time")) != 0 ||
	    (rc = get_copy(r, out->prev_txn, LOCK_TXNID_SIZE, "prev txn id")) != 0 ||
	    (rc = get_le(r, 8, &out->prev_commit_ts, "prev commit_ts")) != 0)
		return rc;
	out->owner.pid = (uint32_t)pid;
	if (out->flags & LOCK_F_SECONDARY)
		rc = get_ref(r, &out->primary, "primary");
	else
		rc = get_secondaries(r, out, a);
	return rc ? rc : get_redo(r, out, a);
}

/* Keeps I1 (DESIGN §10). */
int lock_decode(lock_rec *out, mrtx_bytes in, mrtx_arena *a)
{
	rd r = { in.data, in.size };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = get_head(&r, out)) != 0)
		return rc;
	if (out->state != LOCK_STABLE && (rc = get_body(&r, out, a)) != 0)
		return rc;
	if (r.left)
		return mrtx__seterr(MRTX_ECORRUPT, "lock record: %zu trailing bytes after %s record",
		                    r.left, lock_state_name(out->state));
	return 0;
}

int lock_peek(mrtx_bytes in, uint8_t *state, uint8_t txn[LOCK_TXNID_SIZE])
{
	const uint8_t *p = in.data;
	rd r = { in.data, in.size };
	lock_rec head;
	int rc;

	/* Fast path for a well-formed head (every read peeks); get_head below
	 * applies the same checks and words the error. */
	if (in.size >= HEAD_SIZE && p[0] == LOCK_VERSION && p[1] <= LOCK_ABORTED &&
	    !(p[2] & ~LOCK_F_ALL) && !(p[1] == LOCK_STABLE && p[2])) {
		*state = p[1];
		memcpy(txn, p + 3 + LOCK_TAG_SIZE, LOCK_TXNID_SIZE);
		return 0;
	}
	if ((rc = get_head(&r, &head)) != 0)
		return rc;
	*state = head.state;
	memcpy(txn, head.txn, LOCK_TXNID_SIZE);
	return 0;
}

/* Is p exactly a STABLE head (version, state STABLE, flags 0, tag, txn
 * id, commit_ts)?  Then *cts is its commit_ts. */
static int stable_head(const uint8_t *p, size_t size, uint64_t *cts)
{
	if (size != HEAD_SIZE || p[0] != LOCK_VERSION || p[1] != LOCK_STABLE || p[2] != 0)
		return 0;
	*cts = 0;
	for (size_t i = 0; i < 8; i++)
		*cts |= (uint64_t)p[3 + LOCK_TAG_SIZE + LOCK_TXNID_SIZE + i] << (8u * i);
	return 1;
}

int lock_stable_ts(mrtx_bytes in, uint64_t *cts)
{
	return stable_head(in.data, in.size, cts);
}

int lock_is_stable_before(mrtx_bytes in, const uint8_t tag[LOCK_TAG_SIZE], uint64_t ts)
{
	uint64_t cts;

	return stable_head(in.data, in.size, &cts) &&
	       memcmp((const uint8_t *)in.data + 3, tag, LOCK_TAG_SIZE) == 0 && cts < ts;
}

void lock_order_key(const void *lock, size_t size, uint8_t *out)
{
	uint64_t cts;

	/* a STABLE head, as lock_is_stable_before takes it, tag aside */
	if (stable_head(lock, size, &cts)) {
		lock_order_below(cts, out);
		return;
	}
	memset(out, 0, STORE_ORDER_SIZE);
	out[0] = 1;
}

void lock_order_below(uint64_t ts, uint8_t *out)
{
	/* 7 bits a byte, most significant first (the first byte holds bit 63
	 * alone): every byte stays below 0x80, where Ceph's omap_cmp, which
	 * compares values as signed chars, agrees with byte order */
	out[0] = 0;
	for (size_t i = 0; i < STORE_ORDER_SIZE - 1; i++)
		out[STORE_ORDER_SIZE - 1 - i] = (uint8_t)((ts >> (7u * i)) & 0x7fu);
}

/* ================================================================ states */

void lock_prev_stable(const lock_rec *r, lock_rec *out)
{
	lock_rec s;

	/* Via a local: r and out may be the same record. */
	memset(&s, 0, sizeof(s));
	s.state = LOCK_STABLE;
	memcpy(s.tag, r->tag, LOCK_TAG_SIZE);
	memcpy(s.txn, r->prev_txn, LOCK_TXNID_SIZE);
	s.commit_ts = r->prev_commit_ts;
	*out = s;
}

/*
 * `to` == 255 means the record is deleted: an abort restoring a previous
 * lock that was absent (LOCK_F_PREV_ABSENT), from PREWRITTEN (secondary) or
 * ABORTED (primary release).  From absent, `from` is ignored.
 */
int lock_transition_ok(int from_absent, uint8_t from, uint8_t to)
{
	if (from_absent)
		return to == LOCK_PREWRITTEN || to == LOCK_STABLE;
	switch (from) {
	case LOCK_STABLE:
		return to == LOCK_PREWRITTEN || to == LOCK_STABLE;
	case LOCK_PREWRITTEN: /* PREWRITTEN: the heartbeat's refresh */
		return to == LOCK_PREWRITTEN || to == LOCK_COMMITTED || to == LOCK_ABORTED ||
		       to == LOCK_STABLE || to == LOCK_TO_ABSENT;
	case LOCK_COMMITTED:
		return to == LOCK_STABLE;
	case LOCK_ABORTED:
		return to == LOCK_STABLE || to == LOCK_TO_ABSENT;
	default:
		return 0;
	}
}

int lock_same_but_expiry(mrtx_bytes a, mrtx_bytes b)
{
	const uint8_t *x = a.data, *y = b.data;

	if (a.size != b.size || a.size < HEAD_SIZE + 8u)
		return 0;
	return memcmp(x, y, HEAD_SIZE) == 0 && x[1] != LOCK_STABLE &&
	       memcmp(x + HEAD_SIZE + 8u, y + HEAD_SIZE + 8u, a.size - HEAD_SIZE - 8u) == 0;
}

void lock_set_expiry(uint8_t *buf, uint64_t expiry_ms)
{
	for (size_t i = 0; i < 8; i++)
		buf[HEAD_SIZE + i] = (uint8_t)(expiry_ms >> (8u * i));
}

size_t lock_expiry_end(void)
{
	return HEAD_SIZE + 8u;
}

const char *lock_state_name(uint8_t state)
{
	switch (state) {
	case LOCK_STABLE: return "STABLE";
	case LOCK_PREWRITTEN: return "PREWRITTEN";
	case LOCK_COMMITTED: return "COMMITTED";
	case LOCK_ABORTED: return "ABORTED";
	default: return "INVALID";
	}
}

/*
 * Txn ids must be unique, not secret: they tell one transaction's lock
 * images from another's.  So each process draws a 128-bit random salt once
 * (RAND_bytes was 10 % of a one-row commit when drawn per id) and an id is
 * the salt's first half followed by a bijective mix of (second half XOR a
 * per-process counter): distinct counters give distinct ids within the
 * process, and two processes collide only if 64 random bits agree.  A
 * forked child draws a salt of its own before its first id.
 */
static pthread_mutex_t txnid_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int txnid_ready;   /* salt drawn for this process */
static uint64_t txnid_salt[2];
static _Atomic uint64_t txnid_ctr;
static pthread_once_t txnid_once = PTHREAD_ONCE_INIT;

static void txnid_child(void)
{
	atomic_store(&txnid_ready, 0);
	pthread_mutex_init(&txnid_mu, NULL); /* the parent may have held it */
}

static void txnid_atfork(void)
{
	pthread_atfork(NULL, NULL, txnid_child);
}

int lock_new_txnid(uint8_t out[LOCK_TXNID_SIZE])
{
	uint64_t lo;

	/* the simulator: every id from its seeded generator, so that a run
	 * replays byte for byte whatever ran before it in the process */
	if (MRTX_UNLIKELY(mrtx__sim_random(out, LOCK_TXNID_SIZE)))
		return 0;
	if (MRTX_UNLIKELY(!atomic_load_explicit(&txnid_ready, memory_order_acquire))) {
		int ok;

		pthread_once(&txnid_once, txnid_atfork);
		pthread_mutex_lock(&txnid_mu);
		ok = atomic_load(&txnid_ready) ||
		     RAND_bytes((unsigned char *)txnid_salt, sizeof(txnid_salt)) == 1;
		if (ok && !atomic_load(&txnid_ready)) {
			atomic_store(&txnid_ctr, 0);
			atomic_store_explicit(&txnid_ready, 1, memory_order_release);
		}
		pthread_mutex_unlock(&txnid_mu);
		if (!ok)
			return mrtx__seterr(MRTX_ESTORE, "txn id: RAND_bytes failed (OpenSSL error "
			                    "%lu)", ERR_get_error());
	}
	lo = mrtx__mix64(txnid_salt[1] ^ atomic_fetch_add_explicit(&txnid_ctr, 1, memory_order_relaxed));
	memcpy(out, &txnid_salt[0], 8);
	memcpy(out + 8, &lo, 8);
	return 0;
}

void lock_txnid_hex(const uint8_t txn[LOCK_TXNID_SIZE], char out[33])
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < LOCK_TXNID_SIZE; i++) {
		out[2 * i] = hex[txn[i] >> 4];
		out[2 * i + 1] = hex[txn[i] & 0x0f];
	}
	out[2 * LOCK_TXNID_SIZE] = '\0';
}

/* ================================================================ owner */

/*
 * Fold this process's pid namespace into the host identity: a pid means
 * something only inside its namespace, so owners from another namespace
 * (containers sharing a store) compare as "another host" -- never provably
 * dead, resolved by expiry.
 */
static void fold_pid_ns(uint8_t id[16])
{
	struct stat sb;

	if (stat("/proc/self/ns/pid", &sb) != 0)
		return;
	for (size_t i = 0; i < sizeof(sb.st_ino); i++)
		id[8 + i % 8] ^= (uint8_t)((uint64_t)sb.st_ino >> (8 * i));
}

/* Live threads of pid, from /proc/<pid>/status; -1 if unknown. */
static long proc_threads(long pid)
{
	char path[64], buf[4096], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if ((n = mrtx__read_small(path, buf, sizeof(buf) - 1)) < 0)
		return -1;
	buf[n] = '\0';
	if (!(p = strstr(buf, "\nThreads:")))
		return -1;
	return strtol(p + 9, NULL, 10);
}

/*
 * State letter and start time (field 22) from /proc/<pid>/stat.  Fields are
 * counted after the last ')': the command name may hold spaces and parens.
 */
static void owner_compute(lock_owner *o)
{
	pid_t pid = getpid();
	uint64_t start = 0;
	char state;

	memset(o, 0, sizeof(*o));
	mrtx__boot_id(o->boot_id);
	fold_pid_ns(o->boot_id);
	o->pid = (uint32_t)pid;
	if (mrtx__proc_stat((long)pid, &state, &start) == 0)
		o->start_time = start;
}

static pthread_mutex_t self_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static lock_owner self_owner;
static int self_valid;

/* A fork while another thread holds self_mu must not leave it locked in the child. */
static void self_prepare(void)
{
	pthread_mutex_lock(&self_mu);
}

static void self_parent(void)
{
	pthread_mutex_unlock(&self_mu);
}

static void self_child(void)
{
	self_valid = 0;
	pthread_mutex_unlock(&self_mu);
}

static void self_init(void)
{
	pthread_atfork(self_prepare, self_parent, self_child);
}

const lock_owner *lock_self_owner(void)
{
	pid_t pid = getpid();

	pthread_once(&self_once, self_init);
	pthread_mutex_lock(&self_mu);
	/* The pid check also catches a child made by raw clone(), which skips atfork. */
	if (!self_valid || self_owner.pid != (uint32_t)pid) {
		lock_owner fresh;

		owner_compute(&fresh);
		self_owner = fresh;
		self_valid = 1;
	}
	pthread_mutex_unlock(&self_mu);
	return &self_owner;
}

void lock_owner_put(const lock_owner *o, uint8_t out[LOCK_OWNER_BYTES])
{
	memcpy(out, o->boot_id, 16);
	for (int i = 0; i < 4; i++)
		out[16 + i] = (uint8_t)(o->pid >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		out[20 + i] = (uint8_t)(o->start_time >> (56 - 8 * i));
}

void lock_owner_get(const uint8_t in[LOCK_OWNER_BYTES], lock_owner *o)
{
	memcpy(o->boot_id, in, 16);
	o->pid = 0;
	o->start_time = 0;
	for (int i = 0; i < 4; i++)
		o->pid = o->pid << 8 | in[16 + i];
	for (int i = 0; i < 8; i++)
		o->start_time = o->start_time << 8 | in[20 + i];
}

/* When /proc cannot tell: only kill()'s ESRCH proves the pid is gone. */
static int pid_gone(long pid)
{
	return kill((pid_t)pid, 0) == -1 && errno == ESRCH;
}

/* Keeps I9 (DESIGN §10). */
int lock_owner_dead(const lock_owner *o)
{
	static const uint8_t zero[16];
	const lock_owner *self = lock_self_owner();
	uint64_t start = 0;
	char state = 0;

	if (!memcmp(o->boot_id, zero, sizeof(zero)) ||
	    memcmp(o->boot_id, self->boot_id, sizeof(zero)) != 0)
		return 0;
	/* pid 0 (or negative as pid_t) would make kill() signal a group. */
	if (o->pid == 0 || o->pid > INT_MAX)
		return 0;
	if (mrtx__proc_stat((long)o->pid, &state, &start) != 0)
		return pid_gone((long)o->pid);
	/* A zombie leader may still have live threads (pthread_exit in main). */
	if (state == 'Z' || state == 'X')
		return proc_threads((long)o->pid) <= 1;
	/* Start time 0 means the owner could not read its own; don't compare. */
	return o->start_time != 0 && start != o->start_time;
}

int lock_prev_unread(const lock_rec *r)
{
	static const uint8_t zero[LOCK_TXNID_SIZE];

	return !(r->flags & LOCK_F_PREV_ABSENT) && memcmp(r->prev_txn, zero, LOCK_TXNID_SIZE) == 0;
}
