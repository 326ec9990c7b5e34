/*
 * test_lockcf.c - the lock record: format round trips, a decoder that
 * survives any input, the state machine's arrows, and owner liveness.
 *
 * The seed of the random parts comes from MRTX_SEED (default fixed) and is
 * printed with any failure so it can be replayed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockcf/lock.h"

/* ------------------------------------------------------------ helpers */

#define CHECK TU_CHECK

static const store_mut *redo_every_kind(size_t *n)
{
	static const uint8_t qual_nul[] = { 'q', 0x00, 'x' };
	static const uint8_t val_nul[] = { 0x00, 0xFF, 0x00 };
	static const store_mut muts[] = {
		{ STORE_MUT_PUT, 0, { "q1", 2 }, { "value", 5 }, 0 },
		{ STORE_MUT_PUT, 1, { qual_nul, sizeof(qual_nul) }, { val_nul, sizeof(val_nul) }, 0 },
		{ STORE_MUT_PUT, 2, { "", 0 }, { "", 0 }, 0 }, /* empty qualifier and value */
		{ STORE_MUT_DEL_CELL, 0, { "gone", 4 }, { NULL, 0 }, 0 },
		{ STORE_MUT_DEL_FAMILY, 3, { NULL, 0 }, { NULL, 0 }, 0 },
		{ STORE_MUT_DEL_ROW, 0, { NULL, 0 }, { NULL, 0 }, 0 },
	};

	*n = sizeof(muts) / sizeof(muts[0]);
	return muts;
}

static void fill_head(lock_rec *r, uint8_t state, uint8_t seed)
{
	memset(r, 0, sizeof(*r));
	r->state = state;
	for (int i = 0; i < LOCK_TAG_SIZE; i++)
		r->tag[i] = (uint8_t)(seed + i);
	for (int i = 0; i < LOCK_TXNID_SIZE; i++)
		r->txn[i] = (uint8_t)(seed * 3 + i);
	r->commit_ts = 0x0102030405060708ull + seed;
}

static void fill_body(lock_rec *r)
{
	r->expiry_ms = 1700000000123ull;
	for (int i = 0; i < 16; i++)
		r->owner.boot_id[i] = (uint8_t)(0xA0 + i);
	r->owner.pid = 0x12345678u;
	r->owner.start_time = 987654321ull;
	for (int i = 0; i < LOCK_TXNID_SIZE; i++)
		r->prev_txn[i] = (uint8_t)(0xF0 - i);
	r->prev_commit_ts = 42;
}

static lock_ref secs[3];

static void make_primary(lock_rec *r, uint8_t state)
{
	static const uint8_t row_nul[] = { 'r', 0x00, 0x00, 'w' };

	secs[0] = (lock_ref){ { "t1", 2 }, { "row-a", 5 } };
	secs[1] = (lock_ref){ { "t2", 2 }, { row_nul, sizeof(row_nul) } };
	secs[2] = (lock_ref){ { "t", 1 }, { "\x00", 1 } };
	fill_head(r, state, 7);
	fill_body(r);
	r->secondaries = secs;
	r->nsecondaries = 3;
	r->redo = (store_mut *)redo_every_kind(&r->nredo);
}

static void make_secondary(lock_rec *r)
{
	fill_head(r, LOCK_PREWRITTEN, 9);
	fill_body(r);
	r->flags = LOCK_F_SECONDARY;
	r->primary = (lock_ref){ { "orders", 6 }, { "\x00k\x00", 3 } };
	r->redo = (store_mut *)redo_every_kind(&r->nredo);
	r->nredo = 2;
}

static int bytes_eq(mrtx_bytes a, mrtx_bytes b)
{
	return a.size == b.size && (a.size == 0 || memcmp(a.data, b.data, a.size) == 0);
}

static void assert_ref_eq(const lock_ref *a, const lock_ref *b)
{
	assert_true(bytes_eq(a->table, b->table));
	assert_true(bytes_eq(a->row, b->row));
}

