/*
 * heartbeat.c - keep a committing transaction's primary lock unexpired
 * (the state machine is drawn in heartbeat.h).
 */
#include "heartbeat.h"
#include "txn_int.h"
#include "tail.h"
#include "txn_test.h"
#include "sim_sync.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HB_BATCH 64 /* entries refreshed by one store call */

static uint64_t due_ms(const hb_entry *e)
{
	uint64_t due = e->expiry_ms - e->ttl_ms / 2;

	return MRTX_MAX(due, e->retry_ms);
}

/*
 * Refresh n entries (busy, so theirs to read) in one store call, outside
 * the mutex: CAS cur -> cur with a new expiry.  nb[i] receives the new
 * bytes when the write applied, else NULL; unknown[i] is set when it may
 * or may not have applied.
 * Keeps I9 (DESIGN §10).
 */
static void refresh(mrtx_db *db, hb_entry **es, size_t n, uint8_t **nb, uint64_t *exp,
                    int *unknown)
{
	store_op ops[HB_BATCH];
	size_t k = 0, idx[HB_BATCH];
	int rc;

	for (size_t i = 0; i < n; i++) {
		hb_entry *e = es[i];

		unknown[i] = 0;
		exp[i] = mrtx__now_ms() + e->ttl_ms;
		if (!(nb[i] = mrtx__malloc(e->ncur)))
			continue; /* try again next pass */
		memcpy(nb[i], e->cur, e->ncur);
		lock_set_expiry(nb[i], exp[i]);
		memset(&ops[k], 0, sizeof(ops[k]));
		ops[k].table = e->t;
		ops[k].row = e->row;
		ops[k].cond.lock = MRTX_BYTES(e->cur, e->ncur);
		ops[k].new_lock = MRTX_BYTES(nb[i], e->ncur);
		idx[k++] = i;
	}
	if (k == 0)
		return;
	rc = lockio_write_rows(db->st, ops, k);
	for (size_t j = 0; j < k; j++) {
		size_t i = idx[j];
		int r = ops[j].result;

		if (rc == 0 && r == 0)
			continue;
		/* MRTX_CONFLICT: not landed yet, or no longer ours (the commit
		 * point tells).  A store error or MRTX_EUNKNOWN: perhaps applied */
		unknown[i] = r != MRTX_CONFLICT;
		mrtx__free(nb[i]);
		nb[i] = NULL;
	}
}

/* The thread's wait until wall-clock time next_ms (UINT64_MAX: a signal),
 * on the monotonic clock the condition variable runs on. */
static void wait_until(mrtx_db *db, uint64_t next_ms)
{
	uint64_t now = mrtx__now_ms();

	if (next_ms == UINT64_MAX) {
		sync_wait(&db->hb.cv, &db->hb.mu);
		return;
	}
	sync_wait_ms(&db->hb.cv, &db->hb.mu, next_ms > now ? next_ms - now : 0);
}

_Atomic unsigned long mrtx__hb_refreshes, mrtx__hb_refresh_failures;

static void *hb_main(void *arg)
{
	mrtx_db *db = arg;

	pthread_mutex_lock(&db->hb.mu);
	while (!db->hb.quit) {
		uint64_t now = mrtx__now_ms(), next = UINT64_MAX, exp[HB_BATCH];
		hb_entry *pick[HB_BATCH];
		uint8_t *nb[HB_BATCH];
		int unknown[HB_BATCH];
		size_t n = 0;

		for (hb_entry *e = db->hb.head; e; e = e->next) {
			if (e->busy)
				continue;
			if (due_ms(e) <= now && n < HB_BATCH) {
				e->busy = 1;
				pick[n++] = e;
			} else {
				next = MRTX_MIN(next, due_ms(e));
			}
		}
		if (n == 0) {
			db->hb.wake_ms = next;
			wait_until(db, next);
			continue;
		}
		pthread_mutex_unlock(&db->hb.mu);
		refresh(db, pick, n, nb, exp, unknown);
		pthread_mutex_lock(&db->hb.mu);
		for (size_t i = 0; i < n; i++) {
			hb_entry *e = pick[i];

			if (nb[i]) {
				atomic_fetch_add(&mrtx__hb_refreshes, 1);
				mrtx__free(e->cur);
				e->cur = nb[i];
				e->expiry_ms = exp[i];
				e->uncertain = 0;
			} else {
				atomic_fetch_add(&mrtx__hb_refresh_failures, 1);
				/* again a quarter TTL later, not at once */
				e->retry_ms = mrtx__now_ms() + MRTX_MAX(e->ttl_ms / 4, 1u);
				e->uncertain |= unknown[i];
			}
			e->busy = 0;
		}
		sync_broadcast(&db->hb.cv);
	}
	pthread_mutex_unlock(&db->hb.mu);
	return NULL;
}

