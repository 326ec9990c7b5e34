/*
 * keyenc.c - see keyenc.h.
 *
 * Why the escape works: for the first position where a and b differ, either
 * both have a byte there (0x00 maps to 0x00 0xFF, other bytes to themselves,
 * and 0x00 0xFF still sorts below any byte 0x01..0xFF) or one string ended;
 * the ended one emits 0x00 0x01, which sorts below both 0x00 0xFF (a NUL in
 * the longer string) and any other byte.
 */
#include "keyenc.h"

#include <string.h>

/* Does the word hold a zero byte?  (The classic bit trick: exact.) */
#define HAS_ZERO(x) (((x) - 0x0101010101010101ull) & ~(x) & 0x8080808080808080ull)

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
	return x;
}

/* Rows are scanned eight bytes at a time: most have no NUL at all. */
size_t keyenc_size(const uint8_t *s, size_t n)
{
	size_t z = 0, i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x = load64(s + i);

		if (HAS_ZERO(x))
			for (int b = 0; b < 8; b++)
				z += s[i + (size_t)b] == 0;
	}
	for (; i < n; i++)
		z += s[i] == 0;
	return n + z + 2;
}

size_t keyenc_put(uint8_t *out, const uint8_t *s, size_t n)
{
	uint8_t *o = out;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t x = load64(s + i);

		if (HAS_ZERO(x))
			break; /* the byte loop escapes the rest */
		memcpy(o, &x, 8);
		o += 8;
	}
	for (; i < n; i++) {
		*o++ = s[i];
		if (s[i] == 0)
			*o++ = 0xFF;
	}
	*o++ = 0x00;
	*o++ = 0x01;
	return (size_t)(o - out);
}

size_t keyenc_get(uint8_t *out, const uint8_t *in, size_t len, size_t *used)
{
	size_t i = 0, n = 0;

	while (i < len) {
		uint8_t c = in[i++];

		if (c != 0x00) {
			out[n++] = c;
			continue;
		}
		if (i >= len)
			return (size_t)-1;
		c = in[i++];
		if (c == 0x01) {
			*used = i;
			return n;
		}
		if (c != 0xFF)
			return (size_t)-1;
		out[n++] = 0x00;
	}
	return (size_t)-1;
}

size_t keyenc_cell_size(const uint8_t *row, size_t rn, size_t qn)
{
	return keyenc_size(row, rn) + 1 + qn;
}

size_t keyenc_cell(uint8_t *out, const uint8_t *row, size_t rn, uint8_t fid,
                   const uint8_t *qual, size_t qn)
{
	size_t k = keyenc_put(out, row, rn);

	out[k++] = fid;
	if (qn)
		memcpy(out + k, qual, qn);
	return k + qn;
}

size_t keyenc_prefix_end(uint8_t *out, const uint8_t *p, size_t n)
{
	if (out != p)
		memmove(out, p, n);
	while (n && out[n - 1] == 0xFF)
		n--;
	if (n)
		out[n - 1]++;
	return n;
}
