/*
 * dumpfmt.c - see dumpfmt.h.
 */
#include "dumpfmt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char hexd[] = "0123456789abcdef";

void dump_put_field(FILE *f, const void *p, size_t n)
{
	const unsigned char *b = p;
	char buf[4096];
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = b[i];

		if (o > sizeof(buf) - 4) {
			fwrite(buf, 1, o, f);
			o = 0;
		}
		if (c == '\\') {
			buf[o++] = '\\';
			buf[o++] = '\\';
		} else if (c <= 0x20 || c > 0x7e) {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hexd[c >> 4];
			buf[o++] = hexd[c & 15];
		} else {
			buf[o++] = (char)c;
		}
	}
	if (o)
		fwrite(buf, 1, o, f);
}

void dump_put_cell(FILE *f, const mrtx_cell *c, uint64_t ts)
{
	dump_put_field(f, c->row.data, c->row.size);
	putc(' ', f);
	dump_put_field(f, c->family, strlen(c->family));
	putc(':', f);
	dump_put_field(f, c->qualifier.data, c->qualifier.size);
	putc(' ', f);
	if (ts)
		fprintf(f, "%llu ", (unsigned long long)ts);
	dump_put_field(f, c->value.data, c->value.size);
	putc('\n', f);
}

void dump_put_family(FILE *f, const char *name, const mrtx_family_spec *p)
{
	fputs("family ", f);
	dump_put_field(f, name, strlen(name));
	if (p)
		fprintf(f, " %lu:%lu:%llu", (unsigned long)(p->max_versions ? p->max_versions : 1),
		        (unsigned long)p->min_versions, (unsigned long long)p->ttl_ms);
	putc('\n', f);
}

int dump_field_decode(char *s, size_t n, size_t *outn, char *err, size_t errlen)
{
	size_t i = 0, o = 0;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x21 || c > 0x7e) {
			snprintf(err, errlen, "raw byte 0x%02x at column %zu (bytes outside "
			         "0x21..0x7e are written \\xNN%s)", c, i + 1,
			         c == '\r' ? "; CRLF line ends?" : "");
			return -1;
		}
		if (c != '\\') {
			s[o++] = (char)c;
			i++;
			continue;
		}
		if (i + 1 < n && s[i + 1] == '\\') {
			s[o++] = '\\';
			i += 2;
			continue;
		}
		if (i + 3 < n && s[i + 1] == 'x' && tool_hexval((unsigned char)s[i + 2]) >= 0 &&
		    tool_hexval((unsigned char)s[i + 3]) >= 0) {
			s[o++] = (char)(tool_hexval((unsigned char)s[i + 2]) * 16 +
			                tool_hexval((unsigned char)s[i + 3]));
			i += 4;
			continue;
		}
		snprintf(err, errlen, "bad escape at column %zu (only \\xNN and \\\\)", i + 1);
		return -1;
	}
	*outn = o;
	return 0;
}

int dump_name_decode(char *s, size_t n, char *err, size_t errlen)
{
	size_t m;

	if (dump_field_decode(s, n, &m, err, errlen))
		return -1;
	if (m == 0 || memchr(s, '\0', m)) {
		snprintf(err, errlen, "a name must be non-empty, without NUL bytes");
		return -1;
	}
	s[m] = '\0';
	return 0;
}

/* The line's fields at its spaces: up to max, *n set; -1 if more. */
static int split(char *line, size_t len, char **f, size_t *fl, int max, int *n)
{
	size_t start = 0;
	int k = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && line[i] != ' ')
			continue;
		if (k == max)
			return -1;
		f[k] = line + start;
		fl[k++] = i - start;
		start = i + 1;
	}
	*n = k;
	return 0;
}

static int number(const char *s, size_t n, unsigned long long *out)
{
	unsigned long long v = 0;

	if (n == 0 || n > 19)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return 0;
}

static int word_is(const char *f, size_t n, const char *w)
{
	return n == strlen(w) && memcmp(f, w, n) == 0;
}

/* POLICY: VERSIONS:MIN_VERSIONS:TTL_MS. */
static int parse_policy(const char *s, size_t n, mrtx_family_spec *p, char *err, size_t errlen)
{
	unsigned long long v[3];
	size_t i = 0;

	for (int k = 0; k < 3; k++) {
		size_t start = i;

		while (i < n && s[i] != ':')
			i++;
		if (number(s + start, i - start, &v[k]) || (k < 2 && i == n) ||
		    (k == 2 && i != n)) {
			snprintf(err, errlen, "a family's policy is VERSIONS:MIN_VERSIONS:TTL_MS "
			         "(decimal numbers)");
			return -1;
		}
		i++;
	}
	if (v[0] == 0 || v[0] > UINT32_MAX || v[1] > v[0] || v[2] > INT64_MAX / 1000) {
		snprintf(err, errlen, "a family's policy needs VERSIONS at least 1, MIN_VERSIONS "
		         "at most VERSIONS and a TTL_MS below 2^63 microseconds");
		return -1;
	}
	memset(p, 0, sizeof(*p));
	p->max_versions = (uint32_t)v[0];
	p->min_versions = (uint32_t)v[1];
	p->ttl_ms = v[2];
	return 0;
}

