/*
 * keyfmt.c - see keyfmt.h.
 */
#include "keyfmt.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "valio.h"

static const struct {
	const char *name;
	mrtx_key_type type;
} type_names[] = {
	{ "bytes", MRTX_KEY_BYTES }, { "str", MRTX_KEY_BYTES }, { "u32", MRTX_KEY_U32 },
	{ "u64", MRTX_KEY_U64 },     { "i32", MRTX_KEY_I32 },   { "i64", MRTX_KEY_I64 },
	{ "rts", MRTX_KEY_RTS },     { "salt", MRTX_KEY_SALT },
};

#define TYPE_LIST "bytes, str, u32, u64, i32, i64, rts, salt, fixedN, hashN"

static const char *type_name(const mrtx_key_part *p)
{
	switch (p->type) {
	case MRTX_KEY_BYTES: return "bytes";
	case MRTX_KEY_U32: return "u32";
	case MRTX_KEY_U64: return "u64";
	case MRTX_KEY_I32: return "i32";
	case MRTX_KEY_I64: return "i64";
	case MRTX_KEY_RTS: return "rts";
	case MRTX_KEY_SALT: return "salt";
	case MRTX_KEY_FIXED: return "fixed";
	case MRTX_KEY_HASH: return "hash";
	default: return "?";
	}
}

/* "fixedN" / "hashN": the width, or 0 when name is not that prefix and a
 * number in 1..max. */
static size_t width_of(const char *name, size_t len, const char *prefix, size_t max)
{
	size_t pl = strlen(prefix), w = 0;

	if (len <= pl || len > pl + 3 || memcmp(name, prefix, pl) != 0 || name[pl] == '0')
		return 0;
	for (size_t i = pl; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		w = w * 10 + (size_t)(name[i] - '0');
	}
	return w <= max ? w : 0;
}

int keyfmt_parse(const char *cmd, const char *text, keyfmt *out)
{
	const char *p = text;

	memset(out, 0, sizeof(*out));
	out->text = text;
	if (!*text) {
		tool_err(cmd, "--key: empty format (expected parts such as u64,str)");
		return EXIT_USAGE;
	}
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p), w;
		mrtx_key_part *part;
		size_t i;

		if (out->n == KEYFMT_MAX_PARTS) {
			tool_err(cmd, "--key: more than %d parts", KEYFMT_MAX_PARTS);
			return EXIT_USAGE;
		}
		part = &out->parts[out->n];
		for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
			if (strlen(type_names[i].name) == len &&
			    memcmp(type_names[i].name, p, len) == 0)
				break;
		if (i < sizeof(type_names) / sizeof(type_names[0])) {
			part->type = type_names[i].type;
		} else if ((w = width_of(p, len, "fixed", MRTX_MAX_KEY))) {
			part->type = MRTX_KEY_FIXED;
			part->width = w;
		} else if ((w = width_of(p, len, "hash", 32))) {
			part->type = MRTX_KEY_HASH;
			part->width = w;
		} else {
			tool_err(cmd, "--key: part %zu '%.*s' is not a part type (expected one of "
			         TYPE_LIST "; fixed N is 1..%u, hash N 1..32)", out->n + 1,
			         (int)len, p, MRTX_MAX_KEY);
			return EXIT_USAGE;
		}
		out->n++;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

