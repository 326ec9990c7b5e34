/*
 * test_keybuild.c - the composite key builders (mrtx_key_*): property tests
 * against a model (for random tuples of random component types, memcmp
 * order of the encodings equals the tuple order, and parse inverts build),
 * plus the hash/salt prefixes, limits, prefix bounds and formatting.
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "mrtx.h"

#define MAXPARTS 4
#define MAXLEN 24
#define SCHEMAS 200
#define TUPLES 60

#define CHECK TU_CHECK

/* One component value of the model. */
typedef struct val {
	mrtx_key_type type;
	size_t width;
	uint8_t b[MAXLEN];
	size_t n;
	uint64_t u;
	int64_t i;
} val;

typedef struct tuple {
	size_t n;
	val v[MAXPARTS];
} tuple;

static const mrtx_key_type types[] = { MRTX_KEY_BYTES, MRTX_KEY_U32, MRTX_KEY_U64,
	                               MRTX_KEY_I32, MRTX_KEY_I64, MRTX_KEY_RTS,
	                               MRTX_KEY_FIXED };

/* Integers biased toward the edges, where sign flips and carries live. */
static uint64_t rand_u64(void)
{
	static const uint64_t edge[] = { 0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFFFFFF,
		                         0x80000000u, 0xFFFFFFFFu, 0x7FFFFFFFFFFFFFFFull,
		                         0x8000000000000000ull, UINT64_MAX, UINT64_MAX - 1 };

	if (tu_rng() % 3 == 0)
		return edge[tu_rng() % (sizeof(edge) / sizeof(edge[0]))];
	return tu_rng() % 2 ? tu_rng64() : tu_rng() % 300;
}

static void rand_bytes(uint8_t *b, size_t n)
{
	static const uint8_t hot[] = { 0x00, 0x00, 0x01, 0xFF, 0xFE, 0x02 };

	for (size_t i = 0; i < n; i++)
		b[i] = tu_rng() % 2 ? hot[tu_rng() % sizeof(hot)] : (uint8_t)tu_rng();
}

static void rand_val(val *v)
{
	uint64_t x = rand_u64();

	switch (v->type) {
	case MRTX_KEY_BYTES:
		v->n = tu_rng() % MAXLEN;
		rand_bytes(v->b, v->n);
		break;
	case MRTX_KEY_FIXED:
		v->n = v->width;
		rand_bytes(v->b, v->n);
		break;
	case MRTX_KEY_U32:
		v->u = (uint32_t)x;
		break;
	case MRTX_KEY_I32:
		v->i = (int32_t)(uint32_t)x;
		break;
	case MRTX_KEY_I64:
		v->i = (int64_t)x;
		break;
	default:
		v->u = x;
		break;
	}
}

static int cmp3(int c)
{
	return c < 0 ? -1 : c > 0;
}

static int bytes_cmp3(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? cmp3(c) : (an < bn ? -1 : an > bn);
}

/* The model's tuple order. */
static int tuple_cmp(const tuple *a, const tuple *b)
{
	for (size_t k = 0; k < a->n; k++) {
		const val *x = &a->v[k], *y = &b->v[k];
		int c;

		switch (x->type) {
		case MRTX_KEY_BYTES:
		case MRTX_KEY_FIXED:
			c = bytes_cmp3(x->b, x->n, y->b, y->n);
			break;
		case MRTX_KEY_I32:
		case MRTX_KEY_I64:
			c = x->i < y->i ? -1 : x->i > y->i;
			break;
		case MRTX_KEY_RTS:
			c = x->u > y->u ? -1 : x->u < y->u; /* newest first */
			break;
		default:
			c = x->u < y->u ? -1 : x->u > y->u;
			break;
		}
		if (c)
			return c;
	}
	return 0;
}

static void build(const tuple *t, mrtx_key *k)
{
	mrtx_key_init(k);
	for (size_t i = 0; i < t->n; i++) {
		const val *v = &t->v[i];
		int rc = 0;

		switch (v->type) {
		case MRTX_KEY_BYTES: rc = mrtx_key_bytes(k, MRTX_BYTES(v->b, v->n)); break;
		case MRTX_KEY_FIXED: rc = mrtx_key_fixed(k, MRTX_BYTES(v->b, v->n)); break;
		case MRTX_KEY_U32: rc = mrtx_key_u32(k, (uint32_t)v->u); break;
		case MRTX_KEY_U64: rc = mrtx_key_u64(k, v->u); break;
		case MRTX_KEY_I32: rc = mrtx_key_i32(k, (int32_t)v->i); break;
		case MRTX_KEY_I64: rc = mrtx_key_i64(k, v->i); break;
		case MRTX_KEY_RTS: rc = mrtx_key_rts(k, v->u); break;
		default: fail_msg("bad type");
		}
		CHECK(rc == 0, "append failed: %s", mrtx_errmsg());
	}
}

