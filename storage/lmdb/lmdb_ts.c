/*
 * lmdb_ts.c - the timestamp source of an LMDB store (store_ts_next;
 * DESIGN §9): one host, any number of processes.
 *
 * Timestamps are microseconds of the wall clock where the clock allows,
 * and strictly increasing whatever it does: every call returns more than
 * any call, in any process, that returned before it began.  Two things
 * carry that:
 *
 *   handed   the last timestamp handed out, in a page of DIR/ts.shm that
 *            every process of the host maps shared; a call takes
 *            max(handed + 1, now, floor) with a compare-and-swap, about
 *            the cost of a clock read.
 *   ceiling  a bound kept in the store (0x00 "tsceil" -> u64 LE) and
 *            mirrored in the page: handed never reaches it.  A call that
 *            would reach it first raises it in an LMDB write transaction,
 *            made durable (per the store's durability) before the page
 *            mirrors it, to TS_AHEAD past its timestamp -- and past it by
 *            as much again as the counter runs ahead of the clock (up to
 *            a minute), so that a counter outrunning the clock (over a
 *            million calls a second) still raises rarely.  One write a
 *            second or less while the clock leads; none per call.  A
 *            caller that finds it already raised by another writes
 *            nothing.  A raise to TS_LIMIT or past it is refused
 *            (MRTX_ECORRUPT): the store would open nowhere.  A page of
 *            this boot whose counter or ceiling is there is refused too.
 *
 * The page is lost with the host (an OS crash or a reboot: its boot id is
 * kept in it and compared) or its file: then handed restarts from the
 * stored ceiling, or stays where it is if that is more (page_init).  The
 * stored ceiling is above every timestamp handed out before, since each
 * was handed only after the raise that allows it was durable -- except
 * for a store opened MRTX_NOSYNC, where after an OS crash only what
 * reached the disk holds, for timestamps as for data.  Like lock.mdb, the
 * file must not be removed while the store is open: processes mapping the
 * old one and the new one would count apart.  A page of another store
 * (its id differs) is refused, never reset: processes may be using it.
 *
 *      open ──► (page valid: magic, this boot, this store?) ── yes ──► use
 *                   │ no: under a file lock                              ▲
 *                   ├─ new or garbage:  handed = ceiling = stored ───────┤
 *                   ├─ ours, other boot: handed = max(handed, stored) ───┘
 *                   └─ another store's: MRTX_ECORRUPT
 *
 * A read-only handle hands timestamps below the ceiling but cannot raise
 * it (MRTX_EREADONLY).  A store whose directory cannot hold the file (a
 * read-only file system) has no timestamps (MRTX_ESTORE).  The file is
 * named by the store directory's absolute path, resolved at open
 * (st->ts_dir), so a process that changes directory finds the same one.
 *
 * store_ts_next is not callable inside a write transaction of the store (a
 * raise takes the writer lock).  Commits are stamped inside theirs
 * (lmdb_ts_stamp), where a raise is one more put in that transaction.
 *
 * Snapshot timestamps.  A commit's stamp is taken under LMDB's writer
 * lock, inside its write transaction, so stamps increase with LMDB's
 * transaction ids.  Every write transaction of the store, just before it
 * commits (still under the writer lock), records in a ring of the page
 *
 *      ring[id % TS_RING] = { id, handed | TS_UNSETTLED if unsettled }
 *
 * handed being at least every stamp of this and earlier transactions, and
 * below every stamp a later one takes; TS_UNSETTLED when the store holds
 * an unsettled lock record after it (lmdb_unsettled.c), or may.  A view (an LMDB read transaction
 * with id V) is then exactly the commits stamped at or below ring[V].ts:
 * its snapshot timestamp (lmdb_ts_of_view).  A ring slot is written
 * txnid = 0, ts, txnid = tag(V, ts), and read txnid, ts, txnid again (a
 * torn read is retried).  The tag is V mixed with a hash of the ts word,
 * so a slot whose either word was damaged (a bit of the file flipped: the
 * TS_UNSETTLED bit cleared would let reads skip lock records they must
 * read) matches no transaction, and its view is taken as one whose entry
 * is gone.  A reader that finds its V overwritten (it lagged TS_RING
 * commits behind), or damaged, takes a newer view.  When the page is made or reset
 * (page_init) the ring is cleared and the id of the snapshot the ceiling
 * was read in is recorded as the base, with handed as its timestamp; an
 * entry of a transaction that then failed to commit is overwritten by
 * the next writer, which gets the same id.  Only stamps taken under the
 * writer lock may become commits: store_ts_next callers get timestamps
 * that name no commit, which only makes a snapshot's number larger.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/lmdb/lmdb_int.h"

#define TS_FILE "ts.shm"
#define TS_MAGIC "mrtxts02" /* 02: a ring entry says whether unsettled locks remain */
#define TS_PAGE 4096u
#define TS_RING 4096u /* snapshot timestamps of the last write txns */
#define TS_AHEAD 1000000u /* µs a raise puts the ceiling above what it needs */
/* ... plus the counter's lead over the clock, up to this (µs): past it a
 * raise is needed every minute of counted timestamps, still rare, and a
 * counter made to leap ahead (a damaged page) raises the ceiling by a
 * minute at a time instead of doubling it towards TS_LIMIT. */
