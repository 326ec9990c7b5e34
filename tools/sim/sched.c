/*
 * sched.c - the deterministic scheduler (sched.h).
 *
 * The baton: S.cur names the one client allowed to run; every other client
 * thread waits on its own condition variable.  Only the baton holder (or
 * the caller of sim_start/sim_settle while no client runs) touches the
 * PRNG, the virtual clock, the held-write list and the trace, so they need
 * no lock of their own: the hand-over through S.mu orders each holder's
 * accesses after the previous holder's.
 *
 * A client's life:
 *
 *   READY --(picked)--> running --(store call / sleep)--> READY or SLEEP
 *   SLEEP --(clock reaches wake)--> READY
 *   running --(body returns)--> DONE
 *   running --(dies at a store call)--> DEAD --(sim_finish)--> unwinds
 *
 * A dead client never holds the baton again; sim_finish lets it unwind
 * with every store call dropped (no effect on the cluster, no trace line,
 * no draw from the PRNG), so that its handle can be closed.
 */
#include "sched.h"
#include "prng.h"

#include "storage/sim_hooks.h"
#include "storage/sim/simrados.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EPOCH_US 1700000000000000ull /* the wall clock at virtual time 0 */
#define MONO_US 1000000000ull        /* the monotonic clock at virtual time 0 */
#define STEP_MIN_US 50               /* a store call's cost: 50..449 us */
#define STEP_SPAN_US 400
#define OP_TIMEOUT_US 3000000ull     /* rados_osd_op_timeout: a lost reply's wait */
#define CLOCK_STEP_US 500000u   /* the most a wall clock steps back at once */
#define CLOCK_FREEZE_US 2000000u /* the longest a wall clock stays frozen */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define STALL_US 8000000u /* a stall: past every lock's time to live (bank.c: 5 s) */

const char *const sim_fault_names[SIM_NFAULTS] = { "lose", "drop", "hold", "late", "die",
	                                           "skew", "orphan", "stall", "clock", "rhold",
	                                           "rdrop" };

enum { C_READY, C_SLEEP, C_BLOCK, C_DONE, C_DEAD };

/* A participant: a client, or a task (a handle's heartbeat or tail thread)
 * of the client that spawned it, which shares its wall clock, its stalls
 * and its death. */
typedef struct client client;
struct client {
	int idx;         /* in S.c */
	int state;
	pthread_t th;
	pthread_cond_t cv;
	client *owner;   /* the client (itself, for a client) */
	int task;        /* a task: its number within its owner (1, 2, ...) */
	int ntasks;      /* a client: tasks spawned so far */
	void *(*fn)(void *); /* a task's body */
	void *fn_arg;
	int joined;      /* a task: pthread_join done */
	pthread_cond_t *cvwait; /* C_BLOCK / C_SLEEP: the cv it waits on (or NULL) */
	client *joinwait;       /* C_BLOCK: the task it joins (or NULL) */
	int signalled;   /* its cond wait ended by a broadcast */
	uint64_t wake;   /* C_SLEEP: the virtual time it wakes at */
	int64_t skew;    /* its wall clock's offset, us (the owner's counts) */
	uint64_t debt;   /* time it spent waiting on a lost reply, paid at its next yield */
	uint64_t zclock; /* dead: its own clock, so its loops end */
	uint64_t waiting; /* the held op it waits for (0: none) */
	uint64_t frozen_until; /* its wall clock reads frozen_val until then (owner's) */
	uint64_t frozen_val;
	uint64_t stall_until;  /* a client: nothing of it runs before (a stalled process) */
};

typedef struct held {
	uint64_t id;
	int client;
	int gave_up; /* its client timed out waiting: a release applies it late */
	int pending; /* its submit hook has not returned: the cluster has not
	                queued it yet, so it cannot be released */
	int orphan;  /* never released (SIM_F_ORPHAN); dropped at the end */
} held;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t main_cv;
	client **c;       /* the participants: clients 0..nclients), then tasks */
	int n, cap, nclients, cur, over, zombie, ndead;
	uint64_t vclock;
	prng rng;
	sim_faults f;
	unsigned long seen[SIM_NFAULTS];
	FILE *trace;
	uint64_t hash;
	held *held;
	size_t nheld, capheld;
	void (*body)(int client, void *arg);
	void *arg;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER, .main_cv = PTHREAD_COND_INITIALIZER };

