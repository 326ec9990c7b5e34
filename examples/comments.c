/*
 * comments.c - the product-comment schema of an online shop, built with the
 * mrtx key builders.  Every command is one transaction, so the comment and
 * both of its index rows appear together or not at all.
 *
 * Tables (family "c" everywhere):
 *
 *   comment   (order, product)                   -> user, text, ts
 *   by_user   (user, rts(ts), order, product)    -> ref, text
 *             newest first per user
 *   product   (product, 'c', rts(ts), rts(len), order)  -> ref, user, text
 *             newest first per product, then longest first
 *             (product, 'r', u32 rank)                  -> order
 *             the product's top-10 list, sorted by rank, in the same rows'
 *             neighbourhood: one scan of (product, 'r') reads it
 *   clock     ('u', user), ('p', product)        -> last (u64, big-endian)
 *             the user's and the product's comment clock: a new comment's
 *             ts is max(now in microseconds, each clock's last + 1), so both
 *             orders are strict even when the wall clock steps back or two
 *             comments come in the same microsecond
 *
 *   usage: comments STORE add USER PRODUCT ORDER TEXT
 *          comments STORE by-user USER [N]
 *          comments STORE by-product PRODUCT [N]
 *          comments STORE rank PRODUCT ORDER...    (1..10 orders, replaces the list)
 *          comments STORE top PRODUCT
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mrtx.h"

#define MAX_RANK 10

static const char *prog = "comments";

static int die(const char *step, int rc)
{
	fprintf(stderr, "%s: %s: %s (%s)\n", prog, step, mrtx_strerror(rc), mrtx_errmsg());
	return 1;
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

static void be64(uint8_t out[8], uint64_t n)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(n >> (56 - 8 * i));
}

static mrtx_bytes K(const mrtx_key *k)
{
	return MRTX_BYTES(k->buf, k->size);
}

static void comment_key(mrtx_key *k, const char *order, const char *product)
{
	mrtx_key_init(k);
	mrtx_key_str(k, order);
	mrtx_key_str(k, product);
}

static void product_prefix(mrtx_key *k, const char *product, char kind)
{
	mrtx_key_init(k);
	mrtx_key_str(k, product);
	mrtx_key_fixed(k, MRTX_BYTES(&kind, 1));
}

/* ------------------------------------------------------------------ add */

struct add {
	const char *user, *product, *order, *text;
	uint64_t now; /* the wall clock when the command began */
	uint64_t ts;  /* out: the comment's, from now and the clocks */
};

/* Take a->ts from the user's and the product's clocks (see the top) and
 * advance both to it. */
static int tick(mrtx_txn *txn, struct add *a)
{
	const char *names[2] = { a->user, a->product };
	mrtx_key k[2];
	uint8_t be[8];
	int rc;

	a->ts = a->now;
	for (int i = 0; i < 2; i++) {
		char kind = i ? 'p' : 'u';
		mrtx_bytes v;

		mrtx_key_init(&k[i]);
		mrtx_key_fixed(&k[i], MRTX_BYTES(&kind, 1));
		mrtx_key_str(&k[i], names[i]);
		if (k[i].err)
			return MRTX_ETOOBIG;
		rc = mrtx_get(txn, "clock", K(&k[i]), "c", MRTX_CSTR("last"), &v);
		if (rc == 0 && v.size == 8) {
			uint64_t last = 0;

			for (int b = 0; b < 8; b++)
				last = last << 8 | ((const uint8_t *)v.data)[b];
			if (last + 1 > a->ts)
				a->ts = last + 1;
		} else if (rc != MRTX_NOTFOUND) {
			return rc ? rc : MRTX_ECORRUPT;
		}
	}
	be64(be, a->ts);
	for (int i = 0; i < 2; i++)
		if ((rc = mrtx_put(txn, "clock", K(&k[i]), "c", MRTX_CSTR("last"), MRTX_BYTES(be, 8))))
			return rc;
	return 0;
}

static int put_c(mrtx_txn *txn, const char *table, const mrtx_key *row, const char *q,
                 mrtx_bytes v)
{
	return mrtx_put(txn, table, K(row), "c", MRTX_CSTR(q), v);
}

