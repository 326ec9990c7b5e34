/*
 * crashsim.c - `mrtx crashsim DIR`: does a committed transaction survive a
 * power loss?
 *
 *   mrtx crashsim DIR [--durability sync|nometasync|nosync] [--states N]
 *                     [--seed S] [--writers N] [--txns N] [--unbatched]
 *                     [--broken meta|data]
 *                     [--trace FILE] [--only K] [--json]
 *
 * 1. Record (unless --trace): this process re-executes itself with the crash
 *    recorder preloaded (libmrtx_crashrec.so beside the binary, or
 *    $MRTX_CRASHREC_LIB).  That child creates DIR/store (bank accounts in
 *    two tables, one row per writer), syncs it and marks the trace "R"; then
 *    N writer processes each run T transactions: two in three move a
 *    deterministic amount between two accounts and set the writer's row
 *    (seq = k) in the same multi-row transaction; one in three write the
 *    writer's row alone (a one-row commit).  After each MRTX_OK the writer
 *    appends "A W K" to the trace.  Writers 0..3, never the last, are
 *    SIGKILLed inside one multi-row commit each (kill_at), so the trace
 *    also holds abandoned transactions and their recovery by the others.  Every write and sync of data.mdb is in
 *    DIR/trace.
 * 2. Explore (crashsim_state.c): the disk images a power loss at any point
 *    after "R" could leave, each checked in a child process.
 *
 * Because the schedule is a function of (seed, writer, k), the state after
 * any crash is fully determined by each writer's stored seq: the balances
 * must be exactly those of the first seq transactions of every writer.
 *
 * Exit: 0, or 1 when a violation was found in sync or nometasync mode (or
 * on an error); nosync violations are reported (LMDB documents them) and
 * exit 0.  2 on a usage error.
 */
#include "crashsim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos_work.h"
#include "crashrec/crashrec.h"
#include "crashsim_int.h"
#include "tools/cli/util.h"
#include "txn/txn_test.h"

const char *const cs_writer_table = "crashsim_w";
const char *const cs_kind_names[CSV_NKINDS] = {
	"open", "open_modified", "crash", "hang", "recover", "check", "read", "total",
	"partial", "lost_commit",
};

static const char usage_line[] =
	"mrtx crashsim DIR [--durability sync|nometasync|nosync] [--states N] [--seed S] "
	"[--writers N] [--txns N] [--unbatched] [--broken meta|data] [--trace FILE] [--only K] "
	"[--json]";

/* ------------------------------------------------------------ schedule */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int cs_one_row(uint32_t k)
{
	return k % 3 == 0;
}

void cs_transfer(uint64_t seed, int w, uint32_t k, int *from, int *to, int *amt)
{
	uint64_t r = mix64(seed ^ mix64(((uint64_t)(unsigned)w << 32) | k));

	*from = (int)(r % BANK_ACCOUNTS);
	*to = (int)((*from + 1 + (r >> 8) % (BANK_ACCOUNTS - 1)) % BANK_ACCOUNTS);
	*amt = 1 + (int)((r >> 20) % 10);
}

/* ------------------------------------------------------------ workload */

typedef struct step {
	uint64_t seed;
	int w;
	uint32_t k;
} step;

static int put_num(mrtx_txn *txn, const char *table, const char *row, const char *qual, long v)
{
	char val[32];

	snprintf(val, sizeof(val), "%ld", v);
	return mrtx_put(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR(qual), MRTX_CSTR(val));
}

static int get_num(mrtx_txn *txn, const char *table, const char *row, const char *qual,
                   long *v)
{
	mrtx_bytes b;
	char buf[32];
	int rc;

	if ((rc = mrtx_get(txn, table, MRTX_CSTR(row), CHAOS_FAMILY, MRTX_CSTR(qual), &b)))
		return rc;
	if (b.size == 0 || b.size >= sizeof(buf))
		return MRTX_ECORRUPT;
	memcpy(buf, b.data, b.size);
	buf[b.size] = 0;
	*v = strtol(buf, NULL, 10);
	return 0;
}