static _Thread_local client *me;

/* ------------------------------------------------------------- trace */

static void trace_line(const char *who, const char *fmt, va_list ap)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%llu %s ", (unsigned long long)S.vclock, who);

	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	for (const unsigned char *p = (const unsigned char *)buf; *p; p++)
		S.hash = (S.hash ^ *p) * 0x100000001b3ull;
	S.hash = (S.hash ^ '\n') * 0x100000001b3ull;
	if (S.trace)
		fprintf(S.trace, "%s\n", buf);
}

void sim_trace(const char *fmt, ...)
{
	char who[16];
	va_list ap;

	if (me && me->state == C_DEAD)
		return;
	if (me && me->task)
		snprintf(who, sizeof(who), "c%d.%d", me->owner->idx, me->task);
	else if (me)
		snprintf(who, sizeof(who), "c%d", me->idx);
	else
		snprintf(who, sizeof(who), "m");
	va_start(ap, fmt);
	trace_line(who, fmt, ap);
	va_end(ap);
}

unsigned long sim_faults_seen(int kind)
{
	return kind >= 0 && kind < SIM_NFAULTS ? S.seen[kind] : 0;
}

uint64_t sim_rand(uint64_t n)
{
	return prng_below(&S.rng, n);
}

uint64_t sim_now(void)
{
	return S.vclock;
}

int sim_dead(void)
{
	return me && me->state == C_DEAD;
}

/* ------------------------------------------------------- held writes */

/* Forget the records of ops the cluster no longer holds (a pending one,
 * whose submit hook has not returned, is not queued yet: kept). */
static void held_prune(void)
{
	uint64_t ids[256];
	size_t n = simr_held(ids, 256), k = 0;

	for (size_t i = 0; i < S.nheld; i++) {
		int still = n > 256 || S.held[i].pending; /* (more than we can list: kept) */

		for (size_t j = 0; j < n && j < 256 && !still; j++)
			still = ids[j] == S.held[i].id;
		if (still)
			S.held[k++] = S.held[i];
	}
	S.nheld = k;
}

static void held_add(uint64_t id, int cl)
{
	if (S.nheld == S.capheld) {
		size_t cap = S.capheld ? 2 * S.capheld : 16;
		held *h = realloc(S.held, cap * sizeof(*h));

		if (!h)
			abort();
		S.held = h;
		S.capheld = cap;
	}
	S.held[S.nheld++] = (held){ id, cl, 0, 1, 0 };
}

static void held_release(size_t i, simr_fate fate, const char *why)
{
	held h = S.held[i];

	if (fate == SIMR_APPLY && h.gave_up)
		S.seen[SIM_F_LATE]++;
	sim_trace("release op%llu of c%d %s%s", (unsigned long long)h.id, h.client, why,
	          fate == SIMR_DROP ? " dropped" : h.gave_up ? " late" : "");
	(void)simr_release(h.id, fate);
	/* (its record goes even when the cluster had not queued it yet: a
	 * dead client's op, dropped) */
	memmove(&S.held[i], &S.held[i + 1], (S.nheld - i - 1) * sizeof(*S.held));
	S.nheld--;
	held_prune();
	/* a client waiting for an op no longer held has its reply: it wakes */
	for (int c = 0; c < S.n; c++) {
		int still = 0;

		if (!S.c[c]->waiting || S.c[c]->state != C_SLEEP)
			continue;
		for (size_t j = 0; j < S.nheld && !still; j++)
			still = S.held[j].id == S.c[c]->waiting;
		if (!still)
			S.c[c]->wake = S.vclock;
	}
}

/* ----------------------------------------------------------- the baton */

