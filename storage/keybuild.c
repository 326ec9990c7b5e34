/*
 * keybuild.c - order-preserving composite keys (mrtx_key_*, see mrtx.h).
 *
 * Why the order holds: each component encoding is order-preserving on its
 * own and every component is self-delimiting (fixed width, or the keyenc
 * escape with its terminator), so two keys built from the same component
 * types first differ inside the first component whose values differ, and
 * the comparison there decides the order of the whole tuple.
 *
 * The byte-string escape is storage/keyenc.c's, the same one the LMDB
 * layout uses for rows, so its proof lives there.
 */
#include "common.h"
#include "keyenc.h"

#include <stdio.h>
#include <string.h>

#include <openssl/sha.h>

void mrtx_key_init(mrtx_key *k)
{
	k->size = 0;
	k->err = 0;
}

/* Common front of every append: sticky error, then room for n bytes. */
static int key_room(mrtx_key *k, size_t n, const char *what)
{
	if (!k)
		return mrtx__seterr(MRTX_EINVAL, "%s: key is NULL", what);
	if (k->err)
		return mrtx__seterr(k->err, "%s: an earlier append to this key failed (%s)", what,
		                    mrtx_strerror(k->err));
	if (k->size > MRTX_MAX_KEY || n > MRTX_MAX_KEY - k->size) {
		k->err = MRTX_ETOOBIG;
		return mrtx__seterr(MRTX_ETOOBIG, "%s: key of %zu bytes plus a %zu-byte component "
		                    "exceeds %u bytes", what, k->size, n, MRTX_MAX_KEY);
	}
	return 0;
}

static int key_fail(mrtx_key *k, int rc)
{
	if (k)
		k->err = rc;
	return rc;
}

static int key_raw(mrtx_key *k, const void *p, size_t n, const char *what)
{
	int rc;

	if ((rc = key_room(k, n, what)))
		return rc;
	if (n)
		memcpy(k->buf + k->size, p, n);
	k->size += n;
	return 0;
}

#define be_put mrtx__be_put
#define be_get mrtx__be_get

int mrtx_key_bytes(mrtx_key *k, mrtx_bytes b)
{
	size_t n;
	int rc;

	static const uint8_t empty = 0;

	if (b.size && !b.data)
		return key_fail(k, mrtx__seterr(MRTX_EINVAL, "mrtx_key_bytes: NULL data"));
	if (!b.data)
		b.data = &empty; /* keyenc does pointer arithmetic on it */
	n = keyenc_size(b.data, b.size);
	if ((rc = key_room(k, n, "mrtx_key_bytes")))
		return rc;
	k->size += keyenc_put(k->buf + k->size, b.data, b.size);
	return 0;
}

int mrtx_key_str(mrtx_key *k, const char *s)
{
	if (!s)
		return key_fail(k, mrtx__seterr(MRTX_EINVAL, "mrtx_key_str: NULL string"));
	return mrtx_key_bytes(k, MRTX_BYTES(s, strlen(s)));
}

int mrtx_key_u32(mrtx_key *k, uint32_t v)
{
	uint8_t b[4];

	be_put(b, v, 4);
	return key_raw(k, b, 4, "mrtx_key_u32");
}

int mrtx_key_u64(mrtx_key *k, uint64_t v)
{
	uint8_t b[8];

	be_put(b, v, 8);
	return key_raw(k, b, 8, "mrtx_key_u64");
}

int mrtx_key_i32(mrtx_key *k, int32_t v)
{
	uint8_t b[4];

	be_put(b, (uint32_t)v ^ 0x80000000u, 4);
	return key_raw(k, b, 4, "mrtx_key_i32");
}

int mrtx_key_i64(mrtx_key *k, int64_t v)
{
	uint8_t b[8];

	be_put(b, (uint64_t)v ^ 0x8000000000000000ull, 8);
	return key_raw(k, b, 8, "mrtx_key_i64");
}

int mrtx_key_rts(mrtx_key *k, uint64_t ts)
{
	uint8_t b[8];

	be_put(b, UINT64_MAX - ts, 8);
	return key_raw(k, b, 8, "mrtx_key_rts");
}

