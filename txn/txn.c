/*
 * txn.c - begin, the per-row mutation buffer, reads with read-your-writes,
 * abort, and the mrtx_run retry helper.
 *
 * Reads remember each touched row's lock bytes (txn_observe); a second read
 * of a row that finds different bytes dooms the transaction at once, since
 * commit validation would fail anyway.  Nothing is written before commit.
 */
#include "txn_int.h"
#include "../storage/store_test.h"
#include "index.h"
#include "tail.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* cmp_bytes (storage/common.h) of two byte strings. */
int bytes_cmp(mrtx_bytes a, mrtx_bytes b)
{
	return cmp_bytes(a.data, a.size, b.data, b.size);
}

int bcell_cmp(const bcell *a, const bcell *b)
{
	if (a->fid != b->fid)
		return a->fid < b->fid ? -1 : 1;
	return cmp_bytes(a->data, a->qlen, b->data, b->qlen);
}

int trow_cmp(const trow *a, const trow *b)
{
	if (a->t->id != b->t->id)
		return a->t->id < b->t->id ? -1 : 1;
	return cmp_bytes(a->row.data, a->row.size, b->row.data, b->row.size);
}

RB_GENERATE(bcell_tree, bcell, link, bcell_cmp)
RB_GENERATE(trow_tree, trow, link, trow_cmp)

/*
 * Each thread keeps the object of its last ended transaction for its next
 * begin: a short read-only transaction then allocates nothing.  The object
 * is plain memory (begin initialises it), so it is not tied to a handle;
 * a thread's spare is freed when the thread exits (pthread key destructor;
 * the main thread's stays reachable until the process ends).
 */
static _Thread_local mrtx_txn *spare_txn;
static _Thread_local int spare_keyed;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static int spare_key_ok;

static void spare_drop(void *marker)
{
	(void)marker;
	mrtx__free(spare_txn);
	spare_txn = NULL;
	spare_keyed = 0; /* a transaction ended by a later destructor keys it again */
}

static void spare_key_init(void)
{
	spare_key_ok = pthread_key_create(&spare_key, spare_drop) == 0;
}

/* *reused: the object is the thread's spare (its fields are a past
 * transaction's), not fresh memory. */
static mrtx_txn *txn_obj_get(int *reused)
{
	mrtx_txn *txn = spare_txn;

	if (txn && !MRTX_UNLIKELY(mrtx__alloc_counting())) {
		spare_txn = NULL;
		*reused = 1;
		return txn;
	}
	*reused = 0;
	return mrtx__malloc(sizeof(*txn));
}

static void txn_obj_put(mrtx_txn *txn)
{
	if (!spare_txn && !MRTX_UNLIKELY(mrtx__alloc_counting())) {
		if (!spare_keyed) {
			/* the key's value only marks the thread for the destructor */
			pthread_once(&spare_once, spare_key_init);
			if (!spare_key_ok || pthread_setspecific(spare_key, &spare_txn) != 0) {
				mrtx__free(txn);
				return;
			}
			spare_keyed = 1;
		}
		spare_txn = txn;
		return;
	}
	mrtx__free(txn);
}

int mrtx_begin(mrtx_db *db, mrtx_txn **out)
{
	mrtx_txn *txn;
	int reused;

	mrtx__clearerr();
	if (!db || !out)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_begin: db and out are required");
	/* The txn id is drawn at commit, and only by writers: readers never
	 * need one, and RAND_bytes is most of a read-only transaction's cost. */
	if (!(txn = txn_obj_get(&reused)))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory beginning a transaction");
	/* Field by field: a memset of the head compiles to `rep stos`, whose
	 * start-up cost was a visible part of a point read.  A new field must
	 * be set here (the assertion below trips when the head changes). */
	_Static_assert(offsetof(mrtx_txn, head_pad) == 249 && offsetof(mrtx_txn, arena0) == 256,
	               "mrtx_begin sets every field before arena0: initialise the new one there");
	txn->db = db;
	arena_init_buf(&txn->arena, txn->arena0, sizeof(txn->arena0));
	RB_INIT(&txn->rows);
	txn->last_row = NULL;
	txn->rows_min = txn->rows_max = NULL;
	txn->pend = NULL;
	txn->nmutated = 0;
	memset(txn->id, 0, sizeof(txn->id));
	txn->lock_ttl_ms = db->lock_ttl_ms;
	txn->doom = 0;
	txn->ranges = NULL;
	txn->nranges = txn->cranges = 0;
	txn->scanners = NULL;
	txn->idx = NULL;
	txn->snap_ts = txn->commit_ts = txn->at = txn->start_ts = 0;
	txn->started = 0;
	/* The table and family the thread's last transaction named on this
	 * handle stay named: a point read per transaction then finds them
	 * without a lookup (resolve_args checks the name and that the table
	 * was not dropped).  Table objects live as long as the handle's store,
	 * which the serial vouches for. */
	if (!reused || !txn->ct || txn->ct_serial != db->serial) {
		txn->ct = NULL;
		txn->cfam = NULL;
		txn->cfid = 0;
	}
	txn->ct_serial = db->serial;
	txn->view = NULL;
	txn->no_view = 0;
	txn->view_used = 0;
	txn->must_validate = 0;
	txn->snap_live = 0;
	txn->snap_stale = 0;
	txn->lazy = 0;
	txn->fences = NULL;
	txn->fences_lost = 0;
	txn->seen = NULL;
	*out = txn;
	return 0;
}

int mrtx_txn_set_lock_ttl(mrtx_txn *txn, uint32_t ms)
{
	if (!txn || ms == 0)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_txn_set_lock_ttl: NULL txn or 0 ms");
	txn->lock_ttl_ms = ms;
	return 0;
}

