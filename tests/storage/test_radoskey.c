/*
 * test_radoskey.c - the RADOS omap key codec (storage/rados/radoskey.c)
 * against a model: plain byte-string order, shorter prefix first.
 *
 * Random pairs (biased toward the bytes the escapes are about: 00 01 02 FD
 * FE FF) and, exhaustively, every pair of strings of up to 3 bytes over
 * those bytes plus 'a'.  Checked: rkey preserves order, rkey_desc reverses
 * it, both are self-delimiting and emit neither 0x00 nor 0xFF; rqual
 * preserves order and emits no 0x00; every decoder inverts its encoder,
 * ignores what follows a terminated encoding, and rejects cuts and junk
 * without reading past its input (exact-size heap copies, for ASan).
 * No cluster needed.  MRTX_SEED replays a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "storage/rados/radoskey.h"

#define MAXLEN 40
#define ENCMAX (2 * MAXLEN + 2)
#define PAIRS 30000

#define CHECK TU_CHECK

typedef struct str {
	uint8_t b[MAXLEN];
	size_t n;
} str;

static const uint8_t hot[] = { 0x00, 0x01, 0x02, 0xFD, 0xFE, 0xFF, 'a' };

static uint8_t rand_byte(void)
{
	uint32_t r = tu_rng() % 10;

	return r < 7 ? hot[r] : (uint8_t)tu_rng();
}

static void rand_str(str *s)
{
	s->n = tu_rng() % (MAXLEN + 1);
	for (size_t i = 0; i < s->n; i++)
		s->b[i] = rand_byte();
}

/* b: unrelated to a, a prefix of it, an extension of it, or a with one byte changed. */
static void rand_pair(str *a, str *b)
{
	rand_str(a);
	*b = *a;
	switch (tu_rng() % 4) {
	case 0: rand_str(b); break;
	case 1: b->n = tu_rng() % (a->n + 1); break;
	case 2:
		while (b->n < MAXLEN && tu_rng() % 3)
			b->b[b->n++] = rand_byte();
		break;
	default:
		if (b->n)
			b->b[tu_rng() % b->n] = rand_byte();
	}
}

static int sign(long v)
{
	return (v > 0) - (v < 0);
}

/* The model: byte by byte, then shorter first. */
static int model_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	for (size_t i = 0; i < an && i < bn; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return sign((long)an - (long)bn);
}

/* What omap does: memcmp, then length. */
static int omap_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? sign(c) : sign((long)an - (long)bn);
}

static int is_prefix(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	return an < bn && memcmp(a, b, an) == 0;
}

static void no_bytes(const uint8_t *e, size_t n, int ff, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		CHECK(e[i] != 0x00, "%s: 0x00 at %zu", what, i);
		CHECK(!ff || e[i] != 0xFF, "%s: 0xFF at %zu", what, i);
	}
}

/* Decoders run on an exact-size heap copy so that ASan sees any over-read. */
static size_t dec_copy(int kind, const uint8_t *in, size_t len, uint8_t *out, size_t *used)
{
	uint8_t *c = malloc(len ? len : 1);
	size_t n;

	assert_non_null(c);
	if (len)
		memcpy(c, in, len);
	n = kind == 0 ? rkey_get(out, c, len, used) :
	    kind == 1 ? rkey_get_desc(out, c, len, used) : rqual_get(out, c, len);
	free(c);
	return n;
}

