/*
 * test_index.c - secondary indexes kept atomically (mrtx_create_index,
 * index maintenance in mrtx_put / mrtx_delete / mrtx_delete_row, lookups
 * and range scans), including writer processes killed at random: after
 * recovery, every index entry points to an existing source value and every
 * source value has its entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mrtx.h"
#include "txn/admin_test.h"
#include "storage/store.h"
#include "txn/admin.h"
#include "txn/index.h"
#include "testutil.h"

#define NROWS 20
#define NVALUES 6

static const mrtx_column name_col = { "p", { "name", 4 } };

static mrtx_index_spec email_spec(void)
{
	mrtx_index_spec s = { MRTX_INDEX_SPEC_VERSION, "by_email", "users", "p",
		              { "email", 5 }, "users_by_email", &name_col, 1 };
	return s;
}

static mrtx_db *setup(char **path)
{
	mrtx_db *db = tu_open_fresh("index", path, NULL);
	mrtx_index_spec s = email_spec();

	assert_non_null(db);
	assert_int_equal(tu_table(db, "users", "p", "x", NULL), 0);
	assert_int_equal(mrtx_create_index(db, &s), 0);
	return db;
}

/* ---- collecting hits ---- */

struct hits {
	int n;
	char rows[64][32];
	char values[64][32];
	char names[64][32]; /* "" when no clustered copy */
};

static void copy_str(char *dst, mrtx_bytes b)
{
	size_t n = b.size < 31 ? b.size : 31;

	memcpy(dst, b.data, n);
	dst[n] = '\0';
}

static int collect(const mrtx_index_hit *h, void *payload)
{
	struct hits *hs = payload;

	if (hs->n >= 64)
		return -1;
	copy_str(hs->rows[hs->n], h->row);
	copy_str(hs->values[hs->n], h->value);
	hs->names[hs->n][0] = '\0';
	for (size_t i = 0; i < h->ncells; i++)
		if (strcmp(h->cells[i].family, "p") == 0 && h->cells[i].qualifier.size == 4 &&
		    memcmp(h->cells[i].qualifier.data, "name", 4) == 0)
			copy_str(hs->names[hs->n], h->cells[i].value);
	hs->n++;
	return 0;
}

static struct hits lookup_in(mrtx_db *db, const char *index, const char *value)
{
	struct hits hs = { 0 };
	mrtx_txn *txn;

	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_index_lookup(txn, index, MRTX_CSTR(value), collect, &hs), 0);
	mrtx_abort(txn);
	return hs;
}

static struct hits lookup(mrtx_db *db, const char *value)
{
	return lookup_in(db, "by_email", value);
}

static struct hits scan_all(mrtx_db *db, int reverse, size_t limit)
{
	struct hits hs = { 0 };
	mrtx_txn *txn;

	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_index_scan(txn, "by_email", MRTX_BYTES(NULL, 0),
	                                 MRTX_BYTES(NULL, 0), reverse, limit, collect, &hs), 0);
	mrtx_abort(txn);
	return hs;
}

static int put2(mrtx_db *db, const char *row, const char *q, const char *v)
{
	return tu_put(db, "users", MRTX_CSTR(row), "p", MRTX_CSTR(q), MRTX_CSTR(v));
}

/* ---- the invariant ---- */

struct src {
	int n;
	char rows[NROWS * 2][32], values[NROWS * 2][32];
};

/*
 * A conflict the check itself may meet.  On LMDB nothing else runs while the
 * check does, so a conflict is a failure.  On RADOS a killed writer's requests
 * that had reached an OSD may still be applied after its process is gone (a
 * prewrite guarded on the row's state, or the commit or release of a lock it
 * held): the check can then see a row change under it and be refused at
 * commit, which is the protocol doing its job, so the check starts again.
 */
static int check_conflict(int rc)
{
	return tu_rados() && (rc == MRTX_CONFLICT || rc == MRTX_EBADTXN);
}

#define CHECK_RC(rc, want)                                                                 \
	do {                                                                               \
		int rc_ = (rc);                                                            \
		if (rc_ != (want) && check_conflict(rc_)) {                                \
			mrtx_abort(txn);                                                   \
			return -1;                                                         \
		}                                                                          \
		assert_int_equal(rc_, (want));                                             \
	} while (0)

/* One attempt: the number of entries, or -1 if a late write got in the way. */
static int check_once(mrtx_db *db)
{
	mrtx_scan_spec spec = { "users", { NULL, 0 }, { NULL, 0 }, "p", { "email", 5 },
		                { "email\0", 6 }, 0, 0 };
	static struct src s;
	static struct hits all;
	mrtx_scanner *sc;
	mrtx_txn *txn;
	mrtx_cell c;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(&all, 0, sizeof(all));
	assert_int_equal(mrtx_begin(db, &txn), 0);
	CHECK_RC(mrtx_scan_open(txn, &spec, &sc), 0);
	while ((rc = mrtx_scan_next(sc, &c)) == 0) {
		assert_true(s.n < NROWS * 2);
		copy_str(s.rows[s.n], c.row);
		copy_str(s.values[s.n], c.value);
		s.n++;
	}
	mrtx_scan_close(sc);
	CHECK_RC(rc, MRTX_NOTFOUND);
	CHECK_RC(mrtx_index_scan(txn, "by_email", MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0), 0, 0,
	                         collect, &all),
	         0);
	for (int i = 0; i < s.n; i++) {
		struct hits hs = { 0 };
		mrtx_bytes name;
		char want[32] = "";
		int found = 0;

		CHECK_RC(mrtx_index_lookup(txn, "by_email", MRTX_CSTR(s.values[i]), collect, &hs),
		         0);
		rc = mrtx_get(txn, "users", MRTX_CSTR(s.rows[i]), "p", MRTX_CSTR("name"), &name);
		if (rc == 0)
			copy_str(want, name);
		else
			CHECK_RC(rc, MRTX_NOTFOUND);
		for (int j = 0; j < hs.n; j++)
			if (strcmp(hs.rows[j], s.rows[i]) == 0) {
				found = 1;
				if (strcmp(hs.names[j], want) != 0)
					fail_msg("row %s: index copy of name '%s', source '%s'", s.rows[i],
					         hs.names[j], want);
			}
		if (!found)
			fail_msg("row %s value %s has no index entry", s.rows[i], s.values[i]);
	}
	for (int j = 0; j < all.n; j++) {
		mrtx_bytes v;

		rc = mrtx_get(txn, "users", MRTX_CSTR(all.rows[j]), "p", MRTX_CSTR("email"), &v);
		if (rc != 0 && check_conflict(rc)) {
			mrtx_abort(txn);
			return -1;
		}
		if (rc || v.size != strlen(all.values[j]) ||
		    memcmp(v.data, all.values[j], v.size) != 0)
			fail_msg("orphan index entry (%s, %s): source rc %d", all.values[j],
			         all.rows[j], rc);
	}
	assert_int_equal(all.n, s.n);
	rc = mrtx_commit(txn); /* frees txn whatever the result */
	if (rc != 0 && check_conflict(rc))
		return -1;
	assert_int_equal(rc, 0);
	return all.n;
}

/* Every source value has its entry (with the right copy), and every entry
 * matches a source value.  Returns the number of entries. */