#define TS_LEAD_MAX 60000000u
/* Timestamps (microseconds) stay below this; a ceiling at or above it is
 * damage. */
#define TS_LIMIT ((uint64_t)1 << 62)
#define TSCEIL_KEY "\0tsceil"
#define TSCEIL_KEY_LEN 7u

struct lmdb_ts_page {
	char magic[8];          /* written last by the initializer */
	uint8_t boot[16];
	uint8_t store_id[16];
	_Atomic uint64_t handed;
	_Atomic uint64_t ceiling;
	_Atomic uint64_t base_txnid, base_ts; /* a snapshot before any ring entry */
	/* The process that last recorded a ring entry, under the writer lock
	 * just before its commit (lmdb_ts_record): w_txnid 0 while the two
	 * others change.  A writer older than these fields leaves them 0. */
	_Atomic uint64_t w_txnid, w_pid, w_start;
};
struct lmdb_ts_slot {
	_Atomic uint64_t txnid, ts; /* ts's top bit: TS_UNSETTLED */
};
/* In a ring entry's ts: the store held an unsettled lock record after the
 * transaction, or the count was not known (lmdb_unsettled.c).  Stamps are
 * microseconds, far below this bit. */
#define TS_UNSETTLED ((uint64_t)1 << 63)
#define TS_FILE_SIZE (TS_PAGE + TS_RING * sizeof(struct lmdb_ts_slot))
_Static_assert(sizeof(struct lmdb_ts_page) <= TS_PAGE, "the page holds the header");
/* processes share the page: its atomics must not be locks of one process */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

/* What a ring slot's txnid word holds for transaction id with ts word ts
 * (never 0, the mark of a slot being written): a damaged word of either
 * makes the slot match no transaction. */
static uint64_t slot_tag(uint64_t id, uint64_t ts)
{
	uint64_t h = ts + 0x9e3779b97f4a7c15u;

	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9u;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
	h ^= h >> 31;
	return (id ^ h) ? id ^ h : 1;
}

/* The stored ceiling, with cursor cur; errors as MRTX codes. */
static int ceiling_get(store *st, MDB_cursor *cur, uint64_t *out)
{
	int rc = lmdb_u64_read(cur, TSCEIL_KEY, TSCEIL_KEY_LEN, out);

	if (rc == MRTX_ECORRUPT)
		return mrtx__seterr(rc, "%s: the timestamp ceiling record is malformed", st->path);
	if (rc == 0 && *out >= TS_LIMIT)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: the timestamp ceiling record holds %llu, "
		                    "past any timestamp (a damaged store: `mrtx check --deep`)",
		                    st->path, (unsigned long long)*out);
	return rc ? lmdb_err(st, rc, "read the timestamp ceiling") : 0;
}