void txn_free(mrtx_txn *txn)
{
	if (txn->scanners)
		txn_detach_scanners(txn);
	if (txn->view)
		txn_view_close(txn);
	if (txn->snap_live)
		txn_snap_end(txn);
	if (txn->idx)
		idx_snap_release(txn->idx);
	if (txn->arena.head != txn->arena.borrowed || (txn->arena.head && txn->arena.head->next))
		arena_free(&txn->arena); /* it grew beyond arena0 */
	if (txn->ranges)
		mrtx__free(txn->ranges);
	if (txn->seen) {
		store_seen_free(txn->seen);
		mrtx__free(txn->seen);
	}
	txn_obj_put(txn);
}

void mrtx_abort(mrtx_txn *txn)
{
	if (txn)
		txn_free(txn);
}

static const trow trow_zero;

/* A new entry for a row that has none yet. */
static int txn_row_new(mrtx_txn *txn, const store_table *t, mrtx_bytes row, trow **out)
{
	trow *r;

	/* one allocation: the entry, then the row's bytes */
	if (!(r = arena_alloc(&txn->arena, sizeof(*r) + (row.size ? row.size : 1))))
		return MRTX_ENOMEM;
	*r = trow_zero; /* not memset: see mrtx_begin */
	r->t = t;
	r->row.data = memcpy(r + 1, row.data, row.size);
	r->row.size = row.size;
	RB_INIT(&r->cells);
	if (RB_EMPTY(&txn->rows)) {
		/* the first row: the root (trow_zero made the links NULL) */
		RB_COLOR(r, link) = RB_BLACK;
		RB_ROOT(&txn->rows) = r;
		txn->rows_min = txn->rows_max = r;
	} else if (trow_cmp(txn->rows_max, r) < 0) {
		/* past the largest row, where RB_INSERT's descent would end: the
		 * right child of the rightmost entry (a forward scan's rows) */
		RB_SET(r, txn->rows_max, link);
		RB_RIGHT(txn->rows_max, link) = r;
		trow_tree_RB_INSERT_COLOR(&txn->rows, r);
		txn->rows_max = r;
	} else if (trow_cmp(r, txn->rows_min) < 0) {
		/* before the smallest (a reverse scan's rows) */
		RB_SET(r, txn->rows_min, link);
		RB_LEFT(txn->rows_min, link) = r;
		trow_tree_RB_INSERT_COLOR(&txn->rows, r);
		txn->rows_min = r;
	} else {
		RB_INSERT(trow_tree, &txn->rows, r);
	}
	*out = r;
	return 0;
}

trow *txn_rows_nfind(mrtx_txn *txn, const trow *key)
{
	int c;

	if (!txn->rows_max)
		return NULL;
	if ((c = trow_cmp(txn->rows_max, key)) <= 0)
		return c == 0 ? txn->rows_max : NULL;
	if (trow_cmp(key, txn->rows_min) <= 0)
		return txn->rows_min;
	return RB_NFIND(trow_tree, &txn->rows, (trow *)key);
}

int txn_row(mrtx_txn *txn, const store_table *t, mrtx_bytes row, int create, trow **out)
{
	trow key, *r = txn->last_row;
	int rc;

	/* A transaction mostly works a row at a time: try the last one first. */
	if (r && r->t == t && r->row.size == row.size &&
	    (row.size == 0 || memcmp(r->row.data, row.data, row.size) == 0)) {
		*out = r;
		return 0;
	}
	key.t = t;
	key.row = row;
	r = NULL;
	/* (a row past either end is not there: a scan's next row) */
	if ((!RB_EMPTY(&txn->rows) && trow_cmp(&key, txn->rows_max) <= 0 &&
	     trow_cmp(&key, txn->rows_min) >= 0 && (r = RB_FIND(trow_tree, &txn->rows, &key))) ||
	    !create) {
		if (r)
			txn->last_row = r;
		*out = r;
		return 0;
	}
	if ((rc = txn_row_new(txn, t, row, out)) == 0)
		txn->last_row = *out;
	return rc;
}

/* Was a row read at the transaction's live snapshot (snap_live) with this
 * lock committed above it? */
static int snap_above(const mrtx_txn *txn, int has_lock, mrtx_bytes lock)
{
	uint64_t ts;

	return txn->snap_live && has_lock && lock_stable_ts(lock, &ts) && ts > txn->snap_ts;
}

int txn_seen_use(mrtx_txn *txn, store_filter *f)
{
	if (!txn->seen && store_has(txn->db->st, STORE_CAP_ORACLE) &&
	    !(txn->seen = mrtx__calloc(1, sizeof(*txn->seen))))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory reading at a snapshot");
	f->seen = txn->seen;
	return 0;
}

/* Keeps I18 (DESIGN §10), for atomic commits too. */
int txn_seen_late(mrtx_txn *txn)
{
	if (!txn->seen || !txn->seen->late)
		return 0;
	txn->doom = MRTX_CONFLICT;
	return mrtx__seterr(MRTX_CONFLICT, "a commit stamped at or below this transaction's "
	                    "snapshot (%llu) reached rows after the transaction first read "
	                    "their tablet", (unsigned long long)(txn->at ? txn->at : txn->snap_ts));
}