static int check_consistent(mrtx_db *db)
{
	for (int attempt = 0; attempt < 20; attempt++) {
		int n = check_once(db);

		if (n >= 0)
			return n;
		print_message("check met a late write of a killed writer: again\n");
		usleep(100000);
	}
	fail_msg("the consistency check conflicted 20 times");
	return -1;
}

/* ---- tests ---- */

static void test_maintenance(void **state)
{
	char *path;
	mrtx_db *db = setup(&path);
	struct hits hs;
	mrtx_txn *txn;

	(void)state;
	assert_int_equal(put2(db, "u1", "name", "Ann"), 0);
	assert_int_equal(put2(db, "u1", "email", "ann@x"), 0);
	assert_int_equal(put2(db, "u2", "email", "bob@x"), 0);
	assert_int_equal(put2(db, "u3", "email", "ann@x"), 0); /* shared value */
	hs = lookup(db, "ann@x");
	assert_int_equal(hs.n, 2);
	assert_string_equal(hs.rows[0], "u1");
	assert_string_equal(hs.names[0], "Ann");
	assert_string_equal(hs.rows[1], "u3");
	assert_string_equal(hs.names[1], "");
	assert_int_equal(check_consistent(db), 3);

	/* Update moves the entry; a clustered column updates the copy. */
	assert_int_equal(put2(db, "u1", "email", "ann@y"), 0);
	assert_int_equal(put2(db, "u1", "name", "Anne"), 0);
	assert_int_equal(lookup(db, "ann@x").n, 1);
	hs = lookup(db, "ann@y");
	assert_int_equal(hs.n, 1);
	assert_string_equal(hs.names[0], "Anne");
	/* Unrelated columns do not touch the index. */
	assert_int_equal(tu_put(db, "users", MRTX_CSTR("u1"), "x", MRTX_CSTR("email"),
	                        MRTX_CSTR("other")), 0);
	assert_int_equal(check_consistent(db), 3);

	/* Delete the cell, the clustered column, the row. */
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_delete(txn, "users", MRTX_CSTR("u3"), "p", MRTX_CSTR("email")), 0);
	assert_int_equal(mrtx_delete(txn, "users", MRTX_CSTR("u1"), "p", MRTX_CSTR("name")), 0);
	assert_int_equal(mrtx_commit(txn), 0);
	assert_int_equal(lookup(db, "ann@x").n, 0);
	hs = lookup(db, "ann@y");
	assert_int_equal(hs.n, 1);
	assert_string_equal(hs.names[0], "");
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_delete_row(txn, "users", MRTX_CSTR("u1")), 0);
	assert_int_equal(mrtx_commit(txn), 0);
	assert_int_equal(lookup(db, "ann@y").n, 0);
	assert_int_equal(check_consistent(db), 1);

	/* Several changes in one transaction, read-your-writes included; the
	 * transaction sees its own index entries. */
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_put(txn, "users", MRTX_CSTR("u4"), "p", MRTX_CSTR("email"),
	                          MRTX_CSTR("a")), 0);
	assert_int_equal(mrtx_put(txn, "users", MRTX_CSTR("u4"), "p", MRTX_CSTR("email"),
	                          MRTX_CSTR("b")), 0);
	assert_int_equal(mrtx_delete_row(txn, "users", MRTX_CSTR("u4")), 0);
	assert_int_equal(mrtx_put(txn, "users", MRTX_CSTR("u4"), "p", MRTX_CSTR("email"),
	                          MRTX_CSTR("c")), 0);
	assert_int_equal(mrtx_put(txn, "users", MRTX_CSTR("u4"), "p", MRTX_CSTR("name"),
	                          MRTX_CSTR("Dee")), 0);
	hs = (struct hits){ 0 };
	assert_int_equal(mrtx_index_lookup(txn, "by_email", MRTX_CSTR("c"), collect, &hs), 0);
	assert_int_equal(hs.n, 1);
	assert_string_equal(hs.names[0], "Dee");
	assert_int_equal(mrtx_commit(txn), 0);
	assert_int_equal(lookup(db, "a").n + lookup(db, "b").n, 0);
	assert_int_equal(check_consistent(db), 2);

	/* Abort writes neither data nor index. */
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_put(txn, "users", MRTX_CSTR("u5"), "p", MRTX_CSTR("email"),
	                          MRTX_CSTR("z")), 0);
	mrtx_abort(txn);
	assert_int_equal(lookup(db, "z").n, 0);

	/* A value too big for an index key fails the put and buffers nothing. */
	{
		char big[600];

		memset(big, 'v', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_int_equal(mrtx_begin(db, &txn), 0);
		assert_int_equal(mrtx_put(txn, "users", MRTX_CSTR("u6"), "p", MRTX_CSTR("email"),
		                          MRTX_CSTR(big)), MRTX_ETOOBIG);
		assert_int_equal(mrtx_commit(txn), 0);
	}
	assert_int_equal(check_consistent(db), 2);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static void test_scan_ranges(void **state)
{
	char *path;
	mrtx_db *db = setup(&path);
	struct hits hs;
	mrtx_txn *txn;

	(void)state;
	assert_int_equal(put2(db, "r1", "email", "b"), 0);
	assert_int_equal(put2(db, "r2", "email", "a"), 0);
	assert_int_equal(put2(db, "r3", "email", "c"), 0);
	assert_int_equal(put2(db, "r4", "email", "b"), 0);
	assert_int_equal(put2(db, "r5", "email", ""), 0); /* the empty value is indexed */
	hs = scan_all(db, 0, 0);
	assert_int_equal(hs.n, 5);
	assert_string_equal(hs.values[0], "");
	assert_string_equal(hs.values[1], "a");
	assert_string_equal(hs.rows[2], "r1");
	assert_string_equal(hs.rows[3], "r4");
	assert_string_equal(hs.values[4], "c");
	hs = scan_all(db, 1, 2);
	assert_int_equal(hs.n, 2);
	assert_string_equal(hs.values[0], "c");
	assert_string_equal(hs.rows[1], "r4");
	assert_int_equal(mrtx_begin(db, &txn), 0);
	hs = (struct hits){ 0 };
	assert_int_equal(mrtx_index_scan(txn, "by_email", MRTX_CSTR("a"), MRTX_CSTR("c"), 0, 0,
	                                 collect, &hs), 0);
	assert_int_equal(hs.n, 3);
	assert_int_equal(mrtx_index_lookup(txn, "nope", MRTX_CSTR("a"), collect, &hs),
	                 MRTX_EINVAL);
	mrtx_abort(txn);
	assert_int_equal(lookup(db, "").n, 1);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static int count_spec(const mrtx_index_spec *s, void *payload)
{
	int *n = payload;

	assert_string_equal(s->name, "by_email");
	assert_string_equal(s->index_table, "users_by_email");
	assert_int_equal(s->ncluster, 1);
	assert_string_equal(s->cluster[0].family, "p");
	(*n)++;
	return 0;
}

static void test_declaration(void **state)
{
	mrtx_index_spec s = email_spec(), t;
	char *path;
	mrtx_db *db = tu_open_fresh("index-decl", &path, NULL);
	pid_t pid;
	int n = 0;

	(void)state;
	assert_int_equal(tu_table(db, "users", "p", NULL), 0);
	/* Rows written before the declaration are backfilled. */
	assert_int_equal(put2(db, "u1", "email", "e1"), 0);
	assert_int_equal(put2(db, "u1", "name", "N1"), 0);
	assert_int_equal(put2(db, "u2", "email", "e2"), 0);
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(mrtx_create_index(db, &s), 0); /* idempotent */
	assert_string_equal(lookup(db, "e1").names[0], "N1");
	assert_int_equal(check_consistent(db), 2);
	assert_int_equal(mrtx_indexes(db, count_spec, &n), 0);
	assert_int_equal(n, 1);

	t = s;
	t.ncluster = 0;
	assert_int_equal(mrtx_create_index(db, &t), MRTX_EEXIST);
	t = s;
	t.name = "other";
	assert_int_equal(mrtx_create_index(db, &t), MRTX_EINVAL); /* index table taken */
	t.table = "users_by_email";
	t.index_table = "x2";
	assert_int_equal(mrtx_create_index(db, &t), MRTX_EINVAL); /* index as source */
	t = s;
	t.name = "bad name";
	assert_int_equal(mrtx_create_index(db, &t), MRTX_EINVAL);
	t = s;
	t.version = 7;
	assert_int_equal(mrtx_create_index(db, &t), MRTX_EINVAL);
	t = s;
	t.name = "n2";
	t.index_table = "n2_idx";
	t.family = "nofam";
	assert_int_equal(mrtx_create_index(db, &t), MRTX_ENOFAMILY);
	t.table = "nosuch";
	assert_int_equal(mrtx_create_index(db, &t), MRTX_ENOTABLE);

	/* Writes to the index table itself are plain writes. */
	assert_int_equal(tu_put(db, "users_by_email", MRTX_CSTR("zz"), MRTX_INDEX_FAMILY,
	                        MRTX_CSTR("q"), MRTX_CSTR("v")), 0);

	/* Another process maintains the declaration it finds in the metadata. */
	if ((pid = fork()) == 0) {
		mrtx_db *db2 = tu_open(path, NULL);

		_exit(db2 && put2(db2, "u3", "email", "e3") == 0 && put2(db2, "u1", "email", "e9") == 0
		      ? 0 : 1);
	}
	assert_int_equal(tu_wait(pid), 0);
	assert_int_equal(lookup(db, "e3").n, 1);
	assert_int_equal(lookup(db, "e1").n, 0);
	assert_int_equal(lookup(db, "e9").n, 1);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* ---- writers killed at random ---- */

static int random_op(mrtx_txn *txn, void *payload)
{
	unsigned *seed = payload;
	char row[16], row2[16], val[16];
	int op = rand_r(seed) % 10, rc;

	snprintf(row, sizeof(row), "u%02d", rand_r(seed) % NROWS);
	snprintf(row2, sizeof(row2), "u%02d", rand_r(seed) % NROWS);
	snprintf(val, sizeof(val), "e%d", rand_r(seed) % NVALUES);
	switch (op) {
	case 0: case 1: case 2: case 3:
		return mrtx_put(txn, "users", MRTX_CSTR(row), "p", MRTX_CSTR("email"),
		                MRTX_CSTR(val));
	case 4:
		return mrtx_put(txn, "users", MRTX_CSTR(row), "p", MRTX_CSTR("name"),
		                MRTX_CSTR(val));
	case 5:
		return mrtx_delete(txn, "users", MRTX_CSTR(row), "p", MRTX_CSTR("email"));
	case 6:
		return mrtx_delete_row(txn, "users", MRTX_CSTR(row));
	default: {
		/* Swap two rows' emails: a multi-row transaction. */
		mrtx_bytes a, b;
		char sa[32] = "", sb[32] = "";

		if ((rc = mrtx_get(txn, "users", MRTX_CSTR(row), "p", MRTX_CSTR("email"), &a)) &&
		    rc != MRTX_NOTFOUND)
			return rc;
		if (rc == 0)
			copy_str(sa, a);
		if ((rc = mrtx_get(txn, "users", MRTX_CSTR(row2), "p", MRTX_CSTR("email"), &b)) &&
		    rc != MRTX_NOTFOUND)
			return rc;
		if (rc == 0)
			copy_str(sb, b);
		if ((rc = mrtx_put(txn, "users", MRTX_CSTR(row), "p", MRTX_CSTR("email"),
		                   MRTX_CSTR(sb[0] ? sb : val))))
			return rc;
		return mrtx_put(txn, "users", MRTX_CSTR(row2), "p", MRTX_CSTR("name"),
		                MRTX_CSTR(sa[0] ? sa : val));
	}
	}
}

static void writer(const char *path, unsigned seed, int unbatched, const char *fp)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;

	o.durability = MRTX_NOSYNC;
	o.lock_ttl_ms = 500;
	if (!(db = tu_open_k(path, &o, &(mrtx__knobs){ unbatched, 0, 0 })))
		_exit(3);
	if (fp) {
		if (mrtx_failpoints_set(fp))
			_exit(5);
	} else if (seed % 2) {
		/* Also die exactly between protocol steps, not only at random. */
		static const char *const fps[] = { "commit.after_prewrite", "commit.after_point",
			                           "commit.after_secondaries",
			                           "store.after_row_write" };
		char spec[96];

		snprintf(spec, sizeof(spec), "%s=kill@%u", fps[(seed / 2) % 4], 1 + seed % 23);
		if (mrtx_failpoints_set(spec))
			_exit(5);
	}
	for (;;) {
		int rc = mrtx_run(db, random_op, &seed, 5);

		if (rc && rc != MRTX_CONFLICT && rc != MRTX_ELOCKED && rc != MRTX_EUNKNOWN) {
			fprintf(stderr, "writer: %s: %s\n", mrtx_strerror(rc), mrtx_errmsg());
			_exit(4);
		}
	}
}

static void test_killed_writers(void **state)
{
	enum { WRITERS = 4, ROUNDS = 8 };
	char *path;
	mrtx_db *db = setup(&path);
	unsigned seed = 4242;
	const char *s = getenv("MRTX_SEED");

	(void)state;
	if (s)
		seed = (unsigned)strtoul(s, NULL, 0);
	for (int round = 0; round < ROUNDS; round++) {
		recover_opts ro = { 0, 0, 0 };
		recover_stats st;
		pid_t pids[WRITERS];

		for (int w = 0; w < WRITERS; w++) {
			unsigned ws = seed + (unsigned)(round * WRITERS + w) * 7919u;

			if ((pids[w] = fork()) == 0)
				writer(path, ws, w == 0, NULL);
			assert_true(pids[w] > 0);
		}
		/* Kill each at its own random moment, mid-protocol more often than not. */
		for (int w = 0; w < WRITERS; w++) {
			struct timespec ts = { 0, (long)(20 + rand_r(&seed) % 100) * 1000000L };
			int status;

			nanosleep(&ts, NULL);
			kill(pids[w], SIGKILL);
			status = tu_wait(pids[w]);
			assert_int_equal(status, 128 + SIGKILL);
		}
		/* Half the rounds resolve through reads, half through the sweep. */
		if (round % 2 == 0) {
			memset(&st, 0, sizeof(st));
			assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
			assert_int_equal(st.skipped_live, 0);
			print_message("round %d: sweep met %lu locks (%lu forward, %lu back)\n",
			              round, st.locks_seen, st.forwarded, st.rolled_back);
		}
		print_message("round %d: %d index entries consistent\n", round,
		              check_consistent(db));
		memset(&st, 0, sizeof(st));
		assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
		/* The first sweep settled every lock, so a second meets none -- on
		 * RADOS, once a killed writer's late requests (see check_conflict)
		 * have stopped landing. */
		for (int sweep = 0;; sweep++) {
			memset(&st, 0, sizeof(st));
			assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
			if (st.locks_seen == 0 || !tu_rados() || sweep == 20)
				break;
			print_message("sweep met %lu locks from late writes: again\n", st.locks_seen);
			usleep(100000);
		}
		assert_int_equal(st.locks_seen, 0);
		check_consistent(db);
	}
	/* A lone writer dying at the first multi-row commit step leaves its locks
	 * for the sweep: rolled back before the commit point, forward after it. */
	for (int i = 0; i < 2; i++) {
		recover_opts ro = { 0, 0, 0 };
		recover_stats st = { 0 };
		pid_t pid = fork();

		if (pid == 0)
			writer(path, seed + 17u * (unsigned)i, 0,
			       i ? "commit.after_point=kill" : "commit.after_prewrite=kill");
		assert_int_equal(tu_wait(pid), 128 + SIGKILL);
		assert_int_equal(recover_sweep(mrtx__db_store(db), &ro, &st, NULL, NULL), 0);
		assert_true(st.locks_seen > 0);
		assert_int_equal(i ? st.forwarded : st.rolled_back, 1);
		check_consistent(db);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* A child that opens path (unbatched: one store write per row), runs fn,
 * and must die in it (killed at a failpoint fn arms). */
static void killed_child(const char *path, int unbatched, int (*fn)(mrtx_db *))
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	pid_t pid = fork();
	mrtx_db *w;

	assert_true(pid >= 0);
	if (pid == 0) {
		o.durability = MRTX_NOSYNC;
		if (!(w = tu_open_k(path, &o, &(mrtx__knobs){ unbatched, 0, 0 })))
			_exit(3);
		fn(w);
		_exit(4);
	}
	assert_int_equal(tu_wait(pid), 128 + SIGKILL);
}

/* u01 is read (to move its index entry) and changes before the commit, so
 * the prewrite of u01, the primary, fails; the first index row's applies,
 * and the writer dies before rolling it back. */
static int stale_primary_dies(mrtx_db *w)
{
	mrtx_txn *t;

	if (mrtx_begin(w, &t) ||
	    mrtx_put(t, "users", MRTX_CSTR("u01"), "p", MRTX_CSTR("email"), MRTX_CSTR("e9")) ||
	    tu_put(w, "users", MRTX_CSTR("u01"), "x", MRTX_CSTR("v"), MRTX_CSTR("w")) ||
	    mrtx_failpoints_set("store.after_row_write=kill@2"))
		return -1;
	return mrtx_commit(t);
}

/*
 * A writer dies leaving an orphan: a secondary whose primary (the users
 * row, first in row order) it never locked (stale_primary_dies).  The
 * check's read-only transaction scans users, the primary included, then
 * meets the orphan in the index and settles it, as a reader does a dead
 * writer's lock: recovery fences the primary (a new STABLE lock over the
 * same cells) and rolls the orphan back.  No commit touched a row the check
 * read, so its commit validates.  (test_killed_writers met this at random.)
 * Checks I11 (DESIGN §10).
 */
static void test_reader_settles_orphan(void **state)
{
	char *path;
	mrtx_db *db;
	mrtx_txn *txn;

	(void)state;
	if (tu_rados())
		skip(); /* the orphans are made by LMDB's one write per row */
	db = setup(&path);
	assert_int_equal(put2(db, "u01", "email", "e1"), 0);
	assert_int_equal(put2(db, "u02", "email", "e2"), 0);
	killed_child(path, 1, stale_primary_dies);
	assert_int_equal(tu_open_locks(db), 1); /* the orphan */
	assert_int_equal(check_once(db), 2);
	assert_int_equal(tu_open_locks(db), 0); /* the check settled it */

	/* A transaction that writes, the fenced row itself: it expects the
	 * fence its reads wrote, not the lock it read before. */
	killed_child(path, 1, stale_primary_dies);
	assert_int_equal(tu_open_locks(db), 1);
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(tu_scan_all(txn, "users"), MRTX_OK);
	assert_int_equal(tu_scan_all(txn, "users_by_email"), MRTX_OK);
	assert_int_equal(mrtx_put(txn, "users", MRTX_CSTR("u01"), "p", MRTX_CSTR("name"),
	                          MRTX_CSTR("One")), 0);
	assert_int_equal(mrtx_commit(txn), 0);
	assert_string_equal(lookup(db, "e1").names[0], "One");
	assert_int_equal(check_once(db), 2);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* u00 is created (it and its index entry prewritten), then the writer dies. */
static int create_u00_dies(mrtx_db *w)
{
	mrtx_txn *t;

	if (mrtx_begin(w, &t) ||
	    mrtx_put(t, "users", MRTX_CSTR("u00"), "p", MRTX_CSTR("email"), MRTX_CSTR("e5")) ||
	    mrtx_failpoints_set("commit.after_prewrite=kill"))
		return -1;
	return mrtx_commit(t);
}

/* u00 and u03 written blind (family x: no index to read for): u00, the
 * primary, is locked by create_u00_dies's writer, so its prewrite fails;
 * u03's applies, and the writer dies before rolling it back. */
static int blind_pair_dies(mrtx_db *w)
{
	mrtx_txn *t;

	if (mrtx_begin(w, &t) ||
	    mrtx_put(t, "users", MRTX_CSTR("u00"), "x", MRTX_CSTR("v"), MRTX_CSTR("w")) ||
	    mrtx_put(t, "users", MRTX_CSTR("u03"), "x", MRTX_CSTR("v"), MRTX_CSTR("w")) ||
	    mrtx_failpoints_set("store.after_row_write=kill@2"))
		return -1;
	return mrtx_commit(t);
}

/*
 * The same with a primary that is no row: u00's creator died prewritten,
 * then an orphan of another writer was left pointing at u00.  The check's
 * scan settles both, in row order: u00's creation is rolled back (u00 is
 * absent, as the scan read it), then the orphan's fence puts a lock record
 * on u00 -- which the scan's range must not take for a row inserted.
 * Checks I11 (DESIGN §10).
 */
static void test_reader_fences_absent_primary(void **state)
{
	char *path;
	mrtx_db *db;

	(void)state;
	if (tu_rados())
		skip(); /* the orphans are made by LMDB's one write per row */
	db = setup(&path);
	assert_int_equal(put2(db, "u02", "email", "e2"), 0);
	killed_child(path, 0, create_u00_dies);
	killed_child(path, 1, blind_pair_dies);
	assert_int_equal(tu_open_locks(db), 3); /* u00 and its entry; u03, the orphan */
	assert_int_equal(check_once(db), 1);
	assert_int_equal(tu_open_locks(db), 0);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* admin_check's findings of kind "index", counted. */
static int count_index_issue(const admin_issue *is, void *payload)
{
	if (strcmp(is->kind, "index") == 0 && is->severity == CHECK_CORRUPT)
		(*(int *)payload)++;
	return 0;
}

/*
 * A declaration damaged to name a source table, family or index table the
 * store has not (a flipped byte in its record) is reported by `mrtx check`
 * as corrupt; the sound one is not.
 */
static void test_damaged_declaration_is_found(void **state)
{
	static const char *const keys[] = { "i/by_email" };
	const char *bad[3][3] = { { "Users", "p", "users_by_email" },
		                  { "users", "q", "users_by_email" },
		                  { "users", "p", "Users_by_email" } };
	char *path;
	mrtx_db *db = setup(&path);
	check_stats cs;
	int n = 0;

	(void)state;
	assert_int_equal(admin_check(db, &cs, count_index_issue, NULL, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(cs.corrupt, 0);
	for (int i = 0; i < 3; i++) {
		mrtx_index_spec s = email_spec();
		mrtx_buf b = { 0 };

		s.table = bad[i][0];
		s.family = bad[i][1];
		s.index_table = bad[i][2];
		assert_int_equal(idx_decl_encode(&s, &b), 0);
		/* (the key deleted and written in one change: written) */
		assert_int_equal(store_meta_change(mrtx__db_store(db), keys, 1, keys[0],
		                                   MRTX_BYTES(b.data, b.size)), 0);
		buf_free(&b);
		n = 0;
		assert_int_equal(admin_check(db, &cs, count_index_issue, NULL, &n), 0);
		assert_int_equal(n, 1);
		assert_int_equal(cs.corrupt, 1);
	}
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/*
 * Index declarations are cached per db handle and a commit's writes are
 * conditional on the generation the cache was read at.  Handle A writes
 * (so caches "no indexes"), handle B declares an index, then A commits:
 * transactions that took the stale set -- one begun before the declaration,
 * one after (A's cache is still stale) -- fail with MRTX_CONFLICT instead of
 * committing a source row without its index entry; the retry maintains it.
 * Both commit paths: one row, and two rows (prewrite).
 */
static void test_late_declaration(void **state)
{
	char *path;
	mrtx_db *a = tu_open_fresh("index-late", &path, NULL), *b;
	mrtx_index_spec s = email_spec();
	mrtx_txn *t1, *t2;
	struct hits hs;

	(void)state;
	assert_non_null(a);
	assert_int_equal(tu_table(a, "users", "p", "x", NULL), 0);
	assert_int_equal(put2(a, "u0", "email", "zero@x"), 0); /* A caches: no index */
	assert_non_null(b = tu_open(path, NULL));

	assert_int_equal(mrtx_begin(a, &t1), 0); /* begun before the declaration */
	assert_int_equal(mrtx_put(t1, "users", MRTX_CSTR("u1"), "p", MRTX_CSTR("email"),
	                          MRTX_CSTR("one@x")), 0);
	assert_int_equal(mrtx_create_index(b, &s), 0);
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	assert_non_null(strstr(mrtx_errmsg(), "index was declared"));
	/* retried: the new declaration is read and maintained */
	assert_int_equal(put2(a, "u1", "email", "one@x"), 0);
	hs = lookup(a, "one@x");
	assert_int_equal(hs.n, 1);
	assert_string_equal(hs.rows[0], "u1");

	/* A second index, declared while A's cache holds the first one only:
	 * a two-row transaction begun afterwards is refused at prewrite. */
	{
		static const mrtx_column nc = { "p", { "email", 5 } };
		mrtx_index_spec s2 = { MRTX_INDEX_SPEC_VERSION, "by_name", "users", "p",
			               { "name", 4 }, "users_by_name", &nc, 1 };

		assert_int_equal(mrtx_create_index(b, &s2), 0);
	}
	assert_int_equal(mrtx_begin(a, &t2), 0);
	assert_int_equal(mrtx_put(t2, "users", MRTX_CSTR("u2"), "p", MRTX_CSTR("name"),
	                          MRTX_CSTR("Two")), 0);
	assert_int_equal(mrtx_put(t2, "users", MRTX_CSTR("u3"), "p", MRTX_CSTR("name"),
	                          MRTX_CSTR("Three")), 0);
	assert_int_equal(mrtx_commit(t2), MRTX_CONFLICT);
	assert_int_equal(tu_get_str(a, "users", "u2", "p:name", (char[8]){ 0 }, 8),
	                 MRTX_NOTFOUND); /* nothing of t2 landed */
	assert_int_equal(mrtx_begin(a, &t2), 0);
	assert_int_equal(mrtx_put(t2, "users", MRTX_CSTR("u2"), "p", MRTX_CSTR("name"),
	                          MRTX_CSTR("Two")), 0);
	assert_int_equal(mrtx_put(t2, "users", MRTX_CSTR("u3"), "p", MRTX_CSTR("name"),
	                          MRTX_CSTR("Three")), 0);
	assert_int_equal(mrtx_commit(t2), 0);
	hs = lookup_in(a, "by_name", "Three");
	assert_int_equal(hs.n, 1);
	assert_string_equal(hs.rows[0], "u3");
	assert_int_equal(check_consistent(a), 2);

	/* Another process declares a third index while A's write path knows
	 * the generation without reading it (A wrote last): A's next commit
	 * must still see that the store moved on. */
	assert_int_equal(put2(a, "u4", "other", "warm"), 0);
	assert_int_equal(mrtx_begin(a, &t1), 0);
	assert_int_equal(mrtx_put(t1, "users", MRTX_CSTR("u5"), "x", MRTX_CSTR("v"),
	                          MRTX_CSTR("five")), 0);
	{
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			static const mrtx_column nc = { "p", { "name", 4 } };
			mrtx_index_spec s3 = { MRTX_INDEX_SPEC_VERSION, "by_x", "users", "x",
				               { "v", 1 }, "users_by_x", &nc, 1 };
			mrtx_db *c = tu_open(path, NULL);

			if (!c || mrtx_create_index(c, &s3) != 0) {
				fprintf(stderr, "child: %s\n", mrtx_errmsg());
				_exit(1);
			}
			_exit(0);
		}
		assert_int_equal(tu_wait(pid), 0);
	}
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	assert_int_equal(tu_put(a, "users", MRTX_CSTR("u5"), "x", MRTX_CSTR("v"), MRTX_CSTR("five")),
	                 0);
	hs = lookup_in(a, "by_x", "five");
	assert_int_equal(hs.n, 1);
	assert_string_equal(hs.rows[0], "u5");
	mrtx_close(b);
	mrtx_close(a);
	tu_rmrf(path);
	free(path);
}

/* ---- dropping an index ---- */

struct find_table {
	const char *want;
	int found;
};

static int find_table_fn(const char *t, void *payload)
{
	struct find_table *c = payload;

	if (strcmp(t, c->want) == 0)
		c->found = 1;
	return 0;
}

static int table_exists(mrtx_db *db, const char *table)
{
	struct find_table c = { table, 0 };

	assert_int_equal(mrtx_tables(db, find_table_fn, &c), 0);
	return c.found;
}

/* The number of cells in table. */
static int count_cells(mrtx_db *db, const char *table)
{
	mrtx_scan_spec spec;
	mrtx_scanner *sc;
	mrtx_txn *txn;
	mrtx_cell c;
	int n = 0, rc;

	memset(&spec, 0, sizeof(spec));
	spec.table = table;
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_scan_open(txn, &spec, &sc), 0);
	while ((rc = mrtx_scan_next(sc, &c)) == 0)
		n++;
	assert_int_equal(rc, MRTX_NOTFOUND);
	mrtx_scan_close(sc);
	mrtx_abort(txn);
	return n;
}

static int count_index(const mrtx_index_spec *s, void *payload)
{
	(void)s;
	++*(int *)payload;
	return 0;
}

static int nindexes(mrtx_db *db)
{
	int n = 0;

	assert_int_equal(mrtx_indexes(db, count_index, &n), 0);
	return n;
}

static int lookup_rc(mrtx_db *db, const char *index, const char *value)
{
	struct hits hs = { 0 };
	mrtx_txn *txn;
	int rc;

	assert_int_equal(mrtx_begin(db, &txn), 0);
	rc = mrtx_index_lookup(txn, index, MRTX_CSTR(value), collect, &hs);
	mrtx_abort(txn);
	return rc;
}

static void test_drop_index(void **state)
{
	char *path;
	mrtx_db *a = setup(&path), *b;
	mrtx_txn *t1;

	(void)state;
	if (tu_rados()) { /* (a RADOS store cannot drop tables yet) */
		mrtx_close(a);
		tu_rmrf(path);
		free(path);
		skip();
	}
	assert_int_equal(put2(a, "u1", "email", "one@x"), 0);
	assert_int_equal(put2(a, "u2", "email", "two@x"), 0);
	assert_int_equal(lookup(a, "one@x").n, 1);
	/* a second handle that maintains the index, with a write in flight */
	assert_non_null(b = tu_open(path, NULL));
	assert_int_equal(put2(b, "u3", "email", "three@x"), 0);
	assert_int_equal(mrtx_begin(b, &t1), 0);
	assert_int_equal(mrtx_put(t1, "users", MRTX_CSTR("u4"), "p", MRTX_CSTR("email"),
	                          MRTX_CSTR("four@x")), 0);

	/* the source table cannot go while the index uses it */
	assert_int_equal(mrtx_drop_table(a, "users"), MRTX_EINVAL);
	assert_int_equal(mrtx_drop_table(a, "users_by_email"), MRTX_EINVAL);
	assert_int_equal(mrtx_drop_index(a, "by_email"), 0);
	assert_int_equal(nindexes(a), 0);
	assert_int_equal(nindexes(b), 0);
	assert_false(table_exists(a, "users_by_email"));
	assert_int_equal(lookup_rc(a, "by_email", "one@x"), MRTX_EINVAL);
	assert_int_equal(lookup_rc(b, "by_email", "one@x"), MRTX_EINVAL);
	assert_int_equal(mrtx_drop_index(a, "by_email"), MRTX_EINVAL);
	assert_non_null(strstr(mrtx_errmsg(), "no index 'by_email'"));
	assert_int_equal(mrtx_drop_index(a, NULL), MRTX_EINVAL);
	assert_int_equal(mrtx_drop_index(a, ""), MRTX_EINVAL);

	/* the write begun while the index was declared does not land */
	assert_int_equal(mrtx_commit(t1), MRTX_CONFLICT);
	assert_non_null(strstr(mrtx_errmsg(), "index was dropped"));
	assert_int_equal(tu_get_str(b, "users", "u4", "p:email", (char[16]){ 0 }, 16),
	                 MRTX_NOTFOUND);
	/* writers after the drop, in both handles, no longer maintain it */
	assert_int_equal(put2(b, "u4", "email", "four@x"), 0);
	assert_int_equal(put2(a, "u5", "email", "five@x"), 0);
	{
		mrtx_txn *t;

		assert_int_equal(mrtx_begin(b, &t), 0);
		assert_int_equal(mrtx_delete_row(t, "users", MRTX_CSTR("u1")), 0);
		assert_int_equal(mrtx_commit(t), 0);
	}
	assert_false(table_exists(a, "users_by_email"));

	/* the name and the index table can be declared anew, and backfill */
	{
		mrtx_index_spec s = email_spec();

		assert_int_equal(mrtx_create_index(b, &s), 0);
		assert_int_equal(lookup(a, "four@x").n, 1);
		assert_int_equal(lookup(a, "one@x").n, 0);
		assert_int_equal(check_consistent(a), 4);
		assert_int_equal(mrtx_drop_index(b, "by_email"), 0);
	}
	/* the source table can be dropped now */
	assert_int_equal(mrtx_drop_table(a, "users"), 0);
	assert_false(table_exists(b, "users"));
	mrtx_close(b);
	mrtx_close(a);
	tu_rmrf(path);
	free(path);
}

/* The declaration retired, the process gone before the table drop (made
 * here by writing step 1's metadata directly). */
static void retire_only(mrtx_db *db)
{
	const char *del[2] = { "i/by_email", "b/by_email" };

	assert_int_equal(store_meta_change(mrtx__db_store(db), del, 2, "d/by_email",
	                                   MRTX_CSTR("users_by_email")), 0);
}

static void test_drop_index_half_done(void **state)
{
	char *path;
	mrtx_db *a = setup(&path), *b;

	(void)state;
	if (tu_rados()) {
		mrtx_close(a);
		tu_rmrf(path);
		free(path);
		skip();
	}
	assert_int_equal(put2(a, "u1", "email", "one@x"), 0);
	retire_only(a);
	/* a fresh handle: no index, the table stays, writes do not reach it */
	assert_non_null(b = tu_open(path, NULL));
	assert_int_equal(nindexes(b), 0);
	assert_true(table_exists(b, "users_by_email"));
	assert_int_equal(count_cells(b, "users_by_email"), 1); /* u1's reference */
	assert_int_equal(put2(b, "u2", "email", "two@x"), 0);
	assert_int_equal(put2(a, "u1", "email", "uno@x"), MRTX_CONFLICT); /* a: stale */
	assert_int_equal(put2(a, "u1", "email", "uno@x"), 0);
	assert_int_equal(count_cells(b, "users_by_email"), 1);
	/* a repeated drop finishes it */
	assert_int_equal(mrtx_drop_index(b, "by_email"), 0);
	assert_false(table_exists(a, "users_by_email"));
	assert_int_equal(mrtx_drop_index(b, "by_email"), MRTX_EINVAL);

	/* again, finished by dropping the table */
	{
		mrtx_index_spec s = email_spec();

		assert_int_equal(mrtx_create_index(a, &s), 0);
		assert_int_equal(lookup(a, "two@x").n, 1);
	}
	retire_only(a);
	assert_int_equal(mrtx_drop_table(b, "users_by_email"), 0);
	assert_int_equal(mrtx_drop_index(a, "by_email"), MRTX_EINVAL); /* nothing left */

	/* again, then a new index on that table: the unfinished drop is
	 * finished first, and the new index gets a new, empty table */
	{
		mrtx_index_spec s = email_spec();

		assert_int_equal(mrtx_create_index(a, &s), 0);
		retire_only(a);
		assert_int_equal(tu_put(a, "users_by_email", MRTX_CSTR("stale"), MRTX_INDEX_FAMILY,
		                        MRTX_CSTR("x"), MRTX_CSTR("y")), 0);
		s.name = "by_email2";
		assert_int_equal(mrtx_create_index(a, &s), 0);
		assert_int_equal(count_cells(b, "users_by_email"), 2); /* u1's, u2's refs */
		assert_int_equal(lookup_in(b, "by_email2", "two@x").n, 1);
		assert_int_equal(mrtx_drop_index(a, "by_email"), MRTX_EINVAL); /* finished */
	}
	/* a drop record naming the table of a live index (a drop's first step
	 * racing that index's declaration): a repeated drop removes only it */
	assert_int_equal(store_meta_change(mrtx__db_store(a), NULL, 0, "d/by_email",
	                                   MRTX_CSTR("users_by_email")), 0);
	assert_int_equal(mrtx_drop_index(a, "by_email"), 0);
	assert_true(table_exists(a, "users_by_email"));
	assert_int_equal(lookup_in(b, "by_email2", "two@x").n, 1);
	assert_int_equal(mrtx_drop_index(a, "by_email"), MRTX_EINVAL);
	mrtx_close(b);
	mrtx_close(a);
	tu_rmrf(path);
	free(path);
}

/* The drop record holds the index table by name and identity.  A drop
 * that stopped after the index table's drop, before removing its record,
 * leaves a record that holds nothing: a user's table created under the
 * name is never dropped for it, neither by a repeated mrtx_drop_index nor
 * by a new index taking the name.  A table a record holds is not
 * truncated. */
static void test_drop_record_identity(void **state)
{
	char *path, buf[16];
	mrtx_db *db = setup(&path);
	mrtx_index_spec s = email_spec();

	(void)state;
	assert_int_equal(put2(db, "u1", "email", "one@x"), 0);
	/* stopped after retiring: the table is held */
	assert_int_equal(mrtx_failpoints_set("index.after_retire=error"), 0);
	assert_int_equal(mrtx_drop_index(db, "by_email"), MRTX_ESTORE);
	assert_int_equal(mrtx_failpoints_set(NULL), 0);
	assert_int_equal(mrtx_truncate_table(db, "users_by_email"), MRTX_EINVAL);
	assert_non_null(strstr(mrtx_errmsg(), "drop that index again"));
	assert_int_equal(count_cells(db, "users_by_email"), 1);
	{
		/* a drop of it running (frozen): the refused truncate leaves
		 * that drop's freeze alone */
		const store_table *t;
		uint64_t tok;
		int held;

		assert_int_equal(store_table_find(mrtx__db_store(db), "users_by_email", &t), 0);
		assert_int_equal(store_table_freeze(mrtx__db_store(db), t, 1, &tok), 0);
		assert_int_equal(mrtx_truncate_table(db, "users_by_email"), MRTX_EINVAL);
		assert_int_equal(store_table_held(mrtx__db_store(db), t, &held), 0);
		assert_int_equal(held, STORE_HELD_FROZEN);
	}
	/* stopped after dropping the table, before removing the record */
	assert_int_equal(mrtx_failpoints_set("ddl.after_clear=error"), 0);
	assert_int_equal(mrtx_drop_index(db, "by_email"), MRTX_ESTORE);
	assert_int_equal(mrtx_failpoints_set(NULL), 0);
	assert_false(table_exists(db, "users_by_email"));
	/* a user's table of that name: the repeated drop removes the record */
	assert_int_equal(tu_table(db, "users_by_email", MRTX_INDEX_FAMILY, NULL), 0);
	assert_int_equal(tu_put_str(db, "users_by_email", "mine", "i:q", "kept"), 0);
	assert_int_equal(mrtx_drop_index(db, "by_email"), 0);
	assert_int_equal(tu_get_str(db, "users_by_email", "mine", "i:q", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "kept");
	assert_int_equal(mrtx_drop_index(db, "by_email"), MRTX_EINVAL);
	assert_int_equal(mrtx_truncate_table(db, "users_by_email"), 0); /* not held */
	assert_int_equal(mrtx_drop_table(db, "users_by_email"), 0);

	/* the same, met by a new index that takes the name */
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(mrtx_failpoints_set("ddl.after_clear=error"), 0);
	assert_int_equal(mrtx_drop_index(db, "by_email"), MRTX_ESTORE);
	assert_int_equal(mrtx_failpoints_set(NULL), 0);
	assert_int_equal(tu_table(db, "users_by_email", MRTX_INDEX_FAMILY, NULL), 0);
	assert_int_equal(tu_put_str(db, "users_by_email", "mine", "i:q", "kept"), 0);
	s.name = "by_email2";
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(tu_get_str(db, "users_by_email", "mine", "i:q", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "kept");
	assert_int_equal(lookup_in(db, "by_email2", "one@x").n, 1);
	assert_int_equal(mrtx_drop_index(db, "by_email"), MRTX_EINVAL); /* record gone */

	/* an index of the same name declared again, into another table: the
	 * record of the unfinished drop goes, its table stays an ordinary one
	 * (a truncate of it is not refused as held) */
	s.name = "by_name";
	s.qualifier = MRTX_CSTR("name");
	s.index_table = "by_name_t1";
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(mrtx_failpoints_set("index.after_retire=error"), 0);
	assert_int_equal(mrtx_drop_index(db, "by_name"), MRTX_ESTORE);
	assert_int_equal(mrtx_failpoints_set(NULL), 0);
	s.index_table = "by_name_t2";
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_true(table_exists(db, "by_name_t1"));
	assert_int_equal(mrtx_truncate_table(db, "by_name_t1"), 0);
	assert_int_equal(mrtx_truncate_table(db, "by_name_t2"), MRTX_EINVAL); /* an index's */
	assert_non_null(strstr(mrtx_errmsg(), "used by index 'by_name'"));
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* A declaration and a drop of its index table are ordered: an index
 * table whose drop or truncate has begun (here frozen by a drop that
 * died) is refused, and nothing is declared, so the source stays
 * writable; once that drop is finished the declaration makes a new table. */
static void test_declaration_meets_drop(void **state)
{
	mrtx_index_spec s = email_spec();
	const store_table *t;
	uint64_t tok;
	char *path;
	mrtx_db *db = setup(&path);

	(void)state;
	s.name = "by_email2";
	s.index_table = "spare";
	assert_int_equal(put2(db, "u1", "email", "one@x"), 0);
	assert_int_equal(tu_table(db, "spare", MRTX_INDEX_FAMILY, NULL), 0);
	assert_int_equal(store_table_find(mrtx__db_store(db), "spare", &t), 0);
	assert_int_equal(store_table_freeze(mrtx__db_store(db), t, 1, &tok), 0);
	assert_int_equal(mrtx_create_index(db, &s), MRTX_ELOCKED);
	assert_non_null(strstr(mrtx_errmsg(), "being dropped or truncated"));
	assert_int_equal(nindexes(db), 1);
	assert_int_equal(put2(db, "u2", "email", "two@x"), 0); /* not held up by spare */
	/* the dead drop finished, the index is declared on a new table */
	assert_int_equal(mrtx_drop_table(db, "spare"), 0);
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(lookup_in(db, "by_email2", "two@x").n, 1);
	assert_int_equal(put2(db, "u3", "email", "three@x"), 0);
	assert_int_equal(lookup_in(db, "by_email2", "three@x").n, 1);
	/* the source's drop or truncate begun (and died): refused the same */
	s.name = "by_email3";
	s.table = "src";
	s.index_table = "src_idx";
	assert_int_equal(tu_table(db, "src", "p", NULL), 0);
	assert_int_equal(store_table_find(mrtx__db_store(db), "src", &t), 0);
	assert_int_equal(store_table_freeze(mrtx__db_store(db), t, 1, &tok), 0);
	assert_int_equal(mrtx_create_index(db, &s), MRTX_ELOCKED);
	assert_int_equal(nindexes(db), 2);
	assert_int_equal(mrtx_truncate_table(db, "src"), 0); /* takes it over */
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(nindexes(db), 3);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

/* A drop of a family that checked for indexes before one was declared,
 * then froze the table and died: a repeated call is refused (the table is
 * indexed now), and takes the dead freeze over and lifts it, so writes go
 * on; before, nothing could lift it but dropping the index. */
static void test_refusal_lifts_dead_freeze(void **state)
{
	const store_table *t;
	uint64_t tok;
	char *path;
	mrtx_db *db = setup(&path);

	(void)state;
	assert_int_equal(store_table_find(mrtx__db_store(db), "users", &t), 0);
	assert_int_equal(store_table_freeze(mrtx__db_store(db), t, 1, &tok), 0);
	assert_int_equal(put2(db, "u1", "email", "one@x"), MRTX_CONFLICT);
	assert_non_null(strstr(mrtx_errmsg(), "table 'users' is frozen"));
	assert_int_equal(mrtx_drop_family(db, "users", "x"), MRTX_EINVAL);
	assert_non_null(strstr(mrtx_errmsg(), "used by index 'by_email'"));
	assert_int_equal(put2(db, "u1", "email", "one@x"), 0);
	assert_int_equal(lookup(db, "one@x").n, 1);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

struct racer {
	mrtx_db *db;
	mrtx_index_spec s;
	int rc;
	char msg[256];
};

static void *race_create(void *arg)
{
	struct racer *r = arg;

	r->rc = mrtx_create_index(r->db, &r->s);
	snprintf(r->msg, sizeof(r->msg), "%s", mrtx_errmsg());
	return NULL;
}

/* Two declarations that would give one table two roles cannot both land:
 * one held after its roles check (index.before_declare) while another
 * takes its index table, or makes its index table a source, is refused
 * when it goes on; before, both were declared and the table was written
 * by two indexes. */
static void test_roles_race(void **state)
{
	char *path, *dir, go[300], spec[400];
	mrtx_db *db = setup(&path);
	struct racer r;
	pthread_t th;

	(void)state;
	assert_non_null(dir = tu_fsdir("roles-go"));
	snprintf(go, sizeof(go), "%s/go", dir);
	free(dir);
	assert_int_equal(tu_table(db, "other", "p", NULL), 0);
	for (int round = 0; round < 2; round++) {
		mrtx_index_spec b = email_spec();

		unlink(go);
		r.db = db;
		r.s = email_spec();
		r.s.name = round ? "by_name_r1" : "by_name_r0";
		r.s.qualifier = MRTX_CSTR("name");
		r.s.index_table = round ? "itab1" : "itab0";
		snprintf(spec, sizeof(spec), "index.before_declare=wait:%s@1", go);
		assert_int_equal(mrtx_failpoints_set(spec), 0);
		assert_int_equal(pthread_create(&th, NULL, race_create, &r), 0);
		while (mrtx_failpoint_hits("index.before_declare") < 1)
			usleep(1000); /* its roles are checked */
		assert_int_equal(mrtx_failpoints_set(NULL), 0);
		if (round == 0) { /* another index takes the same index table */
			b.name = "by_email_r0";
			b.index_table = "itab0";
		} else {          /* its index table becomes another's source */
			b.name = "by_other_r1";
			b.table = "itab1";
			b.family = MRTX_INDEX_FAMILY;
			b.qualifier = MRTX_CSTR("r");
			b.index_table = "itab1_idx";
			b.cluster = NULL;
			b.ncluster = 0;
		}
		assert_int_equal(mrtx_create_index(db, &b), 0);
		fclose(fopen(go, "w"));
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_int_equal(r.rc, MRTX_EINVAL);
		assert_non_null(strstr(r.msg, round ? "is the source of index 'by_other_r1'" :
		                                      "already the index table of index "
		                                      "'by_email_r0'"));
	}
	assert_int_equal(nindexes(db), 3); /* by_email and the two that landed */
	unlink(go);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

static int count_hit(const mrtx_index_hit *h, void *payload)
{
	(void)h;
	++*(int *)payload;
	return 0;
}

/* A backfill cut short (its second transaction fails): the index reads as
 * not complete -- MRTX_ELOCKED, naming the remedy -- never as the part of
 * it the backfill wrote (a scan once gave that with MRTX_OK, and its
 * validation, which compares the range with itself, passed); declaring it
 * again completes it. */
static void test_backfill_cut_short(void **state)
{
	mrtx_index_spec s = email_spec();
	char *path, row[16], mail[16];
	mrtx_txn *txn;
	mrtx_db *db;
	int n = 0;

	(void)state;
	db = tu_open_fresh("index-cut", &path, NULL);
	assert_non_null(db);
	assert_int_equal(tu_table(db, "users", "p", "x", NULL), 0);
	for (int i = 0; i < 3 * IDX_BACKFILL_ROWS; i++) {
		snprintf(row, sizeof(row), "u%04d", i);
		snprintf(mail, sizeof(mail), "e%04d", i);
		assert_int_equal(put2(db, row, "email", mail), 0);
	}
	assert_int_equal(mrtx_failpoints_set("commit.after_prewrite=error@2"), 0);
	assert_int_not_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(mrtx_failpoints_set(NULL), 0);
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_index_scan(txn, "by_email", MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0),
	                                 0, 0, count_hit, &n), MRTX_ELOCKED);
	assert_non_null(strstr(mrtx_errmsg(), "not complete"));
	assert_int_equal(mrtx_index_lookup(txn, "by_email", MRTX_CSTR("e0700"), count_hit, &n),
	                 MRTX_ELOCKED);
	mrtx_abort(txn);
	assert_int_equal(n, 0);
	assert_int_equal(mrtx_create_index(db, &s), 0);
	assert_int_equal(mrtx_begin(db, &txn), 0);
	assert_int_equal(mrtx_index_scan(txn, "by_email", MRTX_BYTES(NULL, 0), MRTX_BYTES(NULL, 0),
	                                 0, 0, count_hit, &n), 0);
	mrtx_abort(txn);
	assert_int_equal(n, 3 * IDX_BACKFILL_ROWS);
	mrtx_close(db);
	tu_rmrf(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maintenance),
		cmocka_unit_test(test_scan_ranges),
		cmocka_unit_test(test_declaration),
		cmocka_unit_test(test_damaged_declaration_is_found),
		cmocka_unit_test(test_killed_writers),
		cmocka_unit_test(test_reader_settles_orphan),
		cmocka_unit_test(test_reader_fences_absent_primary),
		cmocka_unit_test(test_late_declaration),
		cmocka_unit_test(test_drop_index),
		cmocka_unit_test(test_drop_index_half_done),
		cmocka_unit_test(test_drop_record_identity),
		cmocka_unit_test(test_declaration_meets_drop),
		cmocka_unit_test(test_refusal_lifts_dead_freeze),
		cmocka_unit_test(test_roles_race),
		cmocka_unit_test(test_backfill_cut_short),
	};

	/* These tests kill writers between the steps of the two-phase protocol (DESIGN §5.2): every handle
	 * opened here uses it (the two_phase knob, txn_test.h).  One-phase commits on
	 * LMDB (§5.3) are covered by test_txn. */
	setenv("MRTX_TWO_PHASE", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
