/*
 * main.c - `mrtx-sim`: the real protocol code, run against a simulated
 * RADOS cluster by a deterministic scheduler (sched.h), on the bank
 * workload (bank.h).  Every run is named by its seed and replays from it.
 *
 *   mrtx-sim [--seed N | --seeds A-B] [--clients N] [--txns N]
 *            [--accounts K] [--split-rows N] [--faults kind=rate,...]
 *   mrtx-sim --replay SEED [same options]   (prints the run's trace)
 *   mrtx-sim --check-determinism SEED       (runs it twice, compares)
 *   --break NAME (repeatable) switches one protocol safeguard off
 *   (storage/breaks.h: reads, ranges, primary, point, snapshot): the runs
 *   are then expected to find anomalies, the proof that they can.
 *
 * Exit 0: no anomaly; 1: an anomaly (the first failing seed is printed);
 * 2: a usage error.
 */
#include "append.h"
#include "bank.h"
#include "ddl.h"
#include "idx.h"
#include "storage/breaks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The workloads: each runs one seed with the options (bank.h). */
typedef unsigned long (*run_fn)(uint64_t seed, const bank_cfg *cfg, bank_result *out);

static const struct {
	const char *name;
	run_fn run;
} workloads[] = {
	{ "bank", bank_run },
	{ "append", append_run },
	{ "append-blind", append_blind_run },
	{ "index", index_run },
	{ "ddl", ddl_run },
	{ "reindex", reindex_run },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: mrtx-sim [--seed N | --seeds A-B | --replay N | --check-determinism N]\n"
	        "                [--clients N] [--txns N] [--accounts K] [--split-rows N]\n"
	        "                [--faults kind=rate,...] [--break NAME] [--workload NAME]\n"
	        "                [--quiet] [--threads]\n"
	        "threads: clients' handles run their heartbeat and tail threads (as\n"
	        "         scheduled tasks) instead of tails inline and no heartbeat\n"
	        "faults: lose, drop, hold, orphan (per write), rhold, rdrop (per read), die,\n"
	        "        stall, clock (per store call), release (per step: a held op is\n"
	        "        released), skew=MS (clock offset bound);\n"
	        "        --faults none turns all off\n"
	        "break: reads, ranges, primary, point, snapshot (a safeguard switched off)\n"
	        "defaults: --seed 1, --clients 8, --txns 40, --accounts 8, --split-rows 0\n"
	        "          (never split), --faults lose=0.01,drop=0.01,hold=0.03,orphan=0,\n"
	        "          rhold=0.03,rdrop=0.005,die=0.002,stall=0.002,clock=0.002,release=0.2,\n"
	        "          skew=50, no --break,\n"
	        "          --quiet and --threads off\n"
	        "workload: bank (default)");
	for (size_t i = 1; i < NWORKLOADS; i++)
		fprintf(f, ", %s", workloads[i].name);
	fprintf(f, "\n");
}

/* What option o takes, for a usage error. */
static const char *expected_of(const char *o)
{
	static const struct {
		const char *opt, *want;
	} e[] = {
		{ "--seed", "a seed, 0 or more" },
		{ "--seeds", "A-B, two seeds with A <= B" },
		{ "--replay", "a seed, 0 or more" },
		{ "--check-determinism", "a seed, 0 or more" },
		{ "--clients", "1 to 64" },
		{ "--txns", "0 to 1000000" },
		{ "--accounts", "2 to 1000" },
		{ "--split-rows", "0 (never split) or 2 to 2^30-1" },
		{ "--faults", "none, or kind=rate,... (lose, drop, hold, orphan, die, stall, "
		              "clock and release: 0 to 1; skew=MS: up to 3600000)" },
		{ "--workload", "bank, append, append-blind, index, ddl or reindex" },
		{ "--break", "reads, ranges, primary, point or snapshot" },
	};

	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		if (!strcmp(o, e[i].opt))
			return e[i].want;
	return NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *e;

	errno = 0;
	*out = strtoull(s, &e, 10);
	return *s && !*e && !errno && *s != '-' ? 0 : -1;
}

