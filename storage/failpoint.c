/*
 * failpoint.c - named crash/fault points at every protocol step (DESIGN §7).
 *
 * Off, a failpoint costs one load and a predicted branch (FAILPOINT()).
 * Armed by MRTX_FAILPOINTS at the first mrtx_open of each process (a
 * forked child's own first open included) or by mrtx_failpoints_set():
 *     name=action[@N][,name=action[@N]...]
 * action: exit (_exit(99)) | kill (SIGKILL) | error (the step fails with
 * MRTX_ESTORE) | sleep:MS | wait:PATH (block the thread that hit it until
 * PATH exists, polling; the process, its heartbeat included, runs on: a
 * test holds a commit at a step for exactly as long as it needs, without
 * guessing a sleep).  PATH holds no ',' or '@' and is under 256 bytes.
 * @N fires on the N-th hit only; without it the action fires on every hit.
 */
#include "common.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

enum fp_action { FPA_OFF, FPA_EXIT, FPA_KILL, FPA_ERROR, FPA_SLEEP, FPA_WAIT };

#define FP_PATH_MAX 256

/* What a failpoint does: written by mrtx_failpoints_set, read by the
 * thread that hits it, both under fp_mu (a handle's heartbeat and tail
 * threads hit failpoints while a test arms the next ones). */
struct fp_conf {
	enum fp_action action;
	unsigned long nth;    /* 0 = every hit */
	unsigned long arg_ms; /* sleep */
	char path[FP_PATH_MAX]; /* wait */
};

struct fp_state {
	struct fp_conf conf; /* fp_mu */
	atomic_ulong hits;
};

static const char *const fp_names[FP__COUNT] = {
	[FP_COMMIT_AFTER_PREWRITE] = "commit.after_prewrite",
	[FP_COMMIT_AFTER_VALIDATE] = "commit.after_validate",
	[FP_COMMIT_AFTER_POINT] = "commit.after_point",
	[FP_COMMIT_AFTER_SECONDARIES] = "commit.after_secondaries",
	[FP_STORE_AFTER_ROW_WRITE] = "store.after_row_write",
	[FP_RECOVER_AFTER_ABORT] = "recover.after_abort",
	[FP_RECOVER_AFTER_FORWARD] = "recover.after_forward",
	[FP_SPLIT_AFTER_FREEZE] = "split.after_freeze",
	[FP_SPLIT_AFTER_COPY] = "split.after_copy",
	[FP_SPLIT_AFTER_PUBLISH] = "split.after_publish",
	[FP_UPGRADE_AFTER_BATCH] = "upgrade.after_batch",
	[FP_STORE_AFTER_STAMP] = "store.after_stamp",
	[FP_SNAP_AFTER_RESERVE] = "snap.after_reserve",
	[FP_TS_BEFORE_ENTER] = "ts.before_enter",
	[FP_DDL_AFTER_CLOSE] = "ddl.after_close",
	[FP_DDL_AFTER_SWITCH] = "ddl.after_switch",
	[FP_INDEX_AFTER_RETIRE] = "index.after_retire",
	[FP_INDEX_BEFORE_DECLARE] = "index.before_declare",
	[FP_DDL_AFTER_CLEAR] = "ddl.after_clear",
	[FP_SCAN_AFTER_PAGE] = "scan.after_page",
};

static struct fp_state fps[FP__COUNT];
static pthread_mutex_t fp_mu = PTHREAD_MUTEX_INITIALIZER;
atomic_int mrtx__fp_armed;
/* MRTX_FAILPOINTS is read by the first mrtx_open of each process: env_pid
 * is the process that read it, so a forked child (whose copy says its
 * parent read it) reads it again at its own first open. */
static pthread_mutex_t env_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t env_pid;
static int env_rc;
static char env_err[256]; /* why MRTX_FAILPOINTS was refused, for every thread */

const char *mrtx__fp_name(mrtx_fp fp)
{
	return (unsigned)fp < FP__COUNT ? fp_names[fp] : "?";
}

static int fp_lookup(const char *name, size_t len)
{
	for (int i = 0; i < FP__COUNT; i++)
		if (strlen(fp_names[i]) == len && memcmp(fp_names[i], name, len) == 0)
			return i;
	return -1;
}