/* Keeps I18 (DESIGN §10). */
int txn_snap_late(mrtx_txn *txn, const store_table *t, const store_row *sr)
{
	uint64_t ts1 = 0;
	trow *r;
	int rc;

	if ((rc = txn_seen_late(txn)))
		return rc;
	if (!txn->snap_live || !sr->vmax)
		return 0;
	if ((rc = txn_row(txn, t, sr->row, 0, &r)))
		return rc;
	if (r && r->lock_known && r->has_lock) {
		if (!lock_stable_ts(r->lock, &ts1))
			return 0;
	} else if (!(r && r->lock_known) &&
	           !(txn->nranges && txn_in_scanned_range(txn, t, sr->row))) {
		return 0; /* (first met here) */
	}
	/* every commit of the row stamps above the one before (the floors),
	 * so a version at or below the snapshot but above the row's commit
	 * when it was first observed landed since: a commit stamped at or
	 * below the snapshot that arrived late (a one-row commit of a host
	 * whose clock lags) -- what this transaction saw of the row before
	 * did not hold it */
	if (sr->vmax <= ts1)
		return 0;
	txn->doom = MRTX_CONFLICT;
	return mrtx__seterr(MRTX_CONFLICT, "table '%s': a commit stamped at or below this "
	                    "transaction's snapshot (%llu) reached a row after the transaction "
	                    "first read it", t->name, (unsigned long long)txn->snap_ts);
}

static int fetch_lazy(mrtx_txn *txn, trow *r);

/* ---- the fences of the transaction's own settling ----
 *
 * Settling a dead writer's orphan (recovery.c resolve_orphan) fences its
 * primary P: P's STABLE lock is replaced by another STABLE lock, of a fresh
 * txn id, on the condition that it is still exactly what was read, and P's
 * cells stay as they were.  A reader settles the locks it meets as it goes
 * (snapread.c), and may have read P before -- or read it after, from its
 * view, which still shows P unfenced.  Either way it saw P's lock as the
 * fence found it; comparing that with the store at commit would make the
 * transaction conflict with its own settling, though no commit touched P.
 * So each fence it writes is kept, and an observation equal to a fence's
 * `was` stands for its `now` (after it, for a later fence's `was`): the
 * fence's write was conditional on `was`, and `now` holds a fresh id no
 * commit writes, so finding it means P is as read. */

static int same_obs(int ha, mrtx_bytes a, int hb, mrtx_bytes b)
{
	return !!ha == !!hb && (!ha || bytes_cmp(a, b) == 0);
}

static void fence_note(void *arg, const store_table *t, mrtx_bytes row, int has_was,
                       mrtx_bytes was, mrtx_bytes now)
{
	mrtx_txn *txn = arg;
	txn_fence *f = arena_alloc(&txn->arena, sizeof(*f)), **end = &txn->fences;
	void *r = arena_dup(&txn->arena, row.data, row.size);
	void *w = has_was ? arena_dup(&txn->arena, was.data, was.size) : NULL;
	void *n = arena_dup(&txn->arena, now.data, now.size);

	/* (out of memory: the fence is not known, and the commit conflicts
	 * over it -- a false conflict, never a wrong pass; own_fence trusts
	 * no fence list with one missing) */
	if (!f || !r || (has_was && !w) || !n) {
		txn->fences_lost = 1;
		return;
	}
	f->next = NULL;
	f->t = t;
	f->row = MRTX_BYTES(r, row.size);
	f->had = !!has_was;
	f->was = has_was ? MRTX_BYTES(w, was.size) : MRTX_BYTES(NULL, 0);
	f->now = MRTX_BYTES(n, now.size);
	while (*end)
		end = &(*end)->next;
	*end = f;
}

int txn_resolve(mrtx_txn *txn, const store_table *t, mrtx_bytes row, mrtx_bytes lock,
                const recover_opts *o)
{
	return recover_resolve_fenced(txn->db->st, t, row, lock, o, NULL, fence_note, txn);
}

/* Is lock record v, found at (t, row), no commit above the snapshot as
 * far as the row's cells go: not stamped above it, or a fence of this
 * transaction's own settling (txn->fences) every one of whose records
 * written over is such a lock in turn?  A fence moves the lock only, so
 * the cells are then as the snapshot read them.  depth bounds the walk
 * back through fences written over fences. */
static int fence_clean(const mrtx_txn *txn, const store_table *t, mrtx_bytes row,
                       mrtx_bytes v, unsigned depth)
{
	int found = 0;

	if (!snap_above(txn, 1, v))
		return 1;
	if (depth == 0)
		return 0;
	for (const txn_fence *f = txn->fences; f; f = f->next) {
		if (f->t->id != t->id || bytes_cmp(f->row, row) != 0 || !same_obs(1, f->now, 1, v))
			continue;
		found = 1;
		if (f->had && !fence_clean(txn, t, row, f->was, depth - 1))
			return 0;
	}
	return found;
}

/* Is the lock (t, row) holds now, stamped above the snapshot, only fences
 * of this transaction's own settling over what the snapshot read
 * (fence_clean)?  Then it is no later commit (snap_above). */
static int own_fence(const mrtx_txn *txn, const store_table *t, mrtx_bytes row, int has_lock,
                     mrtx_bytes lock)
{
	unsigned n = 0;

	if (!has_lock || txn->fences_lost)
		return 0;
	for (const txn_fence *f = txn->fences; f; f = f->next)
		n++;
	return fence_clean(txn, t, row, lock, n);
}

/* Does the observation (ha, a) of (t, row) lead to (hb, b) through the
 * transaction's fences?
 * Keeps I11 (DESIGN §10). */
static int fenced_to(const mrtx_txn *txn, const store_table *t, mrtx_bytes row, int ha,
                     mrtx_bytes a, int hb, mrtx_bytes b)
{
	for (const txn_fence *f = txn->fences; f; f = f->next) {
		if (f->t->id != t->id || bytes_cmp(f->row, row) != 0 ||
		    !same_obs(f->had, f->was, ha, a))
			continue;
		ha = 1;
		a = f->now;
		if (same_obs(ha, a, hb, b))
			return 1;
	}
	return 0;
}

