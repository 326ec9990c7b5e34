/*
 * chaos_work.c - what each chaos child process does (see chaos_work.h).
 *
 * Every child opens the store itself (LMDB forbids sharing an environment
 * across fork), arms its failpoint with mrtx_failpoints_set after the open
 * (MRTX_FAILPOINTS is read once per process and the once-flag is inherited
 * across fork), then loops until SIGTERM.  The parent SIGKILLs writers at
 * random; failpoints make them exit (status 99) or SIGKILL themselves.
 */
#include "chaos_work.h"
#include "txn/txn_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

const char *const chaos_bank_tables[2] = { "bank_a", "bank_b" };
const char *const chaos_mirror_table = "bank_mirror";
const char *const chaos_append_tables[2] = { "append_a", "append_b" };

static volatile sig_atomic_t stop_flag;
static uint64_t rng_state;
static int log_fd = -1;

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return n ? (uint32_t)(rng_state % n) : 0;
}

void bank_account(int i, const char **table, char *row, size_t rowsz, char *qual,
                  size_t qualsz)
{
	*table = chaos_bank_tables[i % 2];
	snprintf(row, rowsz, "row%d", i / 4);
	snprintf(qual, qualsz, "acct%02d", i);
}

void append_key(uint32_t k, const char **table, char *row, size_t rowsz)
{
	*table = chaos_append_tables[k % 2];
	snprintf(row, rowsz, "k%08" PRIu32, k);
}

int chaos_open(const chaos_cfg *cfg, mrtx_db **db)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx__knobs k = { cfg->unbatched, cfg->two_phase, 0 };

	o.durability = MRTX_NOSYNC; /* a killed process loses nothing with nosync */
	o.lock_ttl_ms = 2000;
	o.lock_wait_ms = 20;
	o.create = MRTX_CREATE_IF_MISSING; /* (the run makes its own store) */
	return mrtx__open_knobs(db, cfg->store, &o, &k);
}

/* ------------------------------------------------------------ the log */