static void check_parse(const tuple *t, const mrtx_key *k)
{
	mrtx_key_part p[MAXPARTS];
	uint8_t buf[MRTX_MAX_KEY];

	memset(p, 0, sizeof(p));
	for (size_t i = 0; i < t->n; i++) {
		p[i].type = t->v[i].type;
		p[i].width = t->v[i].width;
	}
	CHECK(mrtx_key_parse(p, t->n, MRTX_BYTES(k->buf, k->size), buf, sizeof(buf)) == 0,
	      "parse failed: %s", mrtx_errmsg());
	for (size_t i = 0; i < t->n; i++) {
		const val *v = &t->v[i];

		switch (v->type) {
		case MRTX_KEY_BYTES:
		case MRTX_KEY_FIXED:
			CHECK(p[i].bytes.size == v->n &&
			      (v->n == 0 || memcmp(p[i].bytes.data, v->b, v->n) == 0),
			      "component %zu: bytes differ after parse", i);
			break;
		case MRTX_KEY_I32:
		case MRTX_KEY_I64:
			CHECK(p[i].i == v->i, "component %zu: %lld != %lld", i, (long long)p[i].i,
			      (long long)v->i);
			break;
		default:
			CHECK(p[i].u == v->u, "component %zu: %llu != %llu", i,
			      (unsigned long long)p[i].u, (unsigned long long)v->u);
			break;
		}
	}
	/* One component short leaves trailing bytes; a cut key is truncated. */
	if (t->n > 1)
		CHECK(mrtx_key_parse(p, t->n - 1, MRTX_BYTES(k->buf, k->size), buf,
		                     sizeof(buf)) == MRTX_EINVAL, "trailing bytes accepted");
	if (k->size > 0)
		CHECK(mrtx_key_parse(p, t->n, MRTX_BYTES(k->buf, k->size - 1), buf,
		                     sizeof(buf)) == MRTX_EINVAL, "truncated key accepted");
}

static void test_order_and_roundtrip(void **state)
{
	(void)state;
	tu_rng_seed(20240612ul);
	for (int s = 0; s < SCHEMAS; s++) {
		static tuple t[TUPLES];
		static mrtx_key k[TUPLES];
		size_t nparts = 1 + tu_rng() % MAXPARTS;
		val proto[MAXPARTS];

		for (size_t i = 0; i < nparts; i++) {
			proto[i].type = types[tu_rng() % (sizeof(types) / sizeof(types[0]))];
			proto[i].width = proto[i].type == MRTX_KEY_FIXED ? 1 + tu_rng() % 4 : 0;
		}
		for (int j = 0; j < TUPLES; j++) {
			t[j].n = nparts;
			for (size_t i = 0; i < nparts; i++) {
				t[j].v[i] = proto[i];
				/* Often copy a neighbour's component: ties reach later parts. */
				if (j && tu_rng() % 3 == 0)
					t[j].v[i] = t[j - 1].v[i];
				else
					rand_val(&t[j].v[i]);
			}
			build(&t[j], &k[j]);
			check_parse(&t[j], &k[j]);
		}
		for (int a = 0; a < TUPLES; a++)
			for (int b = 0; b < TUPLES; b++) {
				int want = tuple_cmp(&t[a], &t[b]);
				int got = bytes_cmp3(k[a].buf, k[a].size, k[b].buf, k[b].size);

				CHECK(want == got, "schema %d: tuples %d,%d: model %d, encoding %d", s, a,
				      b, want, got);
			}
	}
}