/* Hand the baton to the next client (S.mu held).  Wakes the sleepers the
 * clock has reached; when none is ready, jumps the clock to the earliest
 * wake; when none is left, tells sim_run. */
static void pick_next(void)
{
	for (;;) {
		uint64_t soonest = UINT64_MAX;
		int nready = 0, nblock = 0, k;

		for (int i = 0; i < S.n; i++) {
			client *c = S.c[i];
			uint64_t stall = c->owner->stall_until;

			if (c->state == C_SLEEP && c->wake <= S.vclock)
				c->state = C_READY;
			if (c->state == C_READY && stall <= S.vclock)
				nready++;
			else if (c->state == C_READY)
				soonest = MIN(soonest, stall);
			else if (c->state == C_SLEEP)
				soonest = MIN(soonest, MAX(c->wake, stall));
			nblock += c->state == C_BLOCK;
		}
		if (nready) {
			k = (int)prng_below(&S.rng, (uint64_t)nready);
			for (int i = 0; i < S.n; i++)
				if (S.c[i]->state == C_READY &&
				    S.c[i]->owner->stall_until <= S.vclock && k-- == 0) {
					S.cur = i;
					pthread_cond_signal(&S.c[i]->cv);
					return;
				}
		}
		if (soonest == UINT64_MAX) {
			if (nblock) { /* every live participant waits on another */
				fprintf(stderr, "mrtx-sim: deadlock at %llu:",
				        (unsigned long long)S.vclock);
				for (int i = 0; i < S.n; i++)
					if (S.c[i]->state == C_BLOCK)
						fprintf(stderr, " c%d.%d%s", S.c[i]->owner->idx,
						        S.c[i]->task, S.c[i]->joinwait ? "(join)" :
						        "(cv)");
				fprintf(stderr, "\n");
				abort();
			}
			S.cur = -1;
			S.over = 1;
			pthread_cond_signal(&S.main_cv);
			return;
		}
		S.vclock = soonest;
	}
}

/* The running client gives up the baton (its state already set) and waits
 * until it has it again -- or, dead, until sim_finish. */
static void yield(void)
{
	if (me->state != C_DEAD && S.nheld && prng_chance(&S.rng, S.f.release)) {
		size_t i = (size_t)prng_below(&S.rng, S.nheld);

		if (!S.held[i].pending && !S.held[i].orphan)
			held_release(i, SIMR_APPLY, "in flight");
	}
	pthread_mutex_lock(&S.mu);
	S.vclock += STEP_MIN_US + prng_below(&S.rng, STEP_SPAN_US);
	pick_next();
	if (me->state != C_DONE)
		while (me->state == C_DEAD ? !S.zombie : S.cur != me->idx)
			pthread_cond_wait(&me->cv, &S.mu);
	pthread_mutex_unlock(&S.mu);
}

/* A participant ends: its joiners run again.  (Another participant's
 * state is written under S.mu: it reads it there while parked.) */
static void wake_joiners(void)
{
	pthread_mutex_lock(&S.mu);
	for (int i = 0; i < S.n; i++)
		if (S.c[i]->state == C_BLOCK && S.c[i]->joinwait == me)
			S.c[i]->state = C_READY;
	pthread_mutex_unlock(&S.mu);
}

/* The state for a yield: asleep until the debt of a lost reply is paid. */
static void pay_debt(void)
{
	if (me->debt) {
		me->wake = S.vclock + me->debt;
		me->debt = 0;
		me->state = C_SLEEP;
	} else {
		me->state = C_READY;
	}
}

/* The running participant's process dies: its client and every task of
 * that client, wherever each is parked; their held writes are dropped. */
static void die(void)
{
	client *o = me->owner;

	me->state = C_READY; /* (to trace) */
	sim_trace("dies");
	S.seen[SIM_F_DIE]++;
	S.ndead++;
	for (size_t i = 0; i < S.nheld;)
		if (S.c[S.held[i].client]->owner == o)
			held_release(i, SIMR_DROP, "of the dead");
		else
			i++;
	pthread_mutex_lock(&S.mu); /* (its tasks read their state there) */
	for (int i = 0; i < S.n; i++)
		if (S.c[i]->owner == o && S.c[i]->state != C_DONE)
			S.c[i]->state = C_DEAD;
	pthread_mutex_unlock(&S.mu);
	me->state = C_DEAD;
	yield();
}