typedef struct sbuf {
	char *p;
	size_t n, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
	if (n > SIZE_MAX / 4 || b->n > SIZE_MAX / 4)
		_exit(4); /* cannot happen; bounds the sizes for the compiler */
	if (b->n + n + 2 > b->cap) {
		size_t cap = (b->cap ? b->cap : 256) * 2 + n;
		char *q = realloc(b->p, cap);

		if (!q)
			_exit(4);
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* One record = one write(2) of one line. */
static void log_line(sbuf *b)
{
	size_t off = 0;

	sb_add(b, "\n", 1);
	while (off < b->n) {
		ssize_t w = write(log_fd, b->p + off, b->n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(4);
		off += (size_t)w;
	}
	b->n = 0;
}

/*
 * A distributed store that timed out (an OSD down, a PG below min_size for
 * a moment) is unavailable, not wrong: the failure is logged as N (no
 * anomaly), and a write's outcome stays unknown, as for MRTX_EUNKNOWN.
 * Any other error is unexpected (E, an anomaly).
 */
static int unavailable(int rc)
{
	return rc == MRTX_ESTORE && strstr(mrtx_errmsg(), "rados:") &&
	       strstr(mrtx_errmsg(), "timed out");
}

static void log_error(sbuf *b, int rc, const char *what)
{
	b->n = 0;
	sb_printf(b, "%c %d %s: %s: %s", unavailable(rc) ? 'N' : 'E', rc, what,
	          mrtx_strerror(rc), mrtx_errmsg());
	log_line(b);
}

static int retryable(int rc)
{
	return rc == MRTX_CONFLICT || rc == MRTX_ELOCKED;
}

/* ------------------------------------------------------------ bank */

static int get_long(mrtx_txn *txn, int acct, long *out)
{
	char row[32], qual[32], buf[32];
	const char *table;
	mrtx_bytes v;
	int rc;

	bank_account(acct, &table, row, sizeof(row), qual, sizeof(qual));
	if ((rc = mrtx_get(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR(qual), &v)))
		return rc;
	if (v.size == 0 || v.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, v.data, v.size);
	buf[v.size] = 0;
	*out = strtol(buf, NULL, 10);
	return 0;
}

static int put_long(mrtx_txn *txn, int acct, long val)
{
	char row[32], qual[32], buf[32];
	const char *table;

	bank_account(acct, &table, row, sizeof(row), qual, sizeof(qual));
	snprintf(buf, sizeof(buf), "%ld", val);
	return mrtx_put(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR(qual),
	                MRTX_CSTR(buf));
}

typedef struct xfer {
	int from, to;
	long amount;
} xfer;

static int xfer_fn(mrtx_txn *txn, void *payload)
{
	const xfer *x = payload;
	long a, b;
	int rc;

	if ((rc = get_long(txn, x->from, &a)) || (rc = get_long(txn, x->to, &b)))
		return rc;
	if (a < x->amount)
		return 0; /* would overdraw: commit the reads only */
	if ((rc = put_long(txn, x->from, a - x->amount)) ||
	    (rc = put_long(txn, x->to, b + x->amount)))
		return rc;
	return 0;
}

int chaos_mirror_read(mrtx_txn *txn, int k, int *torn)
{
	mrtx_bytes v[2];
	int rc[2];
	char row[16];

	snprintf(row, sizeof(row), "m%d", k);
	for (int i = 0; i < 2; i++) {
		rc[i] = mrtx_get(txn, chaos_mirror_table, MRTX_CSTR(row), CHAOS_FAMILY,
		                 MRTX_CSTR(i ? "b" : "a"), &v[i]);
		if (rc[i] && rc[i] != MRTX_NOTFOUND)
			return rc[i];
	}
	*torn = rc[0] != rc[1] || (rc[0] == 0 && (v[0].size != v[1].size ||
	                                          memcmp(v[0].data, v[1].data, v[0].size) != 0));
	return 0;
}

/* A blind one-row write: no read, so the commit is one conditional write
 * checked inside the store (txn/commit_plan.c: plan_blind). */
static int mirror_write(mrtx_db *db, uint32_t inc, uint32_t seq)
{
	char row[16], tok[32];
	mrtx_txn *txn;
	int rc;

	snprintf(row, sizeof(row), "m%d", (int)rnd(BANK_MIRRORS));
	snprintf(tok, sizeof(tok), "%" PRIu32 ".%" PRIu32, inc, seq);
	if ((rc = mrtx_begin(db, &txn)))
		return rc;
	if ((rc = mrtx_put(txn, chaos_mirror_table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR("a"),
	                   MRTX_CSTR(tok))) ||
	    (rc = mrtx_put(txn, chaos_mirror_table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR("b"),
	                   MRTX_CSTR(tok)))) {
		mrtx_abort(txn);
		return rc;
	}
	return mrtx_commit(txn);
}

static void bank_writer_step(mrtx_db *db, uint32_t inc, uint32_t seq, sbuf *b)
{
	xfer x;
	int rc, mirror = rnd(4) == 0;

	x.from = (int)rnd(BANK_ACCOUNTS);
	x.to = (int)((x.from + 1 + rnd(BANK_ACCOUNTS - 1)) % BANK_ACCOUNTS);
	x.amount = 1 + (long)rnd(30);
	sb_printf(b, "I %" PRIu32, seq);
	log_line(b);
	rc = mirror ? mirror_write(db, inc, seq) : mrtx_run(db, xfer_fn, &x, 4);
	if (rc == 0)
		sb_printf(b, "O %" PRIu32, seq);
	else if (retryable(rc) || rc == MRTX_EBADTXN)
		sb_printf(b, "F %" PRIu32, seq);
	else {
		if (rc != MRTX_EUNKNOWN)
			log_error(b, rc, mirror ? "mirror write" : "bank transfer");
		sb_printf(b, "U %" PRIu32, seq);
	}
	log_line(b);
}

/* Sum every account, by point reads or (every other audit) by scans. */
static int audit_once(mrtx_txn *txn, int by_scan, long *total, long *min, int *n)
{
	int rc = 0;

	*total = 0;
	*min = 0;
	*n = 0;
	if (!by_scan) {
		for (int i = 0; i < BANK_ACCOUNTS; i++) {
			long v;

			if ((rc = get_long(txn, i, &v)))
				return rc;
			*total += v;
			*min = *n ? (v < *min ? v : *min) : v;
			(*n)++;
		}
		return 0;
	}
	for (int t = 0; t < 2 && rc == 0; t++) {
		mrtx_scan_spec spec;
		mrtx_scanner *s;
		mrtx_cell c;

		memset(&spec, 0, sizeof(spec));
		spec.table = chaos_bank_tables[t];
		spec.family = CHAOS_FAMILY;
		spec.reverse = (int)rnd(2);
		if ((rc = mrtx_scan_open(txn, &spec, &s)))
			return rc;
		while ((rc = mrtx_scan_next(s, &c)) == 0) {
			char buf[32];
			long v;

			if (c.value.size == 0 || c.value.size >= sizeof(buf)) {
				rc = MRTX_ECORRUPT;
				break;
			}
			memcpy(buf, c.value.data, c.value.size);
			buf[c.value.size] = 0;
			v = strtol(buf, NULL, 10);
			*total += v;
			*min = *n ? (v < *min ? v : *min) : v;
			(*n)++;
		}
		mrtx_scan_close(s);
		if (rc == MRTX_NOTFOUND)
			rc = 0;
	}
	return rc;
}

static void bank_auditor_step(mrtx_db *db, sbuf *b, int by_scan)
{
	mrtx_txn *txn;
	long total, min;
	int rc, n, mk = 0, torn = 0;

	if ((rc = mrtx_begin(db, &txn))) {
		log_error(b, rc, "audit begin");
		return;
	}
	if ((rc = audit_once(txn, by_scan, &total, &min, &n)) ||
	    (rc = chaos_mirror_read(txn, mk = (int)rnd(BANK_MIRRORS), &torn))) {
		mrtx_abort(txn);
		if (!retryable(rc))
			log_error(b, rc, by_scan ? "audit scan" : "audit read");
		return;
	}
	/* What the transaction saw before its commit.  Reads come from one
	 * snapshot (DESIGN §9: LMDB's view, RADOS's live snapshot), so a
	 * wrong view is an anomaly (chaos_check.c); on a store whose reads
	 * were optimistic it would only be counted, its commit bound to
	 * fail. */
	if (total != BANK_TOTAL || min < 0 || n != BANK_ACCOUNTS || torn) {
		sb_printf(b, "P %ld %ld %d %d", total, min, n, torn);
		log_line(b);
	}
	if ((rc = mrtx_commit(txn))) {
		if (!retryable(rc))
			log_error(b, rc, "audit commit");
		return;
	}
	/* a committed read-only transaction saw one consistent state */
	if (torn) {
		char what[64];

		snprintf(what, sizeof(what), "audit: mirror row m%d torn (cells a, b differ)", mk);
		log_error(b, MRTX_ECORRUPT, what);
	}
	sb_printf(b, "A %ld %ld %d", total, min, n);
	log_line(b);
}

/* ------------------------------------------------------------ append */

typedef struct amop {
	uint32_t key;
	int append;
} amop;

static void append_step(mrtx_db *db, const chaos_cfg *cfg, uint32_t inc, uint32_t seq,
                        sbuf *b, sbuf *reads)
{
	uint64_t base = __atomic_fetch_add(cfg->shared_counter, 1, __ATOMIC_RELAXED) /
	                APPEND_TXNS_PER_SHIFT;
	uint32_t keys[APPEND_WINDOW];
	amop mops[APPEND_WINDOW];
	/* one transaction in four only reads (2-4 keys): on LMDB it commits
	 * from its snapshot without validation, and the history check must
	 * still find it serializable (G-single and friends, histcheck.c) */
	int ro = rnd(4) == 0, nap = ro ? 0 : 1 + (int)rnd(4),
	    nrd = ro ? 2 + (int)rnd(3) : (int)rnd(3), n = nap + nrd, rc = 0;
	char val[32], row[32];
	mrtx_txn *txn = NULL;
	const char *table;

	for (int i = 0; i < APPEND_WINDOW; i++)
		keys[i] = (uint32_t)base + (uint32_t)i;
	for (int i = APPEND_WINDOW - 1; i > 0; i--) {
		int j = (int)rnd((uint32_t)i + 1);
		uint32_t t = keys[i];

		keys[i] = keys[j];
		keys[j] = t;
	}
	sb_printf(b, "I %" PRIu32, seq);
	for (int i = 0; i < n; i++) {
		mops[i].key = keys[i];
		mops[i].append = i < nap;
		if (mops[i].append)
			sb_printf(b, " %" PRIu32, keys[i]);
	}
	log_line(b);
	/* run the micro-operations in random order */
	for (int i = n - 1; i > 0; i--) {
		int j = (int)rnd((uint32_t)i + 1);
		amop t = mops[i];

		mops[i] = mops[j];
		mops[j] = t;
	}
	snprintf(val, sizeof(val), "%" PRIu32 ".%" PRIu32, inc, seq);
	reads->n = 0;
	if ((rc = mrtx_begin(db, &txn)))
		goto failed;
	for (int i = 0; i < n; i++) {
		mrtx_bytes v = MRTX_BYTES("", 0);
		sbuf nv = { NULL, 0, 0 };

		append_key(mops[i].key, &table, row, sizeof(row));
		rc = mrtx_get(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR("list"), &v);
		if (rc == MRTX_NOTFOUND)
			rc = 0, v = MRTX_BYTES("", 0);
		if (rc)
			goto failed;
		if (!mops[i].append) {
			sb_printf(reads, " %" PRIu32 "=", mops[i].key);
			for (size_t j = 0; j < v.size; j++) {
				char ch = ((const char *)v.data)[j];

				sb_add(reads, ch == ' ' ? "," : &ch, 1);
			}
			continue;
		}
		if (v.size)
			sb_add(&nv, v.data, v.size), sb_add(&nv, " ", 1);
		sb_add(&nv, val, strlen(val));
		rc = mrtx_put(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR("list"),
		              MRTX_BYTES(nv.p, nv.n));
		free(nv.p);
		if (rc)
			goto failed;
	}
	rc = mrtx_commit(txn);
	txn = NULL;
	if (rc == 0) {
		sb_printf(b, "O %" PRIu32, seq);
		if (reads->n)
			sb_add(b, reads->p, reads->n);
	} else if (retryable(rc) || rc == MRTX_EBADTXN) {
		sb_printf(b, "F %" PRIu32, seq);
	} else {
		if (rc != MRTX_EUNKNOWN)
			log_error(b, rc, "append commit");
		sb_printf(b, "U %" PRIu32, seq);
	}
	log_line(b);
	return;
failed:
	/* before commit: nothing was written */
	mrtx_abort(txn);
	if (!retryable(rc) && rc != MRTX_EBADTXN)
		log_error(b, rc, "append read/put");
	sb_printf(b, "F %" PRIu32, seq);
	log_line(b);
}

/* ------------------------------------------------------------ main loop */

int chaos_child(const chaos_cfg *cfg, int role, uint32_t incarnation, const char *armspec)
{
	char path[4200];
	sbuf b = { NULL, 0, 0 }, reads = { NULL, 0, 0 };
	mrtx_db *db;
	struct sigaction sa;
	sigset_t term;
	uint32_t seq = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &term, NULL); /* the parent forked with it blocked */
	rng_state = ((uint64_t)incarnation << 32) ^ (uint64_t)getpid() ^
	            ((uint64_t)cfg->seed << 16) ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
	snprintf(path, sizeof(path), "%s/h-%" PRIu32 ".log", cfg->logdir, incarnation);
	if ((log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return 3;
	/* a store that is unreachable for a while (an OSD restarting under a
	 * RADOS store, which takes as long as the cluster takes to peer) is
	 * opened again, as a client would, until the run ends; still
	 * unreachable then, the writer reports it (an anomaly) */
	while ((rc = chaos_open(cfg, &db)) == MRTX_ESTORE && !stop_flag)
		sleep(1);
	if (rc == MRTX_ESTORE && stop_flag)
		rc = chaos_open(cfg, &db); /* (the stop's signal may have cut it short) */
	if (rc) {
		log_error(&b, rc, "open");
		return 3;
	}
	if (cfg->ready)
		__atomic_store_n(&cfg->ready[cfg->slot], incarnation, __ATOMIC_RELEASE);
	if (armspec && *armspec) {
		if ((rc = mrtx_failpoints_set(armspec))) {
			log_error(&b, rc, "failpoints");
			return 3;
		}
		sb_printf(&b, "X %s", armspec);
		log_line(&b);
	}
	while (!stop_flag) {
		seq++;
		if (cfg->workload == CHAOS_APPEND)
			append_step(db, cfg, incarnation, seq, &b, &reads);
		else if (role == ROLE_AUDITOR)
			bank_auditor_step(db, &b, (int)(seq & 1));
		else
			bank_writer_step(db, incarnation, seq, &b);
		if (cfg->progress)
			__atomic_fetch_add(&cfg->progress[cfg->slot], 1, __ATOMIC_RELEASE);
	}
	mrtx_failpoints_set(NULL);
	mrtx_close(db);
	free(b.p);
	free(reads.p);
	close(log_fd);
	return 0;
}
