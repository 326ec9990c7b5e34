/*
 * tail.c - run or queue the end of a multi-row commit (the state machine
 * is drawn in tail.h).
 */
#include "tail.h"
#include "heartbeat.h"
#include "sim_sync.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(2 * TAIL_BATCH == sizeof(((mrtx_db *)0)->tail.busy) / sizeof(tail_job *),
               "tail_busy holds one pass: a batch and the releases it carries");

struct tail_job {
	tail_job *next;
	uint64_t queued_ms; /* wall clock, when queued */
	uint8_t id[LOCK_TXNID_SIZE];
	size_t nsec;
	store_op *ops; /* nsec secondaries, then the primary's release */
};

/* A collection step queued by a commit (tail_trim). */
struct tail_trim {
	struct tail_trim *next;
	const store_table *t; /* (table objects live as long as the handle) */
	uint64_t safe;
	size_t len;
	uint8_t row[];
};

/* ------------------------------------------------------------- running */

/*
 * One store call: apply the secondaries of jobs[0..k) and release the
 * primaries of rel[0..nr) (tails whose secondaries all applied in an
 * earlier call).  ok[i]: every secondary of jobs[i] surely applied.  buf
 * has room for all those ops when they are more than one tail's part;
 * a single part runs on its own ops.  Every op's result is preset to a
 * failure, so an op the store did not report on counts as not applied,
 * and a primary is released only when each of its secondaries surely
 * applied: a primary never leaves COMMITTED while a secondary may still
 * be PREWRITTEN.
 * Keeps I5, I8 (DESIGN §10).
 */
static void run_call(mrtx_db *db, tail_job *const *jobs, size_t k, tail_job *const *rel,
                     size_t nr, store_op *buf, unsigned char *ok)
{
	store_op *ops = buf;
	size_t n = 0;
	int copy = 1;

	if (k == 1 && nr == 0) {
		ops = jobs[0]->ops;
		copy = 0;
	} else if (k == 0 && nr == 1) {
		ops = &rel[0]->ops[rel[0]->nsec];
		copy = 0;
	}
	/* A tail of one row has no secondaries (nsec 0): nothing of it is
	 * copied, and when no tail of the batch has any and nothing is
	 * released, buf may be NULL (tail_pass asked room for 0 ops). */
	for (size_t i = 0; i < k; i++) {
		if (copy && jobs[i]->nsec)
			memcpy(&ops[n], jobs[i]->ops, jobs[i]->nsec * sizeof(*ops));
		n += jobs[i]->nsec;
	}
	for (size_t i = 0; i < nr; i++, n++)
		if (copy)
			ops[n] = rel[i]->ops[rel[i]->nsec];
	for (size_t i = 0; i < n; i++)
		ops[i].result = MRTX_ESTORE;
	if (n)
		(void)lockio_write_rows(db->st, ops, n);
	n = 0;
	for (size_t i = 0; i < k; i++) {
		ok[i] = 1;
		for (size_t j = 0; j < jobs[i]->nsec; j++)
			ok[i] &= ops[n + j].result == 0;
		n += jobs[i]->nsec;
		/* (fires on every commit that got here, also when a resolver
		 * had already rolled some secondaries forward) */
		if (FAILPOINT(FP_COMMIT_AFTER_SECONDARIES))
			ok[i] = 0;
	}
}

/* A whole tail at once, in two calls: apply, then release (the caller's
 * own, or the worker's when it has no room for a batch).
 * Keeps I8 (DESIGN §10). */
static void run_one(mrtx_db *db, tail_job *j)
{
	unsigned char ok;

	run_call(db, &j, 1, NULL, 0, NULL, &ok);
	if (ok)
		run_call(db, NULL, 0, &j, 1, NULL, &ok);
}

/* ------------------------------------------------------------- copying */

static size_t op_size(const store_op *o)
{
	size_t s = o->row.size + o->cond.lock.size + o->new_lock.size +
	           o->nmuts * sizeof(store_mut);

	for (size_t i = 0; i < o->nmuts; i++)
		s += o->muts[i].qual.size + o->muts[i].value.size;
	return s;
}

static mrtx_bytes put(uint8_t **p, mrtx_bytes b)
{
	mrtx_bytes out = MRTX_BYTES(*p, b.size);

	if (b.size)
		memcpy(*p, b.data, b.size);
	*p += b.size;
	return out;
}

