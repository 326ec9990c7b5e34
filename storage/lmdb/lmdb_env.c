/*
 * lmdb_env.c - the LMDB environment behind a store: opening (one
 * environment per directory per process, never shared across fork()),
 * closing, the pool of read transactions, error mapping, commit
 * durability, accounting, and the store-call fault hook used by tests.
 */
#include "storage/lmdb/lmdb_int.h"
#include "storage/lmdb/lmdb_layout.h"
#include "storage/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static store *registry;

/* ---------------------------------------------------------------- errors */

const char *lmdb_damage_what(int rc, const char **why)
{
	*why = "";
	switch (rc) {
	case LMDB_BADSUM:
		return "a record's checksum does not match its bytes";
	case LMDB_BADSPAN:
		*why = " (a damaged size in a page)";
		return "a record's size runs past its page or past the end of the data file";
	case LMDB_DISORDER:
		return "keys out of order in the data file";
	case LMDB_METACOUNT:
		*why = " (a record lost whole, or one written behind mrtx's back)";
		return "the metadata records do not match their count in the format record";
	case LMDB_METADIGEST:
		*why = " (an older copy of one read in its place)";
		return "the metadata records do not match their digest in the format record";
	case LMDB_BADFORMAT:
		*why = " (a length or format number no store format has)";
		return "the format record is malformed";
	case MDB_CURSOR_FULL: /* (mrtx's trees are far shallower than LMDB's limit) */
		*why = " (a branch pointer sent back up its own tree)";
		return "a tree deeper than LMDB can walk";
	}
	return NULL;
}

/*
 * A full disk or quota is MRTX_EFULL, as a full map is: the caller frees
 * space (or grows the map) and retries.  Every other errno is MRTX_ESTORE
 * in its own words (permissions, a read-only file system, I/O).
 */
int lmdb_err(store *st, int rc, const char *step)
{
	int failed = lmdb_io_failed(st), full = rc == ENOSPC || rc == EDQUOT;
	const char *what, *why;

	if (rc == MDB_MAP_FULL)
		return mrtx__seterr(MRTX_EFULL, "store %s is full (map size %zu bytes) during %s; "
		                    "reopen it with a larger map size (mrtx_options.map_size)",
		                    st->path, st->map_size, step);
	if (rc == ENOMEM)
		return mrtx__seterr(MRTX_ENOMEM, "store %s: out of memory during %s", st->path, step);
	if ((what = lmdb_damage_what(rc, &why)))
		return mrtx__seterr(MRTX_ECORRUPT, "store %s: %s during %s%s: the store is damaged "
		                    "(`mrtx check --deep %s` says where; restore it from a backup)",
		                    st->path, what, step, why, st->path);
	if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND)
		return mrtx__seterr(MRTX_ECORRUPT, "store %s: %s during %s: the store is damaged "
		                    "(`mrtx check --deep %s` says where; restore it from a backup)",
		                    st->path, mdb_strerror(rc), step, st->path);
	if (rc == MDB_PANIC)
		return mrtx__seterr(MRTX_ESTORE, "store %s: %s: LMDB stopped after a failed write "
		                    "of the store's meta page (MDB_PANIC): nothing more can be read "
		                    "or written through this handle; close every handle of the "
		                    "store in this process and reopen it", st->path, step);
	if (failed && lmdb_is_io_errno(rc))
		return lmdb_latched_err(st, full ? MRTX_EFULL : MRTX_ESTORE, rc, step);
	if (full)
		return mrtx__seterr(MRTX_EFULL, "store %s: %s: %s (writing %s/data.mdb: nothing "
		                    "of it was committed; free space, then retry)", st->path, step,
		                    strerror(rc), st->path);
	return mrtx__seterr(MRTX_ESTORE, "store %s: %s: %s", st->path, step, mdb_strerror(rc));
}

/* ------------------------------------------------------ fault injection */

/* The store-call fault hook (store.c) with LMDB's error mapping. */
int lmdb_fault(store *st, const char *step, int write)
{
	int err = store__fault_hit(write);

	if (err == 0 || err == STORE_FAULT_APPLIED)
		return err;
	return lmdb_err(st, err, step);
}

/* -------------------------------------------------------------- helpers */

static atomic_uint forks;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void forks_child(void)
{
	atomic_fetch_add(&forks, 1);
}

static void forks_init(void)
{
	(void)pthread_atfork(NULL, NULL, forks_child);
}

unsigned lmdb_forks(void)
{
	return atomic_load_explicit(&forks, memory_order_relaxed);
}

/* mdb_reader_list's callback: count this process's active readers. */
static int count_own_reader(const char *msg, void *ctx)
{
	char txnid[32];
	int pid;
	size_t tid;

	if (sscanf(msg, "%d %zx %31s", &pid, &tid, txnid) == 3 && pid == (int)getpid() &&
	    strcmp(txnid, "-") != 0)
		++*(unsigned *)ctx;
	return 0;
}

/*
 * Another process grew the map past ours (MDB_MAP_RESIZED): adopt its size.
 * LMDB allows that only with no transaction of this process active (it
 * remaps the file), so: one thread at a time (remap_mu), trying again first
 * (another thread may have remapped already; while the map is too small no
 * new transaction can start, so the count below only falls), and only with
 * no read of this process under way -- a transaction's view holds one open
 * across calls (a commit closes its own first, commit.c).  Pooled reads end
 * within microseconds: wait up to 0.2 s.  Rare, so LMDB's reader table is
 * read here rather than views counted on every transaction.  Returns
 * mdb_txn_begin's result, or MRTX_ESTORE (message set) when reads stayed.
 */