/* Keeps I11 (DESIGN §10). */
int txn_fences_apply(mrtx_txn *txn)
{
	for (const txn_fence *f = txn->fences; f; f = f->next) {
		trow *r;
		int rc;

		if ((rc = txn_row(txn, f->t, f->row, 0, &r)))
			return rc;
		if (r && r->lock_known) {
			if (!same_obs(r->has_lock, r->lock, f->had, f->was))
				continue;
		} else if (!f->had && txn_in_scanned_range(txn, f->t, f->row)) {
			/* observed absent by a scan (txn_observe_at's rule) */
			if (!r && (rc = txn_row(txn, f->t, f->row, 1, &r)))
				return rc;
			r->lock_known = 1;
			r->read = 1;
		} else {
			continue; /* not observed */
		}
		r->has_lock = 1;
		r->lock = f->now;
	}
	return 0;
}

/* txn_observe for a row entry r, or NULL if the row has none yet. */
static int txn_observe_at(mrtx_txn *txn, trow *r, const store_table *t, mrtx_bytes row,
                          int has_lock, mrtx_bytes lock)
{
	int rc;

	if (!r && (rc = txn_row_new(txn, t, row, &r)))
		return rc;
	/* a row read before without its lock: what the view held is the
	 * first observation (this one may come from the store as it is now:
	 * a scan of the current store), compared below */
	if (r->lock_lazy && (rc = fetch_lazy(txn, r)))
		return rc;
	/* A live snapshot (RADOS): a row committed above it was read as it
	 * was, and can only be stale; a commit with writes fails
	 * (txn->snap_stale), a read-only one stands on the snapshot. */
	if (snap_above(txn, has_lock, lock) && !own_fence(txn, t, row, has_lock, lock)) {
		txn->snap_stale = 1;
		r->stale = 1;
	}
	/* A row first met here but inside a range this transaction scanned
	 * was observed there: absent (a scan observes every row it passes
	 * over, present or not).  That observation is the one to compare. */
	if (!r->lock_known && txn->nranges && txn_in_scanned_range(txn, t, row)) {
		r->has_lock = 0;
		r->lock = MRTX_BYTES(NULL, 0);
		r->lock_known = 1;
	}
	if (r->lock_known) {
		if (r->has_lock != (unsigned)!!has_lock ||
		    (has_lock && bytes_cmp(r->lock, lock) != 0)) {
			/* (a fence of our own settling between the two: the row
			 * is as first seen, and that observation stands) */
			if (r->stale || fenced_to(txn, t, row, r->has_lock, r->lock, has_lock, lock) ||
			    fenced_to(txn, t, row, has_lock, lock, r->has_lock, r->lock)) {
				r->read = 1;
				return 0;
			}
			if (txn->at) /* (a store without views: a commit at or
			              * below at landed between two reads) */
				return mrtx__seterr(MRTX_ESNAPSHOT, "table '%s': a row read at "
				                    "timestamp %llu changed between two reads (a "
				                    "commit stamped at or below it landed)", t->name,
				                    (unsigned long long)txn->at);
			txn->doom = MRTX_CONFLICT;
			return mrtx__seterr(MRTX_CONFLICT, "table '%s': a row read (or scanned over "
			                    "as absent) earlier in this transaction has changed",
			                    t->name);
		}
		r->read = 1;
		return 0;
	}
	r->lock = has_lock ? lock : MRTX_BYTES(NULL, 0); /* already in txn->arena */
	r->has_lock = !!has_lock;
	r->lock_known = 1;
	r->read = 1;
	return 0;
}

/* Read the lock of row r (lazily observed) from the transaction's view:
 * its first observation. */
static int fetch_lazy(mrtx_txn *txn, trow *r)
{
	store_rowref ref = { r->t, r->row };
	store_row out;
	int rc;

	if (!txn->view) /* (never: the view ends only at commit, after this) */
		return mrtx__seterr(MRTX_CONFLICT, "a row's lock was not read and the "
		                    "transaction's snapshot has ended");
	if ((rc = store_read_locks_in(txn->db->st, txn->view, &ref, 1, &txn->arena, &out)))
		return rc;
	r->lock_lazy = 0;
	r->lock_known = 1;
	r->has_lock = !!out.has_lock;
	r->lock = out.has_lock ? out.lock : MRTX_BYTES(NULL, 0);
	return 0;
}

int txn_observe_lazy(mrtx_txn *txn, trow *r, const store_table *t, mrtx_bytes row)
{
	int rc;

	if (!r && (rc = txn_row_new(txn, t, row, &r)))
		return rc;
	/* (a lock seen before came from the same view: it stands) */
	if (!r->lock_known) {
		r->lock_lazy = 1;
		txn->lazy = 1;
	}
	r->read = 1;
	return 0;
}

int txn_fetch_lazy(mrtx_txn *txn)
{
	trow *r;
	int rc;

	if (!txn->lazy)
		return 0;
	RB_FOREACH(r, trow_tree, &txn->rows)
		if (r->lock_lazy && (rc = fetch_lazy(txn, r)))
			return rc;
	txn->lazy = 0;
	return 0;
}

int txn_observe(mrtx_txn *txn, const store_table *t, mrtx_bytes row, int has_lock,
                mrtx_bytes lock)
{
	trow *r;
	int rc;

	if ((rc = txn_row(txn, t, row, 0, &r)))
		return rc;
	return txn_observe_at(txn, r, t, row, has_lock, lock);
}