/* One allocation: the job, its ops, their mutation arrays, then bytes. */
static tail_job *job_copy(const uint8_t id[LOCK_TXNID_SIZE], const store_op *ops, size_t nsec)
{
	size_t nops = nsec + 1, head = sizeof(tail_job), size, nmuts = 0;
	uint8_t *bytes;
	store_mut *muts;
	tail_job *j;

	head = (head + alignof(store_op) - 1) / alignof(store_op) * alignof(store_op);
	size = head + nops * sizeof(store_op);
	for (size_t i = 0; i < nops; i++) {
		size += op_size(&ops[i]);
		nmuts += ops[i].nmuts;
	}
	if (!(j = mrtx__malloc(size)))
		return NULL;
	j->next = NULL;
	memcpy(j->id, id, LOCK_TXNID_SIZE);
	j->nsec = nsec;
	j->ops = (store_op *)(void *)((uint8_t *)j + head);
	muts = (store_mut *)(void *)(j->ops + nops);
	bytes = (uint8_t *)(muts + nmuts);
	for (size_t i = 0; i < nops; i++) {
		const store_op *from = &ops[i];
		store_op *o = &j->ops[i];

		*o = *from;
		/* (tail ops carry exact guards only) */
		o->cond = (store_cond){ .absent = from->cond.absent };
		o->row = put(&bytes, from->row);
		o->cond.lock = put(&bytes, from->cond.lock);
		o->new_lock = put(&bytes, from->new_lock);
		o->muts = from->nmuts ? muts : NULL;
		for (size_t m = 0; m < from->nmuts; m++) {
			muts[m] = from->muts[m];
			muts[m].qual = put(&bytes, from->muts[m].qual);
			muts[m].value = put(&bytes, from->muts[m].value);
		}
		muts += from->nmuts;
	}
	return j;
}

/* -------------------------------------------------------------- the API */

void tail_submit(mrtx_db *db, const uint8_t id[LOCK_TXNID_SIZE], store_op *ops, size_t nsec)
{
	tail_job local = { NULL, 0, { 0 }, nsec, ops }, *j = NULL, *one = &local;
	int queue;

	pthread_mutex_lock(&db->hb.mu);
	queue = store_has(db->st, STORE_CAP_REMOTE) && db->tail.running && !db->hb.quit &&
	        db->tail.len < TAIL_QUEUE_MAX;
	pthread_mutex_unlock(&db->hb.mu);
	if (queue && (j = job_copy(id, ops, nsec))) {
		pthread_mutex_lock(&db->hb.mu);
		if (db->tail.running && !db->hb.quit && db->tail.len < TAIL_QUEUE_MAX) {
			uint64_t now = mrtx__now_ms(), gap = now - db->tail.last_ms;

			/* (a clock that stepped back reads as a long gap) */
			if (now < db->tail.last_ms || gap > 1000)
				gap = 1000;
			db->tail.gap_ms = (3 * db->tail.gap_ms + gap) / 4;
			db->tail.last_ms = now;
			j->queued_ms = now;
			*db->tail.last = j;
			db->tail.last = &j->next;
			db->tail.len++;
			atomic_fetch_add(&db->tail.pending, 1);
			sync_broadcast(&db->hb.cv);
			pthread_mutex_unlock(&db->hb.mu);
			return;
		}
		pthread_mutex_unlock(&db->hb.mu); /* stopped meanwhile: run it here */
		one = j;
	}
	run_one(db, one);
	mrtx__free(j);
}

uint64_t tail_due_ms(const mrtx_db *db)
{
	uint64_t now = mrtx__now_ms(), since;

	/* tails further apart than half the linger would not share a
	 * batch: the worker runs at once */
	if (db->hb.quit || db->tail.hurry || db->tail.len >= TAIL_BATCH ||
	    db->tail.gap_ms > TAIL_LINGER_MS / 2)
		return 0;
	since = db->tail.head ? db->tail.head->queued_ms : db->tail.rel_ms;
	if (db->tail.head && db->tail.rel && db->tail.rel_ms < since)
		since = db->tail.rel_ms;
	/* (a wall clock that stepped back waits at most TAIL_LINGER_MS more) */
	if (since > now || since + TAIL_LINGER_MS <= now)
		return 0;
	return since + TAIL_LINGER_MS;
}

/* Room in the worker's buffer for n ops (the worker's alone: no lock). */
static int room(mrtx_db *db, size_t n)
{
	store_op *nb;

	if (n <= db->tail.room)
		return 1;
	if (!(nb = mrtx__malloc(n * sizeof(*nb))))
		return 0;
	mrtx__free(db->tail.buf);
	db->tail.buf = nb;
	db->tail.room = n;
	return 1;
}

