/*
 * globals.c - see globals.h.
 */
#include "globals.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

#define GLOBAL_USAGE "mrtx [--map-size SIZE] [--read-only] [--two-phase] SUBCOMMAND STORE [ARGS...]"

static struct {
	const char *map_size_arg; /* --map-size's value, or NULL */
	int read_only_flag;       /* --read-only given */
	int two_phase_flag;       /* --two-phase given */
	size_t map_size;          /* settled: 0 = the library's default */
	int read_only;            /* settled */
	int two_phase;            /* settled */
} g;

int globals_parse_size(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		case 'g': case 'G': mul = 1ull << 30; break;
		case 't': case 'T': mul = 1ull << 40; break;
		default: return -1;
		}
		if (end[1])
			return -1;
	}
	if (v == 0 || v > (unsigned long long)SIZE_MAX / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static int usage_err(const char *fmt, const char *arg)
{
	fflush(stdout);
	fprintf(stderr, "mrtx: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: %s\n", GLOBAL_USAGE);
	return EXIT_USAGE;
}

int globals_parse(int argc, char **argv, int *sub)
{
	int i = 1;

	while (i < argc) {
		const char *a = argv[i];

		if (strcmp(a, "--read-only") == 0) {
			g.read_only_flag = 1;
			i++;
		} else if (strcmp(a, "--two-phase") == 0) {
			g.two_phase_flag = 1;
			i++;
		} else if (strncmp(a, "--map-size=", 11) == 0) {
			g.map_size_arg = a + 11;
			i++;
		} else if (strcmp(a, "--map-size") == 0) {
			if (i + 1 >= argc)
				return usage_err("option '%s' needs a value", a);
			g.map_size_arg = argv[i + 1];
			i += 2;
		} else if (strncmp(a, "--read-only=", 12) == 0) {
			return usage_err("option '%s' takes no value", "--read-only");
		} else if (strncmp(a, "--two-phase=", 12) == 0) {
			return usage_err("option '%s' takes no value", "--two-phase");
		} else {
			break;
		}
	}
	*sub = i;
	return 0;
}

/* MRTX_READ_ONLY, MRTX_TWO_PHASE: 1/yes/true/on, or 0/no/false/off/empty. */
static int env_bool(const char *name, const char *v, int *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "", "0", "no", "false", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcasecmp(v, yes[i]) == 0)
			return *out = 1, 0;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (strcasecmp(v, no[i]) == 0)
			return *out = 0, 0;
	fflush(stdout);
	fprintf(stderr, "mrtx: %s='%s' is not 1/yes/true/on or 0/no/false/off\n", name, v);
	return EXIT_USAGE;
}

int globals_for(const char *cmd, int own_stores)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	const char *env;
	int rc;

	if (own_stores) {
		if (g.map_size_arg || g.read_only_flag || g.two_phase_flag) {
			fflush(stdout);
			fprintf(stderr, "mrtx: %s: --map-size and --read-only do not apply (nor "
			        "--two-phase): %s makes and writes stores of its own\n", cmd, cmd);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (g.map_size_arg) {
		if (globals_parse_size(g.map_size_arg, &g.map_size))
			return usage_err("--map-size: '%s' is not a size (bytes > 0, or a number "
			                 "with K, M, G or T)", g.map_size_arg);
	} else if ((env = getenv("MRTX_MAP_SIZE")) && *env) {
		if (globals_parse_size(env, &g.map_size)) {
			fflush(stdout);
			fprintf(stderr, "mrtx: MRTX_MAP_SIZE='%s' is not a size (bytes > 0, or a "
			        "number with K, M, G or T)\n", env);
			return EXIT_USAGE;
		}
	}
	g.read_only = g.read_only_flag;
	if (!g.read_only && (env = getenv("MRTX_READ_ONLY")) &&
	    (rc = env_bool("MRTX_READ_ONLY", env, &g.read_only)))
		return rc;
	g.two_phase = g.two_phase_flag;
	if (!g.two_phase && (env = getenv("MRTX_TWO_PHASE")) &&
	    (rc = env_bool("MRTX_TWO_PHASE", env, &g.two_phase)))
		return rc;
	o.map_size = g.map_size;
	o.read_only = g.read_only;
	tool_open_options(&o, g.two_phase);
	return 0;
}
