/*
 * util.c - see util.h.
 */
#include "util.h"
#include "txn/txn_test.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ escaping */

int unescape_inplace(char *s, size_t len, size_t *outlen, char *err, size_t errlen)
{
	size_t i = 0, o = 0;

	while (i < len) {
		if (s[i] != '\\') {
			s[o++] = s[i++];
			continue;
		}
		if (i + 1 < len && s[i + 1] == '\\') {
			s[o++] = '\\';
			i += 2;
			continue;
		}
		if (i + 3 < len && s[i + 1] == 'x' && tool_hexval((unsigned char)s[i + 2]) >= 0 &&
		    tool_hexval((unsigned char)s[i + 3]) >= 0) {
			s[o++] = (char)(tool_hexval((unsigned char)s[i + 2]) * 16 +
			                tool_hexval((unsigned char)s[i + 3]));
			i += 4;
			continue;
		}
		snprintf(err, errlen, "bad escape at byte %zu (use \\xNN or \\\\)", i);
		return -1;
	}
	*outlen = o;
	return 0;
}

static int needs_escape(unsigned char c, unsigned flags)
{
	return c < 0x20 || c > 0x7e || c == '\\' || (c == ' ' && (flags & ESC_SPACE));
}

void print_escaped(FILE *f, const void *p, size_t n, unsigned flags)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		if (b[i] == '\\')
			fputs("\\\\", f);
		else if (needs_escape(b[i], flags))
			fprintf(f, "\\x%02x", b[i]);
		else
			putc(b[i], f);
	}
}

char *escape_dup(const void *p, size_t n, unsigned flags)
{
	const unsigned char *b = p;
	size_t len = 0, o = 0;
	char *s;

	for (size_t i = 0; i < n; i++)
		len += b[i] == '\\' ? 2 : needs_escape(b[i], flags) ? 4 : 1;
	if (!(s = malloc(len + 1)))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '\\') {
			s[o++] = '\\';
			s[o++] = '\\';
		} else if (needs_escape(b[i], flags)) {
			snprintf(s + o, 5, "\\x%02x", b[i]);
			o += 4;
		} else {
			s[o++] = (char)b[i];
		}
	}
	s[o] = '\0';
	return s;
}

/* ---------------------------------------------------------------- JSON */

void json_str(FILE *f, const char *s, size_t n)
{
	putc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

void json_bytes(FILE *f, const void *p, size_t n)
{
	char *e = escape_dup(p, n, 0);

	if (!e) {
		json_str(f, "", 0);
		return;
	}
	json_str(f, e, strlen(e));
	free(e);
}

/* -------------------------------------------------------------- errors */

void tool_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "mrtx: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	putc('\n', stderr);
}

/* (MRTX_EFULL is also a full disk, quota or cluster: the map's messages
 * are the ones that name it) */
const char *tool_hint(int rc)
{
	const char *m = mrtx_errmsg();

	if (rc == MRTX_EFULL && (strstr(m, "map size") || strstr(m, "map is full")))
		return " (give a larger --map-size SIZE or MRTX_MAP_SIZE)";
	/* get 't', 'r1' as the HBase shell writes it */
	if (rc == MRTX_ENOTABLE && strstr(m, ",' "))
		return " (words are separated by blanks, not commas: get TABLE ROW FAMILY:QUALIFIER)";
	if (rc == MRTX_ESNAPSHOT && strstr(m, "keep more versions"))
		return " (get --versions N lists the timestamps kept; a family keeps N versions "
		       "when created as FAMILY:N)";
	if (rc == MRTX_EEXIST && strstr(m, "exists with"))
		return " (mrtx describe STORE TABLE shows them; add-family adds a family)";
	if (rc == MRTX_EINVAL && strstr(m, "read the store as it is now"))
		return " (leave out --at)";
	if (rc == MRTX_EREADONLY && strstr(m, "read-only"))
		return " (it was opened with --read-only or MRTX_READ_ONLY=1: leave them out to "
		       "write)";
	return "";
}

