/*
 * append.h - the list-append workload of `mrtx-sim` (Elle's model), checked
 * by the history checker (tools/harness/histcheck.h).
 *
 * K integer keys (bank_cfg.accounts), spread over two tables of two tablets
 * each, are rows whose value is a list of integers.  Each client runs
 * transactions of 1-4 micro-operations on distinct keys -- read(k) returns
 * the whole list, append(k, v) reads the row and writes it back with v
 * (unique in the run) at the end -- through mrtx_begin/mrtx_commit, every
 * attempt one transaction of the history: ok, fail, or unknown
 * (MRTX_EUNKNOWN, or the client died before its outcome).  A quarter only
 * read (a RADOS snapshot, committed without validation).  After the run and
 * a settle past every lock's expiry, a final read of every key gives each
 * key's version order, a recovery sweep must leave no lock, and the history
 * is held to what mrtx promises on RADOS (HC_SNAPSHOT_READONLY: readers
 * snapshot isolation, writers serializable).
 *
 * Anomalies (bank_result.anomalies): each one the history checker reports
 * (G0, G1a-c, G-single, G2 among writers, lost, duplicate, torn, garbage,
 * incompatible order); a committed read missing a value whose append's
 * commit returned before the transaction began (real-time order, I17); a
 * row read as missing or unparsable; a lock left after the sweep; an error
 * code mrtx.h does not allow for the call.
 */
#ifndef MRTX_SIM_APPEND_H
#define MRTX_SIM_APPEND_H

#include "bank.h"

/* One run of the append workload on seed (cfg->accounts keys); the result
 * in *out.  Returns the number of anomalies (0: the run passed). */
unsigned long append_run(uint64_t seed, const bank_cfg *cfg, bank_result *out);

/* The same, each appending transaction first writing a cell of its first
 * appended key's row blind, before any read: its start timestamp is then
 * taken at that write (store_ts_start, txn/txn.c note_first_write) and its
 * snapshot after, so the blind-write window opens before the snapshot. */
unsigned long append_blind_run(uint64_t seed, const bank_cfg *cfg, bank_result *out);

#endif
