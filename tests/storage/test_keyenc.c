/*
 * test_keyenc.c - the order-preserving key encoding, checked against a
 * model (plain lexicographic order, shorter prefix first) on random byte
 * strings: half biased toward 0x00, 0x01 and 0xFF, the bytes the escape is
 * about, half mostly without NULs, so that the encoder's eight-bytes-at-a-
 * time path runs whole words as well as the byte path.  Also LMDB's key
 * comparator (lmdb_key_cmp) against memcmp order on such keys.
 *
 * The seed comes from MRTX_SEED (default fixed) and is printed with any
 * failure so it can be replayed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "storage/keyenc.h"
#include "storage/lmdb/lmdb_int.h"

#define MAXLEN 40
#define PAIRS 20000
#define BAD ((size_t)-1)

#define CHECK TU_CHECK

typedef struct str {
	uint8_t b[MAXLEN];
	size_t n;
} str;

static uint8_t rand_byte(void)
{
	static const uint8_t hot[] = { 0x00, 0x00, 0x00, 0x01, 0x01, 0xFF, 0xFF, 0x02, 0xFE };
	uint32_t r = tu_rng() % 10;

	return r < 9 ? hot[r] : (uint8_t)tu_rng();
}

/* Mostly not NUL: a NUL once in about 40 bytes. */
static uint8_t sparse_byte(void)
{
	uint32_t r = tu_rng();

	return r % 40 == 0 ? 0 : (uint8_t)(1 + r % 255);
}

static void rand_str(str *s)
{
	int sparse = tu_rng() % 2;

	s->n = tu_rng() % (MAXLEN + 1);
	for (size_t i = 0; i < s->n; i++)
		s->b[i] = sparse ? sparse_byte() : rand_byte();
}

/* b: independent of a, a prefix of a, a extended, or a with one byte changed. */
static void rand_pair(str *a, str *b)
{
	rand_str(a);
	*b = *a;
	switch (tu_rng() % 4) {
	case 0:
		rand_str(b);
		break;
	case 1:
		b->n = a->n ? tu_rng() % (a->n + 1) : 0;
		break;
	case 2:
		while (b->n < MAXLEN && tu_rng() % 3)
			b->b[b->n++] = rand_byte();
		break;
	default:
		if (b->n)
			b->b[tu_rng() % b->n] = rand_byte();
		break;
	}
	if (tu_rng() % 2) {
		str t = *a;
		*a = *b;
		*b = t;
	}
}

static int sign(long v)
{
	return (v > 0) - (v < 0);
}

static int model_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	for (size_t i = 0; i < an && i < bn; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return sign((long)an - (long)bn);
}

/* memcmp order of byte strings of possibly different lengths. */
static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? sign(c) : sign((long)an - (long)bn);
}

static size_t enc(uint8_t *out, const str *s)
{
	size_t n = keyenc_put(out, s->b, s->n);

	CHECK(n == keyenc_size(s->b, s->n), "keyenc_put wrote %zu, keyenc_size says %zu", n,
	      keyenc_size(s->b, s->n));
	return n;
}

/* keyenc_get on an exactly sized heap copy, so ASan sees any over-read. */
static size_t get_copy(const uint8_t *in, size_t len, uint8_t *out, size_t *used)
{
	uint8_t *c = malloc(len ? len : 1);
	size_t n;

	assert_non_null(c);
	if (len)
		memcpy(c, in, len);
	n = keyenc_get(out, c, len, used);
	free(c);
	return n;
}

static void test_order_matches_model(void **state)
{
	uint8_t ea[2 * MAXLEN + 2], eb[2 * MAXLEN + 2];
	str a, b;

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		rand_pair(&a, &b);
		size_t na = enc(ea, &a), nb = enc(eb, &b);
		int want = model_cmp(a.b, a.n, b.b, b.n);

		CHECK(bytes_cmp(ea, na, eb, nb) == want, "pair %d: order %d, model %d", i,
		      bytes_cmp(ea, na, eb, nb), want);
		/* Self-delimiting: neither is a proper prefix of the other. */
		CHECK(want == 0 || memcmp(ea, eb, na < nb ? na : nb) != 0,
		      "pair %d: one encoding is a prefix of the other", i);
	}
}

/* lmdb_key_cmp is LMDB's default order (memcmp, shorter prefix first):
 * stores written before it, and LMDB's own tools, agree with it. */
static void test_key_comparator_is_memcmp_order(void **state)
{
	str a, b;

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		rand_pair(&a, &b);
		MDB_val va = { a.n, a.b }, vb = { b.n, b.b };
		int want = bytes_cmp(a.b, a.n, b.b, b.n), got = sign(lmdb_key_cmp(&va, &vb));

		CHECK(got == want, "pair %d (%zu and %zu bytes): comparator %d, memcmp order %d",
		      i, a.n, b.n, got, want);
		CHECK(sign(lmdb_key_cmp(&vb, &va)) == -want, "pair %d: not antisymmetric", i);
	}
}

