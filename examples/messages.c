/*
 * messages.c - the message schema of a private messenger for couples
 * (Between's, the service Haeinsa's transactions were built for), in C:
 * examples/python/messages.py with the mrtx_key_* builders and mrtx_run.
 * Both programs read and write the same store.
 *
 * Sending a message is one transaction over four tables: the message, its
 * copy in each member's inbox, the conversation's counters and each
 * member's clock.  Readers therefore never see a message without its
 * counters, and two senders racing on one conversation never lose an
 * increment: the loser conflicts and mrtx_run runs it again.
 *
 * Tables:
 *
 *   conv   one row per conversation: conv            -> c:members, c:count (u64),
 *                                                       c:last (text of the newest)
 *                                                       unread:<user> (u64)
 *   msg    (conv, rts(seq))                           -> m:from, m:text, m:ts
 *          a conversation's messages, newest first; seq is the conversation's
 *          count, so the order needs no clock
 *   inbox  (user, rts(ts), conv, u64(seq))            -> m:from, m:text
 *          a user's messages of every conversation, newest first
 *   user   user                                       -> u:last_ts (u64)
 *          the user's inbox clock: each new inbox row takes
 *          max(now in microseconds, last_ts + 1), so a user's inbox order is
 *          strict even when the wall clock steps back
 *
 * Counters are 8-byte big-endian integers.
 *
 *   usage: messages STORE send CONV FROM TO TEXT
 *          messages STORE list CONV [N]          newest first
 *          messages STORE inbox USER [N]         newest first, every conversation
 *          messages STORE read CONV USER         USER has read CONV: unread to 0
 *          messages STORE stats CONV             count and unread counters
 *          messages STORE check CONV             counters agree with the rows
 *          messages STORE race CONV THREADS N    THREADS threads send N each
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mrtx.h"

#define MAX_THREADS 64

/* What a command found wrong with its input or the store (not an mrtx
 * error): the message is in the command's payload. */
#define APP_ERROR 1

static uint64_t u64_of(mrtx_bytes v)
{
	uint64_t n = 0;

	for (size_t i = 0; i < v.size && i < 8; i++)
		n = n << 8 | ((const uint8_t *)v.data)[i];
	return n;
}

static void be64(uint8_t out[8], uint64_t n)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(n >> (56 - 8 * i));
}

/* The wall clock in microseconds, or MRTX_EXAMPLE_NOW_US when set (the
 * tests freeze it there: the orders above must not depend on it). */