FILE *memout_restart(memout *m)
{
	if (m->f) {
		fclose(m->f);
		free(m->buf);
		m->buf = NULL;
	}
	return m->f = open_memstream(&m->buf, &m->len);
}

void memout_finish(memout *m, int ok, FILE *out)
{
	if (m->f)
		fclose(m->f);
	if (ok && m->buf && m->len)
		fwrite(m->buf, 1, m->len, out);
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

/* The prefixes of the library's own functions and types: a message naming
 * one ("mrtx_begin_at: ...", "(mrtx_options.map_size)") tells a user of the
 * tool nothing. */
static const char *const lib_prefixes[] = { "mrtx_", "admin_", "store_", "txn_",  "lmdb_",
                                            "rados_", "rconn_", "rraw_",  "rlua_", "lock_",
                                            "recover_", "mdb_",  NULL };

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The length of the library name at p ("mrtx_gc", "mrtx_options.map_size"),
 * or 0.  A word that is also a path (a store directory called my_store)
 * is the user's own: never a name to drop. */
static size_t lib_name_len(const char *p)
{
	size_t n = 0, i;
	char word[128];

	while (is_ident(p[n]) || (p[n] == '.' && is_ident(p[n + 1]) && n))
		n++;
	if (n == 0 || n >= sizeof(word) || !memchr(p, '_', n))
		return 0;
	for (i = 0; lib_prefixes[i]; i++)
		if (strncmp(p, lib_prefixes[i], strlen(lib_prefixes[i])) == 0)
			break;
	if (!lib_prefixes[i])
		return 0;
	memcpy(word, p, n);
	word[n] = '\0';
	return access(word, F_OK) == 0 ? 0 : n;
}

const char *tool_errmsg(int rc)
{
	static _Thread_local char buf[2048];
	const char *m = mrtx_errmsg(), *p;
	size_t o = 0, n;

	if (!*m)
		return mrtx_strerror(rc);
	/* drop "function: " wherever a word starts, and " (function)" */
	for (p = m; *p && o < sizeof(buf) - 1;) {
		int start = p == m || !is_ident(p[-1]);

		if (start && (n = lib_name_len(p)) && p[n] == ':' && p[n + 1] == ' ') {
			p += n + 2;
			continue;
		}
		if (p[0] == ' ' && p[1] == '(' && (n = lib_name_len(p + 2)) && p[n + 2] == ')') {
			p += n + 3;
			continue;
		}
		/* "X: X: ": a step named twice */
		if (start && p[0] != ' ') {
			for (n = 0; p[n] && p[n] != ':' && p[n] != ' ' && n < 64; n++)
				;
			if (n && p[n] == ':' && p[n + 1] == ' ' && strncmp(p, p + n + 2, n) == 0 &&
			    p[2 * n + 2] == ':') {
				p += n + 2;
				continue;
			}
		}
		buf[o++] = *p++;
	}
	buf[o] = '\0';
	return buf;
}

int tool_fail(const char *cmd, const char *step, int rc)
{
	const char *m = tool_errmsg(rc);
	size_t n = step ? strlen(step) : 0;

	/* (the library's message may name the step already) */
	if (step && !(strncmp(m, step, n) == 0 && m[n] == ':'))
		tool_err(cmd, "%s: %s%s", step, m, tool_hint(rc));
	else
		tool_err(cmd, "%s%s", m, tool_hint(rc));
	return EXIT_FAIL;
}

int tool_usage_err(const char *cmd, const char *usage, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "mrtx: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: %s\n", usage);
	return EXIT_USAGE;
}

/* ----------------------------------------------------------- arguments */

static const tool_opt *find_opt(const tool_opt *opts, const char *name, size_t len)
{
	for (; opts && opts->name; opts++)
		if (strlen(opts->name) == len && memcmp(opts->name, name, len) == 0)
			return opts;
	return NULL;
}