/* ------------------------------------------------------------- input */

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Decimal digits s[0..n) into *v (at most max); -1 if not that. */
static int parse_dec(const char *s, size_t n, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

/* Skip "word" and at least one blank at the start of *s, if there. */
static void skip_word(const char **s, size_t *n, const char *word)
{
	size_t wl = strlen(word), i;

	if (*n <= wl || memcmp(*s, word, wl) != 0 || !is_blank((*s)[wl]))
		return;
	for (i = wl; i < *n && is_blank((*s)[i]); i++)
		;
	*s += i;
	*n -= i;
}

/* Append the part written as s[0..n) (escapes decoded); NULL, or what is
 * wrong with it. */
static const char *append_part(mrtx_key *k, const mrtx_key_part *part, const char *s,
                               size_t n)
{
	uint8_t raw[MRTX_MAX_KEY];
	uint64_t v;
	int neg;

	switch (part->type) {
	case MRTX_KEY_BYTES:
		mrtx_key_bytes(k, MRTX_BYTES(s, n));
		return NULL;
	case MRTX_KEY_U32:
	case MRTX_KEY_U64:
		if (parse_dec(s, n, part->type == MRTX_KEY_U32 ? UINT32_MAX : UINT64_MAX, &v))
			return part->type == MRTX_KEY_U32 ? "is not an integer in 0..4294967295"
			                                  : "is not an integer in 0..2^64-1";
		if (part->type == MRTX_KEY_U32)
			mrtx_key_u32(k, (uint32_t)v);
		else
			mrtx_key_u64(k, v);
		return NULL;
	case MRTX_KEY_I32:
	case MRTX_KEY_I64:
		neg = n > 0 && s[0] == '-';
		if (parse_dec(s + neg, n - (size_t)neg,
		              (part->type == MRTX_KEY_I32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX) +
		                  (uint64_t)neg, &v))
			return part->type == MRTX_KEY_I32 ? "is not an integer in -2^31..2^31-1"
			                                  : "is not an integer in -2^63..2^63-1";
		if (part->type == MRTX_KEY_I32)
			mrtx_key_i32(k, neg ? (int32_t)(0 - (uint32_t)v) : (int32_t)v);
		else
			mrtx_key_i64(k, neg ? (int64_t)(0 - v) : (int64_t)v);
		return NULL;
	case MRTX_KEY_RTS:
		skip_word(&s, &n, "ts");
		if (parse_dec(s, n, UINT64_MAX, &v))
			return "is not a timestamp in 0..2^64-1 (optionally after \"ts \")";
		mrtx_key_rts(k, v);
		return NULL;
	case MRTX_KEY_SALT:
		skip_word(&s, &n, "salt");
		if (parse_dec(s, n, 255, &v))
			return "is not a salt bucket in 0..255 (optionally after \"salt \")";
		raw[0] = (uint8_t)v;
		mrtx_key_fixed(k, MRTX_BYTES(raw, 1));
		return NULL;
	case MRTX_KEY_FIXED:
	case MRTX_KEY_HASH:
		if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
			s += 2;
			n -= 2;
		}
		if (n != 2 * part->width)
			return "does not have two hex digits per byte of the part's width";
		for (size_t i = 0; i < part->width; i++) {
			int hi = tool_hexval((unsigned char)s[2 * i]), lo = tool_hexval((unsigned char)s[2 * i + 1]);

			if (hi < 0 || lo < 0)
				return "is not hexadecimal";
			raw[i] = (uint8_t)(hi * 16 + lo);
		}
		mrtx_key_fixed(k, MRTX_BYTES(raw, part->width));
		return NULL;
	default:
		return "has an unknown type";
	}
}

