/*
 * cellout.h - printing the cells a scan or a whole-row get returns
 * (cmd_scan.c), and what the read commands share (cmd_data.c).
 */
#ifndef MRTX_TOOL_CELLOUT_H
#define MRTX_TOOL_CELLOUT_H

#include <stdio.h>

#include "keyfmt.h"
#include "mrtx.h"
#include "util.h"

/* A column of scan --columns. */
typedef struct cell_column {
	const char *family;
	mrtx_bytes qualifier;
} cell_column;

/* How scan_cells prints, and what it keeps beyond the scan spec. */
typedef struct scan_out {
	const keyfmt *key;   /* print rows as these parts */
	int json;            /* JSON lines */
	int count;           /* count only */
	int rowless;         /* text lines without the row (a whole-row get) */
	size_t versions;     /* --versions N: 0 (one, no timestamps) or N */
	int ts_range;        /* --time-range: only versions in [ts_lo, ts_hi), up to
	                        versions (or 1) of each cell, with timestamps */
	uint64_t ts_lo, ts_hi;
	const cell_column *cols; /* ncols > 0: only these columns */
	size_t ncols;
	mrtx_bytes value_prefix; /* size > 0: only values starting with it */
	size_t limit;        /* rows to print when filtering here (0: all) */
	mrtx_bytes only_row; /* size > 0: stop at the first other row */
	size_t cells, rows, unsplit; /* unsplit: rows that are not --key keys */
} scan_out;

/* Run spec in txn, printing each cell to f as o says (resetting its counts). */
int scan_cells(mrtx_txn *txn, const mrtx_scan_spec *spec, FILE *f, scan_out *o);

/* A scan printed once its transaction commits: scan_job_fn is mrtx_run's
   fn (and run_at's), writing to mem afresh at every attempt. */
typedef struct scan_job {
	mrtx_scan_spec spec;
	scan_out out;
	memout mem;
} scan_job;
int scan_job_fn(mrtx_txn *txn, void *p);

/* spec and o for one row's cells: end (room for MRTX_MAX_ROW bytes) holds
   the bound just past the row. */
void row_spec(const char *table, mrtx_bytes row, unsigned char *end,
              mrtx_scan_spec *spec, scan_out *o);

/* --time-range START END taken out of argv[1..*argc) (before any "--"),
   the rest moved down: *has 1 and the range in o when it was there; 0,
   or EXIT_USAGE (message printed: a missing or bad bound, END <= START). */
int arg_time_range(const char *cmd, int *argc, char **argv, scan_out *o);

/* --at: a commit timestamp (decimal, above 0); 0 or EXIT_USAGE. */
int arg_ts(const char *cmd, const char *arg, uint64_t *out);
/* fn in one transaction at the past snapshot ts (never retried: it never
   conflicts). */
int run_at(mrtx_db *db, uint64_t ts, int (*fn)(mrtx_txn *, void *), void *p);

#endif
