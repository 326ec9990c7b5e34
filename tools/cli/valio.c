/*
 * valio.c - see valio.h.
 */
#include "valio.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ------------------------------------------------------------- reading */

int value_read(const char *cmd, const char *path, char **out, size_t *size)
{
	const char *name = strcmp(path, "-") == 0 ? "standard input" : path;
	const size_t limit = MRTX_MAX_VALUE;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	FILE *fp = stdin;
	int rc = EXIT_FAIL;

	*out = NULL;
	*size = 0;
	if (strcmp(path, "-") != 0 && !(fp = fopen(path, "rb"))) {
		tool_err(cmd, "%s: %s", name, strerror(errno));
		return EXIT_FAIL;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			/* grow to at most limit + 1 bytes: one byte over says "too big"
			 * without reading the rest */
			size_t ncap = cap ? cap * 2 : 64 * 1024;
			char *nb;

			if (cap > limit) {
				tool_err(cmd, "%s: more than %zu bytes, the largest value "
				         "(MRTX_MAX_VALUE)", name, limit);
				goto done;
			}
			if (ncap > limit + 1)
				ncap = limit + 1;
			if (!(nb = realloc(buf, ncap))) {
				tool_err(cmd, "%s: out of memory", name);
				goto done;
			}
			buf = nb;
			cap = ncap;
		}
		errno = 0;
		n = fread(buf + len, 1, cap - len, fp);
		len += n;
		if (n == 0) {
			if (ferror(fp)) {
				tool_err(cmd, "%s: %s", name, strerror(errno ? errno : EIO));
				goto done;
			}
			break;
		}
	}
	if (len > limit) {
		tool_err(cmd, "%s: more than %zu bytes, the largest value (MRTX_MAX_VALUE)",
		         name, limit);
		goto done;
	}
	if (!buf && !(buf = malloc(1))) {
		tool_err(cmd, "%s: out of memory", name);
		goto done;
	}
	*out = buf;
	*size = len;
	buf = NULL;
	rc = 0;
done:
	free(buf);
	if (fp != stdin)
		fclose(fp);
	return rc;
}

/* --------------------------------------------------------------- UTF-8 */

/* Length of the valid UTF-8 sequence at b[0..n) and its code point, or 0. */
static size_t utf8_seq(const unsigned char *b, size_t n, uint32_t *cp)
{
	unsigned char c = b[0], lo = 0x80, hi = 0xBF;
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		*cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		*cp = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0; /* no overlong forms */
		else if (c == 0xED)
			hi = 0x9F; /* no surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		*cp = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F; /* nothing above U+10FFFF */
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		unsigned char d = b[i];

		if (d < (i == 1 ? lo : 0x80) || d > (i == 1 ? hi : 0xBF))
			return 0;
		*cp = (*cp << 6) | (d & 0x3F);
	}
	return len;
}

int utf8_valid(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k)
		if (!(k = utf8_seq(b + i, n - i, &cp)))
			return 0;
	return 1;
}

/* ---------------------------------------------------------------- JSON */

static void json_text(FILE *f, const unsigned char *b, size_t n)
{
	putc('"', f);
	for (size_t i = 0, k; i < n; i += k) {
		uint32_t cp;

		k = utf8_seq(b + i, n - i, &cp);
		if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (int)cp);
		else if (cp == '\n')
			fputs("\\n", f);
		else if (cp == '\t')
			fputs("\\t", f);
		else if (cp == '\r')
			fputs("\\r", f);
		else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0) || cp == 0x2028 || cp == 0x2029)
			/* controls (C0, DEL, C1) and JavaScript's line separators:
			 * escaped, so the output is safe on a terminal and in JS */
			fprintf(f, "\\u%04x", (unsigned)cp);
		else
			fwrite(b + i, 1, k, f);
	}
	putc('"', f);
}

static void json_base64(FILE *f, const unsigned char *b, size_t n)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	fputs("{\"base64\":\"", f);
	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];

		putc(abc[v >> 18], f);
		putc(abc[(v >> 12) & 63], f);
		putc(abc[(v >> 6) & 63], f);
		putc(abc[v & 63], f);
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)b[i] << 16;

		putc(abc[v >> 18], f);
		putc(abc[(v >> 12) & 63], f);
		fputs("==", f);
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8;

		putc(abc[v >> 18], f);
		putc(abc[(v >> 12) & 63], f);
		putc(abc[(v >> 6) & 63], f);
		putc('=', f);
	}
	fputs("\"}", f);
}

void json_data(FILE *f, const void *p, size_t n)
{
	if (utf8_valid(p, n))
		json_text(f, p, n);
	else
		json_base64(f, p, n);
}

/* -------------------------------------------------------------- output */

int stdout_finish(const char *cmd)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	tool_err(cmd, "standard output: %s", errno ? strerror(errno) : "write error");
	return EXIT_FAIL;
}