int txn_read_row(mrtx_txn *txn, const store_table *t, mrtx_bytes row,
                 const store_filter *f, store_row *out)
{
	recover_opts ro = { txn->db->lock_wait_ms, 0, 0 };
	store *st = txn->db->st;
	int rc;

	for (int i = 0; i < 64; i++) {
		uint8_t state, id[LOCK_TXNID_SIZE];

		if ((rc = store_read_row(st, t, row, f, &txn->arena, out)))
			return rc;
		if (!out->has_lock)
			return txn_snap_late(txn, t, out);
		if ((rc = lockio_peek(st, t, out->lock, &state, id)))
			return rc;
		if (state == LOCK_STABLE)
			return txn_snap_late(txn, t, out);
		/* our own commit's tail, still running on this handle's worker:
		 * wait for it rather than settle the lock beside it */
		if (tail_wait(txn->db, id))
			continue;
		/* at a snapshot: a live writer's lock is pushed above it and
		 * read past, never waited for (snapread.c) */
		if (f && f->at && state == LOCK_PREWRITTEN) {
			rc = txn_push_past(txn, t, f->at, out);
			if (rc == 0)
				return txn_snap_late(txn, t, out);
			if (rc == MRTX_CONFLICT)
				continue;
			if (rc != 1)
				return rc;
		}
		if ((rc = txn_resolve(txn, t, row, out->lock, &ro)))
			return rc;
	}
	return mrtx__seterr(MRTX_ELOCKED, "table '%s': row keeps being locked", t->name);
}

/* Resolve table/family and check sizes: the common front of every call. */
static int resolve_args(mrtx_txn *txn, const char *table, mrtx_bytes row,
                        const char *family, size_t qual_size, const store_table **t,
                        uint8_t *fid)
{
	const store_table *c = txn->ct;
	int rc;

	if (!table)
		return mrtx__seterr(MRTX_EINVAL, "table name is NULL");
	/* The table named last, unless dropped since (store_table_find would
	 * look it up again: it may have been created anew). */
	if (c && strcmp(c->name, table) == 0 &&
	    atomic_load_explicit(&c->state, memory_order_acquire) != STORE_T_GONE) {
		*t = c;
	} else {
		if ((rc = store_table_find(txn->db->st, table, t)))
			return rc;
		txn->ct = *t;
		txn->cfam = NULL;
	}
	if (family) {
		if (txn->cfam && strcmp(txn->cfam, family) == 0 &&
		    !store_family_dropped(*t, txn->cfid)) {
			*fid = txn->cfid;
		} else {
			if ((rc = store_family_find(txn->db->st, *t, family, fid)))
				return rc;
			txn->cfam = (*t)->families[*fid]; /* names live as long as the table */
			txn->cfid = *fid;
		}
	}
	return store_check_key(*t, row, qual_size);
}

/* The front of a one-cell read: the table, the family's id, and the row's
 * entry (*r NULL when the transaction has none). */
static int cell_front(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                      mrtx_bytes qualifier, const store_table **t, uint8_t *fid, trow **r)
{
	int rc;

	*r = NULL;
	if ((rc = resolve_args(txn, table, row, family, qualifier.size, t, fid)))
		return rc;
	if (!RB_EMPTY(&txn->rows) && (rc = txn_row(txn, *t, row, 0, r)))
		return rc;
	return 0;
}

/* What the transaction's buffer says of the cell (fid, qualifier) in row
 * entry r (may be NULL): 1, its put (*value); MRTX_NOTFOUND (message set),
 * the cell or its row deleted in it; 0, nothing. */
static int buffered_cell(const trow *r, uint8_t fid, mrtx_bytes qualifier, mrtx_bytes *value)
{
	_Alignas(bcell) uint8_t kbuf[sizeof(bcell) + MRTX_MAX_KEY];
	bcell *key = (bcell *)kbuf, *c;

	if (!r)
		return 0;
	key->fid = fid;
	key->qlen = (uint32_t)qualifier.size;
	if (qualifier.size)
		memcpy(key->data, qualifier.data, qualifier.size);
	if ((c = RB_FIND(bcell_tree, (struct bcell_tree *)&r->cells, key))) {
		if (c->kind != STORE_MUT_PUT)
			return mrtx__seterr(MRTX_NOTFOUND, "deleted in this transaction");
		*value = MRTX_BYTES(c->data + c->qlen, c->vlen);
		return 1;
	}
	return r->del_row ? mrtx__seterr(MRTX_NOTFOUND, "row deleted in this transaction") : 0;
}

int mrtx_get(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
             mrtx_bytes qualifier, mrtx_bytes *value)
{
	store_filter f = STORE_FILTER_ALL;
	const store_table *t;
	store_row sr;
	uint8_t fid;
	trow *r;
	int rc;

	mrtx__clearerr();
	TXN_CHECK_SETTLED(txn);
	if (!family || !value || (qualifier.size && !qualifier.data))
		return mrtx__seterr(MRTX_EINVAL, "mrtx_get: family and value are required");
	if ((rc = cell_front(txn, table, row, family, qualifier, &t, &fid, &r)))
		return rc;
	if ((rc = buffered_cell(r, fid, qualifier, value)))
		return rc == 1 ? 0 : rc;
	f.family = fid;
	f.qs = qualifier;
	f.qual_exact = 1;
	f.lazy_lock = 1;
	if ((rc = txn_read_row_snap(txn, t, row, &f, &sr)))
		return rc;
	/* r is still this row's entry or NULL: reading adds none */
	if ((rc = sr.lock_lazy ? txn_observe_lazy(txn, r, t, row) :
	                         txn_observe_at(txn, r, t, row, sr.has_lock, sr.lock)))
		return rc;
	if (sr.ncells == 0)
		return mrtx__seterr(MRTX_NOTFOUND, "no such cell");
	*value = sr.cells[0].value;
	return 0;
}

