/*
 * rados_addr.c - rados:// store addresses (see rados_conn.h).
 */
#include "rados_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char SCHEME[] = "rados://";

int raddr_is_rados(const char *s)
{
	return s && strncmp(s, SCHEME, sizeof(SCHEME) - 1) == 0;
}

static int token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/*
 * Percent-decode s[0..n) into a new string (*out, caller frees).  what
 * names the part for messages; token: only [A-Za-z0-9._-] after decoding,
 * at most RADDR_MAX_NAME bytes.
 */
static int decode_part(const char *s, size_t n, const char *what, int token, char **out)
{
	char *d;
	size_t k = 0;

	*out = NULL;
	if (n == 0)
		return mrtx__seterr(MRTX_EINVAL, "rados address: empty %s", what);
	if (!(d = mrtx__malloc(n + 1)))
		return mrtx__seterr(MRTX_ENOMEM, "rados address: out of memory");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			int hi = i + 2 < n ? mrtx__hexval(s[i + 1]) : -1;
			int lo = hi >= 0 ? mrtx__hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0) {
				mrtx__free(d);
				return mrtx__seterr(MRTX_EINVAL,
				                    "rados address: bad %%-escape in %s", what);
			}
			c = (unsigned char)(hi * 16 + lo);
			i += 2;
			if (c == 0) {
				mrtx__free(d);
				return mrtx__seterr(MRTX_EINVAL, "rados address: %%00 in %s", what);
			}
		} else if (c <= 0x20 || c >= 0x7f) {
			mrtx__free(d);
			return mrtx__seterr(MRTX_EINVAL,
			                    "rados address: character 0x%02x in %s (use %%XX)", c,
			                    what);
		}
		if (token && !token_char(c)) {
			mrtx__free(d);
			return mrtx__seterr(MRTX_EINVAL,
			                    "rados address: character '%c' (0x%02x) not allowed in %s"
			                    " (letters, digits, '.', '_', '-')",
			                    c > 0x20 && c < 0x7f ? c : '?', c, what);
		}
		d[k++] = (char)c;
	}
	d[k] = '\0';
	if (token && k > RADDR_MAX_NAME) {
		mrtx__free(d);
		return mrtx__seterr(MRTX_EINVAL, "rados address: %s longer than %u bytes", what,
		                    RADDR_MAX_NAME);
	}
	*out = d;
	return MRTX_OK;
}

int raddr_parse_seconds(const char *s, const char *what, unsigned *out)
{
	unsigned long v = 0;

	if (!*s)
		return mrtx__seterr(MRTX_EINVAL, "%s: empty timeout", what);
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > RCONN_MAX_TIMEOUT_S)
			return mrtx__seterr(MRTX_EINVAL,
			                    "%s: timeout must be whole seconds 1..%u, not \"%s\"",
			                    what, RCONN_MAX_TIMEOUT_S, s);
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > RCONN_MAX_TIMEOUT_S)
		return mrtx__seterr(MRTX_EINVAL, "%s: timeout must be 1..%u seconds, not %lu", what,
		                    RCONN_MAX_TIMEOUT_S, v);
	*out = (unsigned)v;
	return MRTX_OK;
}

