/*
 * chaos.c - `mrtx chaos STORE`: the crash-safety suite as a command.
 *
 *   mrtx chaos STORE [--workload bank|append] [--seconds N | --kills N]
 *                    [--writers N] [--unbatched] [--two-phase] [--seed N] [--json]
 *
 * The driver (this process) creates STORE (which must not exist yet, or be
 * an empty directory) and its tables, closes it, and forks the workers:
 * writers (and, for bank, two auditors), each opening the store itself and
 * logging its history to STORE.chaos/.  Until the time is up the killer
 * SIGKILLs a random writer every 5-50 ms (RADOS: 50-500 ms, once it has
 * opened the store) -- or, with --kills N, until N processes have died,
 * a random writer after 1 to 8 of its transactions, so that what a run
 * tests does not depend on the machine's speed -- and restarts it; two restarts in
 * three arm one failpoint of DESIGN §7, in turn, as `name=exit@N` or
 * `name=kill@N` with a random N, so every crash window is hit
 * (store.after_row_write only with --unbatched, where each row is its own
 * store write).  Then the workers are stopped (SIGTERM), and chaos_postrun
 * recovers, checks and judges the histories.
 *
 * Kill attribution (per process incarnation; honest and simple):
 *   exit status 99 with a failpoint armed as `exit`      -> that failpoint
 *   SIGKILL sent by the killer                            -> "sigkill"
 *   SIGKILL not sent by the killer, failpoint armed `kill` -> that failpoint
 * A process that raised its own SIGKILL just before the killer picked it
 * counts as "sigkill" (the race is rare and only moves counts between
 * causes).  Every other death is an anomaly.
 *
 * Exit: 0 when no anomaly was found, 1 otherwise, 2 on a usage error.
 */
#include "chaos.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "chaos_check.h"

#define NFP 7
static const char *const fp_names[NFP] = {
	"commit.after_prewrite", "commit.after_validate", "commit.after_point",
	"commit.after_secondaries", "store.after_row_write", "recover.after_abort",
	"recover.after_forward",
};
#define FP_ROW_WRITE 4

typedef struct slot {
	pid_t pid;
	int role;
	uint32_t inc;
	int fp;          /* armed failpoint, -1 */
	int fp_kill;     /* its action is kill (else exit) */
	int killed;      /* the killer sent SIGKILL */
} slot;

typedef struct driver {
	chaos_cfg *cfg;
	chaos_result *r;
	slot *slots;
	int nslots;
	uint32_t next_inc;
	unsigned rot;
	uint64_t rng;
	int stopping;
	unsigned long sigkills, fp_kills[NFP][2]; /* [exit, kill] */
	unsigned long incarnations;
	uint64_t elapsed_ms; /* the killer's run */
	int victim;          /* --kills: the writer to kill next, */
	uint32_t need;       /* once its slot's progress reaches this */
	int stalled;         /* --kills: no progress for STALL_MS: ended */
} driver;

/* SIGTERM or SIGINT to the driver: the run ends now, and is then stopped,
 * recovered and checked as at its end (workers inherit the handler until
 * they set their own, so a terminal's SIGINT to the group leaves them to
 * the driver's SIGTERM). */
static volatile sig_atomic_t end_asked;

static void on_end(int sig)
{
	(void)sig;
	end_asked = 1;
}

/* --kills: a run with neither a transaction nor a kill for this long has
 * stopped (a store that stays unreachable): it ends, as an anomaly. */
#define STALL_MS 300000u

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint32_t drnd(driver *d, uint32_t n)
{
	d->rng ^= d->rng << 13;
	d->rng ^= d->rng >> 7;
	d->rng ^= d->rng << 17;
	return n ? (uint32_t)(d->rng % n) : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: mrtx chaos STORE [--workload bank|append] [--seconds N | --kills N] "
	           "[--writers N] [--unbatched] [--two-phase] [--seed N] [--json]\n"
	           "  Runs writers against a fresh STORE, SIGKILLs them at random and at every\n"
	           "  failpoint, then recovers and checks: bank sums, or serializability of the\n"
	           "  list-append history.  Histories are kept in STORE.chaos/.\n"
	           "  --kills N runs until N processes have been killed instead of for a time,\n"
	           "  each writer killed after 1 to 8 of its transactions (a slower machine\n"
	           "  runs longer); with --seconds too, the run ends at whichever comes first,\n"
	           "  and without, after 5 minutes with no transaction (an anomaly).\n"
	           "  SIGTERM or SIGINT ends a run early; it is then recovered and checked.\n"
	           "  LMDB commits several rows in one write (one phase), RADOS the rows of\n"
	           "  one tablet, unless --two-phase (the prewrite/commit-point protocol) or\n"
	           "  --unbatched (each row its own write, which implies two phases).\n"
	           "  Defaults: --workload bank, --seconds 30, --writers 4, --seed from the\n"
	           "  clock and pid (printed, so a run can be repeated), flags off.\n"
	           "  Exit 0: no anomaly; 1: anomalies (listed); 2: usage.\n");
}