int mrtx_get_versions(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                      mrtx_bytes qualifier, mrtx_version *out, size_t max, size_t *n)
{
	store_filter f = STORE_FILTER_ALL;
	const store_table *t;
	store_row sr;
	size_t k = 0;
	uint8_t fid;
	trow *r;
	int rc;

	mrtx__clearerr();
	if (n)
		*n = 0;
	TXN_CHECK_SETTLED(txn);
	if (!family || !n || (max && !out) || (qualifier.size && !qualifier.data))
		return mrtx__seterr(MRTX_EINVAL, "mrtx_get_versions: family, out and n are required");
	if (max == 0)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_get_versions: max is 0");
	if (!store_has(txn->db->st, STORE_CAP_VERSIONS))
		return mrtx__seterr(MRTX_ENOTSUP, "mrtx_get_versions: store %s keeps one version "
		                    "of each cell (a RADOS store of format 3 or older); read it "
		                    "with mrtx_get", store_path(txn->db->st));
	if ((rc = cell_front(txn, table, row, family, qualifier, &t, &fid, &r)))
		return rc;
	if ((rc = buffered_cell(r, fid, qualifier, &out[0].value)) < 0)
		return rc;
	if (rc == 1) {
		/* this transaction's own write: not committed, no timestamp;
		 * after its own delete of the row, nothing older shows */
		out[k++].ts = 0;
		if (k == max || r->del_row) {
			*n = k;
			return 0;
		}
	}
	f.family = fid;
	f.qs = qualifier;
	f.qual_exact = 1;
	f.versions = max - k > UINT32_MAX ? UINT32_MAX : (uint32_t)(max - k);
	if ((rc = txn_read_row_snap(txn, t, row, &f, &sr)))
		return rc;
	if ((rc = txn_observe_at(txn, r, t, row, sr.has_lock, sr.lock)))
		return rc;
	for (size_t i = 0; i < sr.ncells && k < max; i++) {
		out[k].ts = sr.cells[i].ts;
		out[k++].value = sr.cells[i].value;
	}
	*n = k;
	if (k == 0)
		return mrtx__seterr(MRTX_NOTFOUND, "no such cell");
	return 0;
}

/* Keeps I19 (DESIGN §10). */
int mrtx_begin_at(mrtx_db *db, uint64_t ts, mrtx_txn **out)
{
	store_view *v;
	mrtx_arena a;
	mrtx_bytes g;
	uint64_t vts = 0, safe = 0;
	mrtx_txn *txn;
	int rc;

	mrtx__clearerr();
	if (out)
		*out = NULL;
	if (!db || !out || ts == 0)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_begin_at: db, out and a timestamp are "
		                    "required");
	if (!store_has(db->st, STORE_CAP_VERSIONS))
		return mrtx__seterr(MRTX_ENOTSUP, "mrtx_begin_at: store %s keeps one version of "
		                    "each cell (a RADOS store of format 3 or older)",
		                    store_path(db->st));
	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	txn->at = ts; /* (before the view: a past snapshot takes no live one) */
	if ((rc = txn_view_get(txn, &v)))
		goto fail;
	/* the newest timestamp handed out: the view's (LMDB; txn_view_get
	 * retakes one whose timestamp is unknown), or the oracle's (RADOS:
	 * reads go to the store as it is, each at ts) */
	vts = store_view_ts(db->st, v);
	if (!v) {
		/* RADOS: every commit is stamped by the oracle, so one at or
		 * below ts had its stamp before this read, and every later
		 * commit point stamps above ts (DESIGN §9.1) */
		if ((rc = store_ts_now(db->st, &vts)))
			goto fail;
	} else if (vts == 0) {
		rc = mrtx__seterr(MRTX_ENOTSUP, "mrtx_begin_at: store %s has no snapshot "
		                  "timestamps here (no timestamp page, or writers kept every "
		                  "view from pinning one)", store_path(db->st));
		goto fail;
	}
	if (ts > vts) {
		rc = mrtx__seterr(MRTX_EINVAL, "mrtx_begin_at: timestamp %llu is later than the "
		                  "store's newest commit (timestamp %llu): a past snapshot shows "
		                  "commits already made; give a commit timestamp at or below "
		                  "%llu, or read the store as it is now", (unsigned long long)ts,
		                  (unsigned long long)vts, (unsigned long long)vts);
		goto fail;
	}
	/* below the collector's safe point, deleted cells may be gone */
	arena_init(&a);
	rc = store_meta_get_in(db->st, v, STORE_GC_SAFE_KEY, &a, &g);
	if (rc == 0 && g.size == 8)
		for (unsigned i = 0; i < 8; i++)
			safe |= (uint64_t)((const uint8_t *)g.data)[i] << (8 * i);
	arena_free(&a);
	if (rc && rc != MRTX_NOTFOUND)
		goto fail;
	if (ts < safe) {
		rc = mrtx__seterr(MRTX_ESNAPSHOT, "mrtx_begin_at: timestamp %llu is below the "
		                  "store's collection safe point %llu: collection (gc), or a drop "
		                  "or truncate, may have removed what a snapshot there reads; give "
		                  "a timestamp at or above %llu", (unsigned long long)ts,
		                  (unsigned long long)safe, (unsigned long long)safe);
		goto fail;
	}
	txn->at = ts;
	txn->snap_ts = ts;
	txn->view_used = 1; /* (its reads never wait: the snapshot is fixed) */
	*out = txn;
	return 0;
fail:
	mrtx_abort(txn);
	return rc;
}

/*
 * First write to a row: note the transaction's start timestamp, so that
 * commit can tell whether another transaction committed to the row after
 * this one wrote it: a commit stamped above it (write-write conflict,
 * first committer wins; decode_prev in commit_plan.c).  It is taken at the
 * transaction's first write, Percolator's start_ts: its snapshot's when it
 * read before (a value of the source taken earlier, above every commit
 * that had returned), else store_ts_start (LMDB: the page's counter;
 * RADOS: one read of the oracle).  No wall clock takes part (DESIGN §9.1,
 * I15).  Blind writes read no row, so a put is pure buffering and a commit
 * fetches the locks of all blindly written rows in one store call.
 * Keeps I15 (DESIGN §10).
 */