static int do_add(mrtx_txn *txn, void *payload)
{
	struct add *a = payload;
	mrtx_key ck, uk, pk;
	mrtx_bytes old;
	uint8_t ts[8];
	int rc;

	if ((rc = tick(txn, a)))
		return rc;
	comment_key(&ck, a->order, a->product);
	mrtx_key_init(&uk);
	mrtx_key_str(&uk, a->user);
	mrtx_key_rts(&uk, a->ts);
	mrtx_key_str(&uk, a->order);
	mrtx_key_str(&uk, a->product);
	product_prefix(&pk, a->product, 'c');
	mrtx_key_rts(&pk, a->ts);
	mrtx_key_rts(&pk, strlen(a->text));
	mrtx_key_str(&pk, a->order);
	if (ck.err || uk.err || pk.err)
		return MRTX_ETOOBIG;
	rc = mrtx_get(txn, "comment", K(&ck), "c", MRTX_CSTR("text"), &old);
	if (rc == 0) {
		fprintf(stderr, "%s: add: order %s already has a comment on product %s\n", prog,
		        a->order, a->product);
		return MRTX_EINVAL;
	}
	if (rc != MRTX_NOTFOUND)
		return rc;
	be64(ts, a->ts);
	if ((rc = put_c(txn, "comment", &ck, "user", MRTX_CSTR(a->user))) ||
	    (rc = put_c(txn, "comment", &ck, "text", MRTX_CSTR(a->text))) ||
	    (rc = put_c(txn, "comment", &ck, "ts", MRTX_BYTES(ts, 8))) ||
	    (rc = put_c(txn, "by_user", &uk, "ref", K(&ck))) ||
	    (rc = put_c(txn, "by_user", &uk, "text", MRTX_CSTR(a->text))) ||
	    (rc = put_c(txn, "product", &pk, "ref", K(&ck))) ||
	    (rc = put_c(txn, "product", &pk, "user", MRTX_CSTR(a->user))) ||
	    (rc = put_c(txn, "product", &pk, "text", MRTX_CSTR(a->text))))
		return rc;
	return 0;
}

/* ------------------------------------------------------------- listing */

struct row_cells {
	mrtx_bytes ref, user, text, order;
};

typedef int (*row_fn)(mrtx_bytes row, const struct row_cells *c, void *payload);

/* Scan the rows with `prefix` (at most limit, 0 = all), one callback per row. */
static int scan_prefix(mrtx_txn *txn, const char *table, const mrtx_key *prefix,
                       size_t limit, row_fn fn, void *payload)
{
	mrtx_scan_spec spec;
	mrtx_scanner *sc;
	mrtx_key end;
	struct row_cells rc_ = { { 0 }, { 0 }, { 0 }, { 0 } };
	mrtx_bytes cur = { NULL, 0 };
	mrtx_cell c;
	int rc, more = 1;

	memset(&spec, 0, sizeof(spec));
	mrtx_key_prefix_end(&end, prefix);
	spec.table = table;
	spec.start = K(prefix);
	spec.end = K(&end);
	spec.family = "c";
	spec.limit_rows = limit;
	if ((rc = mrtx_scan_open(txn, &spec, &sc)))
		return rc;
	while (more) {
		rc = mrtx_scan_next(sc, &c);
		if (rc && rc != MRTX_NOTFOUND)
			break;
		more = rc == 0;
		rc = 0;
		if (cur.data && (!more || c.row.size != cur.size ||
		                 memcmp(c.row.data, cur.data, cur.size) != 0)) {
			if ((rc = fn(cur, &rc_, payload)))
				break;
			memset(&rc_, 0, sizeof(rc_));
		}
		if (!more)
			break;
		cur = c.row;
#define IS(q) (c.qualifier.size == strlen(q) && memcmp(c.qualifier.data, q, strlen(q)) == 0)
		if (IS("ref"))
			rc_.ref = c.value;
		else if (IS("user"))
			rc_.user = c.value;
		else if (IS("text"))
			rc_.text = c.value;
		else if (IS("order"))
			rc_.order = c.value;
#undef IS
	}
	mrtx_scan_close(sc);
	return rc;
}