/* Keeps I8 (DESIGN §10). */
void tail_pass(mrtx_db *db)
{
	tail_job *jobs[TAIL_BATCH], *rel[TAIL_BATCH], *done[2 * TAIL_BATCH];
	unsigned char ok[TAIL_BATCH];
	size_t k = 0, nr = 0, nd = 0, n = 0;

	while (db->tail.head && k < TAIL_BATCH) {
		tail_job *j = db->tail.head;

		if (!(db->tail.head = j->next))
			db->tail.last = &db->tail.head;
		db->tail.len--;
		jobs[k++] = j;
		n += j->nsec;
	}
	for (tail_job *j = db->tail.rel; j; j = j->next)
		rel[nr++] = j; /* at most one batch: each pass empties the list */
	db->tail.rel = NULL;
	memcpy(db->tail.busy, jobs, k * sizeof(*jobs));
	memcpy(db->tail.busy + k, rel, nr * sizeof(*rel));
	db->tail.nbusy = k + nr;
	pthread_mutex_unlock(&db->hb.mu);
	if (k + nr == 1 || room(db, n + nr)) {
		run_call(db, jobs, k, rel, nr, db->tail.buf, ok);
	} else { /* no memory for a batch: one by one */
		for (size_t i = 0; i < nr; i++)
			run_call(db, NULL, 0, &rel[i], 1, NULL, ok);
		for (size_t i = 0; i < k; i++) {
			run_one(db, jobs[i]);
			ok[i] = 0; /* released already */
		}
	}
	/* releases done; tails whose secondaries applied wait for the next
	 * pass, the others are done (what failed is left to recovery) */
	memcpy(done, rel, nr * sizeof(*rel));
	nd = nr;
	pthread_mutex_lock(&db->hb.mu);
	for (size_t i = k; i-- > 0;) {
		if (ok[i]) {
			if (!db->tail.rel)
				db->tail.rel_ms = mrtx__now_ms();
			jobs[i]->next = db->tail.rel;
			db->tail.rel = jobs[i];
		} else {
			done[nd++] = jobs[i];
		}
	}
	db->tail.nbusy = 0;
	atomic_fetch_sub(&db->tail.pending, nd);
	sync_broadcast(&db->hb.cv);
	pthread_mutex_unlock(&db->hb.mu);
	for (size_t i = 0; i < nd; i++)
		mrtx__free(done[i]);
	pthread_mutex_lock(&db->hb.mu);
}

static int known(const mrtx_db *db, const uint8_t id[LOCK_TXNID_SIZE])
{
	for (size_t i = 0; i < db->tail.nbusy; i++)
		if (memcmp(db->tail.busy[i]->id, id, LOCK_TXNID_SIZE) == 0)
			return 1;
	for (const tail_job *j = db->tail.head; j; j = j->next)
		if (memcmp(j->id, id, LOCK_TXNID_SIZE) == 0)
			return 1;
	for (const tail_job *j = db->tail.rel; j; j = j->next)
		if (memcmp(j->id, id, LOCK_TXNID_SIZE) == 0)
			return 1;
	return 0;
}

static int job_holds(const tail_job *j, const store_table *t, mrtx_bytes row)
{
	for (size_t i = 0; i <= j->nsec; i++)
		if (j->ops[i].table == t && bytes_cmp(j->ops[i].row, row) == 0)
			return 1;
	return 0;
}

int tail_holds(mrtx_db *db, const store_table *t, mrtx_bytes row)
{
	int held = 0;

	if (atomic_load(&db->tail.pending) == 0)
		return 0;
	pthread_mutex_lock(&db->hb.mu);
	for (size_t i = 0; i < db->tail.nbusy && !held; i++)
		held = job_holds(db->tail.busy[i], t, row);
	for (const tail_job *j = db->tail.head; j && !held; j = j->next)
		held = job_holds(j, t, row);
	for (const tail_job *j = db->tail.rel; j && !held; j = j->next)
		held = job_holds(j, t, row);
	pthread_mutex_unlock(&db->hb.mu);
	return held;
}

