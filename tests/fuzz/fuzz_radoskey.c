/*
 * fuzz_radoskey.c - the RADOS omap key codec (storage/rados/radoskey.c) on
 * arbitrary bytes.
 *
 * Properties: no decoder reads or writes out of bounds (exact-size copies);
 * whatever decodes re-encodes to exactly the bytes consumed; for two
 * strings cut from the input, rkey and rqual keep their order, rkey_desc
 * reverses it, rkey/rkey_desc encodings are not prefixes of each other, and
 * no encoding holds 0x00 (rkey and rkey_desc: nor 0xFF).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/rados/radoskey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	if (c)
		return c < 0 ? -1 : 1;
	return an < bn ? -1 : an > bn;
}

static int prefix_either(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	size_t m = an < bn ? an : bn;

	return an != bn && memcmp(a, b, m) == 0;
}

static void no_byte(const uint8_t *p, size_t n, int ff)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == 0x00 || (ff && p[i] == 0xFF))
			abort();
}

static void decode_all(const uint8_t *data, size_t size)
{
	uint8_t *in = malloc(size ? size : 1), *out = malloc(size ? size : 1);
	uint8_t *re = malloc(2 * size + 2);
	size_t used, n;

	if (!in || !out || !re)
		abort();
	if (size)
		memcpy(in, data, size);
	if ((n = rkey_get(out, in, size, &used)) != RKEY_BAD &&
	    (used > size || rkey_put(re, out, n) != used || memcmp(re, in, used)))
		abort();
	if ((n = rkey_get_desc(out, in, size, &used)) != RKEY_BAD &&
	    (used > size || rkey_put_desc(re, out, n) != used || memcmp(re, in, used)))
		abort();
	if ((n = rqual_get(out, in, size)) != RKEY_BAD &&
	    (rqual_put(re, out, n) != size || memcmp(re, in, size)))
		abort();
	free(in);
	free(out);
	free(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cut = size ? data[0] % (size + 1) : 0, an = cut, bn = size - cut;
	const uint8_t *a = data, *b = data + cut;
	uint8_t *e[6];
	size_t n[6];
	int raw;

	decode_all(data, size);
	for (int i = 0; i < 6; i++)
		if (!(e[i] = malloc(2 * size + 2)))
			abort();
	n[0] = rkey_put(e[0], a, an);
	n[1] = rkey_put(e[1], b, bn);
	n[2] = rkey_put_desc(e[2], a, an);
	n[3] = rkey_put_desc(e[3], b, bn);
	n[4] = rqual_put(e[4], a, an);
	n[5] = rqual_put(e[5], b, bn);
	raw = cmp(a, an, b, bn);
	if (cmp(e[0], n[0], e[1], n[1]) != raw || cmp(e[2], n[2], e[3], n[3]) != -raw ||
	    cmp(e[4], n[4], e[5], n[5]) != raw)
		abort(); /* order not preserved (or not reversed) */
	if (raw && (prefix_either(e[0], n[0], e[1], n[1]) || prefix_either(e[2], n[2], e[3], n[3])))
		abort(); /* not self-delimiting */
	for (int i = 0; i < 6; i++) {
		no_byte(e[i], n[i], i < 4);
		free(e[i]);
	}
	return 0;
}