static int parse_faults(const char *spec, bank_cfg *cfg)
{
	char buf[512], *save = NULL;

	if (!strcmp(spec, "none")) {
		memset(&cfg->faults, 0, sizeof(cfg->faults));
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *e;
		double v;
		int k;

		if (!eq)
			return -1;
		*eq = '\0';
		v = strtod(eq + 1, &e);
		if (*e || e == eq + 1 || v < 0)
			return -1;
		if (!strcmp(kv, "skew")) {
			if (v > 3600000)
				return -1; /* (an hour) */
			cfg->faults.skew_ms = (uint32_t)v;
			continue;
		}
		if (!strcmp(kv, "release")) {
			if (v > 1)
				return -1;
			cfg->faults.release = v;
			continue;
		}
		for (k = 0; k < SIM_NFAULTS; k++)
			if (!strcmp(kv, sim_fault_names[k]))
				break;
		if (k == SIM_NFAULTS || k == SIM_F_LATE || k == SIM_F_SKEW || v > 1)
			return -1;
		cfg->faults.rate[k] = v;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bank_cfg cfg = { 8, 40, 8, 0, { { 0 }, 0, 0 }, NULL, 0 };
	uint64_t first = 1, last = 1, replay = 0, check = 0, fail_seed = 0;
	unsigned long runs = 0, committed = 0, unknown = 0, failed = 0, anomalies = 0;
	unsigned long faults[SIM_NFAULTS] = { 0 };
	int mode = 0, quiet = 0, failed_any = 0; /* mode 1: replay, 2: determinism */
	int badi = 0; /* the option being parsed */
	struct timespec t0, t1;
	char first_msg[256] = "", shape[1024] = "";
	double secs;
	run_fn run = bank_run;

	cfg.faults.rate[SIM_F_LOSE] = 0.01;
	cfg.faults.rate[SIM_F_DROP] = 0.01;
	cfg.faults.rate[SIM_F_HOLD] = 0.03;
	cfg.faults.rate[SIM_F_RHOLD] = 0.03;
	cfg.faults.rate[SIM_F_RDROP] = 0.005;
	cfg.faults.rate[SIM_F_DIE] = 0.002;
	cfg.faults.rate[SIM_F_STALL] = 0.002;
	cfg.faults.rate[SIM_F_CLOCK] = 0.002;
	cfg.faults.release = 0.2;
	cfg.faults.skew_ms = 50;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;

		badi = i;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--quiet")) {
			quiet = 1;
			continue;
		}
		if (!strcmp(a, "--threads")) {
			cfg.threads = 1;
			continue;
		}
		if (!v)
			goto bad;
		i++;
		if (!strcmp(a, "--seed") && !parse_u64(v, &x)) {
			first = last = x;
		} else if (!strcmp(a, "--seeds")) {
			const char *dash = strchr(v, '-');
			char lo[32];

			if (!dash || (size_t)(dash - v) >= sizeof(lo))
				goto bad;
			memcpy(lo, v, (size_t)(dash - v));
			lo[dash - v] = '\0';
			if (parse_u64(lo, &first) || parse_u64(dash + 1, &last) || last < first)
				goto bad;
		} else if (!strcmp(a, "--replay") && !parse_u64(v, &x)) {
			replay = x;
			mode = 1;
		} else if (!strcmp(a, "--check-determinism") && !parse_u64(v, &x)) {
			check = x;
			mode = 2;
		} else if (!strcmp(a, "--clients") && !parse_u64(v, &x) && x >= 1 && x <= 64) {
			cfg.clients = (int)x;
		} else if (!strcmp(a, "--txns") && !parse_u64(v, &x) && x <= 1000000) {
			cfg.txns = (int)x;
		} else if (!strcmp(a, "--accounts") && !parse_u64(v, &x) && x >= 2 && x <= 1000) {
			cfg.accounts = (int)x;
		} else if (!strcmp(a, "--split-rows") && !parse_u64(v, &x) && x != 1 && x < 1u << 30) {
			cfg.split_rows = (uint32_t)x;
		} else if (!strcmp(a, "--faults") && !parse_faults(v, &cfg)) {
			continue;
		} else if (!strcmp(a, "--workload")) {
			size_t w;

			for (w = 0; w < NWORKLOADS && strcmp(v, workloads[w].name); w++)
				;
			if (w == NWORKLOADS)
				goto bad;
			run = workloads[w].run;
		} else if (!strcmp(a, "--break") && mrtx__break_of(v)) {
			atomic_fetch_or(&mrtx__breaks, mrtx__break_of(v));
		} else {
			goto bad;
		}
	}
	/* the options that shape a run, for the replay command printed */
	for (int i = 1; i < argc; i++) {
		static const char *const shaping[] = { "--clients", "--txns", "--accounts",
			                               "--split-rows", "--faults", "--break",
			                               "--workload" };

		if (!strcmp(argv[i], "--threads")) {
			size_t used = strlen(shape);

			snprintf(shape + used, sizeof(shape) - used, " --threads");
			continue;
		}
		if (i + 1 == argc)
			break;

		for (size_t k = 0; k < sizeof(shaping) / sizeof(shaping[0]); k++)
			if (!strcmp(argv[i], shaping[k])) {
				size_t used = strlen(shape);

				snprintf(shape + used, sizeof(shape) - used, " %s %s", argv[i],
				         argv[i + 1]);
				i++;
				break;
			}
	}
	if (mode == 1) {
		bank_result r;

		cfg.trace = stdout;
		run(replay, &cfg, &r);
		printf("seed %llu: hash %016llx, %lu anomalies%s%s\n", (unsigned long long)replay,
		       (unsigned long long)r.hash, r.anomalies, r.anomalies ? ", first: " : "",
		       r.first);
		return r.anomalies ? 1 : 0;
	}
	if (mode == 2) {
		bank_result r1, r2;

		run(check, &cfg, &r1);
		run(check, &cfg, &r2);
		printf("seed %llu: hash %016llx then %016llx: %s\n", (unsigned long long)check,
		       (unsigned long long)r1.hash, (unsigned long long)r2.hash,
		       r1.hash == r2.hash ? "deterministic" : "NOT deterministic");
		return r1.hash == r2.hash ? 0 : 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t s = first; s <= last; s++) {
		bank_result r;

		run(s, &cfg, &r);
		runs++;
		committed += r.committed;
		unknown += r.unknown;
		failed += r.failed;
		anomalies += r.anomalies;
		for (int k = 0; k < SIM_NFAULTS; k++)
			faults[k] += r.faults[k];
		if (!quiet || r.anomalies)
			printf("seed %llu: %lu committed, %lu unknown, %lu failed, %lu anomalies%s%s "
			       "(hash %016llx)\n", (unsigned long long)s, r.committed, r.unknown,
			       r.failed, r.anomalies, r.anomalies ? "; first: " : "", r.first,
			       (unsigned long long)r.hash);
		if (r.anomalies && !failed_any) {
			failed_any = 1;
			fail_seed = s;
			snprintf(first_msg, sizeof(first_msg), "%s", r.first);
		}
		fflush(stdout);
		if (s == UINT64_MAX)
			break;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("seeds run: %lu; transactions committed: %lu (unknown %lu, failed %lu); "
	       "%.0f committed/s of wall time\nfaults:", runs, committed, unknown, failed,
	       secs > 0 ? (double)committed / secs : 0.0);
	for (int k = 0; k < SIM_NFAULTS; k++)
		printf(" %s %lu", sim_fault_names[k], faults[k]);
	printf("\nanomalies: %lu", anomalies);
	if (failed_any)
		printf("; first failing seed: %llu (%s); replay: mrtx-sim%s --replay %llu",
		       (unsigned long long)fail_seed, first_msg, shape, (unsigned long long)fail_seed);
	printf("\n");
	return failed_any ? 1 : 0;
bad:
	if (!expected_of(argv[badi]))
		fprintf(stderr, "mrtx-sim: '%s' is not an option", argv[badi]);
	else if (badi + 1 == argc)
		fprintf(stderr, "mrtx-sim: %s needs a value: %s", argv[badi], expected_of(argv[badi]));
	else
		fprintf(stderr, "mrtx-sim: %s '%s': expected %s", argv[badi], argv[badi + 1],
		        expected_of(argv[badi]));
	fprintf(stderr, " (mrtx sim --help lists the options)\n");
	return 2;
}