void tail_trim(mrtx_db *db, const store_table *t, mrtx_bytes row, uint64_t safe)
{
	struct tail_trim *tr;

	if (store_has(db->st, STORE_CAP_REMOTE) && hb_threads(db)) {
		if (!(tr = mrtx__malloc(sizeof(*tr) + row.size)))
			return; /* (best effort) */
		tr->next = NULL;
		tr->t = t;
		tr->safe = safe;
		tr->len = row.size;
		if (row.size)
			memcpy(tr->row, row.data, row.size);
		pthread_mutex_lock(&db->hb.mu);
		if (db->tail.running && !db->hb.quit && db->tail.ntrims < TAIL_TRIMS_MAX) {
			*db->tail.trims_last = tr;
			db->tail.trims_last = &tr->next;
			db->tail.ntrims++;
			atomic_fetch_add(&db->tail.trims_pending, 1);
			sync_broadcast(&db->hb.cv);
			tr = NULL;
		}
		pthread_mutex_unlock(&db->hb.mu);
		mrtx__free(tr); /* (full or stopping: dropped) */
		return;
	}
	(void)store_trim_row(db->st, t, row, safe);
	mrtx__clearerr();
}

void tail_trim_pass(mrtx_db *db)
{
	struct tail_trim *tr = db->tail.trims, *next, **cut = &db->tail.trims;
	size_t n = 0;

	if (!tr)
		return;
	while (*cut && n < TAIL_TRIMS_PASS) {
		cut = &(*cut)->next;
		n++;
	}
	db->tail.trims = *cut; /* (the rest stay queued) */
	*cut = NULL;
	if (!db->tail.trims)
		db->tail.trims_last = &db->tail.trims;
	db->tail.ntrims -= n;
	pthread_mutex_unlock(&db->hb.mu);
	for (; tr; tr = next) {
		next = tr->next;
		(void)store_trim_row(db->st, tr->t, MRTX_BYTES(tr->row, tr->len), tr->safe);
		mrtx__clearerr();
		mrtx__free(tr);
	}
	pthread_mutex_lock(&db->hb.mu);
	atomic_fetch_sub(&db->tail.trims_pending, n);
	sync_broadcast(&db->hb.cv);
}

void tail_trims_drop(mrtx_db *db)
{
	struct tail_trim *tr = db->tail.trims, *next;

	for (; tr; tr = next) {
		next = tr->next;
		mrtx__free(tr);
	}
	atomic_fetch_sub(&db->tail.trims_pending, db->tail.ntrims);
	db->tail.trims = NULL;
	db->tail.trims_last = &db->tail.trims;
	db->tail.ntrims = 0;
}

void tail_flush(mrtx_db *db)
{
	if (atomic_load(&db->tail.pending) == 0 && atomic_load(&db->tail.trims_pending) == 0)
		return;
	pthread_mutex_lock(&db->hb.mu);
	db->tail.hurry++;
	sync_broadcast(&db->hb.cv);
	while ((db->tail.head || db->tail.rel || db->tail.nbusy ||
	        atomic_load(&db->tail.trims_pending)) && db->tail.running)
		sync_wait(&db->hb.cv, &db->hb.mu);
	db->tail.hurry--;
	pthread_mutex_unlock(&db->hb.mu);
}

int tail_wait(mrtx_db *db, const uint8_t id[LOCK_TXNID_SIZE])
{
	int waited = 0;

	if (atomic_load(&db->tail.pending) == 0)
		return 0;
	pthread_mutex_lock(&db->hb.mu);
	db->tail.hurry++;
	sync_broadcast(&db->hb.cv);
	while (known(db, id)) {
		waited = 1;
		sync_wait(&db->hb.cv, &db->hb.mu);
	}
	db->tail.hurry--;
	pthread_mutex_unlock(&db->hb.mu);
	return waited;
}

void tail_init(mrtx_db *db)
{
	db->tail.head = NULL;
	db->tail.last = &db->tail.head;
	db->tail.len = 0;
	db->tail.rel = NULL;
	db->tail.rel_ms = 0;
	db->tail.last_ms = 0;
	db->tail.gap_ms = 1000;
	db->tail.nbusy = 0;
	db->tail.hurry = 0;
	db->tail.buf = NULL;
	db->tail.room = 0;
	atomic_store(&db->tail.pending, 0);
	db->tail.trims = NULL;
	db->tail.trims_last = &db->tail.trims;
	db->tail.ntrims = 0;
	atomic_store(&db->tail.trims_pending, 0);
}

void tail_fini(mrtx_db *db)
{
	tail_trims_drop(db); /* (none: the worker dropped them; defence) */
	mrtx__free(db->tail.buf);
	db->tail.buf = NULL;
	db->tail.room = 0;
}