static int step_fn(mrtx_txn *txn, void *payload)
{
	const step *s = payload;
	char wrow[32];
	int rc;

	snprintf(wrow, sizeof(wrow), "w%d", s->w);
	if (!cs_one_row(s->k)) {
		int from, to, amt;
		long a, b;
		char ra[32], qa[32], rb[32], qb[32];
		const char *ta, *tb;

		cs_transfer(s->seed, s->w, s->k, &from, &to, &amt);
		bank_account(from, &ta, ra, sizeof(ra), qa, sizeof(qa));
		bank_account(to, &tb, rb, sizeof(rb), qb, sizeof(qb));
		if ((rc = get_num(txn, ta, ra, qa, &a)) || (rc = get_num(txn, tb, rb, qb, &b)) ||
		    (rc = put_num(txn, ta, ra, qa, a - amt)) || (rc = put_num(txn, tb, rb, qb, b + amt)))
			return rc;
	}
	if ((rc = put_num(txn, cs_writer_table, wrow, "seq", s->k)))
		return rc;
	return put_num(txn, cs_writer_table, wrow, "tok", s->k);
}

static int mark(crashrec_mark_fn fn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int mark(crashrec_mark_fn fn, const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return fn(buf);
}

/*
 * The multi-row crash tests inside the recorded run: writers 0..3 (never
 * the last writer) each die by SIGKILL inside one multi-row commit, at the
 * first transfer past the middle of their schedule: writer 0 after the
 * commit point (committed: rolled forward by whoever meets it), 1 after
 * the prewrite, 2 after the secondaries, 3 after the validation.  The others meet those locks and settle them (the owner is
 * dead), so the crash states also hold half-done and half-recovered
 * transactions.  0: writer w is not killed.
 */
static const char *const kill_steps[4] = { "commit.after_point", "commit.after_prewrite",
	                                   "commit.after_secondaries", "commit.after_validate" };

static uint32_t kill_at(const cs_cfg *c, int w)
{
	if (w >= 4 || w >= c->writers - 1)
		return 0;
	for (uint32_t k = (uint32_t)c->txns / 2 + 1; k <= (uint32_t)c->txns; k++)
		if (!cs_one_row(k))
			return k;
	return 0;
}

static int writer_main(const cs_cfg *c, const char *store, int w, crashrec_mark_fn markfn)
{
	mrtx_options o = MRTX_OPTIONS_INIT;
	mrtx_db *db;
	int rc;

	o.durability = c->durability;
	if ((rc = mrtx__open_knobs(&db, store, &o, &(mrtx__knobs){ c->unbatched, 0, 0 })))
		return tool_fail("crashsim", "writer open", rc);
	for (uint32_t k = 1; k <= (uint32_t)c->txns; k++) {
		step s = { c->seed, w, k };

		if (k == kill_at(c, w)) {
			char spec[64];

			snprintf(spec, sizeof(spec), "%s=kill@1", kill_steps[w % 4]);
			if ((rc = mrtx_failpoints_set(spec)))
				break;
		}
		if ((rc = mrtx_run(db, step_fn, &s, 1000))) {
			tool_err("crashsim", "writer %d, transaction %" PRIu32 ": %s", w, k,
			         mrtx_errmsg());
			break;
		}
		mark(markfn, "A %d %" PRIu32, w, k);
	}
	mrtx_close(db);
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* The recorded child: set up, sync, mark "R", run the writers. */
static int record_child(const cs_cfg *c, const char *store)
{
	const char *fam[] = { CHAOS_FAMILY };
	crashrec_mark_fn markfn = (crashrec_mark_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "crashrec_mark");
	mrtx_options o = MRTX_OPTIONS_INIT;
	char path[PATH_MAX];
	mrtx_txn *txn;
	mrtx_db *db;
	int rc, fd, failed = 0;

	if (!markfn) {
		tool_err("crashsim", "the crash recorder is not loaded");
		return EXIT_FAIL;
	}
	o.durability = c->durability;
	if ((rc = mrtx_open(&db, store, &o)))
		return tool_fail("crashsim", "create store", rc);
	for (int i = 0; i < 2 && rc == 0; i++)
		rc = mrtx_create_table(db, chaos_bank_tables[i], fam, 1);
	if (rc == 0)
		rc = mrtx_create_table(db, cs_writer_table, fam, 1);
	if (rc == 0 && (rc = mrtx_begin(db, &txn)) == 0) {
		for (int i = 0; i < BANK_ACCOUNTS && rc == 0; i++) {
			char row[32], qual[32];
			const char *table;

			bank_account(i, &table, row, sizeof(row), qual, sizeof(qual));
			rc = put_num(txn, table, row, qual, BANK_INITIAL);
		}
		rc = rc ? (mrtx_abort(txn), rc) : mrtx_commit(txn);
	}
	mrtx_close(db);
	if (rc)
		return tool_fail("crashsim", "set up store", rc);
	/* The setup is the base every crash state starts from: make it durable
	 * whatever the durability mode (the recorder logs this sync too). */
	snprintf(path, sizeof(path), "%s/data.mdb", store);
	if ((fd = open(path, O_RDONLY)) < 0 || fdatasync(fd) != 0) {
		tool_err("crashsim", "sync %s: %s", path, strerror(errno));
		return EXIT_FAIL;
	}
	close(fd);
	mark(markfn, "R %d %d %" PRIu64 " %d", c->writers, c->txns, c->seed, c->unbatched);
	pid_t pids[CS_MAXW];

	for (int w = 0; w < c->writers; w++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(writer_main(c, store, w, markfn));
		pids[w] = pid;
		if (pid < 0) {
			tool_err("crashsim", "fork: %s", strerror(errno));
			failed = 1;
		}
	}
	for (;;) {
		int st, w = 0;
		pid_t p = wait(&st);

		if (p < 0)
			break;
		while (w < c->writers && pids[w] != p)
			w++;
		if (w < c->writers && kill_at(c, w) && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			continue; /* died where it was meant to */
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || (w < c->writers && kill_at(c, w))) {
			tool_err("crashsim", "writer %d ended with status %d%s", w, st,
			         w < c->writers && kill_at(c, w) ? " (it was to be killed in a commit)"
			                                         : "");
			failed = 1;
		}
	}
	return failed ? EXIT_FAIL : EXIT_OK;
}

/* ------------------------------------------------------------- driver */

static int find_recorder(char *out, size_t n)
{
	const char *env = getenv("MRTX_CRASHREC_LIB");
	char self[PATH_MAX];
	ssize_t len;
	char *slash;

	if (env && *env) {
		snprintf(out, n, "%s", env);
	} else {
		if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0)
			return -1;
		self[len] = 0;
		if ((slash = strrchr(self, '/')))
			*slash = 0;
		snprintf(out, n, "%s/libmrtx_crashrec.so", self);
	}
	return access(out, R_OK);
}

static int remove_store(const char *store)
{
	static const char *const files[] = { "data.mdb", "lock.mdb" };
	char p[PATH_MAX];

	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", store, files[i]);
		if (unlink(p) != 0 && errno != ENOENT)
			return -1;
	}
	return rmdir(store) != 0 && errno != ENOENT ? -1 : 0;
}