static int note_first_write(mrtx_txn *txn, trow *r)
{
	int rc;

	if (r->started)
		return 0;
	if (!txn->started) {
		uint64_t ts = 0;

		if (txn->snap_ts && !txn->at)
			rc = store_ts_known(txn->db->st, &ts);
		else
			rc = store_ts_start(txn->db->st, &ts);
		if (rc)
			return rc;
		txn->start_ts = MRTX_MAX(ts, txn->at ? 0 : txn->snap_ts);
		txn->started = 1;
	}
	r->start_ts = txn->start_ts;
	r->started = 1;
	return 0;
}

int txn_buffer_cell(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                    mrtx_bytes qualifier, const mrtx_bytes *value)
{
	const store_table *t;
	uint8_t fid;
	bcell *c, *old;
	trow *r;
	size_t vlen = value ? value->size : 0;
	int rc;

	mrtx__clearerr();
	TXN_CHECK_SETTLED(txn);
	if (!family || (qualifier.size && !qualifier.data) || (vlen && !value->data))
		return mrtx__seterr(MRTX_EINVAL, "family is NULL or a byte string has NULL data");
	if ((rc = resolve_args(txn, table, row, family, qualifier.size, &t, &fid)))
		return rc;
	if (vlen > MRTX_MAX_VALUE)
		return mrtx__seterr(MRTX_ETOOBIG, "table '%s': value of %zu bytes; the limit is %u",
		                    table, vlen, MRTX_MAX_VALUE);
	if (!(c = arena_alloc(&txn->arena, sizeof(*c) + qualifier.size + vlen)))
		return MRTX_ENOMEM;
	if ((rc = txn_row(txn, t, row, 1, &r)) || (rc = note_first_write(txn, r)))
		return rc;
	c->fid = fid;
	c->kind = value ? STORE_MUT_PUT : STORE_MUT_DEL_CELL;
	c->qlen = (uint32_t)qualifier.size;
	c->vlen = (uint32_t)vlen;
	if (qualifier.size)
		memcpy(c->data, qualifier.data, qualifier.size);
	if (vlen)
		memcpy(c->data + qualifier.size, value->data, vlen);
	if (r->cmax && bcell_cmp(c, r->cmax) > 0) {
		/* above every cell (puts in key order): the greatest cell has
		 * no right child; c becomes it, then the tree is rebalanced */
		RB_SET(c, r->cmax, link);
		RB_RIGHT(r->cmax, link) = c;
		bcell_tree_RB_INSERT_COLOR(&r->cells, c);
		r->cmax = c;
	} else if ((old = RB_INSERT(bcell_tree, &r->cells, c))) {
		/* One descent: RB_INSERT hands back an existing cell instead
		 * of inserting; a rewrite of a cell then replaces it. */
		RB_REMOVE(bcell_tree, &r->cells, old);
		r->ncells--;
		RB_INSERT(bcell_tree, &r->cells, c);
		if (r->cmax == old)
			r->cmax = c;
	} else if (!r->cmax) {
		r->cmax = c; /* the first cell */
	}
	r->ncells++;
	if (!r->mutated) {
		r->mutated = 1;
		txn->nmutated++;
	}
	return 0;
}

/* A write on a read-only handle fails before anything is read or buffered
 * (NULL and doomed transactions are left to the usual checks). */
static int check_writable(mrtx_txn *txn, const char *what)
{
	if (txn && !txn->doom && txn->at) {
		mrtx__clearerr();
		return mrtx__seterr(MRTX_EINVAL, "%s: a transaction at a past snapshot "
		                    "(mrtx_begin_at) only reads", what);
	}
	if (!txn || txn->doom || !store_read_only(txn->db->st))
		return 0;
	mrtx__clearerr();
	return mrtx__seterr(MRTX_EREADONLY, "%s: store %s is open read-only", what,
	                    store_path(txn->db->st));
}

/* The public writes: plan index maintenance (reads the old values), buffer
 * the write, then buffer the planned index changes (index.c). */
int mrtx_put(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
             mrtx_bytes qualifier, mrtx_bytes value)
{
	index_plan *plan;
	int rc;

	if ((rc = check_writable(txn, "mrtx_put")) ||
	    (rc = index_plan_cell(txn, table, row, family, qualifier, &value, &plan)) ||
	    (rc = txn_buffer_cell(txn, table, row, family, qualifier, &value)))
		return rc;
	return index_apply(txn, plan);
}

int mrtx_delete(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                mrtx_bytes qualifier)
{
	index_plan *plan;
	int rc;

	if ((rc = check_writable(txn, "mrtx_delete")) ||
	    (rc = index_plan_cell(txn, table, row, family, qualifier, NULL, &plan)) ||
	    (rc = txn_buffer_cell(txn, table, row, family, qualifier, NULL)))
		return rc;
	return index_apply(txn, plan);
}

int mrtx_delete_row(mrtx_txn *txn, const char *table, mrtx_bytes row)
{
	index_plan *plan;
	int rc;

	if ((rc = check_writable(txn, "mrtx_delete_row")) ||
	    (rc = index_plan_delete_row(txn, table, row, &plan)) ||
	    (rc = txn_buffer_delete_row(txn, table, row)))
		return rc;
	return index_apply(txn, plan);
}

int txn_buffer_delete_row(mrtx_txn *txn, const char *table, mrtx_bytes row)
{
	const store_table *t;
	trow *r;
	int rc;

	mrtx__clearerr();
	TXN_CHECK_SETTLED(txn);
	if ((rc = resolve_args(txn, table, row, NULL, 0, &t, NULL)))
		return rc;
	if ((rc = txn_row(txn, t, row, 1, &r)) || (rc = note_first_write(txn, r)))
		return rc;
	RB_INIT(&r->cells); /* dropped nodes stay in the arena until the txn ends */
	r->cmax = NULL;
	r->ncells = 0;
	r->del_row = 1;
	if (!r->mutated) {
		r->mutated = 1;
		txn->nmutated++;
	}
	return 0;
}