/* The stored ceiling, in a read transaction (its id in *txnid). */
static int ceiling_read(store *st, uint64_t *out, uint64_t *txnid)
{
	lmdb_rtxn rt;
	int rc;

	if ((rc = lmdb_rtxn_begin(st, &rt)))
		return rc;
	*txnid = mdb_txn_id(rt.txn);
	rc = ceiling_get(st, rt.cur, out);
	lmdb_rtxn_end(st, &rt);
	return rc;
}

/* The mode of the store's data file, for the page's file. */
static mode_t data_mode(store *st)
{
	char file[4096];
	struct stat sb;

	if (mrtx__path_join(file, sizeof(file), st->ts_dir ? st->ts_dir : st->path, "data.mdb",
	                    "timestamps") == 0 &&
	    stat(file, &sb) == 0)
		return sb.st_mode & 0666;
	return 0600;
}

/* A page of this boot whose counter or ceiling is past any timestamp, or
 * whose base is past its counter. */
static int page_damaged(store *st, struct lmdb_ts_page *p)
{
	return mrtx__seterr(MRTX_ECORRUPT, "%s: %s is damaged: its counter (%llu) or ceiling "
	                    "(%llu) is past any timestamp, or its base (%llu) past its counter; "
	                    "stop every process using the store and remove it (the next open "
	                    "makes it anew)", st->path, TS_FILE,
	                    (unsigned long long)atomic_load(&p->handed),
	                    (unsigned long long)atomic_load(&p->ceiling),
	                    (unsigned long long)atomic_load(&p->base_ts));
}

/* The ceiling a raise for timestamp t stores: TS_AHEAD past t, and past
 * it by the counter's lead over the clock, up to TS_LEAD_MAX. */
static uint64_t ceiling_for(uint64_t t)
{
	uint64_t now = mrtx__now_us();

	return t + TS_AHEAD + (t > now ? MRTX_MIN(t - now, TS_LEAD_MAX) : 0);
}

/* A raise that would store a ceiling of c or more: refused, since the
 * store would then open nowhere (ceiling_get).  Only a damaged counter in
 * the page, or a floor from a damaged row, runs timestamps that far. */
static int ceiling_too_far(store *st, uint64_t t)
{
	return mrtx__seterr(MRTX_ECORRUPT, "%s: a timestamp of %llu would put the ceiling past "
	                    "any timestamp: %s's counter is damaged, or a row's timestamp is "
	                    "(`mrtx check --deep`); stop every process using the store and remove "
	                    "%s", st->path, (unsigned long long)t, TS_FILE, TS_FILE);
}

/*
 * Make the page valid (its file locked).  A page of this store and boot is
 * used as it is.  One of this store from another boot (or with no boot id
 * to compare) keeps what it has if that is more than the stored ceiling:
 * either is above everything handed out since the page was made, and
 * processes may be using it right now.  A new or garbage one starts at the
 * stored ceiling; another store's is refused.  The page's ceiling is set to
 * the stored one: lower is always safe, since a raise stores before it
 * mirrors.
 */