/* Print one comment from its comment-table row key and cells. */
static int print_comment(mrtx_txn *txn, mrtx_bytes ref, mrtx_bytes user, mrtx_bytes text)
{
	mrtx_key_part p[2] = { { .type = MRTX_KEY_BYTES }, { .type = MRTX_KEY_BYTES } };
	uint8_t buf[MRTX_MAX_KEY];
	int rc;

	if ((rc = mrtx_key_parse(p, 2, ref, buf, sizeof(buf))))
		return rc;
	if (!user.data &&
	    (rc = mrtx_get(txn, "comment", ref, "c", MRTX_CSTR("user"), &user)))
		return rc;
	printf("order=%.*s product=%.*s user=%.*s: %.*s\n", (int)p[0].bytes.size,
	       (const char *)p[0].bytes.data, (int)p[1].bytes.size,
	       (const char *)p[1].bytes.data, (int)user.size, (const char *)user.data,
	       (int)text.size, (const char *)text.data);
	return 0;
}

static int print_row(mrtx_bytes row, const struct row_cells *c, void *payload)
{
	(void)row;
	return print_comment(payload, c->ref, c->user, c->text);
}

struct list {
	int by_user;
	const char *who;
	size_t n;
};

static int do_list(mrtx_txn *txn, void *payload)
{
	struct list *l = payload;
	mrtx_key k;

	if (l->by_user) {
		mrtx_key_init(&k);
		mrtx_key_str(&k, l->who);
	} else {
		product_prefix(&k, l->who, 'c');
	}
	if (k.err)
		return k.err;
	return scan_prefix(txn, l->by_user ? "by_user" : "product", &k, l->n, print_row, txn);
}

/* ---------------------------------------------------------------- ranks */

struct rank {
	const char *product;
	char **orders;
	int n;
	mrtx_bytes old[64];
	size_t nold;
};

static int collect_row(mrtx_bytes row, const struct row_cells *c, void *payload)
{
	struct rank *r = payload;

	(void)c;
	if (r->nold < 64)
		r->old[r->nold++] = row;
	return 0;
}

static int do_rank(mrtx_txn *txn, void *payload)
{
	struct rank *r = payload;
	mrtx_key k;
	int rc;

	r->nold = 0;
	product_prefix(&k, r->product, 'r');
	if ((rc = scan_prefix(txn, "product", &k, 0, collect_row, r)))
		return rc;
	for (size_t i = 0; i < r->nold; i++)
		if ((rc = mrtx_delete_row(txn, "product", r->old[i])))
			return rc;
	for (int i = 0; i < r->n; i++) {
		mrtx_key ck;
		mrtx_bytes v;

		comment_key(&ck, r->orders[i], r->product);
		rc = mrtx_get(txn, "comment", K(&ck), "c", MRTX_CSTR("text"), &v);
		if (rc == MRTX_NOTFOUND) {
			fprintf(stderr, "%s: rank: order %s has no comment on product %s; the list "
			        "is unchanged\n", prog, r->orders[i], r->product);
			return MRTX_EINVAL;
		}
		if (rc)
			return rc;
		product_prefix(&k, r->product, 'r');
		mrtx_key_u32(&k, (uint32_t)i + 1);
		if ((rc = put_c(txn, "product", &k, "order", MRTX_CSTR(r->orders[i]))))
			return rc;
	}
	return 0;
}

struct top {
	const char *product;
};