int lmdb_remap(store *st, const char *step, int (*again)(store *st, void *arg), void *arg)
{
	int rc;

	pthread_mutex_lock(&st->remap_mu);
	if ((rc = again(st, arg)) == MDB_MAP_RESIZED) {
		for (int i = 0;; i++) {
			unsigned own = 0;

			(void)mdb_reader_list(st->env, count_own_reader, &own);
			if (own == 0) {
				lmdb_span_set_mapsize(&st->span, st->env, 0);
				rc = again(st, arg);
				break;
			}
			if (i == 200) {
				rc = mrtx__seterr(MRTX_ESTORE, "store %s: %s: another process grew the "
				                  "store's map, and this process can adopt the new size "
				                  "only while none of its reads is under way (LMDB remaps "
				                  "the file): a transaction's snapshot stayed open for "
				                  "0.2 s; end the open transactions and retry", st->path,
				                  step);
				break;
			}
			mrtx__sleep_us(1000);
		}
	}
	pthread_mutex_unlock(&st->remap_mu);
	return rc;
}

struct begin_arg {
	unsigned flags;
	MDB_txn **out;
};

static int begin_again(store *st, void *arg)
{
	struct begin_arg *b = arg;

	return mdb_txn_begin(st->env, NULL, b->flags, b->out);
}

int lmdb_txn_begin(store *st, unsigned flags, MDB_txn **out)
{
	int rc, wr = !(flags & MDB_RDONLY);

	if (wr && (rc = lmdb_io_failed(st)))
		return mrtx__seterr(MRTX_ESTORE, "store %s: a write or sync of data.mdb failed "
		                    "(%s): %s", st->path, strerror(rc), lmdb_latch_why);
	if (wr) {
		pthread_mutex_lock(&st->wmu); /* see lmdb_commit */
		if (!st->wb_opened)
			lmdb_wb_open(st);
	}
	rc = mdb_txn_begin(st->env, NULL, flags, out);

	if (rc == MDB_MAP_RESIZED) {
		struct begin_arg ba = { flags, out };

		/* Another process grew the map; adopt its size and retry. */
		rc = lmdb_remap(st, wr ? "begin write" : "begin read", begin_again, &ba);
		if (rc == MRTX_ESTORE) {
			if (wr)
				pthread_mutex_unlock(&st->wmu);
			return rc;
		}
	}
	if (rc) {
		if (wr)
			pthread_mutex_unlock(&st->wmu);
		return lmdb_err(st, rc, wr ? "begin write" : "begin read");
	}
	atomic_fetch_add_explicit(flags & MDB_RDONLY ? &st->read_txns : &st->write_txns, 1,
	                          memory_order_relaxed);
	if (wr) {
		st->w_id = mdb_txn_id(*out);
		st->w_gen_ok = st->gen_at && st->gen_at + 1 == st->w_id;
		st->w_gen = st->gen_val;
		st->w_tgen_ok = st->tgen_at && st->tgen_at + 1 == st->w_id;
		st->w_tgen = st->tgen_val;
		st->w_dirty = 0;
		lmdb_unsettled_begin(st);
	}
	return 0;
}

int lmdb_wgen(store *st, MDB_cursor *cur, uint64_t *gen)
{
	int rc;

	if (!st->w_gen_ok) {
		if ((rc = lmdb_gen_read(cur, &st->w_gen)))
			return rc;
		st->w_gen_ok = 1;
	}
	*gen = st->w_gen;
	return 0;
}

/* A read's count: a plain load and store, not a locked increment, which
 * would cost every point read a contended cache line (see store.h). */
static inline void count_read(store *st)
{
	atomic_store_explicit(&st->read_txns,
	                      atomic_load_explicit(&st->read_txns, memory_order_relaxed) + 1,
	                      memory_order_relaxed);
}

int lmdb_rtxn_begin(store *st, lmdb_rtxn *out)
{
	lmdb_rtxn *r = NULL;
	int rc;

	for (int i = 0; i < READ_POOL && !r; i++)
		if (atomic_load_explicit(&st->pool[i], memory_order_relaxed))
			r = atomic_exchange_explicit(&st->pool[i], NULL, memory_order_acquire);
	if (r) {
		/* Renewal keeps the reader slot, the allocations and the cursor. */
		if (mdb_txn_renew(r->txn) == 0 && mdb_cursor_renew(r->txn, r->cur) == 0) {
			count_read(st);
			*out = *r;
			return 0;
		}
		mdb_cursor_close(r->cur);
		mdb_txn_abort(r->txn);
	} else if (!(r = mrtx__malloc(sizeof(*r)))) {
		return mrtx__seterr(MRTX_ENOMEM, "out of memory beginning a read");
	}
	r->slot = r;
	if ((rc = lmdb_txn_begin(st, MDB_RDONLY, &r->txn))) {
		mrtx__free(r);
		return rc;
	}
	if ((rc = mdb_cursor_open(r->txn, st->dbi, &r->cur))) {
		mdb_txn_abort(r->txn);
		mrtx__free(r);
		return lmdb_err(st, rc, "open cursor");
	}
	*out = *r;
	return 0;
}