static int record(const cs_cfg *c, char **argv)
{
	char store[PATH_MAX], lib[PATH_MAX], file[PATH_MAX + 16], self[PATH_MAX];
	pid_t pid;
	int st;
	ssize_t len;

	snprintf(store, sizeof(store), "%s/store", c->dir);
	if (find_recorder(lib, sizeof(lib)) != 0) {
		tool_err("crashsim", "cannot find the crash recorder %s (build the "
		         "mrtx_crashrec target, or set MRTX_CRASHREC_LIB)", lib);
		return EXIT_FAIL;
	}
	if (remove_store(store) != 0 || (unlink(c->trace) != 0 && errno != ENOENT)) {
		tool_err("crashsim", "cannot clear %s: %s", c->dir, strerror(errno));
		return EXIT_FAIL;
	}
	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) < 0) {
		tool_err("crashsim", "readlink /proc/self/exe: %s", strerror(errno));
		return EXIT_FAIL;
	}
	self[len] = 0;
	snprintf(file, sizeof(file), "%s/data.mdb", store);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		const char *asan = getenv("ASAN_OPTIONS");
		char aopt[1024];

		/* a sanitizer build: the recorder, preloaded, comes before the
		 * ASan runtime; its interceptors still reach the recorder */
		snprintf(aopt, sizeof(aopt), "%s%sverify_asan_link_order=0", asan ? asan : "",
		         asan && *asan ? ":" : "");
		setenv("ASAN_OPTIONS", aopt, 1);
		setenv("LD_PRELOAD", lib, 1);
		setenv("MRTX_CRASHREC_FILE", file, 1);
		setenv("MRTX_CRASHREC_TRACE", c->trace, 1);
		setenv("MRTX_CRASHSIM_RECORD", store, 1);
		execv(self, argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		tool_err("crashsim", "recording the workload failed");
		return EXIT_FAIL;
	}
	return 0;
}