static uint64_t now_us(void)
{
	const char *frozen = getenv("MRTX_EXAMPLE_NOW_US");
	struct timespec ts;

	if (frozen && *frozen)
		return strtoull(frozen, NULL, 10);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static mrtx_bytes K(const mrtx_key *k)
{
	return MRTX_BYTES(k->buf, k->size);
}

/* The counter at (table, row, family:q): 0 when missing. */
static int get_u64(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                   const char *q, uint64_t *out)
{
	mrtx_bytes v;
	int rc = mrtx_get(txn, table, row, family, MRTX_CSTR(q), &v);

	*out = rc == 0 ? u64_of(v) : 0;
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

static int put_u64(mrtx_txn *txn, const char *table, mrtx_bytes row, const char *family,
                   const char *q, uint64_t n)
{
	uint8_t b[8];

	be64(b, n);
	return mrtx_put(txn, table, row, family, MRTX_CSTR(q), MRTX_BYTES(b, 8));
}

/* ----------------------------------------------------------------- send */

struct send {
	const char *conv, *from, *to, *text;
	uint64_t seq;  /* out: the message's number in conv */
	char err[1200]; /* out, with APP_ERROR */
};

static int do_send(mrtx_txn *txn, void *payload)
{
	struct send *s = payload;
	mrtx_bytes conv = MRTX_CSTR(s->conv), members;
	const char *users[2] = { s->from, s->to };
	char pair[2 * MRTX_MAX_KEY + 2];
	uint64_t unread, now = now_us();
	uint8_t ts[8];
	mrtx_key mk;
	int rc;

	/* members are kept as "a,b", sorted */
	if (strcmp(s->from, s->to) <= 0)
		snprintf(pair, sizeof(pair), "%s,%s", s->from, s->to);
	else
		snprintf(pair, sizeof(pair), "%s,%s", s->to, s->from);
	rc = mrtx_get(txn, "conv", conv, "c", MRTX_CSTR("members"), &members);
	if (rc == MRTX_NOTFOUND)
		rc = mrtx_put(txn, "conv", conv, "c", MRTX_CSTR("members"), MRTX_CSTR(pair));
	else if (rc == 0 && (members.size != strlen(pair) ||
	                     memcmp(members.data, pair, members.size) != 0)) {
		snprintf(s->err, sizeof(s->err), "%s is the conversation of %.*s", s->conv,
		         (int)members.size, (const char *)members.data);
		return APP_ERROR;
	}
	if (rc || (rc = get_u64(txn, "conv", conv, "c", "count", &s->seq)))
		return rc;
	s->seq++;
	if ((rc = put_u64(txn, "conv", conv, "c", "count", s->seq)) ||
	    (rc = mrtx_put(txn, "conv", conv, "c", MRTX_CSTR("last"), MRTX_CSTR(s->text))) ||
	    (rc = get_u64(txn, "conv", conv, "unread", s->to, &unread)) ||
	    (rc = put_u64(txn, "conv", conv, "unread", s->to, unread + 1)))
		return rc;

	mrtx_key_init(&mk);
	mrtx_key_str(&mk, s->conv);
	mrtx_key_rts(&mk, s->seq);
	be64(ts, now);
	if (mk.err)
		return mk.err;
	if ((rc = mrtx_put(txn, "msg", K(&mk), "m", MRTX_CSTR("from"), MRTX_CSTR(s->from))) ||
	    (rc = mrtx_put(txn, "msg", K(&mk), "m", MRTX_CSTR("text"), MRTX_CSTR(s->text))) ||
	    (rc = mrtx_put(txn, "msg", K(&mk), "m", MRTX_CSTR("ts"), MRTX_BYTES(ts, 8))))
		return rc;

	/* one inbox row for each member (one when a user writes to themself) */
	for (int i = 0; i < (strcmp(s->from, s->to) ? 2 : 1); i++) {
		mrtx_bytes user = MRTX_CSTR(users[i]);
		uint64_t last;
		mrtx_key ik;

		if ((rc = get_u64(txn, "user", user, "u", "last_ts", &last)))
			return rc;
		last = now > last + 1 ? now : last + 1;
		if ((rc = put_u64(txn, "user", user, "u", "last_ts", last)))
			return rc;
		mrtx_key_init(&ik);
		mrtx_key_str(&ik, users[i]);
		mrtx_key_rts(&ik, last);
		mrtx_key_str(&ik, s->conv);
		mrtx_key_u64(&ik, s->seq);
		if (ik.err)
			return ik.err;
		if ((rc = mrtx_put(txn, "inbox", K(&ik), "m", MRTX_CSTR("from"),
		                   MRTX_CSTR(s->from))) ||
		    (rc = mrtx_put(txn, "inbox", K(&ik), "m", MRTX_CSTR("text"), MRTX_CSTR(s->text))))
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------- listing */

/* One row of a scan, its cells by qualifier (family "m"). */
struct msg_row {
	mrtx_bytes row, from, text;
};

typedef int (*row_fn)(const struct msg_row *r, void *payload);

/* fn for each row of table that starts with prefix, in order (at most
 * limit rows, 0 = all). */
static int scan_rows(mrtx_txn *txn, const char *table, const mrtx_key *prefix, size_t limit,
                     row_fn fn, void *payload)
{
	struct msg_row r = { { NULL, 0 }, { NULL, 0 }, { NULL, 0 } };
	mrtx_scan_spec spec;
	mrtx_scanner *sc;
	mrtx_key end;
	mrtx_cell c;
	int rc;

	memset(&spec, 0, sizeof(spec));
	if ((rc = mrtx_key_prefix_end(&end, prefix)))
		return rc;
	spec.table = table;
	spec.start = K(prefix);
	spec.end = K(&end);
	spec.limit_rows = limit;
	if ((rc = mrtx_scan_open(txn, &spec, &sc)))
		return rc;
	while ((rc = mrtx_scan_next(sc, &c)) == 0) {
		if (r.row.data && (c.row.size != r.row.size ||
		                   memcmp(c.row.data, r.row.data, r.row.size) != 0)) {
			if ((rc = fn(&r, payload)))
				break;
			memset(&r, 0, sizeof(r));
		}
		r.row = c.row;
		if (c.qualifier.size == 4 && memcmp(c.qualifier.data, "from", 4) == 0)
			r.from = c.value;
		else if (c.qualifier.size == 4 && memcmp(c.qualifier.data, "text", 4) == 0)
			r.text = c.value;
	}
	if (rc == MRTX_NOTFOUND)
		rc = r.row.data ? fn(&r, payload) : 0;
	mrtx_scan_close(sc);
	return rc;
}

/* A row of msg: (conv, rts(seq)); of inbox: (user, rts(ts), conv, u64(seq)). */
static int parse_msg(const struct msg_row *r, int inbox, mrtx_key_part *p, uint8_t *buf)
{
	p[0] = (mrtx_key_part){ .type = MRTX_KEY_BYTES };
	p[1] = (mrtx_key_part){ .type = MRTX_KEY_RTS };
	p[2] = (mrtx_key_part){ .type = MRTX_KEY_BYTES };
	p[3] = (mrtx_key_part){ .type = MRTX_KEY_U64 };
	return mrtx_key_parse(p, inbox ? 4 : 2, r->row, buf, MRTX_MAX_KEY);
}

static int print_msg(const struct msg_row *r, void *payload)
{
	int inbox = *(const int *)payload, rc;
	uint8_t buf[MRTX_MAX_KEY];
	mrtx_key_part p[4];

	if ((rc = parse_msg(r, inbox, p, buf)))
		return rc;
	if (inbox)
		printf("%.*s #%" PRIu64 " ", (int)p[2].bytes.size, (const char *)p[2].bytes.data,
		       p[3].u);
	else
		printf("#%" PRIu64 " ", p[1].u);
	printf("%.*s: %.*s\n", (int)r->from.size, (const char *)r->from.data, (int)r->text.size,
	       (const char *)r->text.data);
	return 0;
}

struct list {
	const char *who; /* the conversation (list) or the user (inbox) */
	int inbox;
	size_t n;
};

static int do_list(mrtx_txn *txn, void *payload)
{
	struct list *l = payload;
	mrtx_key k;

	mrtx_key_init(&k);
	mrtx_key_str(&k, l->who);
	if (k.err)
		return k.err;
	return scan_rows(txn, l->inbox ? "inbox" : "msg", &k, l->n, print_msg, &l->inbox);
}

/* -------------------------------------------------------- read and stats */

struct conv_user {
	const char *conv, *user;
};

static int do_read(mrtx_txn *txn, void *payload)
{
	struct conv_user *r = payload;

	return put_u64(txn, "conv", MRTX_CSTR(r->conv), "unread", r->user, 0);
}

/* The two members of conv ("a,b"), copied into a and b; 0 members when
 * conv has none. */
static int members_of(mrtx_txn *txn, const char *conv, char *a, char *b, size_t size,
                      int *n)
{
	const char *comma;
	mrtx_bytes m;
	int rc;

	*n = 0;
	if ((rc = mrtx_get(txn, "conv", MRTX_CSTR(conv), "c", MRTX_CSTR("members"), &m)))
		return rc == MRTX_NOTFOUND ? 0 : rc;
	comma = memchr(m.data, ',', m.size);
	if (!comma)
		return MRTX_ECORRUPT;
	snprintf(a, size, "%.*s", (int)(comma - (const char *)m.data), (const char *)m.data);
	snprintf(b, size, "%.*s", (int)((const char *)m.data + m.size - comma - 1), comma + 1);
	*n = 2;
	return 0;
}

static int do_stats(mrtx_txn *txn, void *payload)
{
	const char *conv = payload;
	char a[MRTX_MAX_KEY + 1], b[MRTX_MAX_KEY + 1];
	uint64_t count, unread;
	int n, rc;

	if ((rc = members_of(txn, conv, a, b, sizeof(a), &n)))
		return rc;
	if (n == 0) {
		printf("%s: no such conversation\n", conv);
		return 0;
	}
	if ((rc = get_u64(txn, "conv", MRTX_CSTR(conv), "c", "count", &count)))
		return rc;
	printf("count %" PRIu64 "\n", count);
	for (int i = 0; i < 2; i++) {
		const char *u = i == 0 ? a : b;

		if ((rc = get_u64(txn, "conv", MRTX_CSTR(conv), "unread", u, &unread)))
			return rc;
		printf("unread %s %" PRIu64 "\n", u, unread);
	}
	return 0;
}

/* ---------------------------------------------------------------- check */

struct check {
	const char *conv;
	uint64_t count, next; /* next: the seq the next msg row must have */
	uint64_t mine;        /* a member's inbox rows of conv */
	char err[1200];        /* with APP_ERROR */
};

static int check_msg(const struct msg_row *r, void *payload)
{
	struct check *c = payload;
	uint8_t buf[MRTX_MAX_KEY];
	mrtx_key_part p[4];
	int rc;

	if ((rc = parse_msg(r, 0, p, buf)))
		return rc;
	if (p[1].u != c->next) {
		snprintf(c->err, sizeof(c->err), "count %" PRIu64 ", but message #%" PRIu64
		         " where #%" PRIu64 " should be", c->count, p[1].u, c->next);
		return APP_ERROR;
	}
	c->next--;
	return 0;
}

static int count_mine(const struct msg_row *r, void *payload)
{
	struct check *c = payload;
	uint8_t buf[MRTX_MAX_KEY];
	mrtx_key_part p[4];
	int rc;

	if ((rc = parse_msg(r, 1, p, buf)))
		return rc;
	if (p[2].bytes.size == strlen(c->conv) &&
	    memcmp(p[2].bytes.data, c->conv, p[2].bytes.size) == 0)
		c->mine++;
	return 0;
}

/* Every counter agrees with the rows: the messages are count..1, and each
 * member's inbox holds count of them. */
static int do_check(mrtx_txn *txn, void *payload)
{
	struct check *c = payload;
	char a[MRTX_MAX_KEY + 1], b[MRTX_MAX_KEY + 1];
	mrtx_key k;
	int n, rc;

	if ((rc = get_u64(txn, "conv", MRTX_CSTR(c->conv), "c", "count", &c->count)) ||
	    (rc = members_of(txn, c->conv, a, b, sizeof(a), &n)))
		return rc;
	c->next = c->count;
	mrtx_key_init(&k);
	mrtx_key_str(&k, c->conv);
	if (k.err)
		return k.err;
	if ((rc = scan_rows(txn, "msg", &k, 0, check_msg, c)))
		return rc;
	if (c->next != 0) {
		snprintf(c->err, sizeof(c->err), "count %" PRIu64 ", but messages #%" PRIu64
		         "..#1 are missing", c->count, c->next);
		return APP_ERROR;
	}
	for (int i = 0; i < n; i++) {
		const char *u = i == 0 ? a : b;

		c->mine = 0;
		mrtx_key_init(&k);
		mrtx_key_str(&k, u);
		if (k.err)
			return k.err;
		if ((rc = scan_rows(txn, "inbox", &k, 0, count_mine, c)))
			return rc;
		if (c->mine != c->count) {
			snprintf(c->err, sizeof(c->err), "%s has %" PRIu64 " of %" PRIu64
			         " in the inbox", u, c->mine, c->count);
			return APP_ERROR;
		}
	}
	return 0;
}

/* ----------------------------------------------------------------- race */

struct sender {
	pthread_t th;
	mrtx_db *db;
	const char *conv;
	int i, n, rc;
	char err[1200];
};

/* Thread i sends n messages on conv: a to b from even threads, b to a from
 * odd ones.  A conflict with another thread is retried by mrtx_run. */
static void *sender_main(void *arg)
{
	struct sender *t = arg;

	for (int j = 0; j < t->n && t->rc == 0; j++) {
		char text[32];
		struct send s = { t->conv, t->i % 2 ? "b" : "a", t->i % 2 ? "a" : "b", text, 0, "" };

		snprintf(text, sizeof(text), "t%d-%d", t->i, j);
		t->rc = mrtx_run(t->db, do_send, &s, 100);
		if (t->rc)
			snprintf(t->err, sizeof(t->err), "%s", t->rc == APP_ERROR ? s.err :
			         mrtx_errmsg());
	}
	return NULL;
}

/* ----------------------------------------------------------------- main */

static int usage(void)
{
	fprintf(stderr,
	        "usage: messages STORE send CONV FROM TO TEXT\n"
	        "       messages STORE list CONV [N]          newest first\n"
	        "       messages STORE inbox USER [N]         newest first, every conversation\n"
	        "       messages STORE read CONV USER         USER has read CONV: unread to 0\n"
	        "       messages STORE stats CONV             count and unread counters\n"
	        "       messages STORE check CONV             counters agree with the rows\n"
	        "       messages STORE race CONV THREADS N    THREADS threads send N each\n");
	return 2;
}

/* A count argument: a decimal number in lo..hi, or -1. */
static long count_arg(const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v >= lo && v <= hi ? v : -1;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int min, max; /* arguments after the key */
	} arity[] = { { "send", 3, 3 },  { "list", 0, 1 },  { "inbox", 0, 1 }, { "read", 1, 1 },
		      { "stats", 0, 0 }, { "check", 0, 0 }, { "race", 2, 2 } };
	static const char *const c_fams[] = { "c", "unread" }, *const m_fam[] = { "m" },
	                         *const u_fam[] = { "u" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	const char *cmd, *key;
	char *err = NULL;
	struct sender *ts = NULL;
	long n = 0, nthreads = 0;
	size_t i;
	mrtx_db *db;
	int rc;

	if (argc < 4)
		return usage();
	cmd = argv[2];
	key = argv[3];
	for (i = 0; i < sizeof(arity) / sizeof(arity[0]); i++)
		if (!strcmp(cmd, arity[i].name))
			break;
	if (i == sizeof(arity) / sizeof(arity[0]) || argc - 4 < arity[i].min ||
	    argc - 4 > arity[i].max)
		return usage();
	if ((!strcmp(cmd, "list") || !strcmp(cmd, "inbox")) && argc == 5 &&
	    (n = count_arg(argv[4], 0, 1000000)) < 0) {
		fprintf(stderr, "messages: %s: N '%s' is not a number of messages (0: all)\n", cmd,
		        argv[4]);
		return 2;
	}
	if (!strcmp(cmd, "race") && ((nthreads = count_arg(argv[4], 1, MAX_THREADS)) < 0 ||
	                             (n = count_arg(argv[5], 1, 1000000)) < 0)) {
		fprintf(stderr, "messages: race: THREADS is 1 to %d and N 1 or more\n", MAX_THREADS);
		return 2;
	}

	o.durability = MRTX_NOMETASYNC;
	if ((rc = mrtx_open(&db, argv[1], &o))) {
		fprintf(stderr, "messages: open: %s (%s)\n", mrtx_strerror(rc), mrtx_errmsg());
		return 1;
	}
	if ((rc = mrtx_create_table(db, "conv", c_fams, 2)) ||
	    (rc = mrtx_create_table(db, "msg", m_fam, 1)) ||
	    (rc = mrtx_create_table(db, "inbox", m_fam, 1)) ||
	    (rc = mrtx_create_table(db, "user", u_fam, 1))) {
		/* reported below */
	} else if (!strcmp(cmd, "send")) {
		struct send s = { key, argv[4], argv[5], argv[6], 0, "" };

		if (!(rc = mrtx_run(db, do_send, &s, 0)))
			printf("sent #%" PRIu64 "\n", s.seq);
		else if (rc == APP_ERROR)
			err = strdup(s.err);
	} else if (!strcmp(cmd, "read")) {
		struct conv_user r = { key, argv[4] };

		rc = mrtx_run(db, do_read, &r, 0);
	} else if (!strcmp(cmd, "race")) {
		struct check c = { key, 0, 0, 0, "" };

		if (!(ts = calloc((size_t)nthreads, sizeof(*ts))))
			rc = MRTX_ENOMEM;
		for (long t = 0; t < nthreads && !rc; t++) {
			ts[t] = (struct sender){ .db = db, .conv = key, .i = (int)t, .n = (int)n };
			if (pthread_create(&ts[t].th, NULL, sender_main, &ts[t]) != 0) {
				nthreads = t;
				rc = MRTX_ENOMEM;
			}
		}
		for (long t = 0; t < nthreads; t++) {
			pthread_join(ts[t].th, NULL);
			if (ts[t].rc && !err) {
				rc = ts[t].rc;
				err = strdup(ts[t].err);
			}
		}
		free(ts);
		if (!rc && !(rc = mrtx_run(db, do_check, &c, 1)))
			printf("ok: %" PRIu64 " messages\n", c.count);
		else if (rc == APP_ERROR && !err)
			err = strdup(c.err);
	} else if (!strcmp(cmd, "check")) {
		struct check c = { key, 0, 0, 0, "" };

		if (!(rc = mrtx_run(db, do_check, &c, 1)))
			printf("ok: %" PRIu64 " messages\n", c.count);
		else if (rc == APP_ERROR)
			err = strdup(c.err);
	} else if (!strcmp(cmd, "stats")) {
		rc = mrtx_run(db, do_stats, (void *)key, 1);
	} else {
		struct list l = { key, !strcmp(cmd, "inbox"), (size_t)n };

		/* one attempt: a retry would print the lines again */
		rc = mrtx_run(db, do_list, &l, 1);
	}
	if (rc && err)
		fprintf(stderr, "messages: %s: %s\n", cmd, err);
	else if (rc)
		fprintf(stderr, "messages: %s: %s (%s)\n", cmd, mrtx_strerror(rc), mrtx_errmsg());
	free(err);
	mrtx_close(db);
	return rc ? 1 : 0;
}