int args_parse(const char *cmd, const char *usage, int argc, char **argv,
               const tool_opt *opts, char **pos, int *npos, int *help)
{
	int n = 0, only_pos = 0;

	*help = 0;
	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		const tool_opt *o;
		const char *eq;

		if (only_pos || a[0] != '-' || a[1] == '\0' || (a[1] != '-' && a[1] != 'h')) {
			pos[n++] = a;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			*help = 1;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = 1;
			continue;
		}
		if (a[1] != '-') { /* "-hx" and the like */
			pos[n++] = a;
			continue;
		}
		eq = strchr(a + 2, '=');
		o = find_opt(opts, a + 2, eq ? (size_t)(eq - (a + 2)) : strlen(a + 2));
		if (!o)
			return tool_usage_err(cmd, usage, "unknown option '%s'", a);
		if (!o->has_arg) {
			if (eq)
				return tool_usage_err(cmd, usage, "option '--%s' takes no value",
				                      o->name);
			*o->flag = 1;
		} else if (eq) {
			*o->value = eq + 1;
		} else if (i + 1 < argc) {
			*o->value = argv[++i];
		} else {
			return tool_usage_err(cmd, usage, "option '--%s' needs a value", o->name);
		}
	}
	*npos = n;
	return 0;
}

int arg_bytes(const char *cmd, const char *what, char *arg, mrtx_bytes *out)
{
	char err[96];
	size_t n;

	if (unescape_inplace(arg, strlen(arg), &n, err, sizeof(err))) {
		tool_err(cmd, "%s: %s", what, err);
		return EXIT_USAGE;
	}
	*out = MRTX_BYTES(arg, n);
	return 0;
}

int arg_name(const char *cmd, const char *what, char *arg)
{
	mrtx_bytes b;
	int rc;

	if ((rc = arg_bytes(cmd, what, arg, &b)))
		return rc;
	if (b.size == 0 || memchr(arg, '\0', b.size)) {
		tool_err(cmd, "%s must be a non-empty name without NUL bytes", what);
		return EXIT_USAGE;
	}
	arg[b.size] = '\0';
	return 0;
}

int arg_column(const char *cmd, char *arg, const char **family, mrtx_bytes *qual)
{
	char *colon = strchr(arg, ':');
	int rc;

	if (!colon || colon == arg) {
		if (colon == arg)
			tool_err(cmd, "column '%s' is not FAMILY:QUALIFIER: it has no family", arg);
		else
			tool_err(cmd, "column '%s' is not FAMILY:QUALIFIER (%s: is that family "
			         "with the empty qualifier)", arg, arg);
		return EXIT_USAGE;
	}
	*colon = '\0';
	if ((rc = arg_name(cmd, "family", arg)) || (rc = arg_bytes(cmd, "qualifier", colon + 1,
	                                                           qual)))
		return rc;
	*family = arg;
	return 0;
}

int arg_size(const char *cmd, const char *what, const char *arg, size_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (arg[0] < '0' || arg[0] > '9' || (v = strtoull(arg, &end, 10), errno) || *end ||
	    v > (unsigned long long)SIZE_MAX) {
		tool_err(cmd, "%s: '%s' is not a non-negative integer", what, arg);
		return EXIT_USAGE;
	}
	*out = (size_t)v;
	return 0;
}

/* --------------------------------------------------------------- store */

/* Does the LMDB store directory path hold data.mdb?  1 yes, 0 no, -1 it
 * cannot be told (errno: EACCES, ...). */
