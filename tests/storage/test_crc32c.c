/*
 * test_crc32c.c - CRC-32C (storage/crc32c.c): the published check values
 * (RFC 3720 B.4 and the "123456789" check), chaining at every split point,
 * unaligned starts, the dispatching entry (hardware on x86-64 with SSE4.2)
 * against the table path and both against a bit-at-a-time reference, and
 * n == 0.  The first test races threads through the first call, where the
 * tables are built and the CPU check is cached.
 *
 * Random data comes from MRTX_SEED (default fixed), printed on failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <pthread.h>
#include <string.h>

#include "storage/crc32c.h"

#define CHECK TU_CHECK
#define BUFLEN 1000

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static const struct {
	const char *name;
	crc_fn fn;
} paths[] = { { "dispatch", mrtx__crc32c }, { "table", mrtx__crc32c_sw } };
#define NPATHS (sizeof paths / sizeof paths[0])

/* The definition, one bit at a time: shares nothing with the code under test. */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t n)
{
	uint32_t c = ~crc;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
	}
	return ~c;
}

static void fill_random(uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)tu_rng();
}

static void *race_first_call(void *arg)
{
	uint32_t *out = arg;

	*out = mrtx__crc32c(0, "123456789", 9) ^ mrtx__crc32c_sw(0, "123456789", 9);
	return NULL;
}

static void test_first_call_from_threads(void **state)
{
	(void)state;
	pthread_t th[8];
	uint32_t out[8];

	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&th[i], NULL, race_first_call, &out[i]), 0);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(out[i], 0); /* both paths agreed */
	}
}

static void test_known_vectors(void **state)
{
	(void)state;
	uint8_t zeros[32], ones[32], up[32], down[32];

	memset(zeros, 0, sizeof zeros);
	memset(ones, 0xFF, sizeof ones);
	for (int i = 0; i < 32; i++) {
		up[i] = (uint8_t)i;
		down[i] = (uint8_t)(31 - i);
	}
	assert_int_equal(crc_ref(0, (const uint8_t *)"123456789", 9), 0xE3069283u);
	for (size_t k = 0; k < NPATHS; k++) {
		print_message("path %s\n", paths[k].name);
		assert_int_equal(paths[k].fn(0, "123456789", 9), 0xE3069283u);
		assert_int_equal(paths[k].fn(0, zeros, 32), 0x8A9136AAu);
		assert_int_equal(paths[k].fn(0, ones, 32), 0x62A8AB43u);
		assert_int_equal(paths[k].fn(0, up, 32), 0x46DD794Eu);
		assert_int_equal(paths[k].fn(0, down, 32), 0x113FDB5Cu);
		assert_int_equal(paths[k].fn(0, "a", 1), 0xC1D04330u);
	}
}

static void test_chaining_every_split(void **state)
{
	(void)state;
	uint8_t b[BUFLEN];

	fill_random(b, sizeof b);
	uint32_t whole = crc_ref(0, b, sizeof b);

	for (size_t k = 0; k < NPATHS; k++) {
		crc_fn f = paths[k].fn;

		CHECK(f(0, b, sizeof b) == whole, "%s: one-shot", paths[k].name);
		for (size_t i = 0; i <= sizeof b; i++) {
			uint32_t c = f(f(0, b, i), b + i, sizeof b - i);

			CHECK(c == whole, "%s: split at %zu: %08x != %08x", paths[k].name, i,
			      (unsigned)c, (unsigned)whole);
		}
		/* three pieces, and one byte at a time */
		uint32_t c = f(f(f(0, b, 3), b + 3, 500), b + 503, sizeof b - 503);

		CHECK(c == whole, "%s: three pieces", paths[k].name);
		c = 0;
		for (size_t i = 0; i < sizeof b; i++)
			c = f(c, b + i, 1);
		CHECK(c == whole, "%s: byte at a time", paths[k].name);
	}
}

static void test_unaligned_starts(void **state)
{
	(void)state;
	/* 8-aligned storage, so offset o really starts o bytes past alignment */
	static _Alignas(8) uint8_t buf[BUFLEN + 8];
	uint8_t src[BUFLEN];

	fill_random(src, sizeof src);
	for (size_t off = 0; off < 8; off++) {
		memcpy(buf + off, src, sizeof src);
		for (size_t n = 0; n <= sizeof src; n += (n < 64 ? 1 : 37)) {
			uint32_t want = crc_ref(0, src, n);

			for (size_t k = 0; k < NPATHS; k++) {
				uint32_t got = paths[k].fn(0, buf + off, n);

				CHECK(got == want, "%s: offset %zu, n %zu: %08x != %08x",
				      paths[k].name, off, n, (unsigned)got, (unsigned)want);
			}
		}
	}
}

static void test_hw_matches_table(void **state)
{
	(void)state;
	uint8_t b[BUFLEN];

	print_message("hardware path %s\n",
		      mrtx__crc32c_hw_active() ? "active" : "not available: dispatch = table");
	for (int iter = 0; iter < 2000; iter++) {
		fill_random(b, sizeof b);
		size_t off = tu_rng() % 16, n = tu_rng() % (sizeof b - off + 1);
		uint32_t seed = iter % 3 == 0 ? 0 : tu_rng();
		uint32_t hw = mrtx__crc32c(seed, b + off, n);
		uint32_t sw = mrtx__crc32c_sw(seed, b + off, n);

		CHECK(hw == sw, "iter %d: crc %08x off %zu n %zu: %08x != %08x", iter,
		      (unsigned)seed, off, n, (unsigned)hw, (unsigned)sw);
		if (iter % 50 == 0)
			CHECK(sw == crc_ref(seed, b + off, n), "iter %d: table vs reference", iter);
	}
}

/* mrtx__crc32c2 is the chained CRC of its two pieces at every split. */
static void test_two_pieces(void **state)
{
	(void)state;
	uint8_t b[300];

	fill_random(b, sizeof b);
	for (size_t n = 0; n <= sizeof b; n += (n < 40 ? 1 : 37))
		for (size_t i = 0; i <= n; i++) {
			uint32_t want = crc_ref(0, b, n), c = mrtx__crc32c2(b, i, b + i, n - i);

			CHECK(c == want, "n %zu split at %zu: %08x != %08x", n, i, (unsigned)c,
			      (unsigned)want);
		}
	assert_int_equal(mrtx__crc32c2(NULL, 0, NULL, 0), 0);
}

static void test_empty_returns_crc(void **state)
{
	(void)state;
	const uint32_t vals[] = { 0, 1, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u };

	for (size_t k = 0; k < NPATHS; k++)
		for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
			assert_int_equal(paths[k].fn(vals[i], NULL, 0), vals[i]);
			assert_int_equal(paths[k].fn(vals[i], "x", 0), vals[i]);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_call_from_threads), /* must stay first */
		cmocka_unit_test(test_known_vectors),
		cmocka_unit_test(test_chaining_every_split),
		cmocka_unit_test(test_unaligned_starts),
		cmocka_unit_test(test_hw_matches_table),
		cmocka_unit_test(test_empty_returns_crc),
		cmocka_unit_test(test_two_pieces),
	};

	tu_rng_seed(20240611ul);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