void lmdb_rtxn_end(store *st, lmdb_rtxn *rt)
{
	lmdb_rtxn *r = rt->slot;

	mdb_txn_reset(r->txn);
	for (int i = 0; i < READ_POOL; i++) {
		lmdb_rtxn *empty = NULL;

		if (atomic_compare_exchange_strong_explicit(&st->pool[i], &empty, r,
		                                            memory_order_release,
		                                            memory_order_relaxed)) {
			r = NULL;
			break;
		}
	}
	if (r) {
		mdb_cursor_close(r->cur);
		mdb_txn_abort(r->txn);
		mrtx__free(r);
	}
	rt->txn = NULL;
	rt->cur = NULL;
	rt->slot = NULL;
}

/*
 * Commit durability (BENCH.md, "The argument").  Every write transaction
 * of a sync-mode store commits with MDB_NOMETASYNC (set at open): LMDB
 * fdatasyncs its data pages, then writes its meta page without a flush.
 * No meta page ever points at unwritten pages, so LMDB's integrity holds
 * after an OS crash; only the newest meta page may be lost, and with it
 * the last commit.  A commit that must be durable before its call returns
 * (a commit point) is made so after the writer lock is released
 * (lmdb_durable): by the next write transaction of any process, whose data
 * fdatasync starts after our meta page was written and so flushes it, or,
 * if none comes soon, by an fdatasync of our own.  So the writer lock is
 * held through one flush per commit instead of two, and under load one
 * flush makes the previous commit durable as well as its own.
 *
 * That rests on every writer of the store syncing its data (MRTX_SYNC or
 * MRTX_NOMETASYNC); a MRTX_NOSYNC writer already voids OS-crash safety for
 * the whole store (mrtx_open).
 */
int lmdb_commit_nowait(store *st, MDB_txn *txn, int durable, uint64_t *need, int *before)
{
	uint64_t id = st->w_id;
	int dirty = st->w_dirty, rc, unsettled;

	*need = 0;
	if (before)
		*before = 0;
	if ((rc = lmdb_unsettled_finish(st, txn, &unsettled))) {
		lmdb_wabort(st, txn);
		if (before)
			*before = 1;
		return rc;
	}
	/* (before the commit: readers look it up by id) */
	lmdb_ts_record(st, txn, unsettled);
	rc = mdb_txn_commit(txn);
	if (rc == 0 && st->w_ceil_new > st->w_ceil)
		st->w_ceil = st->w_ceil_new;
	st->w_ceil_new = 0;
	/* (an I/O error: a failed write leaves the handle as it was, a failed
	 * sync sets the latch) */
	if (lmdb_is_io_errno(rc))
		rc = lmdb_commit_io_failed(st, rc);
	/* Only a txn that changed something takes its id (an empty one leaves
	 * it to the next writer, maybe another process's). */
	if (rc == 0 && dirty) {
		if (st->w_gen_ok) {
			st->gen_at = st->w_id;
			st->gen_val = st->w_gen;
		}
		if (st->w_tgen_ok) {
			st->tgen_at = st->w_id;
			st->tgen_val = st->w_tgen;
		}
		lmdb_unsettled_committed(st);
		/* did other processes commit since our last write txn? */
		unsigned f = atomic_load_explicit(&st->foreign, memory_order_relaxed);

		f = (f * 7 + (st->own_last && id > st->own_last + 1 ? 1024u : 0u)) / 8;
		atomic_store_explicit(&st->foreign, f, memory_order_relaxed);
		st->own_last = id;
		if (durable && st->durability == MRTX_SYNC)
			*need = id;
	}
	pthread_mutex_unlock(&st->wmu);
	return rc;
}

/* The newest committed LMDB txn id, from the meta pages (shared memory). */
static uint64_t last_txnid(store *st)
{
	MDB_envinfo info;

	return mdb_env_info(st->env, &info) == 0 ? (uint64_t)info.me_last_txnid : 0;
}

/*
 * Make committed write txn `need` (its meta page written, unsynced)
 * durable.  A later txn id in the meta pages means a later write txn
 * committed, and its data fdatasync ran after our meta page was written:
 * ours is on disk.  Wait for one while one is likely soon -- busy: other
 * requests of this process are queued or being written (their commit comes
 * next), or other processes have been committing between ours
 * (st->foreign) -- for up to LMDB_DURABLE_WAIT_US, woken by this process's
 * commits (st->dcv, lmdb_durable_kick) and polling the meta pages (shared
 * memory) for other processes'; else, or then, fdatasync ourselves.
 * Returns 0, or the errno of a failed sync (the caller cannot tell whether
 * the commit survives an OS crash).
 */
#define LMDB_DURABLE_WAIT_US 2000u
#define LMDB_DURABLE_POLL_US 100u

void lmdb_durable_kick(store *st)
{
	pthread_mutex_lock(&st->gmu);
	pthread_cond_broadcast(&st->dcv);
	pthread_mutex_unlock(&st->gmu);
}

/* Every commit up to `upto` is known durable (st->synced only rises).
 * Not once the latch is set: a sync that returned after a failed one may
 * have been told of no error only because the failed one was (the kernel
 * reports a write-back error once per open file, and every thread shares
 * LMDB's descriptor).
 * Keeps I24 (DESIGN §10). */