static int page_init(store *st, struct lmdb_ts_page *p, const uint8_t boot[16], int known)
{
	const uint8_t *id = lmdb_store_id(st);
	int valid = memcmp(p->magic, TS_MAGIC, 8) == 0;
	int ours = valid && memcmp(p->store_id, id, 16) == 0;
	int thisboot = known && memcmp(p->boot, boot, 16) == 0;
	/* (the base is a count handed once, so never above handed) */
	int past = atomic_load(&p->handed) >= TS_LIMIT || atomic_load(&p->ceiling) >= TS_LIMIT ||
	           atomic_load(&p->base_ts) > atomic_load(&p->handed);
	struct lmdb_ts_slot *ring = (void *)((char *)p + TS_PAGE);
	uint64_t c, h, at;
	int rc;

	/* (one this boot's processes may be using is never reset, only
	 * refused when damaged; so is one whose boot cannot be told) */
	if (ours && past && (thisboot || !known))
		return page_damaged(st, p);
	if (ours && thisboot)
		return 0;
	if (valid && !ours)
		return mrtx__seterr(MRTX_ECORRUPT, "%s: %s belongs to another store (copied "
		                    "in?); remove it while no process has this store open",
		                    st->path, TS_FILE);
	if ((rc = ceiling_read(st, &c, &at)))
		return rc;
	if (!ours || past) { /* (past: another boot's, which nobody uses now) */
		memset(p->magic, 0, sizeof(p->magic));
		atomic_store(&p->handed, c);
		memcpy(p->store_id, id, 16);
	}
	h = atomic_load(&p->handed);
	while (h < c && !atomic_compare_exchange_weak(&p->handed, &h, c))
		;
	atomic_store(&p->ceiling, c);
	/* The ring may hold transactions a crash lost (and whose ids the
	 * store then gave to others): forget it.  The snapshot just read is
	 * exactly the commits at or below handed, which is above them all. */
	for (size_t i = 0; i < TS_RING; i++)
		atomic_store(&ring[i].txnid, 0);
	atomic_store(&p->base_ts, atomic_load(&p->handed));
	atomic_store(&p->base_txnid, at);
	memcpy(p->boot, boot, 16);
	atomic_thread_fence(memory_order_release);
	memcpy(p->magic, TS_MAGIC, 8);
	return 0;
}

/* Map DIR/ts.shm and make it valid (st->ts_mu held). */
static int attach(store *st)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct lmdb_ts_page *p;
	uint8_t boot[16];
	int known;
	char file[4096];
	struct stat sb;
	int fd, rc, err;

	mrtx__boot_id(boot);
	known = memcmp(boot, (uint8_t[16]){ 0 }, 16) != 0;
	if ((rc = mrtx__path_join(file, sizeof(file), st->ts_dir ? st->ts_dir : st->path, TS_FILE,
	                          "timestamps")))
		return rc;
	/* (a read-only handle creates nothing: without the file, no timestamps) */
	fd = open(file, O_RDWR | O_CLOEXEC | (store_read_only(st) ? 0 : O_CREAT), data_mode(st));
	if (fd < 0)
		return mrtx__sys_err("timestamps", "open", file, errno);
	while (fcntl(fd, F_SETLKW, &lk) != 0) {
		if (errno != EINTR) {
			err = errno;
			close(fd);
			return mrtx__sys_err("timestamps", "lock", file, err);
		}
	}
	if (fstat(fd, &sb) != 0 ||
	    (sb.st_size < (off_t)TS_FILE_SIZE && ftruncate(fd, TS_FILE_SIZE) != 0)) {
		err = errno;
		close(fd); /* (closing drops the lock) */
		return mrtx__sys_err("timestamps", "size", file, err);
	}
	p = mmap(NULL, TS_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		close(fd);
		return mrtx__sys_err("timestamps", "map", file, err);
	}
	rc = page_init(st, p, boot, known);
	lk.l_type = F_UNLCK;
	(void)fcntl(fd, F_SETLK, &lk);
	close(fd); /* the mapping stays */
	if (rc) {
		munmap(p, TS_FILE_SIZE);
		return rc;
	}
	atomic_store_explicit(&st->ts_page, p, memory_order_release);
	return 0;
}

/* Make the stored ceiling just read or written durable before the page
 * mirrors it: MRTX_SYNC waits for (or makes) the flush of what is visible;
 * MRTX_NOMETASYNC leaves a commit's meta page unsynced, so force one;
 * MRTX_NOSYNC promises nothing after an OS crash (store.h). */
static int ceiling_durable(store *st)
{
	if (st->durability == MRTX_SYNC)
		return lmdb_store_sync_visible(st, 0);
	if (st->durability == MRTX_NOMETASYNC)
		return lmdb_store_sync(st);
	return 0;
}