int keyfmt_build(const char *cmd, const char *what, const keyfmt *f, const char *text,
                 int prefix_ok, mrtx_key *k)
{
	size_t i = 0, end = strlen(text), nparts = 0;
	char *tok = malloc(end + 1), err[96];
	int rc = EXIT_USAGE;
	mrtx_bytes out;

	if (!tok) {
		tool_err(cmd, "out of memory");
		return EXIT_FAIL;
	}
	mrtx_key_init(k);
	while (i < end && is_blank(text[i]))
		i++;
	while (end > i && is_blank(text[end - 1]))
		end--;
	if (i < end && text[i] == '(') {
		if (end - i < 2 || text[end - 1] != ')') {
			tool_err(cmd, "%s: '(' without a closing ')'", what);
			goto done;
		}
		i++;
		end--;
	}
	for (;;) {
		size_t j, a, b, len;
		const char *why;

		while (i < end && is_blank(text[i]))
			i++;
		if (nparts == f->n) {
			tool_err(cmd, "%s: more than the %zu parts of --key %s", what, f->n, f->text);
			goto done;
		}
		if (i < end && text[i] == '"') {
			for (j = i + 1; j < end && text[j] != '"'; j++)
				if (text[j] == '\\' && j + 1 < end)
					j++;
			if (j >= end) {
				tool_err(cmd, "%s: part %zu: unterminated quote", what, nparts + 1);
				goto done;
			}
			a = i + 1;
			b = j;
			for (i = j + 1; i < end && is_blank(text[i]); i++)
				;
		} else {
			for (j = i; j < end && text[j] != ','; j++)
				if (text[j] == '\\' && j + 1 < end)
					j++;
			a = i;
			for (b = j; b > a && is_blank(text[b - 1]); b--)
				;
			i = j;
		}
		memcpy(tok, text + a, b - a);
		if (unescape_inplace(tok, b - a, &len, err, sizeof(err))) {
			tool_err(cmd, "%s: part %zu: %s", what, nparts + 1, err);
			goto done;
		}
		if ((why = append_part(k, &f->parts[nparts], tok, len))) {
			char *e = escape_dup(tok, len, 0);

			tool_err(cmd, "%s: part %zu (%s): '%s' %s", what, nparts + 1,
			         type_name(&f->parts[nparts]), e ? e : "?", why);
			free(e);
			goto done;
		}
		nparts++;
		if (i == end)
			break;
		if (text[i] != ',') {
			tool_err(cmd, "%s: part %zu: expected ',' after the closing quote", what,
			         nparts);
			goto done;
		}
		i++;
	}
	if (nparts < f->n && !prefix_ok) {
		tool_err(cmd, "%s: %zu of the %zu parts of --key %s", what, nparts, f->n, f->text);
		goto done;
	}
	if (mrtx_key_finish(k, &out)) {
		tool_err(cmd, "%s: the key is longer than %u bytes", what, MRTX_MAX_KEY);
		rc = EXIT_FAIL;
		goto done;
	}
	rc = 0;
done:
	free(tok);
	return rc;
}

/* ------------------------------------------------------------ output */

int keyfmt_split(const keyfmt *f, mrtx_bytes row, mrtx_key_part *parts, uint8_t *buf,
                 size_t bufsize)
{
	for (size_t i = 0; i < f->n; i++) {
		memset(&parts[i], 0, sizeof(parts[i]));
		parts[i].type = f->parts[i].type;
		parts[i].width = f->parts[i].width;
	}
	if (row.size > bufsize)
		return -1;
	return mrtx_key_parse(parts, f->n, row, buf, bufsize);
}

int keyfmt_print(FILE *out, const keyfmt *f, mrtx_bytes row, unsigned flags)
{
	mrtx_key_part parts[KEYFMT_MAX_PARTS];
	uint8_t buf[MRTX_MAX_KEY];
	/* worst case: 4 characters a key byte, 10 a one-byte (salt) part */
	char text[16 * MRTX_MAX_KEY];

	if (keyfmt_split(f, row, parts, buf, sizeof(buf)) ||
	    mrtx_key_format(text, sizeof(text), parts, f->n)) {
		print_escaped(out, row.data, row.size, flags);
		return 1;
	}
	fputs(text, out);
	return 0;
}

int keyfmt_json(FILE *out, const keyfmt *f, mrtx_bytes row)
{
	mrtx_key_part parts[KEYFMT_MAX_PARTS];
	uint8_t buf[MRTX_MAX_KEY];

	if (keyfmt_split(f, row, parts, buf, sizeof(buf))) {
		fputs("null", out);
		return 1;
	}
	putc('[', out);
	for (size_t i = 0; i < f->n; i++) {
		const mrtx_key_part *p = &parts[i];
		const uint8_t *b = p->bytes.data;

		if (i)
			putc(',', out);
		switch (p->type) {
		case MRTX_KEY_BYTES:
			json_data(out, p->bytes.data, p->bytes.size);
			break;
		case MRTX_KEY_I32:
		case MRTX_KEY_I64:
			fprintf(out, "%lld", (long long)p->i);
			break;
		case MRTX_KEY_FIXED:
		case MRTX_KEY_HASH:
			putc('"', out);
			for (size_t j = 0; j < p->bytes.size; j++)
				fprintf(out, "%02x", b[j]);
			putc('"', out);
			break;
		default: /* u32, u64, rts, salt */
			fprintf(out, "%llu", (unsigned long long)p->u);
			break;
		}
	}
	putc(']', out);
	return 0;
}