static void raise_synced(store *st, uint64_t upto)
{
	if (lmdb_io_failed(st))
		return;
	for (uint64_t cur = atomic_load(&st->synced);
	     cur < upto && !atomic_compare_exchange_weak(&st->synced, &cur, upto);)
		;
}

/* What lmdb_durable reports for commit need: 0 when it is known durable,
 * or while no sync failed; else the errno of the failure that set the
 * latch (it will never be known durable through this handle). */
static int durable_result(store *st, uint64_t need)
{
	int failed = lmdb_io_failed(st);

	return failed && atomic_load(&st->synced) < need ? failed : 0;
}

static int durable_now(store *st, uint64_t need)
{
	return last_txnid(st) > need || atomic_load(&st->synced) >= need;
}

/* Wait up to LMDB_DURABLE_WAIT_US for another's sync to carry commit need
 * (this process's next commit, or another process's): 1 when it did. */
static int piggyback(store *st, uint64_t need)
{
	uint64_t until = mrtx__mono_us() + LMDB_DURABLE_WAIT_US;
	int done = 0;

	pthread_mutex_lock(&st->gmu);
	for (;;) {
		uint64_t now = mrtx__mono_us();
		struct timespec ts;

		if ((done = durable_now(st, need)) || now >= until)
			break;
		ts = mrtx__mono_timespec(now + LMDB_DURABLE_POLL_US);
		pthread_cond_timedwait(&st->dcv, &st->gmu, &ts);
	}
	pthread_mutex_unlock(&st->gmu);
	if (done) {
		atomic_fetch_add_explicit(&st->piggybacked, 1, memory_order_relaxed);
		raise_synced(st, need);
	}
	return done;
}

/* Are other writers committing: this process's (a group being written or
 * queued) or, lately, other processes'? */
static int writers_busy(store *st)
{
	int busy;

	if (atomic_load_explicit(&st->foreign, memory_order_relaxed) >= 512)
		return 1;
	pthread_mutex_lock(&st->gmu);
	busy = st->leader || st->gq_head != NULL || st->inflight > 0;
	pthread_mutex_unlock(&st->gmu);
	return busy;
}

/* lmdb_durable; own: need is this thread's commit (its meta page written
 * before this call), else only an id some commit took. */
static int durable(store *st, uint64_t need, int busy, int own)
{
	uint64_t upto;
	int rc;

	if (need == 0)
		return 0;
	if (atomic_load(&st->synced) >= need)
		return 0;
	if ((busy || atomic_load_explicit(&st->foreign, memory_order_relaxed) >= 512) &&
	    piggyback(st, need))
		return durable_result(st, need);
	/* What our sync surely covers: every commit before the newest
	 * visible one, whose data sync ran after them, and our own, need,
	 * whose meta page this thread wrote before.  (Not the newest one
	 * itself when it is another's: its meta page may show through the
	 * map before the kernel marked its page dirty.  Nor `need` when it is
	 * only an id, which another process's commit may have taken.) */
	upto = last_txnid(st);
	upto = own && upto >= need ? MRTX_MAX(upto - 1, need) : upto ? upto - 1 : 0;
	if ((rc = mdb_env_sync(st->env, 1))) {
		lmdb_io_latch(st, rc);
		return rc;
	}
	atomic_fetch_add_explicit(&st->own_syncs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&store__syncs, 1, memory_order_relaxed);
	raise_synced(st, upto);
	lmdb_durable_kick(st);
	return durable_result(st, need);
}

/* Keeps I23 (DESIGN §10). */
int lmdb_durable(store *st, uint64_t need, int busy)
{
	return durable(st, need, busy, 1);
}

int lmdb_commit(store *st, MDB_txn *txn, int durable_req)
{
	uint64_t id = st->w_id, need;
	int rc = lmdb_commit_nowait(st, txn, durable_req, &need, NULL), own = 1;

	/* (schema and metadata writes do not set w_dirty: a durable one is
	 * waited for by its id when it took it -- an LMDB txn that wrote
	 * nothing leaves its id to the next writer, maybe another process) */
	if (rc == 0 && durable_req && st->durability == MRTX_SYNC && need == 0 &&
	    last_txnid(st) >= id) {
		need = id;
		own = 0;
	}
	return rc ? rc : durable(st, need, 0, own);
}

/* A read's durability (lmdb_store_sync_visible): what it read, up to
 * commit need, is durable -- or, once the latch is set, is not known so. */
static int visible_result(store *st, uint64_t need)
{
	int failed = durable_result(st, need);

	if (!failed)
		return 0;
	return mrtx__seterr(MRTX_ESTORE, "store %s: sync: this transaction read commits not "
	                    "known to be on disk, as a write or sync of data.mdb failed (%s): "
	                    "%s", st->path, strerror(failed), lmdb_latch_why);
}

/*
 * Make commit `need` (0: the newest visible) durable in MRTX_SYNC, for a
 * transaction that read it (DESIGN §8): a commit is visible from its meta
 * page's write, a moment before it is made durable.  Nothing to do when
 * this process knows it durable already (st->synced), or a later commit
 * exists (its data sync ran after need's meta page was written).  Else
 * need is the newest commit, and its writer may still be inside the write
 * of its meta page, which an fdatasync begun now might not carry: taking
 * LMDB's writer lock for a moment waits that write out (a writer releases
 * the lock after its meta page), so the sync that follows makes every
 * commit up to the newest seen under the lock durable, and st->synced says
 * so: the next reader of the same state syncs nothing.  Readers that queue
 * on the lock behind one that syncs find it done when their turn comes
 * (the checks are made again under the lock): one sync serves them all.
 * Not inside a write transaction of this thread (the lock is not
 * recursive), nor with a read transaction of this handle open in this
 * thread (taking the lock may have to grow the map, which waits for them).
 * A read-only handle cannot take the lock: it syncs nothing (the writer's
 * own commit makes its commit durable before it returns).
 * Keeps I23 (DESIGN §10).
 */
