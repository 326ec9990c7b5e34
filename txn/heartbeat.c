/*
 * heartbeat.c - keep a committing transaction's primary lock unexpired
 * (the state machine is drawn in heartbeat.h).
 */
#include "heartbeat.h"
#include "txn_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t due_ms(const hb_entry *e)
{
	return e->expiry_ms - e->ttl_ms / 2;
}

/* One refresh of e, outside the mutex: CAS cur -> cur with a new expiry. */
static void refresh(mrtx_db *db, hb_entry *e, uint8_t **out, size_t *nout, uint64_t *expiry)
{
	uint64_t exp = mrtx__now_ms() + e->ttl_ms;
	uint8_t *nb = mrtx__malloc(e->ncur);
	store_op op;

	*out = NULL;
	if (!nb)
		return; /* try again next pass */
	memcpy(nb, e->cur, e->ncur);
	lock_set_expiry(nb, exp);
	memset(&op, 0, sizeof(op));
	op.table = e->t;
	op.row = e->row;
	op.expect_lock = MRTX_BYTES(e->cur, e->ncur);
	op.new_lock = MRTX_BYTES(nb, e->ncur);
	if (lockio_write_rows(db->st, &op, 1) != 0 || op.result != 0) {
		/* not landed yet, or no longer ours: the commit point tells */
		mrtx__free(nb);
		return;
	}
	*out = nb;
	*nout = e->ncur;
	*expiry = exp;
}

static void *hb_main(void *arg)
{
	mrtx_db *db = arg;

	pthread_mutex_lock(&db->hb_mu);
	while (!db->hb_quit) {
		uint64_t now = mrtx__now_ms(), next = UINT64_MAX;
		hb_entry *pick = NULL;

		for (hb_entry *e = db->hb_head; e; e = e->next) {
			if (e->busy)
				continue;
			if (due_ms(e) <= now) {
				pick = e;
				break;
			}
			next = MRTX_MIN(next, due_ms(e));
		}
		if (pick) {
			uint8_t *nb;
			size_t n = 0;
			uint64_t exp = 0;

			pick->busy = 1;
			/* pushed back until the refresh says otherwise, so a failing
			 * CAS is retried a quarter TTL later, not at once */
			pick->expiry_ms = now + pick->ttl_ms / 2 + MRTX_MAX(pick->ttl_ms / 4, 1u);
			pthread_mutex_unlock(&db->hb_mu);
			refresh(db, pick, &nb, &n, &exp);
			pthread_mutex_lock(&db->hb_mu);
			if (nb) {
				mrtx__free(pick->cur);
				pick->cur = nb;
				pick->ncur = n;
				pick->expiry_ms = exp;
				pick->refreshes++;
			}
			pick->busy = 0;
			pthread_cond_broadcast(&db->hb_cv);
			continue;
		}
		db->hb_wake_ms = next;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&db->hb_cv, &db->hb_mu);
		} else {
			struct timespec ts = { (time_t)(next / 1000), (long)(next % 1000) * 1000000L };

			pthread_cond_timedwait(&db->hb_cv, &db->hb_mu, &ts);
		}
	}
	pthread_mutex_unlock(&db->hb_mu);
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

/* Start db's thread (db->hb_mu held).  0 or an errno. */
static int thread_start(mrtx_db *db)
{
	int e;

	db->hb_wake_ms = UINT64_MAX;
	db->hb_quit = 0;
	if ((e = pthread_create(&db->hb_thread, NULL, hb_main, db)) != 0)
		return e;
	db->hb_running = 1;
	db->hb_pid = getpid();
	return 0;
}

/* Stop and join db's thread (db->hb_mu not held). */
static void thread_stop(mrtx_db *db)
{
	pthread_mutex_lock(&db->hb_mu);
	db->hb_quit = 1;
	pthread_cond_broadcast(&db->hb_cv);
	pthread_mutex_unlock(&db->hb_mu);
	pthread_join(db->hb_thread, NULL);
	pthread_mutex_lock(&db->hb_mu);
	db->hb_running = 0;
	pthread_mutex_unlock(&db->hb_mu);
}