/* Every property on one pair. */
static void check_pair(const str *a, const str *b, const char *tag, int i)
{
	uint8_t ea[ENCMAX], eb[ENCMAX], da[ENCMAX], db[ENCMAX], qa[2 * MAXLEN], qb[2 * MAXLEN];
	size_t na = rkey_put(ea, a->b, a->n), nb = rkey_put(eb, b->b, b->n);
	size_t dna = rkey_put_desc(da, a->b, a->n), dnb = rkey_put_desc(db, b->b, b->n);
	size_t qna = rqual_put(qa, a->b, a->n), qnb = rqual_put(qb, b->b, b->n);
	int want = model_cmp(a->b, a->n, b->b, b->n);

	CHECK(na == rkey_size(a->b, a->n) && dna == na, "%s %d: rkey size", tag, i);
	CHECK(qna == rqual_size(a->b, a->n), "%s %d: rqual size", tag, i);
	CHECK(omap_cmp(ea, na, eb, nb) == want, "%s %d: rkey order %d, model %d", tag, i,
	      omap_cmp(ea, na, eb, nb), want);
	CHECK(omap_cmp(da, dna, db, dnb) == -want, "%s %d: rkey_desc order %d, model %d", tag,
	      i, omap_cmp(da, dna, db, dnb), want);
	CHECK(omap_cmp(qa, qna, qb, qnb) == want, "%s %d: rqual order %d, model %d", tag, i,
	      omap_cmp(qa, qna, qb, qnb), want);
	CHECK(want == 0 || (!is_prefix(ea, na, eb, nb) && !is_prefix(eb, nb, ea, na)),
	      "%s %d: rkey not self-delimiting", tag, i);
	CHECK(want == 0 || (!is_prefix(da, dna, db, dnb) && !is_prefix(db, dnb, da, dna)),
	      "%s %d: rkey_desc not self-delimiting", tag, i);
	no_bytes(ea, na, 1, "rkey");
	no_bytes(da, dna, 1, "rkey_desc");
	no_bytes(qa, qna, 0, "rqual");
}

static void test_random_pairs(void **state)
{
	str a, b;

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		rand_pair(&a, &b);
		check_pair(&a, &b, "random pair", i);
	}
}

/* Every string of 0..3 bytes over the 7 interesting bytes, against every other. */
static void test_exhaustive_short(void **state)
{
	enum { K = sizeof(hot), N = 1 + K + K * K + K * K * K };
	static str all[N];
	size_t m = 0;

	(void)state;
	for (size_t len = 0; len <= 3; len++) {
		size_t count = 1;

		for (size_t j = 0; j < len; j++)
			count *= K;
		for (size_t c = 0; c < count; c++) {
			size_t v = c;

			all[m].n = len;
			for (size_t j = 0; j < len; j++, v /= K)
				all[m].b[len - 1 - j] = hot[v % K];
			m++;
		}
	}
	assert_int_equal(m, N);
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++)
			check_pair(&all[i], &all[j], "exhaustive", (int)(i * N + j));
}

/* Composite keys: rkey(row) . rqual(q) sorts by row, then q; with
 * rkey_desc(row), rows descend and q still ascends within a row. */
static void test_composite_order(void **state)
{
	uint8_t ka[4 * MAXLEN + 2], kb[4 * MAXLEN + 2], ra[4 * MAXLEN + 2], rb[4 * MAXLEN + 2];
	str r1, r2, q1, q2;

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		rand_pair(&r1, &r2);
		rand_pair(&q1, &q2);
		int rc = model_cmp(r1.b, r1.n, r2.b, r2.n), qc = model_cmp(q1.b, q1.n, q2.b, q2.n);
		size_t na = rkey_put(ka, r1.b, r1.n), nb = rkey_put(kb, r2.b, r2.n);
		size_t da = rkey_put_desc(ra, r1.b, r1.n), db = rkey_put_desc(rb, r2.b, r2.n);

		na += rqual_put(ka + na, q1.b, q1.n);
		nb += rqual_put(kb + nb, q2.b, q2.n);
		da += rqual_put(ra + da, q1.b, q1.n);
		db += rqual_put(rb + db, q2.b, q2.n);
		CHECK(omap_cmp(ka, na, kb, nb) == (rc ? rc : qc), "pair %d: ascending composite", i);
		CHECK(omap_cmp(ra, da, rb, db) == (rc ? -rc : qc), "pair %d: descending composite",
		      i);
	}
}

static void test_decode_inverts(void **state)
{
	uint8_t e[ENCMAX + 8], out[ENCMAX + 8];
	str s;

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		rand_str(&s);
		for (int kind = 0; kind < 3; kind++) {
			size_t n = kind == 0 ? rkey_put(e, s.b, s.n) :
			           kind == 1 ? rkey_put_desc(e, s.b, s.n) : rqual_put(e, s.b, s.n);
			size_t extra = kind == 2 ? 0 : tu_rng() % 8, used = 0, got;

			for (size_t k = 0; k < extra; k++)
				e[n + k] = rand_byte();
			got = dec_copy(kind, e, n + extra, out, &used);
			CHECK(got == s.n, "string %d kind %d: decoded %zu bytes, want %zu", i, kind,
			      got, s.n);
			CHECK(s.n == 0 || memcmp(out, s.b, s.n) == 0, "string %d kind %d: bytes", i,
			      kind);
			CHECK(kind == 2 || used == n, "string %d kind %d: used %zu of %zu", i, kind,
			      used, n);
			if (kind < 2) {
				size_t cut = tu_rng() % n;

				CHECK(dec_copy(kind, e, cut, out, &used) == RKEY_BAD,
				      "string %d kind %d: cut at %zu accepted", i, kind, cut);
			}
		}
	}
}