int lmdb_store_sync_visible(store *st, uint64_t need)
{
	MDB_txn *w;
	uint64_t upto;
	int rc;

	if (st->durability != MRTX_SYNC || st->head.read_only)
		return 0;
	if (need == 0 && (need = last_txnid(st)) == 0)
		return 0;
	/* (latched: what is not known durable now never will be, and no
	 * write txn starts) */
	if (atomic_load(&st->synced) >= need || last_txnid(st) > need || lmdb_io_failed(st)) {
		raise_synced(st, need);
		return visible_result(st, need);
	}
	/* Writers committing: the next group's data sync carries need, as it
	 * carries their own commits (lmdb_durable); taking the writer lock
	 * for a sync of our own would hold their group up instead. */
	if (writers_busy(st) && piggyback(st, need))
		return visible_result(st, need);
	if ((rc = lmdb_txn_begin(st, 0, &w)))
		return rc;
	upto = last_txnid(st);
	lmdb_wabort(st, w);
	/* (one sync at a time: a reader queued here finds need synced by the
	 * one before it, which held vsync_mu until it had raised synced) */
	pthread_mutex_lock(&st->vsync_mu);
	if (atomic_load(&st->synced) >= need || upto > need) {
		/* (synced by the reader before us, or a later commit's data
		 * sync, under the lock we waited for, carried need) */
		pthread_mutex_unlock(&st->vsync_mu);
		raise_synced(st, need);
		return visible_result(st, need);
	}
	if ((rc = mdb_env_sync(st->env, 1))) {
		lmdb_io_latch(st, rc);
		pthread_mutex_unlock(&st->vsync_mu);
		return lmdb_err(st, rc, "sync");
	}
	atomic_fetch_add_explicit(&st->own_syncs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&store__syncs, 1, memory_order_relaxed);
	raise_synced(st, upto);
	pthread_mutex_unlock(&st->vsync_mu);
	lmdb_durable_kick(st);
	return visible_result(st, need);
}

void lmdb_wabort(store *st, MDB_txn *txn)
{
	st->w_ceil_new = 0; /* (a ceiling this txn raised is not stored) */
	mdb_txn_abort(txn);
	pthread_mutex_unlock(&st->wmu);
}

/* ----------------------------------------------------------- open/close */

static void store_destroy(store *st)
{
	size_t n = atomic_load(&st->ntables);

	for (int i = 0; i < READ_POOL; i++) {
		lmdb_rtxn *r = atomic_exchange(&st->pool[i], NULL);

		if (r) {
			mdb_cursor_close(r->cur);
			mdb_txn_abort(r->txn);
			mrtx__free(r);
		}
	}
	lmdb_ts_detach(st);
	if (st->wb_opened && st->wb_fd >= 0)
		close(st->wb_fd);
	lmdb_span_del(&st->span);
	if (st->env)
		mdb_env_close(st->env);
	for (size_t i = 0; i < n; i++)
		lmdb_table_free(st->tables[i]);
	pthread_mutex_destroy(&st->mu);
	pthread_mutex_destroy(&st->ts_mu);
	pthread_mutex_destroy(&st->wmu);
	pthread_mutex_destroy(&st->remap_mu);
	pthread_mutex_destroy(&st->gmu);
	pthread_mutex_destroy(&st->vsync_mu);
	pthread_cond_destroy(&st->gcv);
	pthread_cond_destroy(&st->dcv);
	pthread_cond_destroy(&st->lcv);
	mrtx__free(st->path);
	free(st->ts_dir); /* (realpath's) */
	mrtx__free(st);
}

/* mdb_reader_list's whole output when the environment has no lock file. */
static int note_lockless(const char *msg, void *ctx)
{
	if (strncmp(msg, "(no reader locks)", 17) == 0)
		*(int *)ctx = 1;
	return 0;
}

/*
 * LMDB's assertions (its build keeps them) stop the process when a page
 * breaks LMDB's own rules -- a branch pointer sent to a branch page where
 * a leaf must be, which no check of mrtx's can see first.  LMDB prints the
 * failed assertion and aborts after this returns; first say what it means
 * and where the store is, on the same stream.
 */
static void lmdb_assert_hit(MDB_env *env, const char *msg)
{
	const store *st = mdb_env_get_userctx(env);

	fprintf(stderr, "mrtx: store %s: LMDB stopped the process on a page that breaks its "
	        "own rules (%s): the store's file is damaged (`mrtx check --deep %s` says "
	        "where; restore it from a backup)\n", st ? st->path : "?", msg,
	        st ? st->path : "STORE");
}

static int env_try_open(store *st, const store_opts *o, unsigned flags)
{
	int rc;

	if ((rc = mdb_env_create(&st->env)))
		return rc;
	if ((rc = mdb_env_set_userctx(st->env, st)) ||
	    (rc = mdb_env_set_assert(st->env, lmdb_assert_hit)) ||
	    (rc = mdb_env_set_maxdbs(st->env, 0)) ||
	    (rc = mdb_env_set_maxreaders(st->env, 1022)) ||
	    (rc = mdb_env_open(st->env, st->path, flags, o->file_mode ? o->file_mode : 0600))) {
		mdb_env_close(st->env); /* LMDB: a failed open leaves only close */
		st->env = NULL;
	}
	return rc;
}