static void assert_rec_eq(const lock_rec *a, const lock_rec *b)
{
	assert_int_equal(a->state, b->state);
	assert_memory_equal(a->tag, b->tag, LOCK_TAG_SIZE);
	assert_memory_equal(a->txn, b->txn, LOCK_TXNID_SIZE);
	assert_true(a->commit_ts == b->commit_ts);
	if (a->state == LOCK_STABLE) {
		assert_int_equal(b->flags, 0);
		return;
	}
	assert_int_equal(a->flags, b->flags);
	assert_true(a->expiry_ms == b->expiry_ms);
	assert_memory_equal(&a->owner.boot_id, &b->owner.boot_id, 16);
	assert_int_equal(a->owner.pid, b->owner.pid);
	assert_true(a->owner.start_time == b->owner.start_time);
	assert_memory_equal(a->prev_txn, b->prev_txn, LOCK_TXNID_SIZE);
	assert_true(a->prev_commit_ts == b->prev_commit_ts);
	if (a->flags & LOCK_F_SECONDARY) {
		assert_ref_eq(&a->primary, &b->primary);
		assert_int_equal(b->nsecondaries, 0);
	} else {
		assert_int_equal(a->nsecondaries, b->nsecondaries);
		for (size_t i = 0; i < a->nsecondaries; i++)
			assert_ref_eq(&a->secondaries[i], &b->secondaries[i]);
	}
	assert_int_equal(a->nredo, b->nredo);
	for (size_t i = 0; i < a->nredo; i++) {
		assert_int_equal(a->redo[i].kind, b->redo[i].kind);
		assert_int_equal(a->redo[i].fid, b->redo[i].fid);
		assert_true(bytes_eq(a->redo[i].qual, b->redo[i].qual));
		assert_true(bytes_eq(a->redo[i].value, b->redo[i].value));
	}
}

/* Encode, decode, compare, and check that re-encoding gives the same bytes. */
static mrtx_bytes round_trip(const lock_rec *r, mrtx_arena *a)
{
	mrtx_bytes enc, enc2;
	lock_rec d;

	assert_int_equal(lock_encode(r, a, &enc), 0);
	assert_int_equal(enc.size, lock_encoded_size(r));
	assert_int_equal(lock_decode(&d, enc, a), 0);
	assert_rec_eq(r, &d);
	assert_int_equal(lock_encode(&d, a, &enc2), 0);
	assert_true(bytes_eq(enc, enc2));
	return enc;
}

/* A few valid records of every shape, encoded into a. */
static size_t sample_encodings(mrtx_arena *a, mrtx_bytes out[6])
{
	lock_rec r;
	size_t n = 0;

	fill_head(&r, LOCK_STABLE, 1);
	out[n++] = round_trip(&r, a);
	make_primary(&r, LOCK_PREWRITTEN);
	out[n++] = round_trip(&r, a);
	make_secondary(&r);
	out[n++] = round_trip(&r, a);
	make_primary(&r, LOCK_COMMITTED);
	out[n++] = round_trip(&r, a);
	make_primary(&r, LOCK_ABORTED);
	r.flags = LOCK_F_PREV_ABSENT;
	r.nsecondaries = 0;
	r.nredo = 0;
	out[n++] = round_trip(&r, a);
	make_secondary(&r);
	r.flags |= LOCK_F_PREV_ABSENT;
	r.nredo = 0;
	out[n++] = round_trip(&r, a);
	return n;
}

/* Decode from an exactly sized heap copy so ASan sees any over-read. */
static int decode_copy(const uint8_t *p, size_t n, mrtx_arena *a, lock_rec *out)
{
	uint8_t *c = malloc(n ? n : 1);
	int rc;

	assert_non_null(c);
	if (n)
		memcpy(c, p, n);
	rc = lock_decode(out, MRTX_BYTES(n ? c : NULL, n), a);
	if (rc == 0) {
		/* out points into c: re-encode before freeing and compare. */
		mrtx_bytes re;

		CHECK(lock_encode(out, a, &re) == 0, "re-encode of a decoded record failed");
		CHECK(re.size == n && memcmp(re.data, c, n) == 0,
		      "decode accepted a non-canonical encoding (%zu bytes)", n);
	}
	free(c);
	return rc;
}

/* ------------------------------------------------------------ format */

static void test_roundtrip_stable(void **state)
{
	mrtx_arena a;
	mrtx_bytes enc;
	lock_rec r, d;

	(void)state;
	arena_init(&a);
	fill_head(&r, LOCK_STABLE, 3);
	enc = round_trip(&r, &a);
	assert_int_equal(enc.size, 35);
	assert_int_equal(((const uint8_t *)enc.data)[0], LOCK_VERSION);
	/* little-endian commit_ts is the last field */
	assert_int_equal(((const uint8_t *)enc.data)[27], 0x08 + 3);
	assert_int_equal(((const uint8_t *)enc.data)[34], 0x01);

	/* Body fields and flags of a STABLE record are not encoded. */
	fill_body(&r);
	r.flags = LOCK_F_SECONDARY;
	assert_int_equal(lock_encode(&r, &a, &enc), 0);
	assert_int_equal(enc.size, 35);
	assert_int_equal(lock_decode(&d, enc, &a), 0);
	assert_int_equal(d.flags, 0);
	assert_int_equal(d.nredo, 0);
	assert_null(d.secondaries);
	arena_free(&a);
}