/* The handle's second thread: commit tails (tail.h).  Its own, so that a
 * slow tail (a store call waiting out an OSD) never holds back a refresh.
 * Asked to quit, it still runs the queued tails to the end; queued trims
 * (tail_trim) are dropped. */
static void *tail_main(void *arg)
{
	mrtx_db *db = arg;

	pthread_mutex_lock(&db->hb.mu);
	while (!db->hb.quit || db->tail.head || db->tail.rel) {
		int tails = db->tail.head || db->tail.rel;
		uint64_t due = tails ? tail_due_ms(db) : 0;

		if (!tails && !db->tail.trims)
			sync_wait(&db->hb.cv, &db->hb.mu);
		else if (tails && due == 0)
			tail_pass(db);
		else if (db->tail.trims && !db->hb.quit)
			tail_trim_pass(db); /* (while a batch fills, too) */
		else
			wait_until(db, due); /* more tails may join the batch */
	}
	tail_trims_drop(db); /* (quitting: best effort, left to collection) */
	sync_broadcast(&db->hb.cv); /* (a flush waiting on them returns) */
	pthread_mutex_unlock(&db->hb.mu);
	return NULL;
}

/*
 * fork(): the heartbeat threads are stopped before and restarted after
 * (in the parent, for handles with commits in flight), so a process that
 * forks between commits forks with no thread of ours running -- as before
 * there was a heartbeat.  The handles with a thread are listed here.
 */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static mrtx_db *all_head;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Start db's thread (db->hb.mu held).  0 or an errno. */
static int thread_start(mrtx_db *db)
{
	int e;

	db->hb.wake_ms = UINT64_MAX;
	db->hb.quit = 0;
	if ((e = sync_spawn(&db->hb.thread, hb_main, db)) != 0)
		return e;
	db->hb.running = 1;
	/* without it, commits run their own tails (tail_submit) */
	db->tail.running = sync_spawn(&db->tail.thread, tail_main, db) == 0;
	db->hb.pid = getpid();
	return 0;
}

_Atomic unsigned long mrtx__hb_quits;

/* Stop and join db's thread (db->hb.mu not held). */
static void thread_stop(mrtx_db *db)
{
	pthread_mutex_lock(&db->hb.mu);
	db->hb.quit = 1;
	sync_broadcast(&db->hb.cv);
	pthread_mutex_unlock(&db->hb.mu);
	atomic_fetch_add(&mrtx__hb_quits, 1);
	sync_join(db->hb.thread);
	if (db->tail.running)
		sync_join(db->tail.thread); /* after the queued tails */
	pthread_mutex_lock(&db->hb.mu);
	db->hb.running = 0;
	db->tail.running = 0;
	sync_broadcast(&db->hb.cv); /* (waiters on a worker that is gone) */
	pthread_mutex_unlock(&db->hb.mu);
}

static void before_fork(void)
{
	pthread_mutex_lock(&all_mu);
	for (mrtx_db *db = all_head; db; db = db->hb.next_db)
		if (db->hb.running)
			thread_stop(db);
}

static void after_fork_parent(void)
{
	for (mrtx_db *db = all_head; db; db = db->hb.next_db) {
		pthread_mutex_lock(&db->hb.mu);
		if (db->hb.head && !db->hb.running)
			(void)thread_start(db); /* on failure: the next hb_start tries again */
		pthread_mutex_unlock(&db->hb.mu);
	}
	pthread_mutex_unlock(&all_mu);
}

static void after_fork_child(void)
{
	/* The child must open stores anew; should it use an inherited handle
	 * all the same, that handle starts with no thread and no entries (the
	 * entries live on the parent's threads' stacks). */
	for (mrtx_db *db = all_head; db; db = db->hb.next_db)
		hb_init(db);
	pthread_mutex_unlock(&all_mu);
}

static void register_atfork(void)
{
	(void)pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

void hb_init(mrtx_db *db)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&db->hb.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&db->hb.cv, &ca);
	pthread_condattr_destroy(&ca);
	db->hb.running = 0;
	db->tail.running = 0;
	db->hb.quit = 0;
	db->hb.head = NULL;
	db->hb.wake_ms = UINT64_MAX;
	tail_init(db);
}