int txn_row_redo(mrtx_txn *txn, const trow *r, store_mut **out, size_t *n)
{
	size_t k = 0, total = r->ncells + (r->del_row ? 1 : 0);
	store_mut *m;
	bcell *c;

	if (!(m = arena_alloc(&txn->arena, MRTX_MAX(total, 1) * sizeof(*m))))
		return MRTX_ENOMEM;
	if (r->del_row) {
		memset(&m[k], 0, sizeof(m[k]));
		m[k++].kind = STORE_MUT_DEL_ROW;
	}
	RB_FOREACH(c, bcell_tree, (struct bcell_tree *)&r->cells) {
		m[k].kind = c->kind;
		m[k].fid = c->fid;
		m[k].qual = MRTX_BYTES(c->data, c->qlen);
		m[k].value = MRTX_BYTES(c->data + c->qlen, c->vlen);
		k++;
	}
	*out = m;
	*n = k;
	return 0;
}

/* Commits trim the rows they wrote on a store whose writes do not (RADOS):
 * one commit in TRIM_EVERY per handle, up to TRIM_ROWS of its rows, each
 * one collection step (store_trim_row) at a safe point store__trim_lag_us
 * below the clock.  So a hot row keeps about TRIM_EVERY versions more than
 * that window's, and the store stays flat (DESIGN §9).  Best
 * effort: the commit stands whatever a trim meets.  The handle's tail
 * thread runs them (tail_trim), so the commit does not wait for them. */
#define TRIM_EVERY 8u
#define TRIM_ROWS 4u

static void trim_written(mrtx_txn *txn)
{
	store *st = txn->db->st;
	uint64_t known = 0, lag = (uint64_t)atomic_load(&store__trim_lag_us);
	size_t n = txn->nmutated, i = 0, skip;
	trow *r;
	uint64_t safe;

	if (store_has(st, STORE_CAP_TRIMS_ON_WRITE) || !store_has(st, STORE_CAP_VERSIONS) ||
	    atomic_fetch_add(&txn->db->trim_count, 1) % TRIM_EVERY)
		return;
	/* (the safe point in the store's own time: the oracle as this handle
	 * knows it, less the lag -- DESIGN §9.1) */
	if (store_ts_known(st, &known) || known <= lag) {
		mrtx__clearerr();
		return;
	}
	/* at or below every running snapshot known (snapread.c) */
	if (txn->snap_live) { /* (its own has ended) */
		txn_snap_end(txn);
		txn->snap_live = 0;
	}
	safe = MRTX_MIN(known - lag, txn_safe_bound(txn->db, 0));
	if (safe == 0)
		return;
	/* (TRIM_ROWS of the written rows, in row order from a place that
	 * moves on with every trimming commit, wrapping around: no written
	 * row is always passed over) */
	skip = (size_t)(atomic_load(&txn->db->trim_count) / TRIM_EVERY) % n;
	RB_FOREACH(r, trow_tree, &txn->rows)
		if (r->mutated && (i++ + n - skip) % n < TRIM_ROWS)
			tail_trim(txn->db, r->t, r->row, safe);
}

int mrtx_commit_ts(mrtx_txn *txn, uint64_t *commit_ts)
{
	int rc;

	mrtx__clearerr();
	if (commit_ts)
		*commit_ts = 0;
	if (!txn)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_commit: transaction handle is NULL");
	if (txn->doom)
		rc = mrtx__seterr(txn->doom == MRTX_CONFLICT ? MRTX_CONFLICT : MRTX_EBADTXN,
		                  "transaction already failed: %s", mrtx_strerror(txn->doom));
	else
		rc = idx_stale_table(txn, txn_commit_run(txn));
	if (rc == 0 && txn->commit_ts) /* (this handle's next start is above it) */
		store_ts_learn(txn->db->st, txn->commit_ts);
	if (rc == 0 && commit_ts)
		*commit_ts = txn->commit_ts ? txn->commit_ts : txn->snap_ts;
	if (rc == 0 && txn->nmutated)
		trim_written(txn);
	txn_free(txn);
	return rc;
}

int mrtx_commit(mrtx_txn *txn)
{
	return mrtx_commit_ts(txn, NULL);
}

uint64_t mrtx_txn_snapshot_ts(const mrtx_txn *txn)
{
	return txn ? txn->snap_ts : 0;
}

/* What mrtx_run retries: a failure a later attempt can get past. */
static int retryable(int rc)
{
	return rc == MRTX_CONFLICT || rc == MRTX_ELOCKED || rc == MRTX_ESNAPSHOT;
}

int mrtx_run(mrtx_db *db, int (*fn)(mrtx_txn *txn, void *payload), void *payload,
             int max_attempts)
{
	uint64_t backoff = 200;
	int rc = MRTX_CONFLICT;

	if (!db || !fn)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_run: db and fn are required");
	if (max_attempts <= 0)
		max_attempts = 10;
	for (int attempt = 0; attempt < max_attempts; attempt++) {
		mrtx_txn *txn;

		if (attempt) {
			/* Full jitter keeps colliding writers from colliding again. */
			mrtx__sleep_us(mrtx__rand_below((uint32_t)backoff) + 50);
			backoff = MRTX_MIN(backoff * 2, 100000u);
		}
		if ((rc = mrtx_begin(db, &txn)))
			return rc;
		if ((rc = fn(txn, payload))) {
			/* fn may pass on the MRTX_EBADTXN of a call made after a
			 * retryable failure doomed the transaction: that failure */
			if (rc == MRTX_EBADTXN && retryable(txn->doom))
				rc = txn->doom;
			mrtx_abort(txn);
			if (retryable(rc))
				continue;
			return rc;
		}
		if (!retryable(rc = mrtx_commit(txn)))
			return rc;
	}
	return rc;
}
