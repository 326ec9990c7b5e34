/*
 * idx_int.h - what the index workload (idx.c) and its checks (idx_check.c)
 * share: the run's state and the functions one file defines for the other.
 */
#ifndef MRTX_SIM_IDX_INT_H
#define MRTX_SIM_IDX_INT_H

#include "idx.h"
#include "work.h"

#include "mrtx.h"

#include <stddef.h>
#include <stdint.h>

#define NOWN 4     /* owners o0..o3 */
#define VROWS 4    /* rows of table v */
#define IDX_MAXV 4 /* versions v's family keeps */
#define MAXLOG 4096
#define IDX_BY_N "by_n"     /* the reindex workload's index on p's n */
#define IDX_BY_N_TABLE "pn" /* and its index table */

/* One recorded version of a v row: its commit timestamp and value (ts 0:
 * not known yet). */
typedef struct vknown {
	uint64_t ts;
	unsigned long when; /* the checker's event count when it was learnt */
	char val[48];
} vknown;

typedef struct ix {
	work w; /* cfg, addr and res */
	int keys;             /* row keys r000.. of p */
	int cap;              /* most rows an owner may hold */
	int maxseq;           /* sequence numbers per v row the arrays hold */
	vknown *known;        /* [VROWS][maxseq] */
	long okseq[VROWS];    /* highest sequence whose commit returned OK */
	uint64_t log[MAXLOG]; /* commit timestamps learnt, for past snapshots */
	int nlog;
	unsigned long splits; /* splits the clients' handles finished */
	int ops;              /* a counter for unique values */
	unsigned long events; /* versions learnt so far */
	int reindex;          /* the reindex workload: by_n dropped and made again */
	int nready;           /* by_n is whole (idx_ddl.c) */
	unsigned long ndrops; /* drops of by_n begun */
	int nlive;            /* of them, not returned */
} ix;

/* idx.c */
void idx_copy_str(char *dst, size_t cap, mrtx_bytes b, int *bad);

/* idx_check.c */
/* In t: read index (by_owner or by_n: a lookup of want, or all of it) and
 * p; compare.  *msg gets the first difference ("" when none).  Returns the
 * first failing call's code; *call names it. */
int idx_vs_base(ix *x, mrtx_txn *t, const char *index, const char *want, char *msg,
                size_t msz, const char **call);
/* idx_vs_base in a transaction of its own (at: mrtx_begin_at when not 0),
 * committed. */
int idx_check_txn(ix *x, mrtx_db *db, uint64_t at, const char *index, const char *want,
                  char *msg, size_t msz, const char **call);
/* idx_check_txn live, of the whole index, retried while it meets a lock
 * or a conflict (the final checks). */
int idx_check_final(ix *x, mrtx_db *db, const char *index, char *msg, size_t msz,
                    const char **call);
void idx_do_index_check(ix *x, mrtx_db *db);
void idx_learn(ix *x, int r, long seq, uint64_t ts, const char *val, const char *how);
void idx_do_vread(ix *x, mrtx_db *db);
void idx_final_check(ix *x);

/* idx_ddl.c */
int idx_create_by_n(mrtx_db *db);
void idx_do_reindex(ix *x, mrtx_db *db);
void idx_do_n_check(ix *x, mrtx_db *db);
void idx_reindex_final(ix *x, mrtx_db *db);

#endif
