/*
 * idx.h - the index workload of `mrtx-sim` and its checker.
 *
 * Two parts, run by the same clients in one store whose tablets split
 * under load (split_rows: the option's value, else IDX_SPLIT_ROWS):
 *
 *   - a base table p (row -> owner, n) with a clustered secondary index on
 *     owner (index table pi, copying n).  Clients move rows between owners,
 *     insert, delete and renumber rows; a move or insert first looks the
 *     new owner up through the index and gives up when it holds IDX_CAP
 *     rows (a range read: validated, it keeps every owner at or below the
 *     cap).  Read-only transactions, live or at a past timestamp, compare
 *     an index lookup (or the whole index) with a scan of p in the same
 *     transaction: the entries must be exactly p's rows with that value,
 *     with the clustered copy of n.
 *   - a table v whose family keeps IDX_MAXV versions.  Each write reads a
 *     row's sequence number and writes the next (a chain per row); the
 *     checker records every version's commit timestamp (mrtx_commit_ts, or
 *     the first read of it) and value.  Readers at live snapshots and at
 *     past timestamps (mrtx_begin_at) read mrtx_get_versions while other
 *     clients collect (mrtx_gc, and commits' own trims): every version read
 *     must be the one recorded for its timestamp, the newest the one
 *     current at the snapshot (a live one: at least every commit that
 *     returned before it began), the list a gapless chain;
 *     MRTX_ESNAPSHOT is the only other answer allowed.
 *
 * The end: after the clients stop and the clock passes every lock's
 * expiry, a recovery sweep must leave no lock, the whole index must equal
 * p's owner column, no owner may hold more than the cap, and every v row
 * must read its newest recorded version.
 */
#ifndef MRTX_SIM_IDX_H
#define MRTX_SIM_IDX_H

#include "bank.h"

/* The split_rows bound when the options give none. */
#define IDX_SPLIT_ROWS 6u

/* One run of the index workload on seed (cfg->accounts sizes it: 3 *
 * accounts row keys, half of them present at the start).  Returns the
 * number of anomalies (0: the run passed). */
unsigned long index_run(uint64_t seed, const bank_cfg *cfg, bank_result *out);

/* The reindex workload: the index workload plus a second index, by_n on
 * p's column n (index table pn), that two clients drop and declare again
 * (with its backfill) while the others write (idx_ddl.c).  A committed
 * read that began while by_n was whole must find it equal to p; at the
 * end one mrtx_create_index must make it whole, and one mrtx_drop_index
 * must take it and its table and leave p writable. */
unsigned long reindex_run(uint64_t seed, const bank_cfg *cfg, bank_result *out);

#endif