static void print_result(const cs_cfg *c, const cs_result *r, const char *mode)
{
	static const char *const broken[] = { "", "meta", "data" };

	if (c->json) {
		printf("{\"durability\":\"%s\",\"unbatched\":%s,\"broken\":%s%s%s,\"seed\":%" PRIu64
		       ",\"states\":%lu,\"images_checked\":%lu,\"exhaustive\":%s,\"trace_records\":%lu,\"writes\":%lu,"
		       "\"syncs\":%lu,\"commits_acknowledged\":%lu,\"crash_points\":%lu,"
		       "\"violations\":{", mode, r->unbatched ? "true" : "false",
		       c->broken ? "\"" : "",
		       c->broken ? broken[c->broken] : "null", c->broken ? "\"" : "", c->seed,
		       r->states, r->images, r->exhaustive ? "true" : "false", r->records, r->writes, r->syncs,
		       r->acks, r->crash_points);
		for (int k = 0, n = 0; k < CSV_NKINDS; k++)
			if (r->violations[k])
				printf("%s\"%s\":%lu", n++ ? "," : "", cs_kind_names[k], r->violations[k]);
		printf("}");
		if (r->first_state >= 0) {
			printf(",\"first\":{\"state\":%ld,\"kind\":\"%s\",\"where\":", r->first_state,
			       cs_kind_names[r->first_kind]);
			json_str(stdout, r->first_state_desc, strlen(r->first_state_desc));
			fputs(",\"detail\":", stdout);
			json_str(stdout, r->first_detail, strlen(r->first_detail));
			putchar('}');
		}
		puts("}");
		return;
	}
	printf("durability %s%s%s%s: trace of %lu records (%lu writes, %lu syncs), %lu commits "
	       "acknowledged, %lu crash points\n", mode, r->unbatched ? ", unbatched" : "",
	       c->broken ? ", broken variant " : "",
	       c->broken ? broken[c->broken] : "", r->records, r->writes, r->syncs, r->acks,
	       r->crash_points);
	printf("states explored: %lu (%s; %lu distinct images, each checked)\n", r->states,
	       r->exhaustive ? "every state" : "seeded random sample", r->images);
	printf("violations: %lu\n", r->nviolations);
	for (int k = 0; k < CSV_NKINDS; k++)
		if (r->violations[k])
			printf("  %-14s %lu\n", cs_kind_names[k], r->violations[k]);
	if (r->first_state >= 0) {
		printf("first violation: state %ld (%s): %s: %s\n", r->first_state,
		       r->first_state_desc, cs_kind_names[r->first_kind], r->first_detail);
		printf("reproduce: mrtx crashsim %s --trace %s --durability %s%s%s --states %lu "
		       "--seed %" PRIu64 " --only %ld\n",
		       c->dir, c->trace, mode, c->broken ? " --broken " : "",
		       c->broken ? broken[c->broken] : "", c->states, c->seed, r->first_state);
	}
}

