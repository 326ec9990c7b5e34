/*
 * datastore.c - hierarchical entities in one row per root, in the style of
 * Google Datastore entity groups / Megastore: a couple's row holds its
 * photos and each photo's comments, so one single-row read returns the
 * whole tree and every change to it is one row's atomic commit.
 *
 * Row key: the couple id.  Family "e".  Qualifiers (mrtx key builders):
 *
 *   str("photo") . 0x00                                  photos' metadata
 *   str("photo") . 0x01 . u64(p)                         photo p -> caption
 *   str("photo") . 0x01 . u64(p) . str("comment") . 0x00 photo p's comments' metadata
 *   str("photo") . 0x01 . u64(p) . str("comment") . 0x01 . u64(c)  comment c -> text
 *
 * A collection's metadata cell (u64 count, u64 next id; big-endian) sorts
 * before its members (0x00 < 0x01), and a photo's comments sort right after
 * the photo, so every collection is one contiguous column range: a column
 * range scan reads a collection, its metadata first.  Each command updates
 * members and metadata in the same transaction, so the counts are exact.
 *
 *   usage: datastore STORE add COUPLE photo CAPTION
 *          datastore STORE add COUPLE comment PHOTO TEXT
 *          datastore STORE get COUPLE photo PHOTO | comment PHOTO COMMENT
 *          datastore STORE delete COUPLE photo PHOTO | comment PHOTO COMMENT
 *          datastore STORE list COUPLE
 *          datastore STORE check COUPLE   (recount every collection)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrtx.h"

#define TABLE "couple"
#define FAM "e"

static const char *prog = "datastore";

static mrtx_bytes K(const mrtx_key *k)
{
	return MRTX_BYTES(k->buf, k->size);
}

/* Qualifier of a collection (meta = 1: its metadata cell) or member. */
static void q_photos(mrtx_key *k)
{
	mrtx_key_init(k);
	mrtx_key_str(k, "photo");
	mrtx_key_fixed(k, MRTX_BYTES("\0", 1));
}

static void q_photo(mrtx_key *k, uint64_t p)
{
	mrtx_key_init(k);
	mrtx_key_str(k, "photo");
	mrtx_key_fixed(k, MRTX_BYTES("\1", 1));
	mrtx_key_u64(k, p);
}

static void q_comments(mrtx_key *k, uint64_t p)
{
	q_photo(k, p);
	mrtx_key_str(k, "comment");
	mrtx_key_fixed(k, MRTX_BYTES("\0", 1));
}

static void q_comment(mrtx_key *k, uint64_t p, uint64_t c)
{
	q_photo(k, p);
	mrtx_key_str(k, "comment");
	mrtx_key_fixed(k, MRTX_BYTES("\1", 1));
	mrtx_key_u64(k, c);
}

struct meta {
	uint64_t count, next;
};