/* 0 when DIR/data.mdb exists, else the errno of looking (ENOENT: missing).
 * LMDB creates lock.mdb before data.mdb: an open that must not create looks
 * first, so that a directory without a store stays as it was. */
static int data_missing(const store *st)
{
	char file[4096];
	struct stat sb;
	int n = snprintf(file, sizeof(file), "%s/data.mdb", st->path);

	if (n < 0 || (size_t)n >= sizeof(file))
		return ENAMETOOLONG;
	return stat(file, &sb) != 0 ? errno : 0;
}

const char *lmdb_no_create_why(const store_opts *o)
{
	return o->read_only ? "a read-only open creates nothing" :
	                      "this open was asked not to create one";
}

/*
 * Read-only: LMDB opens data.mdb for reading, but every reader registers
 * in lock.mdb, which it opens read-write (creating it if missing).  A user
 * who may read the store's files but not write them gets EACCES there; the
 * store is then opened without the lock file (MDB_NOLOCK), as LMDB itself
 * does on a read-only file system.  The cost (mrtx.h, mrtx_open): writers
 * cannot see this process's snapshots.
 */
static int env_open_ro(store *st, const store_opts *o, unsigned flags)
{
	int rc;

	if ((rc = data_missing(st)))
		return rc;
	rc = env_try_open(st, o, flags | MDB_RDONLY);

	if (rc == EACCES || rc == EPERM)
		rc = env_try_open(st, o, flags | MDB_RDONLY | MDB_NOLOCK);
	return rc;
}

static int env_open(store *st, const store_opts *o)
{
	unsigned flags = MDB_NOTLS;
	MDB_envinfo info;
	int rc, dead;

	if (o->durability == MRTX_NOMETASYNC || o->durability == MRTX_SYNC)
		flags |= MDB_NOMETASYNC; /* sync: the meta page is flushed later
		                            (lmdb_durable) */
	else if (o->durability == MRTX_NOSYNC)
		flags |= MDB_NOSYNC;
	/* (a damaged file is refused before LMDB maps it, or creates lock.mdb) */
	if ((rc = lmdb_file_check(st->path)))
		return rc;
	if (o->read_only)
		rc = env_open_ro(st, o, flags);
	else if (o->create == MRTX_CREATE_NEVER && (rc = data_missing(st)))
		;
	else
		rc = env_try_open(st, o, flags);
	if (rc == ENOENT && st->no_create)
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: no mrtx store here (no data.mdb; %s)",
		                    st->path, lmdb_no_create_why(o));
	if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
		return mrtx__seterr(MRTX_ENOTSTORE, "%s: not an mrtx store (%s)", st->path,
		                    mdb_strerror(rc));
	if (rc == EACCES || rc == EPERM || rc == EROFS)
		return mrtx__seterr(MRTX_ESTORE, "%s: cannot open store: %s", st->path, strerror(rc));
	if (rc)
		return lmdb_err(st, rc, "open environment");
	if ((rc = mdb_env_info(st->env, &info)))
		return lmdb_err(st, rc, "read environment info");
	/* A reader count past the lock file's slots (its region damaged while
	 * another process kept it) would send LMDB's walks of the reader
	 * table past the end of its map: SIGBUS. */
	if (info.me_numreaders > info.me_maxreaders)
		return mrtx__seterr(MRTX_ECORRUPT, "%s/lock.mdb counts %u readers in its %u "
		                    "slots: the lock file is damaged (stop every process using "
		                    "the store and remove lock.mdb; the next open makes it anew)",
		                    st->path, info.me_numreaders, info.me_maxreaders);
	if (o->read_only) {
		/* Nothing to grow: the map is the file's, and no writer needs it. */
		st->map_size = info.me_mapsize;
		mdb_reader_list(st->env, note_lockless, &st->lockless);
		if (!st->lockless && mdb_reader_check(st->env, &dead) == 0 && dead > 0)
			atomic_fetch_add(&st->stale_cleared, dead);
		return 0;
	}
	/*
	 * The map size is set after opening, when the file's own size is known:
	 * a new store gets map_size (default 1 GiB); an existing one grows to
	 * map_size if that is larger and never shrinks (LMDB would otherwise
	 * take a smaller request as long as the data fits).  No transaction of
	 * this environment is active yet, as mdb_env_set_mapsize requires.
	 */
	if ((rc = mdb_env_info(st->env, &info)))
		return lmdb_err(st, rc, "read environment info");
	{
		size_t want = o->map_size ? o->map_size : DEFAULT_MAP;
		int fresh = info.me_last_pgno <= 1; /* only the two meta pages */

		if ((uint64_t)want > LF_MAP_MAX)
			return mrtx__seterr(MRTX_EINVAL, "%s: map_size %zu is past %llu bytes, the "
			                    "address space of a process", st->path, want,
			                    (unsigned long long)LF_MAP_MAX);

		if ((fresh && want != info.me_mapsize) || want > info.me_mapsize) {
			if ((rc = mdb_env_set_mapsize(st->env, want)))
				return lmdb_err(st, rc, "set map size");
		}
	}
	if ((rc = mdb_env_info(st->env, &info)))
		return lmdb_err(st, rc, "read environment info");
	st->map_size = info.me_mapsize;
	/* Slots of killed processes would pin old snapshots and grow the file. */
	if (mdb_reader_check(st->env, &dead) == 0 && dead > 0)
		atomic_fetch_add(&st->stale_cleared, dead);
	return 0;
}