static void test_roundtrip_primary(void **state)
{
	mrtx_arena a;
	lock_rec r, d;
	mrtx_bytes enc;

	(void)state;
	arena_init(&a);
	make_primary(&r, LOCK_PREWRITTEN);
	enc = round_trip(&r, &a);
	assert_int_equal(lock_decode(&d, enc, &a), 0);
	/* Variable parts point into the input. */
	const uint8_t *lo = enc.data, *hi = lo + enc.size;
	assert_true((const uint8_t *)d.secondaries[1].row.data > lo);
	assert_true((const uint8_t *)d.secondaries[1].row.data < hi);
	assert_true((const uint8_t *)d.redo[0].value.data < hi);
	assert_int_equal(d.redo[2].value.size, 0);
	arena_free(&a);
}

static void test_roundtrip_secondary(void **state)
{
	mrtx_arena a;
	lock_rec r;

	(void)state;
	arena_init(&a);
	make_secondary(&r);
	round_trip(&r, &a);
	r.nredo = 0;
	round_trip(&r, &a);
	arena_free(&a);
}

static void test_roundtrip_committed_aborted(void **state)
{
	mrtx_arena a;
	lock_rec r;

	(void)state;
	arena_init(&a);
	make_primary(&r, LOCK_COMMITTED);
	round_trip(&r, &a);
	make_primary(&r, LOCK_ABORTED);
	r.flags = LOCK_F_PREV_ABSENT;
	round_trip(&r, &a);
	r.nsecondaries = 0;
	r.nredo = 0;
	round_trip(&r, &a);
	arena_free(&a);
}

static void test_peek(void **state)
{
	mrtx_arena a;
	mrtx_bytes enc[6];
	lock_rec d;
	uint8_t st, txn[LOCK_TXNID_SIZE];
	uint8_t bad[64];

	(void)state;
	arena_init(&a);
	size_t n = sample_encodings(&a, enc);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(lock_decode(&d, enc[i], &a), 0);
		assert_int_equal(lock_peek(enc[i], &st, txn), 0);
		assert_int_equal(st, d.state);
		assert_memory_equal(txn, d.txn, LOCK_TXNID_SIZE);
	}
	memcpy(bad, enc[1].data, sizeof(bad));
	bad[0] = 2;
	assert_int_equal(lock_peek(MRTX_BYTES(bad, sizeof(bad)), &st, txn), MRTX_ECORRUPT);
	bad[0] = 1;
	bad[1] = 4;
	assert_int_equal(lock_peek(MRTX_BYTES(bad, sizeof(bad)), &st, txn), MRTX_ECORRUPT);
	assert_int_equal(lock_peek(MRTX_BYTES(enc[0].data, 20), &st, txn), MRTX_ECORRUPT);
	assert_int_equal(lock_peek(MRTX_BYTES(NULL, 0), &st, txn), MRTX_ECORRUPT);
	arena_free(&a);
}

static void test_prev_stable(void **state)
{
	lock_rec r, s;

	(void)state;
	make_primary(&r, LOCK_ABORTED);
	lock_prev_stable(&r, &s);
	assert_int_equal(s.state, LOCK_STABLE);
	assert_int_equal(s.flags, 0);
	assert_memory_equal(s.tag, r.tag, LOCK_TAG_SIZE);
	assert_memory_equal(s.txn, r.prev_txn, LOCK_TXNID_SIZE);
	assert_true(s.commit_ts == r.prev_commit_ts);
	assert_int_equal(s.nredo, 0);
	assert_int_equal(s.nsecondaries, 0);
	lock_prev_stable(&r, &r); /* in place */
	assert_memory_equal(&r, &s, sizeof(r));
}

/* Checks I1 (DESIGN §10). */
static void test_every_truncation(void **state)
{
	mrtx_arena a;
	mrtx_bytes enc[6];
	lock_rec d;

	(void)state;
	arena_init(&a);
	size_t n = sample_encodings(&a, enc);
	for (size_t i = 0; i < n; i++) {
		for (size_t len = 0; len < enc[i].size; len++)
			CHECK(decode_copy(enc[i].data, len, &a, &d) == MRTX_ECORRUPT,
			      "sample %zu truncated to %zu of %zu bytes accepted", i, len,
			      enc[i].size);
		/* and one trailing byte */
		uint8_t *ext = malloc(enc[i].size + 1);
		assert_non_null(ext);
		memcpy(ext, enc[i].data, enc[i].size);
		ext[enc[i].size] = 0;
		assert_int_equal(decode_copy(ext, enc[i].size + 1, &a, &d), MRTX_ECORRUPT);
		free(ext);
	}
	assert_int_equal(decode_copy(NULL, 0, &a, &d), MRTX_ECORRUPT);
	arena_free(&a);
}