/* ----------------------------------------------------- library hooks */

static uint64_t h_now_us(void)
{
	if (!me)
		return EPOCH_US + S.vclock;
	if (me->state == C_DEAD)
		return EPOCH_US + S.vclock + me->zclock;
	if (S.vclock < me->owner->frozen_until)
		return me->owner->frozen_val;
	return (uint64_t)((int64_t)(EPOCH_US + S.vclock + me->debt) + me->owner->skew);
}

static uint64_t h_mono_us(void)
{
	if (!me)
		return MONO_US + S.vclock;
	return MONO_US + S.vclock + (me->state == C_DEAD ? me->zclock : me->debt);
}

static void h_sleep_us(uint64_t us)
{
	if (!me) {
		S.vclock += us;
		return;
	}
	if (me->state == C_DEAD) {
		me->zclock += us + 1000;
		return;
	}
	sim_trace("sleep %llu", (unsigned long long)us);
	me->wake = S.vclock + me->debt + us;
	me->debt = 0;
	me->state = C_SLEEP;
	yield();
}

static uint32_t h_rand_below(uint32_t n)
{
	if (me && me->state == C_DEAD)
		return (uint32_t)(me->zclock % n);
	return (uint32_t)prng_below(&S.rng, n);
}

static void h_random_bytes(void *out, size_t n)
{
	uint8_t *p = out;

	if (me && me->state == C_DEAD) {
		uint64_t x = me->zclock ^ (uint64_t)(uintptr_t)me;

		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)prng_splitmix(&x);
		return;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)prng_next(&S.rng);
}

/* ------------------------------------------------------------ tasks */

static client *participant_new(void)
{
	client *c;

	if (S.n == S.cap) {
		int cap = S.cap ? 2 * S.cap : 16;
		client **nc = realloc(S.c, (size_t)cap * sizeof(*nc));

		if (!nc)
			abort();
		S.c = nc;
		S.cap = cap;
	}
	if (!(c = calloc(1, sizeof(*c))))
		abort();
	c->idx = S.n;
	c->owner = c;
	c->state = C_READY;
	pthread_cond_init(&c->cv, NULL);
	S.c[S.n++] = c;
	return c;
}

/* The task not yet joined on thread th (an id is reused once joined).
 * Under S.mu: dead clients wind down in real time, beside the baton. */
static client *task_of(pthread_t th)
{
	client *t = NULL;

	pthread_mutex_lock(&S.mu);
	for (int i = S.n; i-- > S.nclients && !t;)
		if (!S.c[i]->joined && pthread_equal(S.c[i]->th, th))
			t = S.c[i];
	pthread_mutex_unlock(&S.mu);
	return t;
}

static void *task_main(void *arg)
{
	client *c = arg;

	me = c;
	pthread_mutex_lock(&S.mu);
	while (c->state == C_DEAD ? !S.zombie : S.cur != c->idx)
		pthread_cond_wait(&c->cv, &S.mu);
	pthread_mutex_unlock(&S.mu);
	if (c->state != C_DEAD)
		sim_trace("task starts");
	c->fn(c->fn_arg);
	if (c->state != C_DEAD) {
		sim_trace("task ends");
		c->state = C_DONE;
		wake_joiners();
		yield();
	}
	return NULL;
}

/* A new participant, ready, of the running client; it runs when picked.
 * (Never yields: the caller holds hb.mu.)  Outside a client, or in a dead
 * one, no thread: the library then does without (tails inline). */
