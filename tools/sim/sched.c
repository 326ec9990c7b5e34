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

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define EPOCH_US 1700000000000000ull /* the wall clock at virtual time 0 */
#define MONO_US 1000000000ull        /* the monotonic clock at virtual time 0 */
#define STEP_MIN_US 50               /* a store call's cost: 50..449 us */
#define STEP_SPAN_US 400
#define OP_TIMEOUT_US 3000000ull     /* rados_osd_op_timeout: a lost reply's wait */
#define CLOCK_STEP_US 500000u   /* the most a wall clock steps back at once */
#define CLOCK_FREEZE_US 2000000u /* the longest a wall clock stays frozen */
#define STALL_US 8000000u /* a stall: past every lock's time to live (bank.c: 5 s) */

const char *const sim_fault_names[SIM_NFAULTS] = { "lose", "drop", "hold", "late", "die",
	                                           "skew", "orphan", "stall", "clock" };

enum { C_READY, C_SLEEP, C_DONE, C_DEAD };

typedef struct client {
	int idx;
	int state;
	pthread_t th;
	pthread_cond_t cv;
	uint64_t wake;   /* C_SLEEP: the virtual time it wakes at */
	int64_t skew;    /* its wall clock's offset, us */
	uint64_t debt;   /* time it spent waiting on a lost reply, paid at its next yield */
	uint64_t zclock; /* dead: its own clock, so its loops end */
	uint64_t waiting; /* the held op it waits for (0: none) */
	uint64_t frozen_until; /* its wall clock reads frozen_val until then */
	uint64_t frozen_val;
} client;

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
	client *c;
	int n, cur, over, zombie, ndead;
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
	if (me)
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

/* Forget the records of ops the cluster no longer holds. */
static void held_prune(void)
{
	uint64_t ids[256];
	size_t n = simr_held(ids, 256), k = 0;

	for (size_t i = 0; i < S.nheld; i++) {
		int still = n > 256; /* more than we can list: keep it */

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
	held_prune();
	/* a client waiting for an op no longer held has its reply: it wakes */
	for (int c = 0; c < S.n; c++) {
		int still = 0;

		if (!S.c[c].waiting || S.c[c].state != C_SLEEP)
			continue;
		for (size_t j = 0; j < S.nheld && !still; j++)
			still = S.held[j].id == S.c[c].waiting;
		if (!still)
			S.c[c].wake = S.vclock;
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
		int nready = 0, k;

		for (int i = 0; i < S.n; i++) {
			client *c = &S.c[i];

			if (c->state == C_SLEEP && c->wake <= S.vclock)
				c->state = C_READY;
			if (c->state == C_READY)
				nready++;
			else if (c->state == C_SLEEP && c->wake < soonest)
				soonest = c->wake;
		}
		if (nready) {
			k = (int)prng_below(&S.rng, (uint64_t)nready);
			for (int i = 0; i < S.n; i++)
				if (S.c[i].state == C_READY && k-- == 0) {
					S.cur = i;
					pthread_cond_signal(&S.c[i].cv);
					return;
				}
		}
		if (soonest == UINT64_MAX) {
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

static void die(void)
{
	me->state = C_READY; /* (to trace) */
	sim_trace("dies");
	S.seen[SIM_F_DIE]++;
	S.ndead++;
	for (size_t i = 0; i < S.nheld;)
		if (S.held[i].client == me->idx)
			held_release(i, SIMR_DROP, "of the dead");
		else
			i++;
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
	if (S.vclock < me->frozen_until)
		return me->frozen_val;
	return (uint64_t)((int64_t)(EPOCH_US + S.vclock + me->debt) + me->skew);
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

static const mrtx__sim_hooks hooks = { h_now_us, h_mono_us, h_sleep_us, h_rand_below,
	                               h_random_bytes };

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
	if (S.ndead < S.n - 1 && prng_chance(&S.rng, S.f.rate[SIM_F_DIE])) {
		die();
		return SIMR_DROP;
	}
	if (prng_chance(&S.rng, S.f.rate[SIM_F_CLOCK])) {
		if (prng_below(&S.rng, 2)) {
			uint64_t back = 1 + prng_below(&S.rng, CLOCK_STEP_US);

			me->skew -= (int64_t)back;
			sim_trace("clock back %llu", (unsigned long long)back);
		} else {
			me->frozen_val = h_now_us();
			me->frozen_until = S.vclock + 1 + prng_below(&S.rng, CLOCK_FREEZE_US);
			sim_trace("clock frozen until %llu", (unsigned long long)me->frozen_until);
		}
		S.seen[SIM_F_CLOCK]++;
	}
	if (prng_chance(&S.rng, S.f.rate[SIM_F_STALL])) {
		me->debt += STALL_US; /* paid below, before the op leaves */
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
	free(S.c);
	S.held = NULL;
	S.nheld = S.capheld = 0;
	S.n = nclients;
	S.c = calloc((size_t)nclients, sizeof(*S.c));
	if (!S.c)
		abort();
	S.cur = -1;
	S.over = S.zombie = S.ndead = 0;
	S.vclock = 0;
	S.f = *f;
	memset(S.seen, 0, sizeof(S.seen));
	S.trace = trace;
	S.hash = 0xcbf29ce484222325ull;
	prng_seed(&S.rng, seed);
	for (int i = 0; i < nclients; i++) {
		client *c = &S.c[i];

		c->idx = i;
		c->state = C_READY;
		pthread_cond_init(&c->cv, NULL);
		if (f->skew_ms) {
			uint64_t span = 2 * (uint64_t)f->skew_ms * 1000u + 1;

			c->skew = (int64_t)prng_below(&S.rng, span) - (int64_t)f->skew_ms * 1000;
			S.seen[SIM_F_SKEW] += c->skew != 0;
		}
	}
	sim_trace("start seed %llu clients %d", (unsigned long long)seed, nclients);
	mrtx__sim = &hooks;
	simr_set_hook(&sh);
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
		yield();
	}
	return NULL;
}

void sim_run(void (*body)(int client, void *arg), void *arg)
{
	S.body = body;
	S.arg = arg;
	for (int i = 0; i < S.n; i++)
		if (pthread_create(&S.c[i].th, NULL, client_main, &S.c[i]) != 0)
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

		held_release(0, S.c[h->client].state == C_DEAD || h->orphan ? SIMR_DROP : SIMR_APPLY,
		             "at the end");
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
	pthread_mutex_lock(&S.mu);
	S.zombie = 1;
	for (int i = 0; i < S.n; i++)
		pthread_cond_broadcast(&S.c[i].cv);
	pthread_mutex_unlock(&S.mu);
	for (int i = 0; i < S.n; i++) {
		pthread_join(S.c[i].th, NULL);
		pthread_cond_destroy(&S.c[i].cv);
	}
	simr_set_hook(NULL);
	mrtx__sim = NULL;
	sim_trace("end");
	return S.hash;
}