static void test_hash_and_salt(void **state)
{
	uint8_t md[SHA256_DIGEST_LENGTH];
	unsigned hits[16] = { 0 };
	mrtx_key k;
	mrtx_key_part p[2] = { { .type = MRTX_KEY_HASH, .width = 4 }, { .type = MRTX_KEY_BYTES } };
	uint8_t buf[MRTX_MAX_KEY];

	(void)state;
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_hash(&k, MRTX_CSTR("user42"), 4), 0);
	assert_int_equal(mrtx_key_str(&k, "user42"), 0);
	SHA256((const uint8_t *)"user42", 6, md);
	assert_int_equal(k.size, 4 + 6 + 2);
	assert_memory_equal(k.buf, md, 4);
	assert_int_equal(mrtx_key_parse(p, 2, MRTX_BYTES(k.buf, k.size), buf, sizeof(buf)), 0);
	assert_memory_equal(p[0].bytes.data, md, 4);
	assert_int_equal(p[1].bytes.size, 6);

	/* Bad widths and bucket counts are errors, and sticky. */
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_hash(&k, MRTX_CSTR("x"), 0), MRTX_EINVAL);
	assert_int_equal(mrtx_key_u32(&k, 1), MRTX_EINVAL);
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_hash(&k, MRTX_CSTR("x"), 33), MRTX_EINVAL);
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_salt(&k, MRTX_CSTR("x"), 0), MRTX_EINVAL);
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_salt(&k, MRTX_CSTR("x"), 257), MRTX_EINVAL);

	/* Salt: deterministic, in range, spread over every bucket. */
	for (int i = 0; i < 2000; i++) {
		char id[32];
		mrtx_key k2;

		snprintf(id, sizeof(id), "order-%08d", i); /* monotonically increasing */
		mrtx_key_init(&k);
		mrtx_key_init(&k2);
		assert_int_equal(mrtx_key_salt(&k, MRTX_CSTR(id), 16), 0);
		assert_int_equal(mrtx_key_salt(&k2, MRTX_CSTR(id), 16), 0);
		assert_int_equal(k.size, 1);
		assert_int_equal(k.buf[0], k2.buf[0]);
		assert_true(k.buf[0] < 16);
		hits[k.buf[0]]++;
	}
	for (int b = 0; b < 16; b++)
		assert_in_range(hits[b], 60, 200); /* 125 expected */
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_salt(&k, MRTX_CSTR("x"), 1), 0);
	assert_int_equal(k.buf[0], 0);
}

static void test_limits_sticky(void **state)
{
	uint8_t big[MRTX_MAX_KEY];
	mrtx_key k = MRTX_KEY_INIT;
	mrtx_bytes out;

	(void)state;
	memset(big, 'a', sizeof(big));
	assert_int_equal(mrtx_key_fixed(&k, MRTX_BYTES(big, MRTX_MAX_KEY - 8)), 0);
	assert_int_equal(mrtx_key_u64(&k, 7), 0);
	assert_int_equal(k.size, MRTX_MAX_KEY);
	assert_int_equal(mrtx_key_finish(&k, &out), 0);
	assert_int_equal(out.size, MRTX_MAX_KEY);
	/* One byte more fails, leaves the key as it was, and stays failed. */
	assert_int_equal(mrtx_key_fixed(&k, MRTX_BYTES(big, 1)), MRTX_ETOOBIG);
	assert_int_equal(k.size, MRTX_MAX_KEY);
	assert_int_equal(mrtx_key_u32(&k, 1), MRTX_ETOOBIG);
	assert_int_equal(mrtx_key_finish(&k, &out), MRTX_ETOOBIG);
	assert_int_equal(out.size, 0);
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_bytes(&k, MRTX_BYTES(big, MRTX_MAX_KEY - 1)), MRTX_ETOOBIG);
	assert_int_equal(k.size, 0);
	assert_int_equal(mrtx_key_str(&k, "late"), MRTX_ETOOBIG);
	/* NUL bytes double in the escape. */
	mrtx_key_init(&k);
	assert_int_equal(mrtx_key_bytes(&k, MRTX_BYTES("\0a\0", 3)), 0);
	assert_int_equal(k.size, 3 + 2 + 2);
	assert_memory_equal(k.buf, "\0\xff" "a\0\xff\0\x01", 7);
	assert_int_equal(mrtx_key_bytes(NULL, MRTX_CSTR("x")), MRTX_EINVAL);
	assert_int_equal(mrtx_key_str(&k, NULL), MRTX_EINVAL);
}