static int print_rank(mrtx_bytes row, const struct row_cells *c, void *payload)
{
	mrtx_key_part p[3] = { { .type = MRTX_KEY_BYTES }, { .type = MRTX_KEY_FIXED, .width = 1 },
		               { .type = MRTX_KEY_U32 } };
	mrtx_txn *txn = payload;
	uint8_t buf[MRTX_MAX_KEY];
	mrtx_bytes text;
	mrtx_key ck;
	char order[MRTX_MAX_KEY + 1];
	int rc;

	if ((rc = mrtx_key_parse(p, 3, row, buf, sizeof(buf))) || !c->order.data)
		return rc ? rc : MRTX_ECORRUPT;
	snprintf(order, sizeof(order), "%.*s", (int)c->order.size, (const char *)c->order.data);
	mrtx_key_init(&ck);
	mrtx_key_str(&ck, order);
	mrtx_key_bytes(&ck, p[0].bytes);
	if ((rc = mrtx_get(txn, "comment", K(&ck), "c", MRTX_CSTR("text"), &text)))
		return rc;
	printf("%" PRIu64 " ", p[2].u);
	return print_comment(txn, K(&ck), MRTX_BYTES(NULL, 0), text);
}

static int do_top(mrtx_txn *txn, void *payload)
{
	struct top *t = payload;
	mrtx_key k;

	product_prefix(&k, t->product, 'r');
	return scan_prefix(txn, "product", &k, 0, print_rank, txn);
}

/* ----------------------------------------------------------------- main */

static int usage(void)
{
	fprintf(stderr,
	        "usage: comments STORE add USER PRODUCT ORDER TEXT\n"
	        "       comments STORE by-user USER [N]\n"
	        "       comments STORE by-product PRODUCT [N]\n"
	        "       comments STORE rank PRODUCT ORDER...   (1..%d orders)\n"
	        "       comments STORE top PRODUCT\n", MAX_RANK);
	return 2;
}

int main(int argc, char **argv)
{
	static const char *const fam[] = { "c" };
	static const char *const tables[] = { "comment", "by_user", "product", "clock" };
	mrtx_options o = MRTX_OPTIONS_INIT;
	const char *cmd, *step;
	mrtx_db *db;
	int rc, status = 0;

	if (argc < 4)
		return usage();
	cmd = argv[2];
	if (!strcmp(cmd, "add") ? argc != 7 : !strcmp(cmd, "rank") ? argc < 5 || argc > 4 + MAX_RANK :
	    !strcmp(cmd, "top") ? argc != 4 :
	    (!strcmp(cmd, "by-user") || !strcmp(cmd, "by-product")) ? argc > 5 : 1)
		return usage();
	if (!strcmp(cmd, "rank"))
		for (int i = 5; i < argc; i++)
			for (int j = 4; j < i; j++)
				if (!strcmp(argv[i], argv[j])) {
					fprintf(stderr, "%s: rank: order %s listed twice\n", prog, argv[i]);
					return 2;
				}
	o.durability = MRTX_NOMETASYNC;
	if ((rc = mrtx_open(&db, argv[1], &o)))
		return die("open", rc);
	step = "create-table";
	for (int i = 0; i < 4 && rc == 0; i++)
		rc = mrtx_create_table(db, tables[i], fam, 1);
	if (rc) {
		/* reported below */
	} else if (!strcmp(cmd, "add")) {
		struct add a = { argv[3], argv[4], argv[5], argv[6], now_us(), 0 };

		step = "add";
		if (!(rc = mrtx_run(db, do_add, &a, 20)))
			printf("added comment of %s on %s (order %s)\n", a.user, a.product, a.order);
	} else if (!strcmp(cmd, "rank")) {
		struct rank r = { argv[3], argv + 4, argc - 4, { { 0 } }, 0 };

		step = "rank";
		if (!(rc = mrtx_run(db, do_rank, &r, 20)))
			printf("ranked %d comments on %s\n", r.n, r.product);
	} else if (!strcmp(cmd, "top")) {
		struct top t = { argv[3] };

		step = "top";
		rc = mrtx_run(db, do_top, &t, 1);
	} else {
		long n = argc > 4 ? strtol(argv[4], NULL, 10) : 10;
		struct list l = { cmd[3] == 'u', argv[3], n > 0 ? (size_t)n : 10 };

		step = cmd;
		/* One attempt: a retry would print the lines again. */
		rc = mrtx_run(db, do_list, &l, 1);
	}
	/* MRTX_EINVAL from add/rank was explained where it was detected. */
	if (rc)
		status = rc == MRTX_EINVAL && strcmp(step, "create-table") ? 1 : die(step, rc);
	mrtx_close(db);
	return status;
}