/* ------------------------------------------------------------ processes */

/* Choose this incarnation's failpoint: two in three get the next one in turn. */
static void choose_arm(driver *d, slot *s, char *spec, size_t n)
{
	unsigned nfp = d->cfg->unbatched ? NFP : NFP - 1, pair, idx;
	unsigned long nth;

	s->fp = -1;
	s->fp_kill = 0;
	spec[0] = 0;
	if (s->role != ROLE_WRITER || drnd(d, 3) == 0)
		return;
	pair = d->rot++ % (nfp * 2);
	idx = pair / 2;
	if (!d->cfg->unbatched && idx >= FP_ROW_WRITE)
		idx++; /* store.after_row_write never fires on a batched store */
	s->fp = (int)idx;
	s->fp_kill = (int)(pair & 1);
	if (idx == FP_ROW_WRITE)
		nth = 1 + drnd(d, 24);
	else if (idx >= 5)
		nth = 1 + drnd(d, 2); /* recovery is rarer: fire early */
	else
		nth = 1 + drnd(d, 6);
	snprintf(spec, n, "%s=%s@%lu", fp_names[idx], s->fp_kill ? "kill" : "exit", nth);
}

static int spawn(driver *d, int i)
{
	slot *s = &d->slots[i];
	sigset_t term, old;
	char spec[96];
	pid_t pid;

	choose_arm(d, s, spec, sizeof(spec));
	s->inc = d->next_inc++;
	s->killed = 0;
	/* SIGTERM stays blocked until the child has its handler (chaos_child) */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	fflush(NULL);
	if ((pid = fork()) < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		chaos_anomaly(d->r, "fork: %s", strerror(errno));
		return -1;
	}
	d->cfg->slot = i; /* the child's copy says which slot it is */
	if (pid == 0)
		_exit(chaos_child(d->cfg, s->role, s->inc, spec));
	sigprocmask(SIG_SETMASK, &old, NULL);
	s->pid = pid;
	d->incarnations++;
	return 0;
}

static const char *role_name(int role)
{
	return role == ROLE_AUDITOR ? "auditor" : "writer";
}

