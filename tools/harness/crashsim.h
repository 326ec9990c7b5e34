/*
 * crashsim.h - `mrtx crashsim DIR`: power-loss simulation.
 *
 * crashsim.c records a workload (writer processes making multi-row bank
 * transfers and one-row writes, every commit that returned MRTX_OK marked
 * in the trace) under the crash recorder (tools/harness/crashrec/); crashsim_state.c
 * builds from the trace the disk images a power loss could leave and checks
 * each one in a child process.
 */
#ifndef MRTX_TOOL_CRASHSIM_H
#define MRTX_TOOL_CRASHSIM_H

#include <stdint.h>

/* Deliberately broken variants, simulated on the same trace: what the disk
 * would hold had the library skipped one of its syncs. */
enum {
	CS_BROKEN_NONE = 0,
	CS_BROKEN_META = 1, /* commit point's meta page written without O_DSYNC */
	CS_BROKEN_DATA = 2, /* every fdatasync skipped: meta may precede its pages */
};

/* Violation kinds, in report order. */
enum {
	CSV_OPEN,          /* the store does not open */
	CSV_OPEN_MODIFIED, /* opening and closing changed data.mdb */
	CSV_CRASH,         /* the checker died of a signal (SIGBUS: a page past EOF) */
	CSV_HANG,          /* the checker did not finish (a loop in a damaged file) */
	CSV_RECOVER,       /* recovery failed */
	CSV_CHECK,         /* mrtx check --strict fails after recovery */
	CSV_READ,          /* reading the bank failed */
	CSV_TOTAL,         /* the bank total is not exact */
	CSV_PARTIAL,       /* balances are not those of whole transactions */
	CSV_LOST_COMMIT,   /* an acknowledged commit is missing */
	CSV_NKINDS
};
extern const char *const cs_kind_names[CSV_NKINDS];

typedef struct cs_cfg {
	const char *dir;
	int durability;     /* MRTX_SYNC, MRTX_NOMETASYNC, MRTX_NOSYNC */
	int broken;         /* CS_BROKEN_* */
	unsigned long states;
	uint64_t seed;
	int writers, txns;
	int unbatched;      /* writers open the store unbatched (txn_test.h) */
	long only;          /* >= 0: check this state only and keep its image */
	int json;
	const char *trace;  /* an existing trace (no recording), or NULL */
	char tracebuf[4096];
} cs_cfg;

/* The workload's schedule: writer w's transaction k (from 1) is a one-row
 * write when cs_one_row(k), else a transfer of *amt from account *from to
 * *to.  Deterministic in (seed, w, k), so a checker recomputes balances. */
int cs_one_row(uint32_t k);
void cs_transfer(uint64_t seed, int w, uint32_t k, int *from, int *to, int *amt);
/* The table holding writer rows ("w<N>": cells f:seq, f:tok). */
extern const char *const cs_writer_table;

typedef struct cs_result {
	unsigned long records, writes, syncs, acks, crash_points;
	unsigned long states;          /* explored */
	unsigned long images;          /* distinct images among them, each checked */
	int exhaustive;                /* every state of the trace was explored */
	int unbatched;                 /* the trace's writers were unbatched */
	unsigned long violations[CSV_NKINDS];
	unsigned long nviolations;
	long first_state;              /* -1: none */
	int first_kind;
	char first_detail[512];
	char first_state_desc[256];
} cs_result;

/* The subcommand (crashsim.c). */
int cmd_crashsim(int argc, char **argv);

/* Build and check the crash states of the trace (crashsim_state.c).
 * Returns 0, or EXIT_FAIL with a message printed (a bad trace). */
int cs_explore(const cs_cfg *c, cs_result *out);

#endif