/* Start the threads unless running (db->hb.mu held on entry and return):
 * the first commit, or the first after a fork, takes the slow path, in
 * the lock order all_mu, hb_mu.  On failure the caller goes without. */
static void threads_locked(mrtx_db *db)
{
	if (db->hb.running || db->no_threads)
		return;
	pthread_mutex_unlock(&db->hb.mu);
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&all_mu);
	if (!db->hb.listed) {
		db->hb.next_db = all_head;
		all_head = db;
		db->hb.listed = 1;
	}
	pthread_mutex_lock(&db->hb.mu);
	if (!db->hb.running)
		(void)thread_start(db);
	pthread_mutex_unlock(&all_mu);
}

int hb_threads(mrtx_db *db)
{
	int running;

	pthread_mutex_lock(&db->hb.mu);
	threads_locked(db);
	running = db->tail.running && !db->hb.quit;
	pthread_mutex_unlock(&db->hb.mu);
	return running;
}

int hb_start(mrtx_db *db, hb_entry *e, const store_table *t, mrtx_bytes row, mrtx_bytes bytes,
             uint64_t expiry_ms, uint32_t ttl_ms)
{
	memset(e, 0, sizeof(*e));
	e->t = t;
	e->row = row;
	e->ttl_ms = ttl_ms;
	e->expiry_ms = expiry_ms;
	if (bytes.size < lock_expiry_end() || !(e->cur = mrtx__malloc(bytes.size)))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory starting the lock heartbeat");
	memcpy(e->cur, bytes.data, bytes.size);
	e->ncur = bytes.size;
	pthread_mutex_lock(&db->hb.mu);
	threads_locked(db);
	if (db->hb.running) {
		e->registered = 1;
		e->next = db->hb.head;
		db->hb.head = e;
		if (due_ms(e) < db->hb.wake_ms)
			sync_broadcast(&db->hb.cv);
	}
	pthread_mutex_unlock(&db->hb.mu);
	return MRTX_OK;
}

int hb_stop(mrtx_db *db, hb_entry *e, mrtx_arena *a, mrtx_bytes *cur)
{
	uint8_t *copy;

	if (e->registered) {
		pthread_mutex_lock(&db->hb.mu);
		while (e->busy)
			sync_wait(&db->hb.cv, &db->hb.mu);
		for (hb_entry **p = &db->hb.head; *p; p = &(*p)->next)
			if (*p == e) {
				*p = e->next;
				break;
			}
		pthread_mutex_unlock(&db->hb.mu);
	}
	*cur = MRTX_BYTES(NULL, 0);
	if (e->uncertain) {
		/* a refresh may have landed unreported: what does the row hold? */
		store_rowref ref = { e->t, e->row };
		store_row now;

		if (store_read_locks(db->st, &ref, 1, a, &now) == 0 && now.has_lock &&
		    lock_same_but_expiry(now.lock, MRTX_BYTES(e->cur, e->ncur))) {
			*cur = now.lock;
			mrtx__free(e->cur);
			e->cur = NULL;
			return MRTX_OK;
		}
		/* else: ours as last known, or not ours (the commit point tells) */
	}
	copy = arena_alloc(a, e->ncur);
	if (copy) {
		memcpy(copy, e->cur, e->ncur);
		*cur = MRTX_BYTES(copy, e->ncur);
	}
	mrtx__free(e->cur);
	e->cur = NULL;
	return copy ? MRTX_OK : mrtx__seterr(MRTX_ENOMEM, "out of memory ending the lock heartbeat");
}

void hb_shutdown(mrtx_db *db)
{
	/* A forked child closing its parent's handle: the thread stayed in the
	 * parent; there is nothing to stop (after_fork_child). */
	if (db->hb.running && db->hb.pid != getpid())
		return;
	pthread_mutex_lock(&all_mu);
	if (db->hb.listed)
		for (mrtx_db **p = &all_head; *p; p = &(*p)->hb.next_db)
			if (*p == db) {
				*p = db->hb.next_db;
				break;
			}
	db->hb.listed = 0;
	if (db->hb.running && MRTX_UNLIKELY(mrtx__sim_on())) {
		/* a simulated join yields to other clients, which may take
		 * all_mu in hb_start: not held across it (no fork there) */
		pthread_mutex_unlock(&all_mu);
		thread_stop(db);
		tail_fini(db);
		return;
	}
	if (db->hb.running)
		thread_stop(db); /* runs the queued commit tails first */
	pthread_mutex_unlock(&all_mu);
	tail_fini(db);
}
