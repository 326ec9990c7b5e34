/*
 * ddl.h - the DDL workload of `mrtx-sim`: transactions across a table that
 * is truncated and a table that is dropped and created again under them.
 *
 * K pairs (bank_cfg.accounts).  Pair i is the rows a<i> and z<i> of table
 * d (two tablets, so the two rows live in different objects) and the row
 * x<i> of table x, which no DDL touches.  A writer transaction puts one
 * token, unique in the run, into all three (half of them reading a<i>
 * first), and sometimes into e<i> of table e and into a family added to d
 * before it began.  Clients 0 and 1 also truncate d (sometimes at the same
 * time: the later takes the job over), add families to d, and drop and
 * create e.  Readers read every pair in one transaction.
 *
 * Anomalies:
 *   - a read where a<i> and z<i> differ (a commit or a truncate seen in
 *     part), or where a<i> is neither x<i>'s token nor absent (the two
 *     tables committed apart), or absent while x<i> holds a token and no
 *     truncate had begun;
 *   - a token in d (or e) whose commit returned before a truncate of d (a
 *     drop of e) began, read by a transaction that began after that call
 *     returned MRTX_OK: the row outlived the truncate (the drop);
 *   - a token of a transaction whose commit failed definitely, read
 *     anywhere;
 *   - at the end, once a truncate stopped half way is finished (what the
 *     header says to do), the same checks on a final read, and a lock left
 *     after the recovery sweep;
 *   - an error code mrtx.h does not allow for the call (MRTX_ENOFAMILY for
 *     a family whose mrtx_add_family returned before the transaction
 *     began included).
 */
#ifndef MRTX_SIM_DDL_H
#define MRTX_SIM_DDL_H

#include "bank.h"

/* One run of the DDL workload on seed; the result in *out.  Returns the
 * number of anomalies (0: the run passed). */
unsigned long ddl_run(uint64_t seed, const bank_cfg *cfg, bank_result *out);

#endif