static int h_spawn(pthread_t *th, void *(*fn)(void *), void *arg)
{
	client *c;

	if (!me || me->state == C_DEAD)
		return EAGAIN;
	pthread_mutex_lock(&S.mu); /* (S.c may move: task_of reads it) */
	c = participant_new();
	pthread_mutex_unlock(&S.mu);
	c->owner = me->owner;
	c->task = ++me->owner->ntasks;
	c->fn = fn;
	c->fn_arg = arg;
	if (pthread_create(&c->th, NULL, task_main, c) != 0)
		abort();
	*th = c->th;
	sim_trace("spawn c%d.%d", c->owner->idx, c->task);
	return 0;
}

static void h_join(pthread_t th)
{
	client *t = task_of(th);

	if (me && me->state != C_DEAD && t) {
		while (t->state != C_DONE && t->state != C_DEAD) {
			me->joinwait = t;
			me->state = C_BLOCK;
			yield();
			me->joinwait = NULL;
		}
	}
	pthread_join(th, NULL);
	if (t) {
		pthread_mutex_lock(&S.mu);
		t->joined = 1;
		pthread_mutex_unlock(&S.mu);
	}
}

/* Park the running participant on cv until a broadcast or (deadline, a
 * virtual time, UINT64_MAX: none); mu released meanwhile.  0 if woken by a
 * broadcast. */
static int park(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline)
{
	int sig;

	me->cvwait = cv;
	me->signalled = 0;
	if (deadline == UINT64_MAX) {
		me->state = C_BLOCK;
	} else {
		me->wake = MAX(deadline, S.vclock + me->debt);
		me->debt = 0;
		me->state = C_SLEEP;
	}
	pthread_mutex_unlock(mu);
	yield();
	me->cvwait = NULL;
	sig = me->signalled;
	pthread_mutex_lock(mu);
	return sig;
}

static void h_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu)
{
	if (!me || me->state == C_DEAD) {
		pthread_cond_wait(cv, mu);
		return;
	}
	sim_trace("cond wait");
	(void)park(cv, mu, UINT64_MAX);
}

static int h_cond_timedwait(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_us)
{
	uint64_t now = h_mono_us(), rel = deadline_us > now ? deadline_us - now : 0;

	if (!me || me->state == C_DEAD) {
		/* unwinding after the run, in real time: a short real wait, the
		 * dead's clock moved on by the whole of it */
		struct timespec ts;

		if (me)
			me->zclock += rel;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		return pthread_cond_timedwait(cv, mu, &ts);
	}
	sim_trace("cond wait %llu", (unsigned long long)rel);
	return park(cv, mu, S.vclock + me->debt + rel) ? 0 : ETIMEDOUT;
}

static void h_cond_broadcast(pthread_cond_t *cv)
{
	if (!me || me->state == C_DEAD) {
		pthread_cond_broadcast(cv);
		return;
	}
	pthread_mutex_lock(&S.mu); /* (the parked read their state there) */
	for (int i = 0; i < S.n; i++) {
		client *c = S.c[i];

		if (c->cvwait == cv && (c->state == C_BLOCK || c->state == C_SLEEP)) {
			c->state = C_READY;
			c->signalled = 1;
		}
	}
	pthread_mutex_unlock(&S.mu);
}

static const mrtx__sim_hooks hooks = { h_now_us,      h_mono_us,        h_sleep_us,
	                               h_rand_below,  h_random_bytes,   h_spawn,
	                               h_join,        h_cond_wait,      h_cond_timedwait,
	                               h_cond_broadcast };

/* --------------------------------------------------- cluster hooks */

static const char *const fate_names[] = { "apply", "lose", "drop", "hold" };