static void test_get_inverts_put(void **state)
{
	uint8_t e[2 * MAXLEN + 2 + 8], out[sizeof(e)];
	size_t used;
	str s;

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		rand_str(&s);
		size_t n = enc(e, &s), extra = tu_rng() % 8;

		/* Whatever follows the encoding (e.g. the rest of a cell key) is not read. */
		for (size_t k = 0; k < extra; k++)
			e[n + k] = rand_byte();
		used = 0;
		size_t got = get_copy(e, n + extra, out, &used);
		CHECK(got == s.n, "string %d: decoded %zu bytes, want %zu", i, got, s.n);
		CHECK(used == n, "string %d: used %zu, encoding is %zu", i, used, n);
		CHECK(s.n == 0 || memcmp(out, s.b, s.n) == 0, "string %d: wrong bytes", i);
		/* Any cut inside the encoding is malformed. */
		size_t cut = tu_rng() % n;
		CHECK(get_copy(e, cut, out, &used) == BAD, "string %d: cut at %zu accepted", i,
		      cut);
	}
}

static void test_known_encodings(void **state)
{
	uint8_t e[16], out[16];
	size_t used;

	(void)state;
	assert_int_equal(keyenc_put(e, (const uint8_t *)"", 0), 2);
	assert_memory_equal(e, "\x00\x01", 2);
	assert_int_equal(keyenc_put(e, (const uint8_t *)"a\x00" "b", 3), 6);
	assert_memory_equal(e, "a\x00\xff" "b\x00\x01", 6);
	assert_int_equal(get_copy((const uint8_t *)"\x00\xff\x00\x01", 4, out, &used), 1);
	assert_int_equal(out[0], 0);
	assert_int_equal(used, 4);
}

static void test_malformed_rejected(void **state)
{
	static const struct {
		const char *in;
		size_t len;
	} bad[] = {
		{ "", 0 },                /* nothing */
		{ "abc", 3 },             /* no terminator */
		{ "\x00", 1 },            /* truncated after 0x00 */
		{ "ab\x00", 3 },          /* truncated after 0x00 */
		{ "\x00\x02", 2 },        /* 0x00 then neither 0x01 nor 0xFF */
		{ "a\x00\x02\x00\x01", 5 },
		{ "\x00\x00\x01", 3 },    /* 0x00 0x00 */
		{ "\x00\xfe", 2 },
		{ "a\x00\xff", 3 },       /* escape, then no terminator */
		{ "\x00\xff\x00", 3 },
	};
	uint8_t out[16];
	size_t used = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(get_copy((const uint8_t *)bad[i].in, bad[i].len, out, &used) == BAD,
		      "malformed input %zu accepted", i);
	assert_int_equal(used, 12345); /* untouched on failure */
}

/* Model order of cell keys: row, then family id, then qualifier. */
static int cell_model_cmp(const str *ra, uint8_t fa, const str *qa, const str *rb,
                          uint8_t fb, const str *qb)
{
	int c = model_cmp(ra->b, ra->n, rb->b, rb->n);

	if (c)
		return c;
	if (fa != fb)
		return fa < fb ? -1 : 1;
	return model_cmp(qa->b, qa->n, qb->b, qb->n);
}

static void test_cell_keys_sort_by_row_fid_qual(void **state)
{
	uint8_t ka[4 * MAXLEN], kb[4 * MAXLEN];
	str ra, rb, qa, qb;

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		rand_pair(&ra, &rb);
		rand_pair(&qa, &qb);
		uint8_t fa = (uint8_t)(tu_rng() % 3), fb = tu_rng() % 2 ? fa : (uint8_t)(tu_rng() % 3);
		if (ra.n == 0) /* rows are never empty */
			ra.b[ra.n++] = 'r';
		if (rb.n == 0)
			rb.b[rb.n++] = 'r';
		size_t na = keyenc_cell(ka, ra.b, ra.n, fa, qa.b, qa.n);
		size_t nb = keyenc_cell(kb, rb.b, rb.n, fb, qb.b, qb.n);
		int want = cell_model_cmp(&ra, fa, &qa, &rb, fb, &qb);

		CHECK(na == keyenc_cell_size(ra.b, ra.n, qa.n), "pair %d: cell size", i);
		CHECK(nb == keyenc_cell_size(rb.b, rb.n, qb.n), "pair %d: cell size", i);
		CHECK(bytes_cmp(ka, na, kb, nb) == want, "pair %d: cell order %d, model %d", i,
		      bytes_cmp(ka, na, kb, nb), want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_matches_model),
		cmocka_unit_test(test_get_inverts_put),
		cmocka_unit_test(test_key_comparator_is_memcmp_order),
		cmocka_unit_test(test_known_encodings),
		cmocka_unit_test(test_malformed_rejected),
		cmocka_unit_test(test_cell_keys_sort_by_row_fid_qual),
	};

	tu_rng_seed(20240611ul);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