/* One "key=value" of the query. */
static int parse_param(raddr *a, const char *p, size_t n)
{
	const char *eq = memchr(p, '=', n);
	size_t kn = eq ? (size_t)(eq - p) : n;
	const char *v = eq ? eq + 1 : p + n;
	size_t vn = (size_t)(p + n - v);
	char **slot = NULL, *tmp = NULL;
	int rc;

	if (kn == 10 && !memcmp(p, "split_rows", 10)) {
		unsigned long x;
		char *e;

		if (!eq || a->has_split_rows)
			return mrtx__seterr(MRTX_EINVAL, "rados address: split_rows %s",
			                    eq ? "given twice" : "has no value");
		if ((rc = decode_part(v, vn, "split_rows", 1, &tmp)))
			return rc;
		errno = 0;
		x = strtoul(tmp, &e, 10);
		rc = *e || !*tmp || *tmp == '-' || *tmp == '+' || errno || x > RADDR_MAX_SPLIT_ROWS ?
		     mrtx__seterr(MRTX_EINVAL, "rados address: split_rows must be 0 (never split) "
		                  "or 2..%lu rows, not \"%.32s\"", (unsigned long)RADDR_MAX_SPLIT_ROWS,
		                  tmp) : 0;
		if (rc == 0 && x == 1)
			rc = mrtx__seterr(MRTX_EINVAL, "rados address: split_rows must be 0 (never "
			                  "split) or 2..%lu rows, not 1", (unsigned long)RADDR_MAX_SPLIT_ROWS);
		mrtx__free(tmp);
		a->split_rows = (uint32_t)x;
		a->has_split_rows = rc == 0;
		return rc;
	}
	if (kn == 4 && !memcmp(p, "conf", 4))
		slot = &a->conf;
	else if (kn == 4 && !memcmp(p, "user", 4))
		slot = &a->user;
	else if (!(kn == 7 && !memcmp(p, "timeout", 7)))
		return mrtx__seterr(MRTX_EINVAL,
		                    "rados address: unknown parameter \"%.*s\" (conf, user, timeout, "
		                    "split_rows)",
		                    (int)(kn > 64 ? 64 : kn), p);
	if (!eq)
		return mrtx__seterr(MRTX_EINVAL, "rados address: parameter \"%.*s\" has no value",
		                    (int)kn, p);
	if (!slot) {
		if (a->timeout_s)
			return mrtx__seterr(MRTX_EINVAL, "rados address: timeout given twice");
		if ((rc = decode_part(v, vn, "timeout", 1, &tmp)))
			return rc;
		rc = raddr_parse_seconds(tmp, "rados address", &a->timeout_s);
		mrtx__free(tmp);
		return rc;
	}
	if (*slot)
		return mrtx__seterr(MRTX_EINVAL, "rados address: %.*s given twice", (int)kn, p);
	return decode_part(v, vn, slot == &a->conf ? "conf" : "user", slot == &a->user, slot);
}

int raddr_parse(raddr *out, const char *uri)
{
	const char *p, *slash, *q, *end;
	int rc;

	if (!out)
		return mrtx__seterr(MRTX_EINVAL, "rados address: NULL");
	memset(out, 0, sizeof(*out));
	if (!raddr_is_rados(uri))
		return mrtx__seterr(MRTX_EINVAL, "not a rados:// address: \"%.80s\"",
		                    uri ? uri : "(null)");
	p = uri + sizeof(SCHEME) - 1;
	end = p + strlen(p);
	q = strchr(p, '?');
	if (!q)
		q = end;
	slash = memchr(p, '/', (size_t)(q - p));
	if (!slash)
		return mrtx__seterr(MRTX_EINVAL,
		                    "rados address: want rados://POOL/NAME, got \"%.80s\"", uri);
	if ((rc = decode_part(p, (size_t)(slash - p), "pool", 1, &out->pool)) ||
	    (rc = decode_part(slash + 1, (size_t)(q - slash - 1), "store name", 1, &out->name)))
		goto fail;
	if (*q == '?') {
		for (p = q + 1;; ) {
			const char *amp = strchr(p, '&');
			size_t n = amp ? (size_t)(amp - p) : strlen(p);

			if (n == 0) {
				rc = mrtx__seterr(MRTX_EINVAL, "rados address: empty parameter");
				goto fail;
			}
			if ((rc = parse_param(out, p, n)))
				goto fail;
			if (!amp)
				break;
			p = amp + 1;
		}
	}
	return MRTX_OK;
fail:
	raddr_free(out);
	return rc;
}

void raddr_free(raddr *a)
{
	if (!a)
		return;
	mrtx__free(a->pool);
	mrtx__free(a->name);
	mrtx__free(a->conf);
	mrtx__free(a->user);
	memset(a, 0, sizeof(*a));
}