/* Random junk: a decoder either fails or returns what re-encodes to the input. */
static void test_junk_decodes_canonically(void **state)
{
	uint8_t in[MAXLEN], out[MAXLEN], re[2 * MAXLEN + 2];

	(void)state;
	for (int i = 0; i < PAIRS; i++) {
		size_t len = tu_rng() % MAXLEN, used = 0, n;

		for (size_t k = 0; k < len; k++)
			in[k] = rand_byte();
		n = dec_copy(0, in, len, out, &used);
		CHECK(n == RKEY_BAD || (used <= len && rkey_put(re, out, n) == used &&
		                        memcmp(re, in, used) == 0), "junk %d: rkey", i);
		n = dec_copy(1, in, len, out, &used);
		CHECK(n == RKEY_BAD || (used <= len && rkey_put_desc(re, out, n) == used &&
		                        memcmp(re, in, used) == 0), "junk %d: rkey_desc", i);
		n = dec_copy(2, in, len, out, &used);
		CHECK(n == RKEY_BAD || (rqual_put(re, out, n) == len && memcmp(re, in, len) == 0),
		      "junk %d: rqual", i);
	}
}

static void test_known_encodings(void **state)
{
	uint8_t e[32], out[32];
	size_t used = 0;

	(void)state;
	assert_int_equal(rkey_put(e, (const uint8_t *)"", 0), 2);
	assert_memory_equal(e, "\x01\x01", 2);
	assert_int_equal(rkey_put(e, (const uint8_t *)"\x00\x01\xfe\xff" "a", 5), 11);
	assert_memory_equal(e, "\x01\x02\x01\x03\xfe\x01\xfe\x02" "a\x01\x01", 11);
	assert_int_equal(rkey_put_desc(e, (const uint8_t *)"a", 1), 3);
	assert_memory_equal(e, "\x9e\xfe\xfe", 3);
	assert_int_equal(rqual_put(e, (const uint8_t *)"\x00\x01\xff", 3), 5);
	assert_memory_equal(e, "\x01\x02\x01\x03\xff", 5);
	assert_int_equal(rqual_put(e, (const uint8_t *)"", 0), 0);
	assert_int_equal(dec_copy(0, (const uint8_t *)"\xfe\x02\x01\x01z", 5, out, &used), 1);
	assert_int_equal(out[0], 0xFF);
	assert_int_equal(used, 4);
}

static void test_malformed_rejected(void **state)
{
	static const struct {
		int kind;
		const char *in;
		size_t len;
	} bad[] = {
		{ 0, "", 0 }, { 0, "abc", 3 }, { 0, "\x01", 1 }, { 0, "a\x01\x04\x01\x01", 5 },
		{ 0, "\x01\x00\x01\x01", 4 }, { 0, "\x00\x01\x01", 3 }, { 0, "\xff\x01\x01", 3 },
		{ 0, "\xfe\x03\x01\x01", 4 }, { 0, "\xfe", 1 }, { 0, "\xfe\x00\x01\x01", 4 },
		{ 1, "", 0 }, { 1, "\xfe", 1 }, { 1, "\x01\x01", 2 }, { 1, "\xfe\xfb\xfe\xfe", 4 },
		{ 2, "\x00", 1 }, { 2, "a\x01", 2 }, { 2, "\x01\x01", 2 }, { 2, "\x01\x04", 2 },
	};
	uint8_t out[16];
	size_t used = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(dec_copy(bad[i].kind, (const uint8_t *)bad[i].in, bad[i].len, out, &used) ==
		      RKEY_BAD, "malformed input %zu accepted", i);
	assert_int_equal(used, 12345); /* untouched on failure */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_encodings),
		cmocka_unit_test(test_malformed_rejected),
		cmocka_unit_test(test_random_pairs),
		cmocka_unit_test(test_exhaustive_short),
		cmocka_unit_test(test_composite_order),
		cmocka_unit_test(test_decode_inverts),
		cmocka_unit_test(test_junk_decodes_canonically),
	};

	tu_rng_seed(20261123ul);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