static void before_fork(void)
{
	pthread_mutex_lock(&all_mu);
	for (mrtx_db *db = all_head; db; db = db->hb_next_db)
		if (db->hb_running)
			thread_stop(db);
}

static void after_fork_parent(void)
{
	for (mrtx_db *db = all_head; db; db = db->hb_next_db) {
		pthread_mutex_lock(&db->hb_mu);
		if (db->hb_head && !db->hb_running)
			(void)thread_start(db); /* on failure: the next hb_start tries again */
		pthread_mutex_unlock(&db->hb_mu);
	}
	pthread_mutex_unlock(&all_mu);
}

static void after_fork_child(void)
{
	/* The child must open stores anew; the inherited handles have no thread. */
	pthread_mutex_unlock(&all_mu);
}

static void register_atfork(void)
{
	(void)pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

int hb_start(mrtx_db *db, hb_entry *e, const store_table *t, mrtx_bytes row, mrtx_bytes bytes,
             uint32_t ttl_ms)
{
	int rc = MRTX_OK;

	memset(e, 0, sizeof(*e));
	e->t = t;
	e->row = row;
	e->ttl_ms = ttl_ms;
	e->expiry_ms = mrtx__now_ms() + ttl_ms;
	if (bytes.size < lock_expiry_end() || !(e->cur = mrtx__malloc(bytes.size)))
		return mrtx__seterr(MRTX_ENOMEM, "out of memory starting the lock heartbeat");
	memcpy(e->cur, bytes.data, bytes.size);
	e->ncur = bytes.size;
	pthread_mutex_lock(&db->hb_mu);
	if (!db->hb_running) {
		/* the first commit, or the first after a fork: the slow path, in
		 * the lock order all_mu, hb_mu */
		pthread_mutex_unlock(&db->hb_mu);
		pthread_once(&atfork_once, register_atfork);
		pthread_mutex_lock(&all_mu);
		if (!db->hb_listed) {
			db->hb_next_db = all_head;
			all_head = db;
			db->hb_listed = 1;
		}
		pthread_mutex_lock(&db->hb_mu);
		if (!db->hb_running && thread_start(db) != 0)
			rc = mrtx__seterr(MRTX_ENOMEM, "cannot start the lock heartbeat thread");
		pthread_mutex_unlock(&all_mu);
	}
	if (rc == MRTX_OK) {
		e->next = db->hb_head;
		db->hb_head = e;
		if (due_ms(e) < db->hb_wake_ms)
			pthread_cond_broadcast(&db->hb_cv);
	}
	pthread_mutex_unlock(&db->hb_mu);
	if (rc) {
		mrtx__free(e->cur);
		e->cur = NULL;
	}
	return rc;
}

int hb_stop(mrtx_db *db, hb_entry *e, mrtx_arena *a, mrtx_bytes *cur)
{
	uint8_t *copy;

	pthread_mutex_lock(&db->hb_mu);
	while (e->busy)
		pthread_cond_wait(&db->hb_cv, &db->hb_mu);
	for (hb_entry **p = &db->hb_head; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			break;
		}
	pthread_mutex_unlock(&db->hb_mu);
	*cur = MRTX_BYTES(NULL, 0);
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
	if (db->hb_running && db->hb_pid != getpid())
		return;
	pthread_mutex_lock(&all_mu);
	if (db->hb_listed)
		for (mrtx_db **p = &all_head; *p; p = &(*p)->hb_next_db)
			if (*p == db) {
				*p = db->hb_next_db;
				break;
			}
	db->hb_listed = 0;
	if (db->hb_running)
		thread_stop(db);
	pthread_mutex_unlock(&all_mu);
}