/* Attribute one child's death; returns its slot or -1. */
static int reaped(driver *d, pid_t pid, int st)
{
	int i;
	slot *s;

	for (i = 0; i < d->nslots && d->slots[i].pid != pid; i++)
		;
	if (i == d->nslots)
		return -1;
	s = &d->slots[i];
	s->pid = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 99 && s->fp >= 0 && !s->fp_kill)
		d->fp_kills[s->fp][0]++;
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && s->killed)
		d->sigkills++;
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && s->fp >= 0 && s->fp_kill)
		d->fp_kills[s->fp][1]++;
	else if (!(d->stopping && ((WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
	                           (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))))
		chaos_anomaly(d->r, "%s process %" PRIu32 " (pid %d) ended unexpectedly: %s %d",
		              role_name(s->role), s->inc, (int)pid,
		              WIFEXITED(st) ? "exit status" : "signal",
		              WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return i;
}

/* Milliseconds to the next kill: 5-50 on LMDB; on RADOS, where a writer
 * spends tens of ms connecting and each commit takes a few round trips of
 * about a millisecond, 50-500 (counted once the writer has opened). */
static int is_rados(const driver *d)
{
	return strncmp(d->cfg->store, "rados://", 8) == 0;
}

static uint64_t kill_gap(driver *d)
{
	return is_rados(d) ? 50 + drnd(d, 451) : 5 + drnd(d, 46);
}

static unsigned long total_kills(const driver *d);

/* Is the run over?  At its deadline when it has one (--seconds, or no
 * --kills), at its number of kills when it has that. */
static int run_over(const driver *d, uint64_t now, uint64_t deadline)
{
	const chaos_cfg *c = d->cfg;

	if (end_asked || d->stalled || (c->kills && total_kills(d) >= (unsigned long)c->kills))
		return 1;
	return (!c->kills || c->seconds_given) && now >= deadline;
}

/* Has slot i's writer opened the store in its current incarnation?  Only
 * asked on RADOS, where a new connection takes from a tenth of a second to
 * seconds: chaos is about commits, not connects. */
static int opened(const driver *d, int i)
{
	return !is_rados(d) ||
	       __atomic_load_n(&d->cfg->ready[i], __ATOMIC_ACQUIRE) == d->slots[i].inc;
}

static uint32_t progress(const driver *d, int i)
{
	return __atomic_load_n(&d->cfg->progress[i], __ATOMIC_ACQUIRE);
}

/* --kills: the next victim, and the progress of its slot at which it dies:
 * after 1 to 8 more of its transactions, however long they take. */
static void next_victim(driver *d)
{
	d->victim = (int)drnd(d, (uint32_t)d->cfg->writers); /* writers come first */
	d->need = progress(d, d->victim) + 1 + drnd(d, 8);
}

/* SIGKILL slot i's process if it runs, is not being killed and has opened
 * the store: 1 when sent. */
static int kill_slot(driver *d, int i)
{
	if (d->slots[i].pid > 0 && !d->slots[i].killed && opened(d, i) &&
	    kill(d->slots[i].pid, SIGKILL) == 0)
		return d->slots[i].killed = 1;
	return 0;
}

/* The sum of every slot's progress and the kills: it moves while the run
 * does anything. */
static uint64_t activity(const driver *d)
{
	uint64_t a = total_kills(d);

	for (int i = 0; i < d->nslots; i++)
		a += progress(d, i);
	return a;
}

/*
 * Until the run is over: reap and restart the workers, and kill one.  By
 * time (--seconds alone): a random writer every kill_gap ms.  By count
 * (--kills): a random writer after 1 to 8 of its transactions, so a run's
 * content -- transactions per kill -- does not depend on the machine's
 * speed; a slower machine runs longer.
 */
static void run_killer(driver *d)
{
	uint64_t now = mono_ms(), deadline = now + (uint64_t)d->cfg->seconds * 1000u;
	uint64_t next_kill = now + kill_gap(d), last_act = 0, act_at = now;

	if (d->cfg->kills)
		next_victim(d);
	while (!run_over(d, now = mono_ms(), deadline)) {
		struct timespec nap = { 0, 1000000 };
		pid_t pid;
		int st;

		while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
			int i = reaped(d, pid, st);

			if (i >= 0)
				spawn(d, i);
		}
		if (d->cfg->kills) {
			uint64_t a = activity(d);

			if (progress(d, d->victim) >= d->need && kill_slot(d, d->victim))
				next_victim(d);
			if (a != last_act) {
				last_act = a;
				act_at = now;
			} else if (now - act_at > STALL_MS) {
				chaos_anomaly(d->r, "no transaction and no kill for %u s: the run "
				              "stopped (the store unreachable?)", STALL_MS / 1000);
				d->stalled = 1;
			}
		} else if (now >= next_kill) {
			kill_slot(d, (int)drnd(d, (uint32_t)d->cfg->writers));
			next_kill = now + kill_gap(d);
		}
		nanosleep(&nap, NULL);
	}
}

static void stop_all(driver *d)
{
	uint64_t until;
	int live = 0;

	d->stopping = 1;
	for (int i = 0; i < d->nslots; i++)
		if (d->slots[i].pid > 0 && !d->slots[i].killed)
			kill(d->slots[i].pid, SIGTERM);
	until = mono_ms() + 15000;
	for (;;) {
		pid_t pid;
		int st;

		live = 0;
		for (int i = 0; i < d->nslots; i++)
			live += d->slots[i].pid > 0;
		if (!live)
			break;
		if (mono_ms() > until) {
			for (int i = 0; i < d->nslots; i++)
				if (d->slots[i].pid > 0) {
					chaos_anomaly(d->r, "process %" PRIu32 " did not stop within 15 s",
					              d->slots[i].inc);
					d->slots[i].killed = 1;
					kill(d->slots[i].pid, SIGKILL);
				}
			until = mono_ms() + 60000;
		}
		if ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
			reaped(d, pid, st);
		} else if (pid < 0 && errno == ECHILD) {
			break;
		} else {
			struct timespec nap = { 0, 2000000 };

			nanosleep(&nap, NULL);
		}
	}
}