static int dir_has_data(const char *path)
{
	char file[4096];
	struct stat sb;
	int n = snprintf(file, sizeof(file), "%s/data.mdb", path);

	if (n <= 0 || (size_t)n >= sizeof(file))
		return 0;
	if (stat(file, &sb) != 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	return S_ISREG(sb.st_mode) ? 1 : 2;
}

/* Can this process read the store's data file (or, with none yet, look
 * into its directory)?  --read-only helps only one that can. */
static int data_readable(const char *path)
{
	char file[4096];
	int n = snprintf(file, sizeof(file), "%s/data.mdb", path);

	if (n <= 0 || (size_t)n >= sizeof(file))
		return 1; /* cannot tell: the hint stands */
	return access(file, R_OK) == 0 || errno != EACCES;
}

/* Can this process write the store's files (an LMDB store directory)? */
static int dir_writable(const char *path)
{
	char file[4096];
	int n = snprintf(file, sizeof(file), "%s/data.mdb", path);

	if (n <= 0 || (size_t)n >= sizeof(file))
		return 1; /* cannot tell: no hint */
	if (access(file, F_OK) != 0)
		return access(path, W_OK) == 0 || (errno != EACCES && errno != EROFS);
	return access(file, W_OK) == 0 || (errno != EACCES && errno != EROFS);
}

/* The options of every tool_open: the global ones (globals.c) */
static mrtx_options open_opts = MRTX_OPTIONS_INIT;
static mrtx__knobs open_knobs;

void tool_open_options(const mrtx_options *o, int two_phase)
{
	open_opts = *o;
	open_knobs.two_phase = two_phase;
}

int tool_open(const char *cmd, const char *path, int create, mrtx_db **out)
{
	struct stat sb;
	int rc;

	*out = NULL;
	if (strncmp(path, "rados://", 8) == 0) {
		/* a RADOS store: the library checks the address, and makes a
		 * store there only for a command that may create one */
	} else if (stat(path, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode)) {
			tool_err(cmd, "%s is not a directory (an mrtx store is a directory)", path);
			return EXIT_FAIL;
		}
	} else if (!create) {
		tool_err(cmd, "%s: no such store directory", path);
		return EXIT_FAIL;
	}
	/* mrtx_open makes a store in any directory; only create-table may.
	 * data.mdb is the LMDB backend's data file, present in every store. */
	if (!create && strncmp(path, "rados://", 8) != 0) {
		int has = dir_has_data(path);

		if (has < 0) {
			tool_err(cmd, "%s: cannot look into the store directory: %s", path,
			         strerror(errno));
			return EXIT_FAIL;
		}
		if (!has) {
			tool_err(cmd, "%s is not an mrtx store (no data.mdb; `mrtx create-table` "
			         "makes one)", path);
			return EXIT_FAIL;
		}
		if (has == 2) {
			tool_err(cmd, "%s is not an mrtx store: its data.mdb is not a regular file",
			         path);
			return EXIT_FAIL;
		}
	}
	{
		/* only a command that makes tables makes a store, on RADOS too
		 * (mrtx_open alone would refuse a RADOS address without one) */
		mrtx_options o = open_opts;

		o.create = create ? MRTX_CREATE_IF_MISSING : MRTX_CREATE_NEVER;
		rc = mrtx__open_knobs(out, path, &o, &open_knobs);
	}
	if (rc) {
		rc = tool_fail(cmd, "open", rc);
		if (!open_opts.read_only && strncmp(path, "rados://", 8) != 0 &&
		    !dir_writable(path) && data_readable(path))
			tool_err(cmd, "%s cannot be written by this user; commands that only read "
			         "can open it with --read-only (or MRTX_READ_ONLY=1)", path);
		return rc;
	}
	return 0;
}

int tool_stderr_tty(void)
{
	return isatty(STDERR_FILENO);
}

/* ---- table names ---- */

static int names_add(const char *table, void *payload)
{
	name_list *l = payload;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **g = realloc(l->v, cap * sizeof(*g));

		if (!g)
			return MRTX_ENOMEM;
		l->v = g;
		l->cap = cap;
	}
	if (!(l->v[l->n] = strdup(table)))
		return MRTX_ENOMEM;
	l->n++;
	return 0;
}

void names_free(name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int names_list(mrtx_db *db, name_list *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = mrtx_tables(db, names_add, out)))
		names_free(out);
	return rc;
}