int mrtx_key_fixed(mrtx_key *k, mrtx_bytes b)
{
	if (b.size && !b.data)
		return key_fail(k, mrtx__seterr(MRTX_EINVAL, "mrtx_key_fixed: NULL data"));
	return key_raw(k, b.data, b.size, "mrtx_key_fixed");
}

static int sha256(mrtx_bytes c, uint8_t md[SHA256_DIGEST_LENGTH])
{
	static const uint8_t empty = 0;

	if (c.size && !c.data)
		return mrtx__seterr(MRTX_EINVAL, "hashed key component has NULL data");
	SHA256(c.size ? c.data : &empty, c.size, md);
	return 0;
}

int mrtx_key_hash(mrtx_key *k, mrtx_bytes component, size_t n)
{
	uint8_t md[SHA256_DIGEST_LENGTH];
	int rc;

	if (k && !k->err && (n == 0 || n > SHA256_DIGEST_LENGTH))
		return key_fail(k, mrtx__seterr(MRTX_EINVAL, "mrtx_key_hash: width %zu is not "
		                                "in 1..32", n));
	if ((rc = key_room(k, n, "mrtx_key_hash")))
		return rc;
	if ((rc = sha256(component, md)))
		return key_fail(k, rc);
	return key_raw(k, md, n, "mrtx_key_hash");
}

int mrtx_key_salt(mrtx_key *k, mrtx_bytes component, unsigned buckets)
{
	uint8_t md[SHA256_DIGEST_LENGTH], b;
	int rc;

	if (k && !k->err && (buckets == 0 || buckets > 256))
		return key_fail(k, mrtx__seterr(MRTX_EINVAL, "mrtx_key_salt: %u buckets; the "
		                                "range is 1..256", buckets));
	if ((rc = key_room(k, 1, "mrtx_key_salt")))
		return rc;
	if ((rc = sha256(component, md)))
		return key_fail(k, rc);
	b = (uint8_t)(be_get(md, 8) % buckets);
	return key_raw(k, &b, 1, "mrtx_key_salt");
}

int mrtx_key_finish(const mrtx_key *k, mrtx_bytes *out)
{
	if (!k || !out)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_key_finish: NULL argument");
	if (k->err) {
		*out = MRTX_BYTES(k->buf, 0);
		return mrtx__seterr(k->err, "building a key failed: %s", mrtx_strerror(k->err));
	}
	*out = MRTX_BYTES(k->buf, k->size);
	return 0;
}

int mrtx_key_prefix_end(mrtx_key *out, const mrtx_key *prefix)
{
	size_t n;

	if (!out || !prefix)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_key_prefix_end: NULL argument");
	if (prefix->err)
		return mrtx__seterr(prefix->err, "mrtx_key_prefix_end: the prefix failed to build");
	n = keyenc_prefix_end(out->buf, prefix->buf, prefix->size);
	out->err = 0;
	out->size = n;
	return 0;
}

static int parse_bad(size_t i, const char *why)
{
	return mrtx__seterr(MRTX_EINVAL, "mrtx_key_parse: component %zu: %s", i, why);
}