static void mirror(struct lmdb_ts_page *p, uint64_t c)
{
	uint64_t cur = atomic_load(&p->ceiling);

	while (cur < c && !atomic_compare_exchange_weak(&p->ceiling, &cur, c))
		;
}

/* Raise the stored ceiling above t (durably), then the page's. */
static int raise_ceiling(store *st, struct lmdb_ts_page *p, uint64_t t)
{
	uint64_t c;
	MDB_val k = { TSCEIL_KEY_LEN, TSCEIL_KEY }, v = { sizeof(c), &c };
	MDB_cursor *cur;
	MDB_txn *txn;
	int rc;

	if (store_read_only(st))
		return mrtx__seterr(MRTX_EREADONLY, "%s: timestamps reached the ceiling a writer "
		                    "raises; a read-only handle cannot", st->path);
	if ((rc = lmdb_txn_begin(st, 0, &txn)))
		return rc;
	if ((rc = mdb_cursor_open(txn, st->dbi, &cur))) {
		lmdb_wabort(st, txn);
		return lmdb_err(st, rc, "raise the timestamp ceiling");
	}
	rc = ceiling_get(st, cur, &c);
	mdb_cursor_close(cur);
	if (rc || c > t) {
		/* (c > t: raised by another since we looked; nothing to write) */
		lmdb_wabort(st, txn);
		if (rc)
			return rc;
	} else {
		c = ceiling_for(t);
		if (t >= TS_LIMIT || c >= TS_LIMIT) {
			lmdb_wabort(st, txn);
			return ceiling_too_far(st, t);
		}
		if ((rc = lmdb_put(txn, st->dbi, &k, &v, 0))) {
			lmdb_wabort(st, txn);
			return lmdb_err(st, rc, "raise the timestamp ceiling");
		}
		if ((rc = lmdb_commit(st, txn, 0)))
			return lmdb_err(st, rc, "raise the timestamp ceiling");
	}
	/* durable -- ours, or another raiser's that may still be syncing --
	 * before anything below it is handed out */
	if ((rc = ceiling_durable(st)))
		return rc;
	mirror(p, c);
	return 0;
}