static void test_prefix_end(void **state)
{
	mrtx_key p, e, k;

	(void)state;
	mrtx_key_init(&p);
	mrtx_key_str(&p, "prod-7");
	mrtx_key_fixed(&p, MRTX_BYTES("c", 1));
	assert_int_equal(mrtx_key_prefix_end(&e, &p), 0);
	assert_int_equal(e.size, p.size);
	assert_int_equal(e.buf[e.size - 1], 'd');
	/* Every key with the prefix is in [p, e); the neighbours are not. */
	for (int i = 0; i < 100; i++) {
		mrtx_key_init(&k);
		mrtx_key_str(&k, "prod-7");
		mrtx_key_fixed(&k, MRTX_BYTES("c", 1));
		mrtx_key_rts(&k, tu_rng64());
		assert_true(memcmp(k.buf, e.buf, e.size) < 0);
		assert_true(memcmp(k.buf, p.buf, p.size) == 0);
	}
	mrtx_key_init(&k);
	mrtx_key_str(&k, "prod-7");
	mrtx_key_fixed(&k, MRTX_BYTES("r", 1));
	assert_true(memcmp(k.buf, e.buf, e.size) > 0);
	/* Trailing 0xFF bytes are dropped; all-0xFF gives the unbounded key. */
	mrtx_key_init(&p);
	mrtx_key_fixed(&p, MRTX_BYTES("a\xff\xff", 3));
	assert_int_equal(mrtx_key_prefix_end(&p, &p), 0);
	assert_int_equal(p.size, 1);
	assert_int_equal(p.buf[0], 'b');
	mrtx_key_init(&p);
	mrtx_key_u32(&p, UINT32_MAX);
	assert_int_equal(mrtx_key_prefix_end(&e, &p), 0);
	assert_int_equal(e.size, 0);
}

static void test_format_and_bad_parse(void **state)
{
	mrtx_key_part p[6] = { { .type = MRTX_KEY_BYTES }, { .type = MRTX_KEY_I32 },
		               { .type = MRTX_KEY_RTS },   { .type = MRTX_KEY_FIXED, .width = 2 },
		               { .type = MRTX_KEY_SALT },  { .type = MRTX_KEY_U64 } };
	uint8_t buf[MRTX_MAX_KEY];
	char out[128], tiny[8];
	mrtx_key k;

	(void)state;
	mrtx_key_init(&k);
	mrtx_key_bytes(&k, MRTX_BYTES("al\"i\0e", 6));
	mrtx_key_i32(&k, -7);
	mrtx_key_rts(&k, 1700);
	mrtx_key_fixed(&k, MRTX_BYTES("\x0a\x1b", 2));
	mrtx_key_salt(&k, MRTX_CSTR("x"), 1);
	mrtx_key_u64(&k, 42);
	assert_int_equal(k.err, 0);
	assert_int_equal(mrtx_key_parse(p, 6, MRTX_BYTES(k.buf, k.size), buf, sizeof(buf)), 0);
	assert_int_equal(mrtx_key_format(out, sizeof(out), p, 6), 0);
	assert_string_equal(out, "(\"al\\x22i\\x00e\", -7, ts 1700, 0x0a1b, salt 0, 42)");
	assert_int_equal(mrtx_key_format(tiny, sizeof(tiny), p, 6), MRTX_ETOOBIG);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);

	/* Malformed escapes, small buffers, bad types. */
	assert_int_equal(mrtx_key_parse(p, 1, MRTX_BYTES("ab\0\x02", 4), buf, sizeof(buf)),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_key_parse(p, 1, MRTX_BYTES("ab", 2), buf, sizeof(buf)),
	                 MRTX_EINVAL);
	assert_int_equal(mrtx_key_parse(p, 1, MRTX_BYTES("ab\0\x01", 4), buf, 2), MRTX_EINVAL);
	p[0].type = (mrtx_key_type)99;
	assert_int_equal(mrtx_key_parse(p, 1, MRTX_BYTES("ab\0\x01", 4), buf, 4), MRTX_EINVAL);
	p[0].type = MRTX_KEY_HASH;
	p[0].width = 0;
	assert_int_equal(mrtx_key_parse(p, 1, MRTX_BYTES("ab", 2), buf, 4), MRTX_EINVAL);
	/* The empty key parses as zero components. */
	assert_int_equal(mrtx_key_parse(NULL, 0, MRTX_BYTES(NULL, 0), NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_roundtrip),
		cmocka_unit_test(test_hash_and_salt),
		cmocka_unit_test(test_limits_sticky),
		cmocka_unit_test(test_prefix_end),
		cmocka_unit_test(test_format_and_bad_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