/* Checks I1 (DESIGN §10). */
static void test_random_mutations(void **state)
{
	mrtx_arena a, scratch;
	mrtx_bytes enc[6];
	uint8_t buf[1024];
	lock_rec d;
	int accepted = 0;

	(void)state;
	arena_init(&a);
	size_t n = sample_encodings(&a, enc);
	for (int it = 0; it < 20000; it++) {
		const mrtx_bytes *e = &enc[tu_rng() % n];
		size_t len = e->size;
		int rc;

		assert_true(len < sizeof(buf) - 8);
		memcpy(buf, e->data, len);
		for (uint32_t k = 1 + tu_rng() % 4; k; k--) {
			uint32_t pos = tu_rng() % (uint32_t)len;

			if (tu_rng() % 2)
				buf[pos] ^= (uint8_t)(1u << (tu_rng() % 8));
			else
				buf[pos] = (uint8_t)tu_rng();
		}
		if (tu_rng() % 8 == 0)
			len = tu_rng() % (len + 4); /* sometimes also cut or extend */
		arena_init(&scratch);
		rc = decode_copy(buf, len, &scratch, &d);
		CHECK(rc == 0 || rc == MRTX_ECORRUPT, "iteration %d: rc %d", it, rc);
		CHECK(scratch.total < ((size_t)1 << 20), "iteration %d: arena grew to %zu",
		      it, scratch.total);
		accepted += rc == 0;
		arena_free(&scratch);
	}
	/* Flips in tag/txn/timestamps/owner keep a record valid. */
	assert_true(accepted > 0);
	arena_free(&a);
}

/*
 * Head and body of a valid PREWRITTEN record, with flags set, up to where
 * the primary reference or the secondaries count begins.
 */