int lmdb_ts_attach(store *st)
{
	int rc;

	if (atomic_load_explicit(&st->ts_page, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&st->ts_mu);
	rc = atomic_load(&st->ts_page) ? 0 : attach(st);
	pthread_mutex_unlock(&st->ts_mu);
	return rc;
}

int lmdb_store_ts_next(store *st, uint64_t floor, uint64_t *out)
{
	struct lmdb_ts_page *p;
	int rc;

	*out = 0;
	if (floor >= (uint64_t)1 << 63)
		return mrtx__seterr(MRTX_EINVAL, "timestamp floor %llu is out of range",
		                    (unsigned long long)floor);
	if ((rc = lmdb_ts_attach(st)))
		return rc;
	p = atomic_load(&st->ts_page);
	for (;;) {
		uint64_t h = atomic_load(&p->handed), t = mrtx__now_us();

		t = MRTX_MAX(MRTX_MAX(t, h + 1), floor);
		if (t >= atomic_load(&p->ceiling)) {
			if ((rc = raise_ceiling(st, p, t)))
				return rc;
			continue;
		}
		if (atomic_compare_exchange_weak(&p->handed, &h, t)) {
			*out = t;
			return 0;
		}
	}
}

/* The last timestamp handed out (store_ts_known): every stamp taken before
 * is at or below it, every one taken after is above it. */
int lmdb_store_ts_known(store *st, uint64_t *out)
{
	int rc;

	*out = 0;
	if ((rc = lmdb_ts_attach(st)))
		return rc;
	*out = atomic_load(&atomic_load(&st->ts_page)->handed);
	return 0;
}

void lmdb_store_ts_learn(store *st, uint64_t ts)
{
	struct lmdb_ts_page *p = atomic_load(&st->ts_page);
	uint64_t got;

	if (p && atomic_load(&p->handed) < ts && !st->head.read_only &&
	    lmdb_store_ts_next(st, ts, &got))
		mrtx__clearerr();
}

void lmdb_ts_detach(store *st)
{
	struct lmdb_ts_page *p = atomic_exchange(&st->ts_page, NULL);

	if (p)
		munmap(p, TS_FILE_SIZE);
}

/*
 * A commit's stamp, inside write transaction txn (cursor cur on it): as
 * store_ts_next, but a raise of the ceiling is a put in txn itself.  The
 * ceiling that bounds it is the highest of the page's, the one this
 * process last saw stored (st->w_ceil: committed, maybe not yet durable --
 * a commit stamped under it is later, so durable only after it) and the
 * one txn raised (st->w_ceil_new, kept by lmdb_commit_nowait, dropped by
 * lmdb_wabort).  The page's is not raised: store_ts_next callers raise and
 * mirror it durably as before.  No cursor of the caller's is moved: the
 * ceiling is read and written through txn.
 * Keeps I13, I17 (DESIGN §10).
 */
int lmdb_ts_stamp(store *st, MDB_txn *txn, uint64_t floor, uint64_t *out)
{
	struct lmdb_ts_page *p = atomic_load_explicit(&st->ts_page, memory_order_acquire);
	MDB_val k = { TSCEIL_KEY_LEN, TSCEIL_KEY }, v;

	*out = 0;
	if (!p)
		return mrtx__seterr(MRTX_ESTORE, "%s: no timestamp page (%s) to stamp a commit "
		                    "with", st->path, TS_FILE);
	if (floor >= TS_LIMIT)
		return mrtx__seterr(MRTX_EINVAL, "commit timestamp floor %llu is out of range",
		                    (unsigned long long)floor);
	for (;;) {
		uint64_t h = atomic_load(&p->handed), t = mrtx__now_us(), lim, c;
		int rc;

		t = MRTX_MAX(MRTX_MAX(t, h + 1), floor);
		lim = MRTX_MAX(atomic_load(&p->ceiling), MRTX_MAX(st->w_ceil, st->w_ceil_new));
		if (t >= lim) {
			MDB_val cv;

			rc = lmdb_get(txn, st->dbi, &k, &cv);
			if (rc == MDB_NOTFOUND) {
				c = 0;
			} else if (rc) {
				return lmdb_err(st, rc, "read the timestamp ceiling");
			} else if (cv.mv_size != sizeof(c)) {
				return mrtx__seterr(MRTX_ECORRUPT, "%s: the timestamp ceiling record is "
				                    "malformed", st->path);
			} else {
				memcpy(&c, cv.mv_data, sizeof(c));
			}
			if (c <= t) {
				c = ceiling_for(t);
				if (t >= TS_LIMIT || c >= TS_LIMIT)
					return ceiling_too_far(st, t);
				v = (MDB_val){ sizeof(c), &c };
				if ((rc = lmdb_put(txn, st->dbi, &k, &v, 0)))
					return lmdb_err(st, rc, "raise the timestamp ceiling");
				st->w_dirty = 1;
			}
			st->w_ceil_new = MRTX_MAX(st->w_ceil_new, c);
			continue;
		}
		if (atomic_compare_exchange_weak(&p->handed, &h, t)) {
			*out = t;
			return 0;
		}
	}
}

/* This process's pid and start time (mrtx__proc_stat; 0 when unknown),
 * read once per process: the cache is keyed by lmdb_forks, so a forked
 * child reads its own.  (lmdb_ts_record runs at every commit.) */
static void self_id(uint64_t *pid, uint64_t *start)
{
	static _Atomic uint64_t c_pid, c_start;
	static _Atomic unsigned c_gen;
	static _Atomic int c_ok;
	unsigned gen = lmdb_forks();
	char state;

	if (atomic_load(&c_ok) && atomic_load(&c_gen) == gen) {
		*pid = atomic_load(&c_pid);
		*start = atomic_load(&c_start);
		return;
	}
	*pid = (uint64_t)getpid();
	if (mrtx__proc_stat((long)*pid, &state, start))
		*start = 0;
	atomic_store(&c_pid, *pid);
	atomic_store(&c_start, *start);
	atomic_store(&c_gen, gen);
	atomic_store(&c_ok, 1);
}

/* Keeps I16, I22 (DESIGN §10). */
void lmdb_ts_record(store *st, MDB_txn *txn, int unsettled)
{
	struct lmdb_ts_page *p = atomic_load_explicit(&st->ts_page, memory_order_acquire);
	struct lmdb_ts_slot *s;
	uint64_t id = mdb_txn_id(txn), pid, start, ts;

	if (!p)
		return;
	ts = (atomic_load(&p->handed) & ~TS_UNSETTLED) | (unsettled ? TS_UNSETTLED : 0);
	s = (struct lmdb_ts_slot *)(void *)((char *)p + TS_PAGE) + id % TS_RING;
	atomic_store(&s->txnid, 0);
	atomic_store(&s->ts, ts);
	atomic_store(&s->txnid, slot_tag(id, ts));
	self_id(&pid, &start);
	atomic_store(&p->w_txnid, 0);
	atomic_store(&p->w_pid, pid);
	atomic_store(&p->w_start, start);
	atomic_store(&p->w_txnid, id);
}

/* Keeps I16 (DESIGN §10). */
int lmdb_ts_writer_dead(store *st, uint64_t txnid)
{
	struct lmdb_ts_page *p = atomic_load_explicit(&st->ts_page, memory_order_acquire);
	uint64_t pid, start, now = 0;
	char state;

	if (!p || txnid == 0 || atomic_load(&p->w_txnid) != txnid)
		return 0;
	pid = atomic_load(&p->w_pid);
	start = atomic_load(&p->w_start);
	if (atomic_load(&p->w_txnid) != txnid || pid == 0 || pid > INT_MAX ||
	    pid == (uint64_t)getpid())
		return 0; /* (changed meanwhile; or our own thread, alive) */
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return 1;
	/* a process of that pid: the writer only if it started then */
	if (mrtx__proc_stat((long)pid, &state, &now))
		return 0;
	return start != 0 && now != start;
}

/* Keeps I16 (DESIGN §10). */
int lmdb_ts_of_view(store *st, MDB_txn *rtxn, uint64_t *out, int *settled)
{
	struct lmdb_ts_page *p = atomic_load_explicit(&st->ts_page, memory_order_acquire);
	struct lmdb_ts_slot *s;
	uint64_t id = mdb_txn_id(rtxn), a, b, ts;

	*out = 0;
	*settled = 0;
	if (!p)
		return 0;
	s = (struct lmdb_ts_slot *)(void *)((char *)p + TS_PAGE) + id % TS_RING;
	for (int i = 0; i < 16; i++) {
		a = atomic_load(&s->txnid);
		ts = atomic_load(&s->ts);
		b = atomic_load(&s->txnid);
		if (a == b && a == slot_tag(id, ts)) {
			*settled = !(ts & TS_UNSETTLED);
			ts &= ~TS_UNSETTLED;
			*out = MRTX_MAX(ts, 1); /* (0 says "unknown"; stamps are far above 1) */
			return 0;
		}
		if (a == b && a != 0)
			break; /* another transaction's (ours was overwritten or never
			        * written), or a damaged one */
	}
	if (atomic_load(&p->base_txnid) == id) {
		/* (the base's count is not known; a base past the counter is
		 * damage, a timestamp not known then) */
		ts = atomic_load(&p->base_ts);
		if (ts > atomic_load(&p->handed))
			return 1;
		*out = MRTX_MAX(ts, 1);
		return 0;
	}
	return 1;
}