static const char *durability_name(int d)
{
	return d == MRTX_SYNC ? "MRTX_SYNC" : d == MRTX_NOMETASYNC ? "MRTX_NOMETASYNC" :
	       "MRTX_NOSYNC";
}

/*
 * A second open of a store in one process shares the first one's LMDB
 * environment, whose sync flags, batching and map are per environment.
 * Options it cannot honour are refused, never silently weakened: another
 * durability, another batching, a larger map (growing needs every handle
 * closed).  map_size 0 or no larger than the map, and file_mode, are fine.
 */
static int shared_open_check(const store *st, const store_opts *o)
{
	int ro = store_read_only(st);

	if (!!o->read_only != ro)
		return mrtx__seterr(MRTX_EINVAL, "%s is already open %s in this process; this "
		                    "open asks for %s (one environment serves both: close every "
		                    "handle first%s)", st->path, ro ? "read-only" : "read-write",
		                    ro ? "read-write" : "read-only",
		                    ro ? "" : ", or read through the read-write handle");
	if (ro)
		return 0; /* durability, batching and the map mean nothing to a reader */
	if (o->durability != st->durability)
		return mrtx__seterr(MRTX_EINVAL, "%s is already open in this process with "
		                    "durability %s; this open asks for %s (close every handle "
		                    "first, or open with the same durability)", st->path,
		                    durability_name(st->durability), durability_name(o->durability));
	if (!!o->unbatched != !!st->unbatched)
		return mrtx__seterr(MRTX_EINVAL, "%s is already open in this process with "
		                    "unbatched = %d; this open asks for unbatched = %d", st->path,
		                    !!st->unbatched, !!o->unbatched);
	if (o->map_size > st->map_size)
		return mrtx__seterr(MRTX_EINVAL, "%s is already open in this process with a map "
		                    "of %zu bytes; this open asks for map_size %zu (close every "
		                    "handle to grow the map)", st->path, st->map_size, o->map_size);
	return 0;
}

int lmdb_store_open(store **out, const char *path, const store_opts *o)
{
	struct stat sb;
	store *st;
	int rc;

	pthread_once(&forks_once, forks_init);

	if (stat(path, &sb) != 0) {
		if (errno != ENOENT)
			return mrtx__seterr(MRTX_ESTORE, "%s: %s", path, strerror(errno));
		if (o->read_only || o->create == MRTX_CREATE_NEVER)
			return mrtx__seterr(MRTX_ENOTSTORE, "%s: no such store directory (%s)",
			                    path, lmdb_no_create_why(o));
		if (mkdir(path, 0700) != 0 && errno != EEXIST)
			return mrtx__seterr(MRTX_ESTORE, "cannot create store directory %s: %s", path,
			                    strerror(errno));
		if (stat(path, &sb) != 0)
			return mrtx__seterr(MRTX_ESTORE, "%s: %s", path, strerror(errno));
	}
	if (!S_ISDIR(sb.st_mode))
		return mrtx__seterr(MRTX_ENOTSTORE, "%s is not a directory (an mrtx store is a "
		                    "directory)", path);
	pthread_mutex_lock(&registry_mu);
	for (st = registry; st; st = st->next)
		if (st->dev == sb.st_dev && st->ino == sb.st_ino && st->pid == getpid()) {
			rc = shared_open_check(st, o);
			if (rc == 0) {
				st->refs++;
				*out = st;
			}
			pthread_mutex_unlock(&registry_mu);
			return rc;
		}
	rc = MRTX_ENOMEM;
	if (!(st = mrtx__calloc(1, sizeof(*st))) || !(st->path = mrtx__strdup(path))) {
		mrtx__free(st);
		rc = mrtx__seterr(MRTX_ENOMEM, "out of memory opening %s", path);
		goto done;
	}
	pthread_mutex_init(&st->mu, NULL);
	pthread_mutex_init(&st->ts_mu, NULL);
	pthread_mutex_init(&st->wmu, NULL);
	pthread_mutex_init(&st->remap_mu, NULL);
	pthread_mutex_init(&st->gmu, NULL);
	pthread_mutex_init(&st->vsync_mu, NULL);
	pthread_cond_init(&st->gcv, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&st->dcv, &ca);
		pthread_cond_init(&st->lcv, &ca);
		pthread_condattr_destroy(&ca);
	}
	st->gq_tail = &st->gq_head;
	st->ret_us = 10000; /* (no writer has come back yet) */
	st->head.be = &lmdb_backend;
	st->head.caps = STORE_CAP_VIEWS | STORE_CAP_COND | STORE_CAP_VERSIONS |
	                STORE_CAP_TRIMS_ON_WRITE | STORE_CAP_SCHEMA | STORE_CAP_FILES |
	                STORE_CAP_RESTORE |
	                (o->unbatched ? 0 : STORE_CAP_ATOMIC);
	st->head.read_only = !!o->read_only;
	st->no_create = o->read_only || o->create == MRTX_CREATE_NEVER;
	st->durability = o->durability;
	st->dev = sb.st_dev;
	st->ino = sb.st_ino;
	st->pid = getpid();
	st->refs = 1;
	st->unbatched = o->unbatched;
	st->lock_order = o->lock_order;
	st->uns_val = -1;
	if ((rc = env_open(st, o)) == 0) {
		lmdb_span_add(&st->span, st->env); /* before the first unseal */
		rc = lmdb_meta_init(st);
	}
	if (rc) {
		store_destroy(st);
		goto done;
	}
	/* (timestamps find DIR/ts.shm by it after a chdir; without it, by path) */
	st->ts_dir = realpath(st->path, NULL);
	/* Every write txn records its snapshot timestamp in the page
	 * (lmdb_ts.c), so a writer maps it now.  A reader that cannot (a
	 * read-only file system) reads without snapshot timestamps. */
	if ((rc = lmdb_ts_attach(st))) {
		if (!o->read_only) {
			store_destroy(st);
			goto done;
		}
		rc = 0;
		mrtx__clearerr();
	}
	st->next = registry;
	registry = st;
	*out = st;