static size_t prefix(uint8_t *buf, uint8_t flags)
{
	lock_rec r;
	mrtx_arena a;
	mrtx_bytes enc;
	size_t n;

	arena_init(&a);
	fill_head(&r, LOCK_PREWRITTEN, 5);
	fill_body(&r);
	assert_int_equal(lock_encode(&r, &a, &enc), 0);
	n = enc.size - 8; /* drop u32 secondaries count, u32 redo count */
	memcpy(buf, enc.data, n);
	buf[2] = flags;
	arena_free(&a);
	return n;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Checks I1 (DESIGN §10). */
static void test_huge_counts(void **state)
{
	uint8_t buf[256];
	mrtx_arena a;
	lock_rec d;
	size_t n;

	(void)state;
	arena_init(&a);
	n = prefix(buf, 0);
	/* secondaries count 2^32-1 with 40 bytes of data */
	put32(buf + n, 0xFFFFFFFFu);
	memset(buf + n + 4, 'x', 40);
	assert_int_equal(decode_copy(buf, n + 44, &a, &d), MRTX_ECORRUPT);
	/* count just over what the data could hold (6 bytes per reference) */
	put32(buf + n, 7);
	assert_int_equal(decode_copy(buf, n + 44, &a, &d), MRTX_ECORRUPT);
	/* redo count huge */
	put32(buf + n, 0);
	put32(buf + n + 4, 0x40000000u);
	memset(buf + n + 8, 1, 64);
	assert_int_equal(decode_copy(buf, n + 72, &a, &d), MRTX_ECORRUPT);
	assert_true(a.total < 65536);
	/* empty lists are fine */
	put32(buf + n + 4, 0);
	assert_int_equal(decode_copy(buf, n + 8, &a, &d), 0);
	assert_null(d.secondaries);
	assert_null(d.redo);
	arena_free(&a);
}

/* Checks I1 (DESIGN §10). */
static void test_unknown_fields(void **state)
{
	uint8_t buf[512];
	mrtx_arena a;
	lock_rec d;
	size_t n;

	(void)state;
	arena_init(&a);
	/* one DEL_ROW redo entry with empty qualifier and value */
	n = prefix(buf, 0);
	put32(buf + n, 0);
	put32(buf + n + 4, 1);
	const size_t kind_at = n + 8;
	memcpy(buf + kind_at, "\x04\x00\x00\x00\x00\x00\x00\x00", 8);
	size_t len = kind_at + 8;
	assert_int_equal(decode_copy(buf, len, &a, &d), 0);
	assert_int_equal(d.redo[0].kind, STORE_MUT_DEL_ROW);
	for (unsigned k = 0; k < 256; k++) {
		buf[kind_at] = (uint8_t)k;
		int want = k >= STORE_MUT_PUT && k <= STORE_MUT_DEL_ROW ? 0 : MRTX_ECORRUPT;
		assert_int_equal(decode_copy(buf, len, &a, &d), want);
	}
	buf[kind_at] = STORE_MUT_PUT;
	for (unsigned v = 0; v < 256; v++) {
		buf[0] = (uint8_t)v;
		assert_int_equal(decode_copy(buf, len, &a, &d), v == 1 ? 0 : MRTX_ECORRUPT);
	}
	buf[0] = 1;
	for (unsigned s = 4; s < 256; s++) {
		buf[1] = (uint8_t)s;
		assert_int_equal(decode_copy(buf, len, &a, &d), MRTX_ECORRUPT);
	}
	buf[1] = LOCK_PREWRITTEN;
	for (unsigned f = 4; f < 256; f++) {
		buf[2] = (uint8_t)f;
		assert_int_equal(decode_copy(buf, len, &a, &d), MRTX_ECORRUPT);
	}
	/* qualifier over MRTX_MAX_KEY */
	buf[2] = 0;
	buf[kind_at + 2] = (MRTX_MAX_KEY + 1) & 0xFF;
	buf[kind_at + 3] = (MRTX_MAX_KEY + 1) >> 8;
	assert_int_equal(decode_copy(buf, len, &a, &d), MRTX_ECORRUPT);
	arena_free(&a);
}

/* Checks I1 (DESIGN §10). */
static void test_stable_with_flags_or_body(void **state)
{
	uint8_t buf[64];
	mrtx_arena a;
	mrtx_bytes enc;
	lock_rec r, d;

	(void)state;
	arena_init(&a);
	fill_head(&r, LOCK_STABLE, 2);
	assert_int_equal(lock_encode(&r, &a, &enc), 0);
	memcpy(buf, enc.data, enc.size);
	for (unsigned f = 1; f < 256; f++) {
		buf[2] = (uint8_t)f;
		assert_int_equal(decode_copy(buf, enc.size, &a, &d), MRTX_ECORRUPT);
	}
	arena_free(&a);
}

static void test_bad_refs(void **state)
{
	uint8_t buf[512];
	mrtx_arena a;
	lock_rec d;
	size_t n;

	(void)state;
	arena_init(&a);
	/* secondary with an empty primary table name */
	n = prefix(buf, LOCK_F_SECONDARY);
	memcpy(buf + n, "\x00\x00\x01\x00r\x00\x00\x00\x00", 9);
	assert_int_equal(decode_copy(buf, n + 9, &a, &d), MRTX_ECORRUPT);
	/* table ok, row length 0 */
	memcpy(buf + n, "\x01\x00t\x00\x00\x00\x00\x00\x00", 9);
	assert_int_equal(decode_copy(buf, n + 9, &a, &d), MRTX_ECORRUPT);
	/* table ok, row 1 byte: valid */
	memcpy(buf + n, "\x01\x00t\x01\x00r\x00\x00\x00\x00", 10);
	assert_int_equal(decode_copy(buf, n + 10, &a, &d), 0);
	assert_int_equal(d.primary.row.size, 1);
	/* table name of MRTX_MAX_NAME + 1 */
	buf[n] = MRTX_MAX_NAME + 1;
	buf[n + 1] = 0;
	memset(buf + n + 2, 't', MRTX_MAX_NAME + 1);
	memcpy(buf + n + 2 + MRTX_MAX_NAME + 1, "\x01\x00r\x00\x00\x00\x00", 7);
	assert_int_equal(decode_copy(buf, n + 2 + MRTX_MAX_NAME + 1 + 7, &a, &d),
	                 MRTX_ECORRUPT);
	buf[n] = MRTX_MAX_NAME;
	memmove(buf + n + 2 + MRTX_MAX_NAME, buf + n + 2 + MRTX_MAX_NAME + 1, 7);
	assert_int_equal(decode_copy(buf, n + 2 + MRTX_MAX_NAME + 7, &a, &d), 0);
	arena_free(&a);
}

static void test_encode_limits(void **state)
{
	static uint8_t big[MRTX_MAX_KEY + 1];
	mrtx_arena a;
	mrtx_bytes enc;
	lock_rec r;
	store_mut m = { STORE_MUT_PUT, 0, { big, 0 }, { big, 0 }, 0 };
	lock_ref ref = { { big, MRTX_MAX_NAME + 1 }, { "r", 1 } };

	(void)state;
	arena_init(&a);
	fill_head(&r, LOCK_PREWRITTEN, 1);
	r.redo = &m;
	r.nredo = 1;
	r.secondaries = &ref;
	r.nsecondaries = 1;
	assert_int_equal(lock_encode(&r, &a, &enc), MRTX_ETOOBIG);
	assert_int_equal(lock_encoded_size(&r), 0);
	ref.table.size = MRTX_MAX_NAME;
	ref.row = MRTX_BYTES(big, MRTX_MAX_ROW + 1);
	assert_int_equal(lock_encode(&r, &a, &enc), MRTX_ETOOBIG);
	ref.row.size = MRTX_MAX_ROW;
	assert_int_equal(lock_encode(&r, &a, &enc), 0);
	ref.row.size = 0;
	assert_int_not_equal(lock_encode(&r, &a, &enc), 0);
	ref.row.size = 1;
	m.qual.size = MRTX_MAX_KEY + 1;
	assert_int_equal(lock_encode(&r, &a, &enc), MRTX_ETOOBIG);
	assert_int_equal(lock_encoded_size(&r), 0);
	m.qual.size = MRTX_MAX_KEY;
	m.value.size = (size_t)MRTX_MAX_VALUE + 1; /* data never read: size checked first */
	assert_int_equal(lock_encode(&r, &a, &enc), MRTX_ETOOBIG);
	m.value.size = 3;
	m.kind = 0;
	assert_int_not_equal(lock_encode(&r, &a, &enc), 0);
	m.kind = STORE_MUT_DEL_ROW + 1;
	assert_int_not_equal(lock_encode(&r, &a, &enc), 0);
	m.kind = STORE_MUT_DEL_CELL;
	round_trip(&r, &a);
	r.state = 4;
	assert_int_not_equal(lock_encode(&r, &a, &enc), 0);
	r.state = LOCK_PREWRITTEN;
	r.flags = 0x80;
	assert_int_not_equal(lock_encode(&r, &a, &enc), 0);
	arena_free(&a);
}

/* ------------------------------------------------------------ states */

/* Checks I3 (DESIGN §10). */
static void test_transitions(void **state)
{
	enum { ABSENT = 255 };
	static const uint8_t tos[] = { LOCK_STABLE, LOCK_PREWRITTEN, LOCK_COMMITTED,
	                               LOCK_ABORTED, 4, 17, ABSENT };
	/* legal[from][to index]; from 0..3 states, 4 = invalid, 5 = absent */
	static const int legal[6][7] = {
		/*               ST PW CO AB  4 17 ABS */
		/* STABLE */   { 1, 1, 0, 0, 0, 0, 0 },
		/* PREWRIT */  { 1, 1, 1, 1, 0, 0, 1 }, /* PW -> PW: heartbeat */
		/* COMMIT */   { 1, 0, 0, 0, 0, 0, 0 },
		/* ABORTED */  { 1, 0, 0, 0, 0, 0, 1 },
		/* invalid */  { 0, 0, 0, 0, 0, 0, 0 },
		/* absent */   { 1, 1, 0, 0, 0, 0, 0 },
	};

	(void)state;
	for (int f = 0; f < 6; f++)
		for (int t = 0; t < 7; t++) {
			int absent = f == 5;
			uint8_t from = absent ? LOCK_STABLE : (uint8_t)f;

			CHECK(lock_transition_ok(absent, from, tos[t]) == legal[f][t],
			      "transition %s%d -> %d", absent ? "absent " : "", f, tos[t]);
			/* from is ignored when absent */
			if (absent)
				CHECK(lock_transition_ok(1, LOCK_COMMITTED, tos[t]) == legal[f][t],
				      "absent(COMMITTED) -> %d", tos[t]);
		}
	assert_int_equal(lock_transition_ok(0, 200, LOCK_STABLE), 0);
}

/* The heartbeat's refresh: the expiry patched in place, nothing else. */
static void test_expiry_patch(void **state)
{
	mrtx_arena a;
	lock_rec r, d;
	mrtx_bytes enc, other;
	uint8_t buf[1024];

	(void)state;
	arena_init(&a);
	make_primary(&r, LOCK_PREWRITTEN);
	assert_int_equal(lock_encode(&r, &a, &enc), 0);
	assert_true(enc.size <= sizeof(buf) && enc.size >= lock_expiry_end());
	memcpy(buf, enc.data, enc.size);
	lock_set_expiry(buf, 1800000000456ull);
	assert_int_equal(lock_decode(&d, MRTX_BYTES(buf, enc.size), &a), 0);
	assert_true(d.expiry_ms == 1800000000456ull);
	d.expiry_ms = r.expiry_ms;
	assert_int_equal(lock_encode(&d, &a, &other), 0);
	assert_memory_equal(other.data, enc.data, enc.size); /* nothing else moved */
	assert_true(lock_same_but_expiry(enc, MRTX_BYTES(buf, enc.size)));
	assert_true(lock_same_but_expiry(enc, enc));
	/* any other byte differing: not the same */
	for (size_t i = 0; i < enc.size; i++) {
		if (i >= lock_expiry_end() - 8 && i < lock_expiry_end())
			continue;
		buf[i] ^= 1;
		assert_false(lock_same_but_expiry(enc, MRTX_BYTES(buf, enc.size)));
		buf[i] ^= 1;
	}
	assert_false(lock_same_but_expiry(enc, MRTX_BYTES(buf, enc.size - 1)));
	/* STABLE records have no expiry */
	fill_head(&r, LOCK_STABLE, 3);
	assert_int_equal(lock_encode(&r, &a, &enc), 0);
	assert_false(lock_same_but_expiry(enc, enc));
	arena_free(&a);
}

static void test_state_names(void **state)
{
	(void)state;
	assert_string_equal(lock_state_name(LOCK_STABLE), "STABLE");
	assert_string_equal(lock_state_name(LOCK_PREWRITTEN), "PREWRITTEN");
	assert_string_equal(lock_state_name(LOCK_COMMITTED), "COMMITTED");
	assert_string_equal(lock_state_name(LOCK_ABORTED), "ABORTED");
	assert_string_equal(lock_state_name(4), "INVALID");
	assert_string_equal(lock_state_name(255), "INVALID");
}

static int txnid_cmp(const void *x, const void *y)
{
	return memcmp(x, y, LOCK_TXNID_SIZE);
}

/* memcmp order, or the order of values compared as signed chars (Ceph's
 * omap_cmp), a prefix first. */
static int cmp_order(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, int is_signed)
{
	for (size_t i = 0; i < an && i < bn; i++) {
		int x = is_signed ? (int)(signed char)a[i] : a[i];
		int y = is_signed ? (int)(signed char)b[i] : b[i];

		if (x != y)
			return x < y ? -1 : 1;
	}
	return an < bn ? -1 : an > bn;
}

/*
 * Order keys: a STABLE record's key followed by the record (a RADOS lock
 * value of format 3) sorts below lock_order_below(ts) exactly when its
 * commit_ts < ts, compared byte-wise and as signed chars alike (every key
 * byte below 0x80); any other record never does.  Timestamps next to
 * every byte boundary, 0 and the largest.
 */
static void test_order_key(void **state)
{
	uint64_t ts[64];
	size_t n = 0;
	mrtx_arena a;

	(void)state;
	arena_init(&a);
	ts[n++] = 0;
	ts[n++] = UINT64_MAX;
	for (unsigned b = 0; b < 64 && n + 3 <= 64; b += 3) {
		uint64_t v = (uint64_t)1 << b;

		ts[n++] = v - 1 ? v - 1 : 1;
		ts[n++] = v;
		ts[n++] = v + 0x7f;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			lock_rec r;
			mrtx_bytes enc;
			uint8_t below[STORE_ORDER_SIZE], *val;

			memset(&r, 0, sizeof(r));
			r.state = LOCK_STABLE;
			r.commit_ts = ts[i];
			assert_int_equal(lock_encode(&r, &a, &enc), 0);
			val = arena_alloc(&a, STORE_ORDER_SIZE + enc.size);
			assert_non_null(val);
			lock_order_key(enc.data, enc.size, val);
			memcpy(val + STORE_ORDER_SIZE, enc.data, enc.size);
			lock_order_below(ts[j], below);
			for (size_t k = 0; k < STORE_ORDER_SIZE; k++)
				assert_true(val[k] < 0x80 && below[k] < 0x80);
			for (int sg = 0; sg < 2; sg++)
				if ((cmp_order(val, STORE_ORDER_SIZE + enc.size, below, STORE_ORDER_SIZE,
				               sg) < 0) != (ts[i] < ts[j]))
					fail_msg("commit_ts %#llx vs %#llx (%s compare)",
					         (unsigned long long)ts[i], (unsigned long long)ts[j],
					         sg ? "signed" : "byte");
			/* not STABLE: never below */
			r.state = LOCK_PREWRITTEN;
			assert_int_equal(lock_encode(&r, &a, &enc), 0);
			lock_order_key(enc.data, enc.size, val);
			assert_true(cmp_order(val, STORE_ORDER_SIZE, below, STORE_ORDER_SIZE, 1) > 0);
		}
	arena_free(&a);
}

static void test_txnid(void **state)
{
	uint8_t a[LOCK_TXNID_SIZE], b[LOCK_TXNID_SIZE];
	uint8_t fixed[LOCK_TXNID_SIZE];
	char hex[33];

	(void)state;
	assert_int_equal(lock_new_txnid(a), 0);
	assert_int_equal(lock_new_txnid(b), 0);
	assert_memory_not_equal(a, b, LOCK_TXNID_SIZE);
	{
		/* unique within a process, and a forked child gets its own salt */
		enum { N = 4096 };
		static uint8_t ids[N][LOCK_TXNID_SIZE];
		int fd[2];
		pid_t pid;
		uint8_t child[LOCK_TXNID_SIZE];

		for (int i = 0; i < N; i++)
			assert_int_equal(lock_new_txnid(ids[i]), 0);
		qsort(ids, N, LOCK_TXNID_SIZE, txnid_cmp);
		for (int i = 1; i < N; i++)
			assert_memory_not_equal(ids[i - 1], ids[i], LOCK_TXNID_SIZE);
		assert_int_equal(pipe(fd), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			uint8_t c[LOCK_TXNID_SIZE];

			_exit(lock_new_txnid(c) != 0 ||
			      write(fd[1], c, sizeof(c)) != (ssize_t)sizeof(c));
		}
		assert_int_equal(read(fd[0], child, sizeof(child)), (ssize_t)sizeof(child));
		assert_int_equal(waitpid(pid, NULL, 0), pid);
		close(fd[0]);
		close(fd[1]);
		assert_int_equal(lock_new_txnid(a), 0);
		/* the child's salt half differs from ours (64 random bits) */
		assert_memory_not_equal(child, a, 8);
		assert_memory_equal(ids[0], a, 8); /* ours share one salt */
	}
	for (int i = 0; i < LOCK_TXNID_SIZE; i++)
		fixed[i] = (uint8_t)(i * 17);
	fixed[15] = 0xAB;
	memset(hex, 'z', sizeof(hex));
	lock_txnid_hex(fixed, hex);
	assert_string_equal(hex, "00112233445566778899aabbccddeeab");
}

/* ------------------------------------------------------------ owners */

static int boot_id_known(const lock_owner *o)
{
	static const uint8_t zero[16];

	return memcmp(o->boot_id, zero, 16) != 0;
}

static void test_self_owner(void **state)
{
	const lock_owner *o = lock_self_owner();

	(void)state;
	assert_int_equal(o->pid, (uint32_t)getpid());
	assert_true(o->start_time > 0);
	assert_true(boot_id_known(o));
	assert_ptr_equal(lock_self_owner(), o);
	assert_int_equal(lock_owner_dead(o), 0);
}

static void test_owner_other_boot_or_process(void **state)
{
	lock_owner o = *lock_self_owner();

	(void)state;
	o.boot_id[0] ^= 1;
	assert_int_equal(lock_owner_dead(&o), 0); /* other boot: unknown */
	memset(o.boot_id, 0, sizeof(o.boot_id));
	assert_int_equal(lock_owner_dead(&o), 0);
	o = *lock_self_owner();
	o.start_time += 1; /* our pid, but another process's start time */
	assert_int_equal(lock_owner_dead(&o), 1);
	o.start_time = 0; /* unknown start time: pid alive, so alive */
	assert_int_equal(lock_owner_dead(&o), 0);
	o.pid = 0;
	assert_int_equal(lock_owner_dead(&o), 0);
}

/*
 * Fork a child that sends its lock_self_owner() (recomputed after fork) and
 * then waits for a byte on *release before exiting.
 */
static pid_t spawn_child(lock_owner *out, int *release)
{
	int up[2], down[2];
	pid_t pid;

	(void)lock_self_owner(); /* make sure the parent's cache is warm */
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const lock_owner *o = lock_self_owner();
		char c;

		close(up[0]);
		close(down[1]);
		if (write(up[1], o, sizeof(*o)) != (ssize_t)sizeof(*o))
			_exit(3);
		(void)!read(down[0], &c, 1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	assert_int_equal(read(up[0], out, sizeof(*out)), (ssize_t)sizeof(*out));
	close(up[0]);
	*release = down[1];
	return pid;
}

static char proc_state(pid_t pid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static void test_owner_child_reaped(void **state)
{
	lock_owner o;
	int release, status;
	pid_t pid;

	(void)state;
	pid = spawn_child(&o, &release);
	assert_int_equal(o.pid, (uint32_t)pid); /* recomputed after fork */
	assert_memory_equal(o.boot_id, lock_self_owner()->boot_id, 16);
	assert_true(o.start_time > 0);
	assert_int_equal(lock_owner_dead(&o), 0); /* alive, blocked on the pipe */
	close(release);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(lock_owner_dead(&o), 1);
}

static void test_owner_child_zombie(void **state)
{
	lock_owner o;
	int release, status, i;
	pid_t pid;

	(void)state;
	pid = spawn_child(&o, &release);
	assert_int_equal(lock_owner_dead(&o), 0);
	close(release);
	for (i = 0; i < 5000 && proc_state(pid) != 'Z'; i++)
		usleep(1000);
	assert_int_equal(proc_state(pid), 'Z');
	assert_int_equal(kill(pid, 0), 0); /* the pid still exists */
	assert_int_equal(lock_owner_dead(&o), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(lock_owner_dead(&o), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_stable),
		cmocka_unit_test(test_roundtrip_primary),
		cmocka_unit_test(test_roundtrip_secondary),
		cmocka_unit_test(test_roundtrip_committed_aborted),
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_prev_stable),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_random_mutations),
		cmocka_unit_test(test_huge_counts),
		cmocka_unit_test(test_unknown_fields),
		cmocka_unit_test(test_stable_with_flags_or_body),
		cmocka_unit_test(test_bad_refs),
		cmocka_unit_test(test_encode_limits),
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_expiry_patch),
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_txnid),
		cmocka_unit_test(test_self_owner),
		cmocka_unit_test(test_owner_other_boot_or_process),
		cmocka_unit_test(test_owner_child_reaped),
		cmocka_unit_test(test_owner_child_zombie),
		cmocka_unit_test(test_order_key),
	};

	tu_rng_seed(20240611ul);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
