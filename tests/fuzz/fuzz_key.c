/*
 * fuzz_key.c - the key decoder (storage/keyenc.c) on arbitrary bytes.
 *
 * Properties: keyenc_get never reads or writes out of bounds; whatever
 * decodes re-encodes to exactly the bytes consumed; and for two strings cut
 * from the input, the order of their encodings equals the order of the
 * strings (memcmp), with neither encoding a prefix of the other.
 *
 * Then the key-builder parser (storage/keybuild.c, mrtx_key_parse): the
 * first input byte picks up to four component types, the rest is the key.
 * Whatever parses is rebuilt with the mrtx_key_* appends and must give the
 * same bytes, and mrtx_key_format never overflows its buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mrtx.h"
#include "storage/keyenc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	if (c)
		return c < 0 ? -1 : 1;
	return an < bn ? -1 : an > bn;
}

static void key_builder(const uint8_t *data, size_t size)
{
	static const mrtx_key_type types[8] = { MRTX_KEY_BYTES, MRTX_KEY_U32, MRTX_KEY_U64,
		MRTX_KEY_I32, MRTX_KEY_I64, MRTX_KEY_RTS, MRTX_KEY_FIXED, MRTX_KEY_HASH };
	mrtx_key_part parts[4];
	size_t nparts, ksize;
	uint8_t *key, *buf;
	mrtx_key k = MRTX_KEY_INIT;
	mrtx_bytes built;

	if (size < 2)
		return;
	nparts = 1 + (data[0] & 3);
	for (size_t i = 0; i < nparts; i++) {
		memset(&parts[i], 0, sizeof(parts[i]));
		/* bits 2..7 of data[0] and of data[1] pick the types */
		parts[i].type = types[((data[0] >> 2) + 3 * i + data[1] * (i + 1)) & 7];
		parts[i].width = 1 + ((data[1] >> i) & 7);
	}
	ksize = size - 2;
	key = malloc(ksize ? ksize : 1);
	buf = malloc(ksize ? ksize : 1);
	if (!key || !buf)
		abort();
	memcpy(key, data + 2, ksize);
	if (mrtx_key_parse(parts, nparts, MRTX_BYTES(key, ksize), buf, ksize) != MRTX_OK)
		goto out;
	for (size_t i = 0; i < nparts; i++) {
		const mrtx_key_part *c = &parts[i];

		switch (c->type) {
		case MRTX_KEY_BYTES: mrtx_key_bytes(&k, c->bytes); break;
		case MRTX_KEY_U32: mrtx_key_u32(&k, (uint32_t)c->u); break;
		case MRTX_KEY_U64: mrtx_key_u64(&k, c->u); break;
		case MRTX_KEY_I32: mrtx_key_i32(&k, (int32_t)c->i); break;
		case MRTX_KEY_I64: mrtx_key_i64(&k, c->i); break;
		case MRTX_KEY_RTS: mrtx_key_rts(&k, c->u); break;
		default: mrtx_key_fixed(&k, c->bytes); break; /* FIXED, HASH: raw bytes */
		}
	}
	if (ksize <= MRTX_MAX_KEY) {
		if (mrtx_key_finish(&k, &built) != MRTX_OK || built.size != ksize ||
		    memcmp(built.data, key, ksize) != 0)
			abort(); /* parse is not the inverse of the appends */
	}
	{
		size_t tn = 1 + data[1] % 96;
		char *text = malloc(tn); /* exactly tn bytes: ASan sees an overflow */

		if (!text)
			abort();
		memset(text, 'X', tn);
		mrtx_key_format(text, tn, parts, nparts);
		if (!memchr(text, '\0', tn))
			abort();
		free(text);
	}
out:
	free(key);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *out = malloc(size ? size : 1), *re = malloc(2 * size + 2);
	uint8_t *ea, *eb;
	size_t used = 0, n, cut, an, bn;

	if (!out || !re)
		abort();
	n = keyenc_get(out, data, size, &used);
	if (n != (size_t)-1) {
		if (used > size || n > used)
			abort();
		if (keyenc_size(out, n) != used || keyenc_put(re, out, n) != used ||
		    memcmp(re, data, used) != 0)
			abort(); /* decode is not the inverse of encode */
	}
	/* Order preservation on two raw strings taken from the input. */
	cut = size ? data[0] % (size + 1) : 0;
	an = cut;
	bn = size - cut;
	ea = malloc(2 * an + 2);
	eb = malloc(2 * bn + 2);
	if (!ea || !eb)
		abort();
	{
		size_t ean = keyenc_put(ea, data, an), ebn = keyenc_put(eb, data + cut, bn);
		int raw = cmp(data, an, data + cut, bn), enc = cmp(ea, ean, eb, ebn);

		if (raw != enc)
			abort(); /* encoding does not preserve order */
		if (raw != 0 && (ean < ebn ? memcmp(ea, eb, ean) == 0 && ean != ebn :
		                 ebn < ean && memcmp(ea, eb, ebn) == 0))
			abort(); /* not self-delimiting */
		/* The encoding decodes back, also when followed by more bytes. */
		if (keyenc_get(out, ea, ean, &used) != an || used != ean || memcmp(out, data, an))
			abort();
	}
	free(ea);
	free(eb);
	free(out);
	free(re);
	key_builder(data, size);
	return 0;
}