static int meta_get(mrtx_txn *txn, mrtx_bytes row, const mrtx_key *q, struct meta *m)
{
	mrtx_bytes v;
	const uint8_t *b;
	int rc = mrtx_get(txn, TABLE, row, FAM, K(q), &v);

	m->count = 0;
	m->next = 1;
	if (rc == MRTX_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (v.size != 16)
		return MRTX_ECORRUPT;
	b = v.data;
	m->count = m->next = 0;
	for (int i = 0; i < 8; i++) {
		m->count = (m->count << 8) | b[i];
		m->next = (m->next << 8) | b[8 + i];
	}
	return 0;
}

static int meta_put(mrtx_txn *txn, mrtx_bytes row, const mrtx_key *q, const struct meta *m)
{
	uint8_t b[16];

	for (int i = 0; i < 8; i++) {
		b[i] = (uint8_t)(m->count >> (56 - 8 * i));
		b[8 + i] = (uint8_t)(m->next >> (56 - 8 * i));
	}
	return mrtx_put(txn, TABLE, row, FAM, K(q), MRTX_BYTES(b, 16));
}

static int exists(mrtx_txn *txn, mrtx_bytes row, const mrtx_key *q, mrtx_bytes *v)
{
	return mrtx_get(txn, TABLE, row, FAM, K(q), v);
}

/* Every cell of the row in [start, end) (qualifiers); end empty = to the end. */
typedef int (*cell_fn)(mrtx_txn *txn, const mrtx_cell *c, void *payload);

static int scan_cols(mrtx_txn *txn, mrtx_bytes row, const mrtx_key *start,
                     const mrtx_key *end, cell_fn fn, void *payload)
{
	mrtx_scan_spec spec;
	mrtx_scanner *sc;
	mrtx_cell c;
	int rc;

	memset(&spec, 0, sizeof(spec));
	spec.table = TABLE;
	spec.start = row;
	spec.end = MRTX_BYTES(NULL, 0);
	spec.limit_rows = 1;
	spec.family = FAM;
	if (start)
		spec.qual_start = K(start);
	if (end)
		spec.qual_end = K(end);
	if ((rc = mrtx_scan_open(txn, &spec, &sc)))
		return rc;
	while ((rc = mrtx_scan_next(sc, &c)) == 0) {
		if (c.row.size != row.size || memcmp(c.row.data, row.data, row.size) != 0)
			continue;
		if ((rc = fn(txn, &c, payload)))
			break;
	}
	mrtx_scan_close(sc);
	return rc == MRTX_NOTFOUND ? 0 : rc;
}

/* What a qualifier is: 0 photos meta, 1 photo, 2 comments meta, 3 comment. */
static int q_kind(mrtx_bytes q, uint64_t *p, uint64_t *c)
{
	static const mrtx_key_type t[6] = { MRTX_KEY_BYTES, MRTX_KEY_FIXED, MRTX_KEY_U64,
		                            MRTX_KEY_BYTES, MRTX_KEY_FIXED, MRTX_KEY_U64 };
	static const size_t ns[4] = { 2, 3, 5, 6 };
	uint8_t buf[MRTX_MAX_KEY];

	for (int kind = 0; kind < 4; kind++) {
		mrtx_key_part parts[6];

		memset(parts, 0, sizeof(parts));
		for (size_t i = 0; i < ns[kind]; i++) {
			parts[i].type = t[i];
			parts[i].width = 1;
		}
		if (q.size <= sizeof(buf) && mrtx_key_parse(parts, ns[kind], q, buf, sizeof(buf)) == 0) {
			*p = parts[2].u;
			*c = parts[5].u;
			return kind;
		}
	}
	return -1;
}

/* ------------------------------------------------------------- commands */

struct cmd {
	mrtx_bytes row;
	int comment;        /* the command is about a comment */
	uint64_t photo, id;
	const char *text;
	uint64_t out;       /* new id */
	int deleted;        /* comments deleted with a photo */
};

static int do_add(mrtx_txn *txn, void *payload)
{
	struct cmd *c = payload;
	mrtx_key mq, q;
	struct meta m;
	mrtx_bytes v;
	int rc;

	if (c->comment) {
		q_photo(&q, c->photo);
		if ((rc = exists(txn, c->row, &q, &v)))
			return rc;
		q_comments(&mq, c->photo);
	} else {
		q_photos(&mq);
	}
	if ((rc = meta_get(txn, c->row, &mq, &m)))
		return rc;
	c->out = m.next;
	if (c->comment)
		q_comment(&q, c->photo, m.next);
	else
		q_photo(&q, m.next);
	m.count++;
	m.next++;
	if ((rc = mrtx_put(txn, TABLE, c->row, FAM, K(&q), MRTX_CSTR(c->text))))
		return rc;
	return meta_put(txn, c->row, &mq, &m);
}

static int del_cell(mrtx_txn *txn, const mrtx_cell *cell, void *payload)
{
	struct cmd *c = payload;
	uint64_t p, id;

	if (q_kind(cell->qualifier, &p, &id) == 3)
		c->deleted++;
	return mrtx_delete(txn, TABLE, cell->row, FAM, cell->qualifier);
}

static int do_delete(mrtx_txn *txn, void *payload)
{
	struct cmd *c = payload;
	mrtx_key mq, q, end;
	struct meta m;
	mrtx_bytes v;
	int rc;

	c->deleted = 0;
	if (c->comment) {
		q_comment(&q, c->photo, c->id);
		q_comments(&mq, c->photo);
	} else {
		q_photo(&q, c->photo);
		q_photos(&mq);
	}
	if ((rc = exists(txn, c->row, &q, &v)) || (rc = meta_get(txn, c->row, &mq, &m)))
		return rc;
	if (c->comment) {
		rc = mrtx_delete(txn, TABLE, c->row, FAM, K(&q));
	} else {
		/* The photo's whole subtree is one contiguous column range. */
		mrtx_key_prefix_end(&end, &q);
		rc = scan_cols(txn, c->row, &q, &end, del_cell, c);
	}
	if (rc)
		return rc;
	m.count--;
	return meta_put(txn, c->row, &mq, &m);
}

static int do_get(mrtx_txn *txn, void *payload)
{
	struct cmd *c = payload;
	mrtx_bytes v;
	mrtx_key q;
	int rc;

	if (c->comment)
		q_comment(&q, c->photo, c->id);
	else
		q_photo(&q, c->photo);
	if ((rc = exists(txn, c->row, &q, &v)))
		return rc;
	printf("%.*s\n", (int)v.size, (const char *)v.data);
	return 0;
}

static int list_cell(mrtx_txn *txn, const mrtx_cell *cell, void *payload)
{
	const uint8_t *b = cell->value.data;
	uint64_t p, id, n = 0, next = 0;
	int kind = q_kind(cell->qualifier, &p, &id);

	(void)txn;
	(void)payload;
	if ((kind == 0 || kind == 2) && cell->value.size == 16)
		for (int i = 0; i < 8; i++) {
			n = (n << 8) | b[i];
			next = (next << 8) | b[8 + i];
		}
	switch (kind) {
	case 0:
		printf("photos: %" PRIu64 " (next id %" PRIu64 ")\n", n, next);
		break;
	case 1:
		printf("photo %" PRIu64 ": %.*s\n", p, (int)cell->value.size,
		       (const char *)cell->value.data);
		break;
	case 2:
		printf("  comments: %" PRIu64 " (next id %" PRIu64 ")\n", n, next);
		break;
	case 3:
		printf("  comment %" PRIu64 ": %.*s\n", id, (int)cell->value.size,
		       (const char *)cell->value.data);
		break;
	default:
		printf("? unknown qualifier of %zu bytes\n", cell->qualifier.size);
		break;
	}
	return 0;
}

static int do_list(mrtx_txn *txn, void *payload)
{
	struct cmd *c = payload;

	return scan_cols(txn, c->row, NULL, NULL, list_cell, c);
}

/* check: recount each collection and compare with its metadata. */
struct count {
	mrtx_bytes row;
	uint64_t photos, last_photo, comments;
	int have_photo;
	struct meta meta, cmeta;
	int bad;
};

static void count_close_photo(struct count *k)
{
	if (k->have_photo && k->comments != k->cmeta.count) {
		printf("photo %" PRIu64 ": %" PRIu64 " comments, metadata says %" PRIu64 "\n",
		       k->last_photo, k->comments, k->cmeta.count);
		k->bad = 1;
	}
}

static int count_cell(mrtx_txn *txn, const mrtx_cell *cell, void *payload)
{
	struct count *k = payload;
	const uint8_t *b = cell->value.data;
	struct meta m = { 0, 0 };
	uint64_t p, id;
	int kind = q_kind(cell->qualifier, &p, &id);

	(void)txn;
	if ((kind == 0 || kind == 2) && cell->value.size == 16)
		for (int i = 0; i < 8; i++) {
			m.count = (m.count << 8) | b[i];
			m.next = (m.next << 8) | b[8 + i];
		}
	switch (kind) {
	case 0:
		k->meta = m;
		break;
	case 1:
		count_close_photo(k);
		k->photos++;
		k->have_photo = 1;
		k->last_photo = p;
		k->comments = 0;
		k->cmeta = (struct meta){ 0, 1 };
		if (p >= k->meta.next)
			k->bad = 1;
		break;
	case 2:
	case 3:
		if (!k->have_photo || k->last_photo != p) {
			printf("comments of photo %" PRIu64 ", which is gone\n", p);
			k->bad = 1;
		} else if (kind == 2) {
			k->cmeta = m;
		} else if (++k->comments, id >= k->cmeta.next) {
			k->bad = 1;
		}
		break;
	default:
		k->bad = 1;
		break;
	}
	return 0;
}

static int do_check(mrtx_txn *txn, void *payload)
{
	struct count *k = payload;
	mrtx_bytes row = k->row;
	int rc;

	memset(k, 0, sizeof(*k));
	k->row = row;
	if ((rc = scan_cols(txn, row, NULL, NULL, count_cell, k)))
		return rc;
	count_close_photo(k);
	if (k->photos != k->meta.count) {
		printf("%" PRIu64 " photos, metadata says %" PRIu64 "\n", k->photos, k->meta.count);
		k->bad = 1;
	}
	return 0;
}

/* ----------------------------------------------------------------- main */

static int usage(void)
{
	fprintf(stderr,
	        "usage: datastore STORE add COUPLE photo CAPTION\n"
	        "       datastore STORE add COUPLE comment PHOTO TEXT\n"
	        "       datastore STORE get COUPLE photo PHOTO | comment PHOTO COMMENT\n"
	        "       datastore STORE delete COUPLE photo PHOTO | comment PHOTO COMMENT\n"
	        "       datastore STORE list COUPLE\n"
	        "       datastore STORE check COUPLE\n");
	return 2;
}

static int parse_id(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	*out = strtoull(s, &end, 10);
	return *end ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const fam[] = { FAM };
	mrtx_options o = MRTX_OPTIONS_INIT;
	struct cmd c;
	const char *cmd;
	mrtx_db *db;
	int rc, kind_args;

	if (argc < 4)
		return usage();
	memset(&c, 0, sizeof(c));
	cmd = argv[2];
	c.row = MRTX_CSTR(argv[3]);
	if (!strcmp(cmd, "list") || !strcmp(cmd, "check")) {
		if (argc != 4)
			return usage();
	} else {
		if (argc < 6)
			return usage();
		c.comment = !strcmp(argv[4], "comment");
		if (!c.comment && strcmp(argv[4], "photo"))
			return usage();
		/* add photo CAPTION | add comment P TEXT | get/delete photo P | comment P C */
		kind_args = c.comment ? 2 : 1;
		if (argc != 5 + kind_args)
			return usage();
		if (!strcmp(cmd, "add")) {
			if (c.comment && parse_id(argv[5], &c.photo))
				return usage();
			c.text = argv[argc - 1];
		} else if (!strcmp(cmd, "get") || !strcmp(cmd, "delete")) {
			if (parse_id(argv[5], &c.photo) || (c.comment && parse_id(argv[6], &c.id)))
				return usage();
		} else {
			return usage();
		}
	}
	o.durability = MRTX_NOMETASYNC;
	if ((rc = mrtx_open(&db, argv[1], &o)) || (rc = mrtx_create_table(db, TABLE, fam, 1))) {
		fprintf(stderr, "%s: open: %s\n", prog, mrtx_errmsg());
		return 1;
	}
	if (!strcmp(cmd, "add")) {
		if (!(rc = mrtx_run(db, do_add, &c, 20)))
			printf("%s %" PRIu64 "\n", c.comment ? "comment" : "photo", c.out);
	} else if (!strcmp(cmd, "delete")) {
		if (!(rc = mrtx_run(db, do_delete, &c, 20)) && !c.comment)
			printf("deleted photo %" PRIu64 " and %d comments\n", c.photo, c.deleted);
		else if (!rc)
			printf("deleted comment %" PRIu64 "\n", c.id);
	} else if (!strcmp(cmd, "get")) {
		rc = mrtx_run(db, do_get, &c, 1);
	} else if (!strcmp(cmd, "list")) {
		rc = mrtx_run(db, do_list, &c, 1);
	} else {
		struct count k;

		memset(&k, 0, sizeof(k));
		k.row = c.row;
		if (!(rc = mrtx_run(db, do_check, &k, 1))) {
			printf("%s: %" PRIu64 " photos, metadata %s\n", argv[3], k.photos,
			       k.bad ? "WRONG" : "exact");
			rc = k.bad ? MRTX_ECORRUPT : 0;
		}
	}
	if (rc == MRTX_NOTFOUND && c.comment && strcmp(cmd, "add") != 0)
		fprintf(stderr, "%s: %s: %s: comment %" PRIu64 " of photo %" PRIu64
		        " not found\n", prog, cmd, argv[3], c.id, c.photo);
	else if (rc == MRTX_NOTFOUND && (c.comment || strcmp(cmd, "add") != 0))
		fprintf(stderr, "%s: %s: %s: photo %" PRIu64 " not found\n", prog, cmd,
		        argv[3], c.photo);
	else if (rc == MRTX_NOTFOUND)
		fprintf(stderr, "%s: %s: not found\n", prog, cmd);
	else if (rc && rc != MRTX_ECORRUPT)
		fprintf(stderr, "%s: %s: %s (%s)\n", prog, cmd, mrtx_strerror(rc), mrtx_errmsg());
	mrtx_close(db);
	return rc ? 1 : 0;
}
