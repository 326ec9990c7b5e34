/*
 * crc32c.c - see crc32c.h.
 *
 * Portable path: slicing-by-8.  tab[k][b] is the CRC contribution of byte b
 * followed by k zero bytes, so eight bytes fold into the CRC with eight
 * independent lookups instead of a chain of eight dependent ones.
 *
 * x86-64 path: the SSE4.2 crc32 instruction computes exactly this CRC
 * (same polynomial, reflected), eight bytes per instruction.  Whether the
 * CPU has it is asked once and cached.
 */
#include "crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_X86 1
#endif

#define POLY 0x82F63B78u /* 0x1EDC6F41 bit-reversed (the CRC is reflected) */

static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
		tab[0][i] = c;
	}
	/* one more zero byte after b: shift it through the byte table */
	for (int k = 1; k < 8; k++)
		for (int i = 0; i < 256; i++)
			tab[k][i] = (tab[k - 1][i] >> 8) ^ tab[0][tab[k - 1][i] & 0xFF];
}

/* Little-endian load assembled from bytes: no alignment needed, right on
 * any byte order; compilers turn it into one plain load on x86/ARM. */
static inline uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

uint32_t mrtx__crc32c_sw(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint32_t c = ~crc;

	pthread_once(&tab_once, tab_init);
	for (; n >= 8; n -= 8, p += 8) {
		/* the first four bytes meet the CRC register (reflected:
		 * byte 0 pairs with its low byte); all eight look up tables
		 * by how many bytes follow them in the block */
		uint32_t lo = c ^ load_le32(p), hi = load_le32(p + 4);

		c = tab[7][lo & 0xFF] ^ tab[6][(lo >> 8) & 0xFF] ^
		    tab[5][(lo >> 16) & 0xFF] ^ tab[4][lo >> 24] ^
		    tab[3][hi & 0xFF] ^ tab[2][(hi >> 8) & 0xFF] ^
		    tab[1][(hi >> 16) & 0xFF] ^ tab[0][hi >> 24];
	}
	for (; n > 0; n--, p++)
		c = (c >> 8) ^ tab[0][(c ^ *p) & 0xFF];
	return ~c;
}

#ifdef CRC32C_X86
/* Compiled for SSE4.2 on its own (the rest of the file stays baseline
 * x86-64); only called once the CPU is known to have it.  Takes and
 * returns the conditioned (inverted) register. */
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t c, const uint8_t *p, size_t n)
{
	unsigned long long c64 = c;

	for (; n >= 8; n -= 8, p += 8) {
		unsigned long long w;

		memcpy(&w, p, 8); /* unaligned-safe; one mov in practice */
		c64 = __builtin_ia32_crc32di(c64, w);
	}
	c = (uint32_t)c64; /* crc32 on 64 bits leaves the high half zero */
	/* the last 0-7 bytes in at most three steps, not one a byte: each
	 * crc32 waits for the one before, and records are short enough
	 * (a key, a version header, a balance) that the tail is much of
	 * the work */
	if (n & 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		c = __builtin_ia32_crc32si(c, w);
		p += 4;
	}
	if (n & 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		c = __builtin_ia32_crc32hi(c, w);
		p += 2;
	}
	if (n & 1)
		c = __builtin_ia32_crc32qi(c, *p);
	return c;
}

/* 0: not yet asked, 1: no SSE4.2, 2: SSE4.2.  Relaxed is enough: the
 * answer is the same whoever computes it and guards no other data, so two
 * threads racing on the first call just store the same value. */
static atomic_int hw_state;

static int hw_use(void)
{
	int s = atomic_load_explicit(&hw_state, memory_order_relaxed);

	if (__builtin_expect(s == 0, 0)) {
		__builtin_cpu_init(); /* harmless if done; needed in constructors */
		s = __builtin_cpu_supports("sse4.2") ? 2 : 1;
		atomic_store_explicit(&hw_state, s, memory_order_relaxed);
	}
	return s == 2;
}
#endif

int mrtx__crc32c_hw_active(void)
{
#ifdef CRC32C_X86
	return hw_use();
#else
	return 0;
#endif
}

uint32_t mrtx__crc32c(uint32_t crc, const void *data, size_t n)
{
#ifdef CRC32C_X86
	if (hw_use())
		return ~crc32c_hw(~crc, data, n);
#endif
	return mrtx__crc32c_sw(crc, data, n);
}

uint32_t mrtx__crc32c2(const void *a, size_t na, const void *b, size_t nb)
{
#ifdef CRC32C_X86
	if (hw_use())
		return ~crc32c_hw(crc32c_hw(~0u, a, na), b, nb);
#endif
	return mrtx__crc32c_sw(mrtx__crc32c_sw(0, a, na), b, nb);
}