static int parse_cell(char **f, size_t *fl, dump_line *out, char *err, size_t errlen)
{
	char *colon = memchr(f[1], ':', fl[1]);
	size_t rn, qn, vn, famlen;

	if (!colon) {
		snprintf(err, errlen, "the second field is not FAMILY:QUALIFIER");
		return -1;
	}
	famlen = (size_t)(colon - f[1]);
	if (dump_field_decode(f[0], fl[0], &rn, err, errlen))
		return -1;
	if (rn == 0) {
		snprintf(err, errlen, "empty row");
		return -1;
	}
	if (dump_name_decode(f[1], famlen, err, errlen))
		return -1;
	if (dump_field_decode(colon + 1, fl[1] - famlen - 1, &qn, err, errlen) ||
	    dump_field_decode(f[2], fl[2], &vn, err, errlen))
		return -1;
	out->kind = DUMP_LINE_CELL;
	out->row = MRTX_BYTES(f[0], rn);
	out->family = f[1];
	out->qualifier = MRTX_BYTES(colon + 1, qn);
	out->value = MRTX_BYTES(f[2], vn);
	return 0;
}

int dump_parse_line(char *line, size_t len, int in_cells, dump_line *out, char *err,
                    size_t errlen)
{
	char *f[4];
	size_t fl[4];
	int n, max = in_cells == 2 ? 4 : 3;

	memset(out, 0, sizeof(*out));
	if (split(line, len, f, fl, max, &n)) {
		snprintf(err, errlen, "more than %s space-separated fields (a space in a "
		         "field is written \\x20)", max == 4 ? "four" : "three");
		return -1;
	}
	if (in_cells == 2) {
		unsigned long long ts;

		if (n == 2 && word_is(f[0], fl[0], "end")) {
			if (number(f[1], fl[1], &out->number)) {
				snprintf(err, errlen, "'end' needs the number of cell lines");
				return -1;
			}
			out->kind = DUMP_LINE_END;
			return 0;
		}
		if (n != 4) {
			snprintf(err, errlen, "a cell line of a dump with versions is ROW "
			         "FAMILY:QUALIFIER TS VALUE (four fields, one space apart)");
			return -1;
		}
		if (number(f[2], fl[2], &ts) || ts == 0 || ts > INT64_MAX) {
			snprintf(err, errlen, "TS, the third field, must be a timestamp (a decimal "
			         "number, 1 .. 2^63-1)");
			return -1;
		}
		f[2] = f[3];
		fl[2] = fl[3];
		if (parse_cell(f, fl, out, err, errlen))
			return -1;
		out->ts = ts;
		return 0;
	}
	if (in_cells) {
		if (n == 2 && word_is(f[0], fl[0], "end")) {
			if (number(f[1], fl[1], &out->number)) {
				snprintf(err, errlen, "'end' needs the number of cell lines");
				return -1;
			}
			out->kind = DUMP_LINE_END;
			return 0;
		}
		if (n != 3) {
			snprintf(err, errlen, "a cell line is ROW FAMILY:QUALIFIER VALUE (three "
			         "fields, one space apart)");
			return -1;
		}
		return parse_cell(f, fl, out, err, errlen);
	}
	if (n == 2 && word_is(f[0], fl[0], DUMP_MAGIC)) {
		if (number(f[1], fl[1], &out->number)) {
			snprintf(err, errlen, "'%s' needs a version number", DUMP_MAGIC);
			return -1;
		}
		out->kind = DUMP_LINE_MAGIC;
		return 0;
	}
	if (n == 1 && word_is(f[0], fl[0], "cells")) {
		out->kind = DUMP_LINE_CELLS;
		return 0;
	}
	if (n == 1 && word_is(f[0], fl[0], "versions")) {
		out->kind = DUMP_LINE_VERSIONS;
		return 0;
	}
	if ((n == 2 && word_is(f[0], fl[0], "table")) ||
	    ((n == 2 || n == 3) && word_is(f[0], fl[0], "family"))) {
		out->kind = f[0][0] == 't' ? DUMP_LINE_TABLE : DUMP_LINE_FAMILY;
		if (n == 3) {
			if (parse_policy(f[2], fl[2], &out->policy, err, errlen))
				return -1;
			out->has_policy = 1;
		}
		if (dump_name_decode(f[1], fl[1], err, errlen))
			return -1;
		out->name = f[1];
		return 0;
	}
	snprintf(err, errlen, "not a header line (mrtx-dump V, table NAME, family NAME "
	         "[POLICY], versions, cells)");
	return -1;
}