int mrtx_key_parse(mrtx_key_part *parts, size_t nparts, mrtx_bytes key, uint8_t *buf,
                   size_t bufsize)
{
	const uint8_t *p = key.data;
	size_t off = 0, bused = 0;

	if ((nparts && !parts) || (key.size && !key.data) || (key.size && !buf))
		return mrtx__seterr(MRTX_EINVAL, "mrtx_key_parse: NULL argument");
	if (bufsize < key.size)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_key_parse: buffer of %zu bytes for a key of "
		                    "%zu bytes", bufsize, key.size);
	for (size_t i = 0; i < nparts; i++) {
		mrtx_key_part *c = &parts[i];
		size_t left = key.size - off, w = 0, used, n;

		switch (c->type) {
		case MRTX_KEY_BYTES:
			n = keyenc_get(buf + bused, p + off, left, &used);
			if (n == (size_t)-1)
				return parse_bad(i, "not a well-formed escaped byte string");
			c->bytes = MRTX_BYTES(buf + bused, n);
			bused += n;
			off += used;
			continue;
		case MRTX_KEY_U32:
		case MRTX_KEY_I32:
			w = 4;
			break;
		case MRTX_KEY_U64:
		case MRTX_KEY_I64:
		case MRTX_KEY_RTS:
			w = 8;
			break;
		case MRTX_KEY_SALT:
			w = 1;
			break;
		case MRTX_KEY_FIXED:
		case MRTX_KEY_HASH:
			w = c->width;
			if (c->type == MRTX_KEY_HASH && (w == 0 || w > SHA256_DIGEST_LENGTH))
				return parse_bad(i, "hash width is not in 1..32");
			break;
		default:
			return parse_bad(i, "unknown component type");
		}
		if (w > left)
			return parse_bad(i, "key is truncated");
		switch (c->type) {
		case MRTX_KEY_U32:
		case MRTX_KEY_U64:
		case MRTX_KEY_SALT:
			c->u = be_get(p + off, w);
			break;
		case MRTX_KEY_RTS:
			c->u = UINT64_MAX - be_get(p + off, w);
			break;
		case MRTX_KEY_I32:
			c->i = (int32_t)(uint32_t)(be_get(p + off, 4) ^ 0x80000000u);
			break;
		case MRTX_KEY_I64:
			c->i = (int64_t)(be_get(p + off, 8) ^ 0x8000000000000000ull);
			break;
		default:
			c->bytes = MRTX_BYTES(p + off, w);
			break;
		}
		off += w;
	}
	if (off != key.size)
		return mrtx__seterr(MRTX_EINVAL, "mrtx_key_parse: %zu trailing bytes after %zu "
		                    "components", key.size - off, nparts);
	return 0;
}

/* Append to out like snprintf, remembering truncation. */
struct fmt {
	char *out;
	size_t size, len;
	int trunc;
};

static void MRTX_PRINTF(2, 3) fmt_put(struct fmt *f, const char *fmt, ...)
{
	size_t room = f->len < f->size ? f->size - f->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? f->out + f->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		f->trunc = 1;
	if (n > 0)
		f->len += (size_t)n;
}

int mrtx_key_format(char *out, size_t outsize, const mrtx_key_part *parts, size_t nparts)
{
	struct fmt f = { out, outsize, 0, 0 };

	if (!out || outsize == 0 || (nparts && !parts))
		return mrtx__seterr(MRTX_EINVAL, "mrtx_key_format: NULL argument or no room");
	out[0] = '\0';
	fmt_put(&f, "(");
	for (size_t i = 0; i < nparts; i++) {
		const mrtx_key_part *c = &parts[i];
		const uint8_t *b = c->bytes.data;

		if (i)
			fmt_put(&f, ", ");
		switch (c->type) {
		case MRTX_KEY_BYTES:
			fmt_put(&f, "\"");
			for (size_t j = 0; j < c->bytes.size; j++) {
				if (b[j] >= 0x20 && b[j] < 0x7F && b[j] != '"' && b[j] != '\\')
					fmt_put(&f, "%c", b[j]);
				else
					fmt_put(&f, "\\x%02x", b[j]);
			}
			fmt_put(&f, "\"");
			break;
		case MRTX_KEY_U32:
		case MRTX_KEY_U64:
			fmt_put(&f, "%llu", (unsigned long long)c->u);
			break;
		case MRTX_KEY_I32:
		case MRTX_KEY_I64:
			fmt_put(&f, "%lld", (long long)c->i);
			break;
		case MRTX_KEY_RTS:
			fmt_put(&f, "ts %llu", (unsigned long long)c->u);
			break;
		case MRTX_KEY_SALT:
			fmt_put(&f, "salt %llu", (unsigned long long)c->u);
			break;
		case MRTX_KEY_FIXED:
		case MRTX_KEY_HASH:
			fmt_put(&f, "0x");
			for (size_t j = 0; j < c->bytes.size; j++)
				fmt_put(&f, "%02x", b[j]);
			break;
		default:
			return mrtx__seterr(MRTX_EINVAL, "mrtx_key_format: component %zu has an "
			                    "unknown type", i);
		}
	}
	fmt_put(&f, ")");
	if (f.trunc)
		return mrtx__seterr(MRTX_ETOOBIG, "mrtx_key_format: %zu bytes needed, %zu given",
		                    f.len + 1, outsize);
	return 0;
}