/* ------------------------------------------------------------ output */

static unsigned long total_kills(const driver *d)
{
	unsigned long t = d->sigkills;

	for (int i = 0; i < NFP; i++)
		t += d->fp_kills[i][0] + d->fp_kills[i][1];
	return t;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Do the writers commit with the two-phase protocol?  (RADOS and
 * unbatched LMDB always; batched LMDB only when asked: DESIGN §5.3.) */
static int two_phase(const chaos_cfg *c)
{
	const char *v = getenv("MRTX_TWO_PHASE"); /* (honoured by mrtx_open too) */

	return c->two_phase || c->unbatched || strncmp(c->store, "rados://", 8) == 0 ||
	       (v && (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
	              !strcasecmp(v, "on")));
}

static void print_json(const driver *d, const chaos_result *r, int ok)
{
	const chaos_cfg *c = d->cfg;

	printf("{\"workload\": \"%s\", ", c->workload == CHAOS_BANK ? "bank" : "append");
	if (c->kills && !c->seconds_given)
		printf("\"seconds\": null, ");
	else
		printf("\"seconds\": %d, ", c->seconds);
	printf("\"kills_wanted\": %d, \"elapsed_ms\": %" PRIu64 ", \"ended_by_signal\": %s, "
	       "\"writers\": %d, \"auditors\": %d, \"unbatched\": %s, \"two_phase\": %s, ",
	       c->kills, d->elapsed_ms, end_asked ? "true" : "false", c->writers, c->auditors,
	       c->unbatched ? "true" : "false", two_phase(c) ? "true" : "false");
	printf("\"committed\": %lu, \"failed\": %lu, \"unknown\": %lu, \"processes\": %lu, ",
	       r->committed, r->failed, r->unknown, d->incarnations);
	printf("\"kills_total\": %lu, \"kills\": {\"sigkill\": %lu", total_kills(d), d->sigkills);
	for (int i = 0; i < NFP; i++)
		printf(", \"%s\": %lu", fp_names[i], d->fp_kills[i][0] + d->fp_kills[i][1]);
	printf("}, \"failpoint_actions\": {");
	for (int i = 0; i < NFP; i++)
		printf("%s\"%s\": {\"exit\": %lu, \"kill\": %lu}", i ? ", " : "", fp_names[i],
		       d->fp_kills[i][0], d->fp_kills[i][1]);
	printf("}, ");
	if (c->workload == CHAOS_BANK)
		printf("\"audits\": %lu, \"wrong_views_before_commit\": %lu, \"final_total\": %ld, "
		       "\"expected_total\": %d, ", r->audits, r->wrong_views, r->final_total,
		       BANK_TOTAL);
	else if (r->have_hc)
		printf("\"history\": {\"ok\": %zu, \"failed\": %zu, \"unknown\": %zu, "
		       "\"unknown_committed\": %zu, \"ww\": %zu, \"wr\": %zu, \"rw\": %zu, "
		       "\"serializable_anomalies\": %zu, \"si_anomalies\": %zu, "
		       "\"readers_held_to\": \"%s\"}, ",
		       r->hc.ok, r->hc.failed, r->hc.unknown, r->hc.unknown_visible, r->hc.edges[0],
		       r->hc.edges[1], r->hc.edges[2], r->readers_si ? r->si_total : r->hc.total,
		       r->readers_si ? r->hc.total : r->si_total,
		       r->readers_si ? "snapshot isolation" : "serializability");
	printf("\"recover\": {\"locks_seen\": %lu, \"forwarded\": %lu, \"rolled_back\": %lu, "
	       "\"skipped_live\": %lu, \"errors\": %lu}, \"locks_left\": %lu, ",
	       r->recover.locks_seen, r->recover.forwarded, r->recover.rolled_back,
	       r->recover.skipped_live, r->recover.errors, r->locks_left);
	printf("\"check\": \"%s\", \"anomaly_count\": %zu, \"anomalies\": [", r->check,
	       r->nanomalies);
	for (size_t i = 0; i < r->nshown; i++) {
		if (i)
			printf(", ");
		json_str(r->anomalies[i]);
	}
	printf("], \"ok\": %s}\n", ok ? "true" : "false");
}

static void print_human(const driver *d, const chaos_result *r, int ok)
{
	const chaos_cfg *c = d->cfg;

	printf("mrtx chaos: %s workload, %.1f s%s, %d writers", c->workload == CHAOS_BANK ? "bank" :
	       "append", (double)d->elapsed_ms / 1000.0, end_asked ? " (ended by a signal)" : "",
	       c->writers);
	if (c->auditors)
		printf(" + %d auditors", c->auditors);
	printf(", %s, %s, %lu processes started\n", c->unbatched ? "unbatched" : "batched",
	       two_phase(c) ? "two-phase" : "one-phase", d->incarnations);
	printf("  transactions: %lu committed, %lu failed (conflict), %lu unknown (killed or "
	       "EUNKNOWN)\n", r->committed, r->failed, r->unknown);
	if (c->workload == CHAOS_BANK)
		printf("  audits: %lu committed; final total %ld (expected %d), smallest balance "
		       "%ld\n  audits that saw a wrong total or a torn mirror before commit "
		       "(%s): %lu\n", r->audits, r->final_total, BANK_TOTAL,
		       r->final_min, r->snapshots ? "snapshot reads: must be 0" :
		       "their commit must fail", r->wrong_views);
	else if (r->have_hc)
		printf("  history: %zu ok, %zu failed, %zu unknown (%zu of them committed); "
		       "edges ww %zu, wr %zu, rw %zu\n  anomalies held to serializability: %zu%s; "
		       "to snapshot readers and serializable writers: %zu%s\n", r->hc.ok,
		       r->hc.failed, r->hc.unknown, r->hc.unknown_visible, r->hc.edges[0],
		       r->hc.edges[1], r->hc.edges[2], r->readers_si ? r->si_total : r->hc.total,
		       r->readers_si ? " (read-only anomalies allowed here)" : "",
		       r->readers_si ? r->hc.total : r->si_total,
		       r->readers_si ? " (the promise)" : "");
	printf("  kills: %lu\n    %-26s %lu\n", total_kills(d), "sigkill", d->sigkills);
	for (int i = 0; i < NFP; i++) {
		if (i == FP_ROW_WRITE && !c->unbatched)
			printf("    %-26s n/a (batched store)\n", fp_names[i]);
		else
			printf("    %-26s %lu (exit %lu, kill %lu)\n", fp_names[i],
			       d->fp_kills[i][0] + d->fp_kills[i][1], d->fp_kills[i][0],
			       d->fp_kills[i][1]);
	}
	printf("  recovery: %lu locks seen, %lu txns rolled forward, %lu rolled back, %lu live, "
	       "%lu errors; non-STABLE locks left: %lu\n", r->recover.locks_seen,
	       r->recover.forwarded, r->recover.rolled_back, r->recover.skipped_live,
	       r->recover.errors, r->locks_left);
	if (strcmp(r->check, "unavailable") == 0)
		printf("  mrtx check: not available in this build (exit 2); skipped\n");
	else
		printf("  mrtx check: %s\n", r->check);
	printf("  anomalies: %zu\n", r->nanomalies);
	for (size_t i = 0; i < r->nshown; i++)
		printf("    %s\n", r->anomalies[i]);
	if (r->nanomalies > r->nshown)
		printf("    ... and %zu more\n", r->nanomalies - r->nshown);
	printf("mrtx chaos: %s (histories in %s)\n", ok ? "ok" : "FAILED", c->logdir);
}

/* ------------------------------------------------------------ setup */

static int fresh_dirs(chaos_cfg *cfg)
{
	struct stat sb;
	DIR *d;
	struct dirent *de;

	if (stat(cfg->store, &sb) == 0) {
		int empty = 1;

		if (!S_ISDIR(sb.st_mode) || !(d = opendir(cfg->store))) {
			fprintf(stderr, "mrtx: chaos: %s exists and is not a directory\n", cfg->store);
			return 2;
		}
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				empty = 0;
		closedir(d);
		if (!empty) {
			fprintf(stderr, "mrtx: chaos: %s is not empty; chaos needs a fresh store\n",
			        cfg->store);
			return 2;
		}
	}
	/* STORE.chaos beside the store, not inside it ("dir/" -> "dir.chaos");
	 * a RADOS store's in $TMPDIR as mrtx-chaos-POOL-NAME */
	if (strncmp(cfg->store, "rados://", 8) == 0) {
		const char *tmp = getenv("TMPDIR");
		size_t n;

		snprintf(cfg->logdir, sizeof(cfg->logdir), "%s/mrtx-chaos-%s",
		         tmp && *tmp ? tmp : "/tmp", cfg->store + 8);
		n = strlen(cfg->logdir) - strlen(cfg->store + 8);
		cfg->logdir[n + strcspn(cfg->logdir + n, "?")] = 0;
		for (; cfg->logdir[n]; n++)
			if (cfg->logdir[n] == '/')
				cfg->logdir[n] = '-';
	} else {
		snprintf(cfg->logdir, sizeof(cfg->logdir), "%s", cfg->store);
		for (size_t n = strlen(cfg->logdir); n > 1 && cfg->logdir[n - 1] == '/'; n--)
			cfg->logdir[n - 1] = 0;
		strlcat(cfg->logdir, ".chaos", sizeof(cfg->logdir));
	}
	if (mkdir(cfg->logdir, 0755) && errno != EEXIST) {
		fprintf(stderr, "mrtx: chaos: mkdir %s: %s\n", cfg->logdir, strerror(errno));
		return 1;
	}
	if ((d = opendir(cfg->logdir))) {
		/* histories of an earlier run would mix with this one's */
		while ((de = readdir(d))) {
			char p[4400];

			if (strncmp(de->d_name, "h-", 2) && strcmp(de->d_name, "check.out"))
				continue;
			snprintf(p, sizeof(p), "%s/%s", cfg->logdir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	return 0;
}

/*
 * Create the store in a child process: the driver then never loads a
 * store client before forking the workers.  (librados keeps per-process
 * state, its client identity among it, that forked children would share;
 * see mrtx_open.)
 */
static int setup_in_child(chaos_cfg *cfg)
{
	pid_t pid;
	int st;

	fflush(NULL);
	if ((pid = fork()) < 0) {
		fprintf(stderr, "mrtx: chaos: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		if (chaos_setup_store(cfg)) {
			fprintf(stderr, "mrtx: chaos: creating %s failed: %s\n", cfg->store,
			        mrtx_errmsg());
			_exit(1);
		}
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* A usage error: what was wrong, on stderr; -1. */
static int bad_arg(const char *what, const char *arg, const char *want)
{
	fprintf(stderr, "mrtx: chaos: %s%s%s%s: %s (mrtx chaos --help lists the options)\n",
	        what, arg ? " '" : "", arg ? arg : "", arg ? "'" : "", want);
	return -1;
}

static int parse_args(int argc, char **argv, chaos_cfg *cfg)
{
	int seed = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--unbatched")) {
			cfg->unbatched = 1;
		} else if (!strcmp(a, "--two-phase")) {
			cfg->two_phase = 1;
		} else if (!strcmp(a, "--json")) {
			cfg->json = 1;
		} else if (!strcmp(a, "--workload") && v) {
			if (!strcmp(v, "bank"))
				cfg->workload = CHAOS_BANK;
			else if (!strcmp(v, "append"))
				cfg->workload = CHAOS_APPEND;
			else
				return bad_arg("--workload", v, "expected bank or append");
			i++;
		} else if (!strcmp(a, "--seconds") && v) {
			if (parse_int(v, 1, 7 * 24 * 3600, &cfg->seconds))
				return bad_arg("--seconds", v, "expected 1 to 604800 (a week)");
			cfg->seconds_given = 1;
			i++;
		} else if (!strcmp(a, "--kills") && v) {
			if (parse_int(v, 1, 100000000, &cfg->kills))
				return bad_arg("--kills", v, "expected 1 to 100000000");
			i++;
		} else if (!strcmp(a, "--writers") && v) {
			if (parse_int(v, 1, 64, &cfg->writers))
				return bad_arg("--writers", v, "expected 1 to 64");
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			if (parse_int(v, 0, 0x7fffffff, &seed))
				return bad_arg("--seed", v, "expected 0 to 2147483647");
			cfg->seed = (unsigned)seed;
			i++;
		} else if (a[0] != '-' && !cfg->store) {
			cfg->store = a;
		} else if (a[0] != '-') {
			return bad_arg("argument", a, "one STORE only");
		} else if (!strcmp(a, "--workload") || !strcmp(a, "--seconds") ||
		           !strcmp(a, "--kills") || !strcmp(a, "--writers") ||
		           !strcmp(a, "--seed")) {
			return bad_arg(a, NULL, "needs a value");
		} else {
			return bad_arg("option", a, "not an option of chaos");
		}
	}
	return cfg->store ? 0 : bad_arg("no STORE", NULL, "give a missing or empty directory");
}

int cmd_chaos(int argc, char **argv)
{
	chaos_cfg cfg;
	chaos_result r;
	driver d;
	int rc, ok;

	memset(&cfg, 0, sizeof(cfg));
	memset(&r, 0, sizeof(r));
	memset(&d, 0, sizeof(d));
	cfg.workload = CHAOS_BANK;
	cfg.seconds = 30;
	cfg.writers = 4;
	cfg.seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	if (parse_args(argc, argv, &cfg))
		return 2;
	/* reads from one snapshot: LMDB (txn/snapread.c's views), RADOS (a
	 * live snapshot at a timestamp: a store chaos makes keeps versions);
	 * on RADOS read-only transactions are held to snapshot isolation */
	r.snapshots = 1;
	r.readers_si = strncmp(cfg.store, "rados://", 8) == 0;
	cfg.auditors = cfg.workload == CHAOS_BANK ? 2 : 0;
	if ((rc = fresh_dirs(&cfg)))
		return rc;
	cfg.shared_counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	                          -1, 0);
	if (cfg.shared_counter == MAP_FAILED) {
		fprintf(stderr, "mrtx: chaos: mmap: %s\n", strerror(errno));
		return 1;
	}
	cfg.ready = (volatile uint32_t *)(cfg.shared_counter + 1);
	cfg.progress = cfg.ready + 128; /* (at most 64 writers and 2 auditors) */
	if ((rc = setup_in_child(&cfg)))
		return rc;
	if (!cfg.json && cfg.kills && !cfg.seconds_given)
		printf("mrtx chaos: running %s until %d kills (seed %u)...\n",
		       cfg.workload == CHAOS_BANK ? "bank" : "append", cfg.kills, cfg.seed);
	else if (!cfg.json)
		printf("mrtx chaos: running %s for %d s%s (seed %u)...\n",
		       cfg.workload == CHAOS_BANK ? "bank" : "append", cfg.seconds,
		       cfg.kills ? " at most" : "", cfg.seed);
	d.cfg = &cfg;
	d.r = &r;
	d.rng = ((uint64_t)cfg.seed << 1) | 1;
	d.next_inc = 1;
	d.nslots = cfg.writers + cfg.auditors;
	if (!(d.slots = calloc((size_t)d.nslots, sizeof(*d.slots)))) {
		fprintf(stderr, "mrtx: chaos: out of memory\n");
		return 1;
	}
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_end;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
	}
	for (int i = 0; i < d.nslots; i++) {
		d.slots[i].role = i < cfg.writers ? ROLE_WRITER : ROLE_AUDITOR;
		spawn(&d, i);
	}
	d.elapsed_ms = mono_ms();
	run_killer(&d);
	d.elapsed_ms = mono_ms() - d.elapsed_ms;
	stop_all(&d);
	rc = chaos_postrun(&cfg, &r);
	if (rc == 0 && r.committed == 0)
		chaos_anomaly(&r, "no transaction committed: the run tested nothing");
	ok = rc == 0 && r.nanomalies == 0;
	if (cfg.json)
		print_json(&d, &r, ok);
	else
		print_human(&d, &r, ok);
	chaos_result_free(&r);
	free(d.slots);
	munmap((void *)cfg.shared_counter, 4096);
	return ok ? 0 : 1;
}