/* The value s of option name (NULL: not given, *out untouched) in
 * lo..hi; a usage error names what it expected. */
static int num_opt(const char *cmd, const char *usage, const char *name, const char *s,
                   size_t lo, size_t hi, size_t *out)
{
	char *end;
	unsigned long long v;

	if (!s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || errno || *end || v < lo || v > hi) {
		if (hi == SIZE_MAX || hi == (size_t)LONG_MAX)
			tool_usage_err(cmd, usage, "%s '%s': expected a number, %zu or more", name, s,
			               lo);
		else
			tool_usage_err(cmd, usage, "%s '%s': expected %zu to %zu", name, s, lo, hi);
		return -1;
	}
	*out = (size_t)v;
	return 0;
}

int cmd_crashsim(int argc, char **argv)
{
	const char *dur = "sync", *states = NULL, *seed = NULL, *writers = NULL, *txns = NULL,
		   *broken = NULL, *trace = NULL, *only = NULL;
	int json = 0, unbatched = 0, npos, help, rc;
	const tool_opt opts[] = {
		{ "durability", 1, &dur, NULL }, { "states", 1, &states, NULL },
		{ "seed", 1, &seed, NULL }, { "writers", 1, &writers, NULL },
		{ "txns", 1, &txns, NULL }, { "broken", 1, &broken, NULL },
		{ "trace", 1, &trace, NULL }, { "only", 1, &only, NULL },
		{ "json", 0, NULL, &json }, { "unbatched", 0, NULL, &unbatched },
		{ NULL, 0, NULL, NULL }
	};
	char **argcopy, **pos;
	size_t v;
	cs_cfg c;
	cs_result r;
	const char *rec;

	/* args_parse compacts argv in place; the recorder re-runs the original */
	if (!(argcopy = calloc((size_t)argc + 2, sizeof(*argcopy))))
		return EXIT_FAIL;
	argcopy[0] = "mrtx";
	memcpy(argcopy + 1, argv, (size_t)argc * sizeof(*argv));
	pos = argv + 1;
	if ((rc = args_parse(argv[0], usage_line, argc, argv, opts, pos, &npos, &help)))
		goto out;
	if (help) {
		printf("usage: %s\n\n"
		       "Records a workload (writer processes making multi-row bank transfers\n"
		       "and one-row writes; --writers, default 3, --txns each, default 100;\n"
		       "writers 0..3 but never the last are SIGKILLed inside one multi-row\n"
		       "commit each -- after the commit point, the prewrite, the secondaries,\n"
		       "the validation -- and the others settle what they left)\n"
		       "with every write and sync of the store's data.mdb logged to DIR/trace,\n"
		       "then builds the disk images a power loss could leave: everything up\n"
		       "to the last completed sync, plus any subset of the later writes, at\n"
		       "page granularity, any version of a page written twice, and torn pages\n"
		       "(some 512-byte sectors new).  All states when there are at most\n"
		       "--states (default 1000), else a random sample (--seed).  Each image is\n"
		       "opened (the open must not change it), recovered, checked with\n"
		       "check --strict, and the bank verified: total exact, balances those of\n"
		       "whole transactions, and every commit acknowledged before the crash\n"
		       "present (nometasync: before the last sync).  --unbatched: the writers\n"
		       "write every row with its own LMDB transaction.\n"
		       "--broken meta|data simulates a library that wrote the commit point's\n"
		       "meta page without its sync, or skipped the data sync: it must fail.\n"
		       "--trace FILE re-explores a recorded trace; --only K checks state K\n"
		       "alone and keeps its image in DIR/state-K.\n"
		       "Violation kinds: open, open_modified, crash (the checker died of a\n"
		       "signal), hang (still running after 10 s), recover, check, read, total,\n"
		       "partial, lost_commit.\n"
		       "Exit 1 on any violation in sync or nometasync mode; nosync violations\n"
		       "(LMDB's MDB_NOSYNC may lose commits and damage the file) are reported\n"
		       "with exit 0.\n"
		       "Defaults: --durability sync, --states 1000, --seed 1, --writers 3,\n"
		       "--txns 100, a fresh trace (no --trace), every state (no --only),\n"
		       "flags off.\n", usage_line);
		goto out;
	}
	rc = EXIT_USAGE;
	if (npos != 1) {
		tool_usage_err(argv[0], usage_line, "expected DIR");
		goto out;
	}
	memset(&c, 0, sizeof(c));
	c.dir = pos[0];
	c.states = 1000;
	c.seed = 1;
	c.writers = 3;
	c.txns = 100;
	c.only = -1;
	c.json = json;
	c.unbatched = unbatched;
	if (strcmp(dur, "sync") == 0)
		c.durability = MRTX_SYNC;
	else if (strcmp(dur, "nometasync") == 0)
		c.durability = MRTX_NOMETASYNC;
	else if (strcmp(dur, "nosync") == 0)
		c.durability = MRTX_NOSYNC;
	else {
		tool_usage_err(argv[0], usage_line, "--durability: expected sync, nometasync or nosync");
		goto out;
	}
	if (broken && strcmp(broken, "meta") == 0)
		c.broken = CS_BROKEN_META;
	else if (broken && strcmp(broken, "data") == 0)
		c.broken = CS_BROKEN_DATA;
	else if (broken) {
		tool_usage_err(argv[0], usage_line, "--broken: expected meta or data");
		goto out;
	}
	if (num_opt(argv[0], usage_line, "--states", states, 1, SIZE_MAX, &v))
		goto out;
	c.states = states ? v : c.states;
	if (num_opt(argv[0], usage_line, "--seed", seed, 0, SIZE_MAX, &v))
		goto out;
	c.seed = seed ? v : c.seed;
	if (num_opt(argv[0], usage_line, "--writers", writers, 1, 64, &v))
		goto out;
	c.writers = writers ? (int)v : c.writers;
	if (num_opt(argv[0], usage_line, "--txns", txns, 1, 100000, &v))
		goto out;
	c.txns = txns ? (int)v : c.txns;
	if (num_opt(argv[0], usage_line, "--only", only, 0, LONG_MAX, &v))
		goto out;
	c.only = only ? (long)v : c.only;
	if ((rec = getenv("MRTX_CRASHSIM_RECORD")) && *rec) {
		rc = record_child(&c, rec);
		goto out;
	}
	rc = EXIT_FAIL;
	if (mkdir(c.dir, 0700) != 0 && errno != EEXIST) {
		tool_err(argv[0], "cannot create %s: %s", c.dir, strerror(errno));
		goto out;
	}
	if (trace) {
		c.trace = trace;
	} else {
		snprintf(c.tracebuf, sizeof(c.tracebuf), "%s/trace", c.dir);
		c.trace = c.tracebuf;
		if ((rc = record(&c, argcopy)))
			goto out;
	}
	if ((rc = cs_explore(&c, &r)))
		goto out;
	print_result(&c, &r, dur);
	rc = r.nviolations && c.durability != MRTX_NOSYNC ? EXIT_FAIL : EXIT_OK;
out:
	free(argcopy);
	return rc;
}