static simr_fate h_submit(void *arg, const simr_op_info *op)
{
	simr_fate fate = SIMR_APPLY;

	(void)arg;
	if (!me) {
		sim_trace("op%llu %s %s", (unsigned long long)op->id, op->write ? "w" : "r", op->oid);
		return SIMR_APPLY;
	}
	if (me->state == C_DEAD)
		return SIMR_DROP;
	if (S.ndead < S.nclients - 1 && prng_chance(&S.rng, S.f.rate[SIM_F_DIE])) {
		die();
		return SIMR_DROP;
	}
	if (prng_chance(&S.rng, S.f.rate[SIM_F_CLOCK])) {
		if (prng_below(&S.rng, 2)) {
			uint64_t back = 1 + prng_below(&S.rng, CLOCK_STEP_US);

			me->owner->skew -= (int64_t)back;
			sim_trace("clock back %llu", (unsigned long long)back);
		} else {
			me->owner->frozen_val = h_now_us();
			me->owner->frozen_until = S.vclock + 1 + prng_below(&S.rng, CLOCK_FREEZE_US);
			sim_trace("clock frozen until %llu",
			          (unsigned long long)me->owner->frozen_until);
		}
		S.seen[SIM_F_CLOCK]++;
	}
	if (prng_chance(&S.rng, S.f.rate[SIM_F_STALL])) {
		me->debt += STALL_US; /* paid below, before the op leaves */
		/* the whole process stops: its other threads too */
		me->owner->stall_until = MAX(me->owner->stall_until, S.vclock + STALL_US);
		S.seen[SIM_F_STALL]++;
		sim_trace("stall");
	}
	if (op->write) {
		int kind = -1;

		if (prng_chance(&S.rng, S.f.rate[SIM_F_LOSE]))
			fate = SIMR_LOSE_REPLY, kind = SIM_F_LOSE;
		else if (prng_chance(&S.rng, S.f.rate[SIM_F_DROP]))
			fate = SIMR_DROP, kind = SIM_F_DROP;
		else if (prng_chance(&S.rng, S.f.rate[SIM_F_HOLD]))
			fate = SIMR_HOLD, kind = SIM_F_HOLD;
		else if (prng_chance(&S.rng, S.f.rate[SIM_F_ORPHAN]))
			fate = SIMR_HOLD, kind = SIM_F_ORPHAN;
		if (op->queued || fate == SIMR_HOLD) {
			held_add(op->id, me->idx);
			S.held[S.nheld - 1].orphan = kind == SIM_F_ORPHAN;
		}
		if (fate == SIMR_LOSE_REPLY || fate == SIMR_DROP)
			me->debt += OP_TIMEOUT_US; /* the client waits out its timeout */
		if (kind >= 0)
			S.seen[kind]++;
	} else {
		/* a read: applied, dropped, or held and released in any order
		 * (a dead client's reads are dropped, as its writes are) */
		if (prng_chance(&S.rng, S.f.rate[SIM_F_RDROP])) {
			fate = SIMR_DROP;
			me->debt += OP_TIMEOUT_US; /* the client waits out its timeout */
			S.seen[SIM_F_RDROP]++;
		} else if (prng_chance(&S.rng, S.f.rate[SIM_F_RHOLD])) {
			fate = SIMR_HOLD;
			S.seen[SIM_F_RHOLD]++;
		}
		if (op->queued || fate == SIMR_HOLD)
			held_add(op->id, me->idx);
	}
	sim_trace("op%llu %s %s %s%s%s", (unsigned long long)op->id, op->write ? "w" : "r", op->oid,
	          fate_names[fate], S.nheld && S.held[S.nheld - 1].id == op->id &&
	          S.held[S.nheld - 1].orphan ? " orphan" : "", op->queued ? " queued" : "");
	/* in flight while the others run: it applies when this client runs on */
	pay_debt();
	yield();
	for (size_t i = 0; i < S.nheld; i++)
		if (S.held[i].id == op->id)
			S.held[i].pending = 0; /* queued as soon as this returns */
	return fate;
}

static void h_wait(void *arg, const simr_op_info *op)
{
	(void)arg;
	if (!me || me->state == C_DEAD)
		return;
	sim_trace("wait op%llu", (unsigned long long)op->id);
	me->wake = S.vclock + me->debt + OP_TIMEOUT_US;
	me->debt = 0;
	me->state = C_SLEEP;
	me->waiting = op->id;
	yield();
	me->waiting = 0;
	for (size_t i = 0; i < S.nheld; i++)
		if (S.held[i].id == op->id) {
			S.held[i].gave_up = 1; /* still held: the wait times out */
			sim_trace("timeout op%llu", (unsigned long long)op->id);
		}
}