done:
	pthread_mutex_unlock(&registry_mu);
	return rc;
}

int lmdb_registry_lock(const char *path)
{
	struct stat sb;

	pthread_mutex_lock(&registry_mu);
	if (stat(path, &sb) != 0)
		return 0; /* (the upgrade says what is missing) */
	for (store *st = registry; st; st = st->next)
		if (st->dev == sb.st_dev && st->ino == sb.st_ino && st->pid == getpid()) {
			pthread_mutex_unlock(&registry_mu);
			return mrtx__seterr(MRTX_ELOCKED, "upgrade %s: this process has the store "
			                    "open; close it first", path);
		}
	return 0;
}

void lmdb_registry_unlock(void)
{
	pthread_mutex_unlock(&registry_mu);
}

void lmdb_store_close(store *st)
{
	store **pp;

	if (!st)
		return;
	pthread_mutex_lock(&registry_mu);
	if (--st->refs > 0) {
		pthread_mutex_unlock(&registry_mu);
		return;
	}
	for (pp = &registry; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	pthread_mutex_unlock(&registry_mu);
	if (st->pid != getpid()) {
		/* A forked child must not close its parent's environment's locks. */
		return;
	}
	store_destroy(st);
}

const char *lmdb_store_path(const store *st)
{
	return st->path;
}


const uint8_t *lmdb_store_id(const store *st)
{
	return st->id;
}

void lmdb_store_counters_get(store *st, store_counters *out)
{
	out->write_calls = atomic_load(&st->write_calls);
	out->write_txns = atomic_load(&st->write_txns);
	out->read_txns = atomic_load(&st->read_txns);
}

/* mdb_reader_list prints a header line, then one line per live reader. */
/* mdb_reader_list lines: "pid thread txnid"; a reset (pooled) read
 * transaction keeps its slot with txnid "-" and pins no snapshot. */
static int count_reader(const char *msg, void *ctx)
{
	char txnid[32];
	int pid;
	size_t tid;

	if (sscanf(msg, "%d %zx %31s", &pid, &tid, txnid) == 3 && strcmp(txnid, "-") != 0)
		++*(unsigned *)ctx;
	return 0;
}

int lmdb_store_get_info(store *st, store_info *out)
{
	MDB_envinfo info;
	MDB_stat ms;
	int rc, dead = 0;

	memset(out, 0, sizeof(*out));
	if ((rc = mdb_reader_check(st->env, &dead)) ||
	    (rc = mdb_env_info(st->env, &info)) || (rc = mdb_env_stat(st->env, &ms)))
		return lmdb_err(st, rc, "stat");
	out->map_size = info.me_mapsize;
	out->page_size = ms.ms_psize;
	out->used_bytes = (info.me_last_pgno + 1) * (size_t)ms.ms_psize;
	out->max_readers = info.me_maxreaders;
	out->num_readers = 0;
	mdb_reader_list(st->env, count_reader, &out->num_readers);
	out->stale_readers_cleared = atomic_fetch_add(&st->stale_cleared, dead) + dead;
	out->lockless = st->lockless;
	return 0;
}


/*
 * The key order: bytewise, a prefix first, exactly LMDB's default (so
 * mdb_dump, mdb_stat and mdb_copy see the same order), computed eight bytes
 * at a time: every key of a table shares its first bytes with its
 * neighbours, and a byte-wise memcmp call per comparison was a tenth of a
 * point read.
 */
static inline uint64_t load_be64(const uint8_t *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
	return __builtin_bswap64(x);
}

int lmdb_key_cmp(const MDB_val *a, const MDB_val *b)
{
	const uint8_t *p = a->mv_data, *q = b->mv_data;
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size, i = 0;

	if (n >= 8) {
		for (; i + 8 <= n; i += 8) {
			uint64_t x = load_be64(p + i), y = load_be64(q + i);

			if (x != y)
				return x < y ? -1 : 1;
		}
		if (i < n) { /* the last 8 bytes, overlapping bytes known equal */
			uint64_t x = load_be64(p + n - 8), y = load_be64(q + n - 8);

			if (x != y)
				return x < y ? -1 : 1;
		}
	} else {
		for (; i < n; i++)
			if (p[i] != q[i])
				return p[i] < q[i] ? -1 : 1;
	}
	return a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
}