static int parse_ulong(const char *s, size_t len, unsigned long *out)
{
	unsigned long v = 0;

	if (len == 0 || len > 9)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Parse one "name=action[@N]" item into st; -1 on a syntax error. */
static int parse_item(const char *s, size_t len, int *idx, struct fp_conf *st)
{
	const char *eq = memchr(s, '=', len), *act, *at;
	size_t alen;

	if (!eq || (*idx = fp_lookup(s, (size_t)(eq - s))) < 0)
		return -1;
	act = eq + 1;
	alen = len - (size_t)(act - s);
	at = memchr(act, '@', alen);
	st->nth = 0;
	if (at) {
		if (parse_ulong(at + 1, alen - (size_t)(at + 1 - act), &st->nth) || st->nth == 0)
			return -1;
		alen = (size_t)(at - act);
	}
	if (alen == 4 && !memcmp(act, "exit", 4))
		st->action = FPA_EXIT;
	else if (alen == 4 && !memcmp(act, "kill", 4))
		st->action = FPA_KILL;
	else if (alen == 5 && !memcmp(act, "error", 5))
		st->action = FPA_ERROR;
	else if (alen > 6 && !memcmp(act, "sleep:", 6)) {
		st->action = FPA_SLEEP;
		if (parse_ulong(act + 6, alen - 6, &st->arg_ms))
			return -1;
	} else if (alen > 5 && !memcmp(act, "wait:", 5)) {
		if (alen - 5 >= sizeof(st->path) || memchr(act + 5, '\0', alen - 5))
			return -1;
		st->action = FPA_WAIT;
		memcpy(st->path, act + 5, alen - 5);
		st->path[alen - 5] = '\0';
	} else
		return -1;
	return 0;
}

int mrtx_failpoints_set(const char *spec)
{
	struct fp_conf next[FP__COUNT];
	int armed = 0;

	memset(next, 0, sizeof(next));
	for (const char *p = spec ? spec : ""; *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		struct fp_conf st = { 0 };
		int idx;

		if (len && parse_item(p, len, &idx, &st))
			return mrtx__seterr(MRTX_EINVAL, "failpoints: bad item '%.*s' "
			                    "(want name=exit|kill|error|sleep:MS|wait:PATH[@N])", (int)len, p);
		if (len) {
			next[idx] = st;
			armed = 1;
		}
		p += len + (comma ? 1 : 0);
	}
	pthread_mutex_lock(&fp_mu);
	for (int i = 0; i < FP__COUNT; i++) {
		fps[i].conf = next[i];
		atomic_store(&fps[i].hits, 0);
	}
	atomic_store(&mrtx__fp_armed, armed);
	pthread_mutex_unlock(&fp_mu);
	return 0;
}

long mrtx_failpoint_hits(const char *name)
{
	int i = name ? fp_lookup(name, strlen(name)) : -1;

	return i < 0 ? -1 : (long)atomic_load(&fps[i].hits);
}

int mrtx__fp_fire(mrtx_fp fp)
{
	struct fp_conf c;
	unsigned long n;

	/* a hit counts against the failpoints it finds armed */
	pthread_mutex_lock(&fp_mu);
	n = atomic_fetch_add(&fps[fp].hits, 1) + 1;
	c = fps[fp].conf;
	pthread_mutex_unlock(&fp_mu);
	if (c.action == FPA_OFF || (c.nth && c.nth != n))
		return 0;
	switch (c.action) {
	case FPA_EXIT:
		_exit(99);
	case FPA_KILL:
		raise(SIGKILL);
		_exit(99); /* not reached */
	case FPA_ERROR:
		return mrtx__seterr(MRTX_ESTORE, "failpoint %s: injected store error",
		                    fp_names[fp]);
	case FPA_SLEEP:
		mrtx__sleep_us((uint64_t)c.arg_ms * 1000u);
		return 0;
	case FPA_WAIT:
		while (access(c.path, F_OK) != 0)
			mrtx__sleep_us(2000);
		return 0;
	default:
		return 0;
	}
}

static void fp_env_init(void)
{
	const char *s = getenv("MRTX_FAILPOINTS");

	env_rc = (s && *s) ? mrtx_failpoints_set(s) : 0;
	if (env_rc)
		strlcpy(env_err, mrtx_errmsg(), sizeof(env_err));
}

const char *mrtx__fp_env_error(void)
{
	return env_err;
}

int mrtx__fp_from_env(void)
{
	pid_t me = getpid();
	int rc;

	pthread_mutex_lock(&env_mu);
	if (env_pid != me) {
		env_pid = me;
		env_err[0] = 0;
		fp_env_init();
	}
	rc = env_rc;
	pthread_mutex_unlock(&env_mu);
	return rc;
}