/* ------------------------------------------------------------- runs */

void sim_start(uint64_t seed, const sim_faults *f, int nclients, FILE *trace)
{
	static const simr_hook sh = { h_submit, h_wait, NULL };

	free(S.held);
	S.held = NULL;
	S.nheld = S.capheld = 0;
	S.n = 0;
	S.nclients = nclients;
	S.cur = -1;
	S.over = S.zombie = S.ndead = 0;
	S.vclock = 0;
	S.f = *f;
	memset(S.seen, 0, sizeof(S.seen));
	S.trace = trace;
	S.hash = 0xcbf29ce484222325ull;
	prng_seed(&S.rng, seed);
	for (int i = 0; i < nclients; i++) {
		client *c = participant_new();

		if (f->skew_ms) {
			uint64_t span = 2 * (uint64_t)f->skew_ms * 1000u + 1;

			c->skew = (int64_t)prng_below(&S.rng, span) - (int64_t)f->skew_ms * 1000;
			S.seen[SIM_F_SKEW] += c->skew != 0;
		}
	}
	sim_trace("start seed %llu clients %d", (unsigned long long)seed, nclients);
	atomic_store(&mrtx__sim, &hooks);
	simr_set_hook(&sh);
}

int sim_in_client(void)
{
	return me != NULL;
}

static void *client_main(void *arg)
{
	client *c = arg;

	me = c;
	pthread_mutex_lock(&S.mu);
	while (S.cur != c->idx)
		pthread_cond_wait(&c->cv, &S.mu);
	pthread_mutex_unlock(&S.mu);
	S.body(c->idx, S.arg);
	if (c->state != C_DEAD) {
		sim_trace("done");
		c->state = C_DONE;
		wake_joiners();
		yield();
	}
	return NULL;
}

void sim_run(void (*body)(int client, void *arg), void *arg)
{
	S.body = body;
	S.arg = arg;
	for (int i = 0; i < S.nclients; i++)
		if (pthread_create(&S.c[i]->th, NULL, client_main, S.c[i]) != 0)
			abort();
	pthread_mutex_lock(&S.mu);
	pick_next();
	while (!S.over)
		pthread_cond_wait(&S.main_cv, &S.mu);
	pthread_mutex_unlock(&S.mu);
}

void sim_settle(uint64_t us)
{
	while (S.nheld) {
		held *h = &S.held[0];

		held_release(0, S.c[h->client]->state == C_DEAD || h->orphan ? SIMR_DROP :
		             SIMR_APPLY, "at the end");
	}
	{
		uint64_t id;

		while (simr_held(&id, 1) > 0) { /* (none expected: every hold is listed) */
			sim_trace("release op%llu unlisted", (unsigned long long)id);
			(void)simr_release(id, SIMR_APPLY);
		}
	}
	S.vclock += us;
	sim_trace("clock +%llu", (unsigned long long)us);
}

uint64_t sim_finish(void)
{
	int ran = S.c && S.nclients && S.body;

	pthread_mutex_lock(&S.mu);
	S.zombie = 1;
	for (int i = 0; i < S.n; i++)
		pthread_cond_broadcast(&S.c[i]->cv);
	pthread_mutex_unlock(&S.mu);
	/* the clients first: each joins its own tasks as it closes its handle */
	for (int i = 0; ran && i < S.nclients; i++)
		pthread_join(S.c[i]->th, NULL);
	for (int i = S.nclients; i < S.n; i++)
		if (!S.c[i]->joined)
			pthread_join(S.c[i]->th, NULL);
	for (int i = 0; i < S.n; i++) {
		pthread_cond_destroy(&S.c[i]->cv);
		free(S.c[i]);
	}
	S.n = 0;
	S.body = NULL;
	simr_set_hook(NULL);
	atomic_store(&mrtx__sim, NULL);
	sim_trace("end");
	return S.hash;
}
