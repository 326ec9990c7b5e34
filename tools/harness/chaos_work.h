/*
 * chaos_work.h - the processes of `mrtx chaos`: bank writers and auditors,
 * list-append workers, and the history log each one keeps.
 *
 * History log: one file per process incarnation, LOGDIR/h-<P>.log, one
 * text line per record written with a single write(2), so SIGKILL loses at
 * most the record being written (a line without its newline is ignored):
 *   X <spec>                 failpoint armed in this incarnation
 *   I <seq> [<key>...]       invoke (append: the keys it appends to; the
 *                            value appended is <P>.<seq>), written before
 *                            the transaction begins
 *   O <seq> [<key>=<v>,...]  committed (append: what each read returned)
 *   F <seq>                  failed: definitely not committed
 *   U <seq>                  unknown (MRTX_EUNKNOWN or an unexpected error)
 *   A <total> <min>          bank auditor: a committed audit's sum and
 *                            smallest balance
 *   E <rc> <message>         unexpected library error (an anomaly)
 * An invoke without a completion record is unknown (the process died).
 */
#ifndef MRTX_TOOL_CHAOS_WORK_H
#define MRTX_TOOL_CHAOS_WORK_H

#include <stdint.h>

#include "mrtx.h"

enum { CHAOS_BANK = 0, CHAOS_APPEND = 1 };
enum { ROLE_WRITER = 0, ROLE_AUDITOR = 1 };

/* bank: accounts spread over rows of two tables, several per row */
#define BANK_ACCOUNTS 10
#define BANK_INITIAL 100
#define BANK_TOTAL (BANK_ACCOUNTS * BANK_INITIAL)
/* append: a sliding window of keys keeps lists (and logged reads) short */
#define APPEND_WINDOW 6
#define APPEND_TXNS_PER_SHIFT 12

typedef struct chaos_cfg {
	const char *store;
	char logdir[4096];
	int workload;
	int seconds;
	int seconds_given;  /* --seconds was given */
	int kills;          /* --kills N: run until N kills (0: by time) */
	int writers;
	int auditors;
	int unbatched;
	int two_phase;      /* writers commit in two phases (txn_test.h) */
	int json;
	unsigned seed;
	volatile uint64_t *shared_counter; /* MAP_SHARED: append invocations so far */
	volatile uint32_t *ready; /* MAP_SHARED, per slot: the incarnation that has
	                             opened the store (the killer waits for it on RADOS) */
	volatile uint32_t *progress; /* MAP_SHARED, per slot: transactions run by its
	                                incarnations so far (--kills paces kills by it) */
	int slot;                 /* in a child: its slot */
} chaos_cfg;

/* Account i's place: table, row, qualifier. */
void bank_account(int i, const char **table, char *row, size_t rowsz, char *qual,
                  size_t qualsz);
/* The append workload's key k: table and row. */
void append_key(uint32_t k, const char **table, char *row, size_t rowsz);

extern const char *const chaos_bank_tables[2];
/* bank: writers also make blind one-row "mirror" writes, the same token in
 * cells a and b of one of BANK_MIRRORS rows of this table; two cells that
 * differ are a torn one-row commit. */
#define BANK_MIRRORS 8
extern const char *const chaos_mirror_table;
/* Read mirror row k in txn: *torn = 1 if exactly one cell exists or they
 * differ.  Returns mrtx_get's error, if any. */
int chaos_mirror_read(mrtx_txn *txn, int k, int *torn);
extern const char *const chaos_append_tables[2];
#define CHAOS_FAMILY "f"

/* Options every chaos process opens the store with. */
int chaos_open(const chaos_cfg *cfg, mrtx_db **db);

/*
 * Body of a forked child: open the store, arm `armspec` (may be NULL), run
 * the role's loop until SIGTERM, return the exit status (0, or 3 when the
 * store cannot be opened).  `incarnation` names the log and the values.
 */
int chaos_child(const chaos_cfg *cfg, int role, uint32_t incarnation, const char *armspec);

#endif
