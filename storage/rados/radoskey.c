/*
 * radoskey.c - see radoskey.h (the order argument is written there).
 */
#include "radoskey.h"

enum { LO = 0x01, HI = 0xFE };

static size_t escapes(const uint8_t *s, size_t n, int high)
{
	size_t z = 0;

	for (size_t i = 0; i < n; i++)
		z += s[i] <= 0x01 || (high && s[i] >= 0xFE);
	return z;
}

size_t rkey_size(const uint8_t *s, size_t n)
{
	return n + escapes(s, n, 1) + 2;
}

/* xor 0x00 gives rkey, xor 0xFF gives rkey_desc (0xFF - b == b ^ 0xFF). */
static size_t put(uint8_t *out, const uint8_t *s, size_t n, uint8_t x)
{
	uint8_t *o = out;

	for (size_t i = 0; i < n; i++) {
		uint8_t b = s[i];

		if (b <= 0x01) {
			*o++ = LO ^ x;
			*o++ = (uint8_t)(b + 2) ^ x;
		} else if (b >= 0xFE) {
			*o++ = HI ^ x;
			*o++ = (uint8_t)(b - 0xFD) ^ x;
		} else {
			*o++ = b ^ x;
		}
	}
	*o++ = LO ^ x;
	*o++ = LO ^ x;
	return (size_t)(o - out);
}

size_t rkey_put(uint8_t *out, const uint8_t *s, size_t n)
{
	return put(out, s, n, 0x00);
}

size_t rkey_put_desc(uint8_t *out, const uint8_t *s, size_t n)
{
	return put(out, s, n, 0xFF);
}

static size_t get(uint8_t *out, const uint8_t *in, size_t len, size_t *used, uint8_t x)
{
	size_t i = 0, n = 0;

	while (i < len) {
		uint8_t b = in[i] ^ x, c;

		if (b == 0x00 || b == 0xFF)
			return RKEY_BAD;
		if (b != LO && b != HI) {
			out[n++] = b;
			i++;
			continue;
		}
		if (i + 1 >= len)
			return RKEY_BAD;
		c = in[i + 1] ^ x;
		i += 2;
		if (b == LO) {
			if (c == 0x01) {
				*used = i;
				return n;
			}
			if (c != 0x02 && c != 0x03)
				return RKEY_BAD;
			out[n++] = (uint8_t)(c - 2);
		} else {
			if (c != 0x01 && c != 0x02)
				return RKEY_BAD;
			out[n++] = (uint8_t)(c + 0xFD);
		}
	}
	return RKEY_BAD; /* no terminator */
}

size_t rkey_get(uint8_t *out, const uint8_t *in, size_t len, size_t *used)
{
	return get(out, in, len, used, 0x00);
}

size_t rkey_get_desc(uint8_t *out, const uint8_t *in, size_t len, size_t *used)
{
	return get(out, in, len, used, 0xFF);
}

size_t rqual_size(const uint8_t *s, size_t n)
{
	return n + escapes(s, n, 0);
}

size_t rqual_put(uint8_t *out, const uint8_t *s, size_t n)
{
	uint8_t *o = out;

	for (size_t i = 0; i < n; i++) {
		if (s[i] <= 0x01) {
			*o++ = LO;
			*o++ = (uint8_t)(s[i] + 2);
		} else {
			*o++ = s[i];
		}
	}
	return (size_t)(o - out);
}

size_t rqual_get(uint8_t *out, const uint8_t *in, size_t len)
{
	size_t i = 0, n = 0;

	while (i < len) {
		uint8_t b = in[i++];

		if (b == 0x00)
			return RKEY_BAD;
		if (b != LO) {
			out[n++] = b;
			continue;
		}
		if (i >= len || (in[i] != 0x02 && in[i] != 0x03))
			return RKEY_BAD;
		out[n++] = (uint8_t)(in[i++] - 2);
	}
	return n;
}
