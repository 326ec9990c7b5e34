/*
 * store_test.h - the storage seam's test hooks: what tests arm or read to
 * inject faults, skew clocks, count syncs and make stores as earlier
 * releases wrote them, and the tunables tests shorten.  No behaviour of a
 * program that never touches them depends on them.  Included by the tests
 * and by the files that honour a hook, apart from the seam (store.h).
 */
#ifndef MRTX_STORE_TEST_H
#define MRTX_STORE_TEST_H

#include <stdatomic.h>

#include "store.h"

/* Test hook: the fdatasyncs the LMDB backend's commits and
 * store_sync_visible made in this process. */
extern _Atomic unsigned long store__syncs;

/*
 * Make the n-th store call from now (store_read_row, store_read_locks,
 * store_scan_rows, store_write_rows; counted across every store of the
 * process) fail as if LMDB had returned lmdb_error (e.g. MDB_MAP_FULL, EIO;
 * 0 means EIO), without touching LMDB.  n = 0 disarms; calls are counted
 * only while armed, so arm with ULONG_MAX to count.  Returns the number of
 * calls counted since the previous call.  Safe to re-arm while other
 * threads call the store, but their calls are counted too: a RADOS
 * handle's tail thread writes after a commit returns, so mrtx_flush before
 * arming to count the test's own calls only.
 */
unsigned long store__fail_at(unsigned long n, int lmdb_error);
/* For backends: count a store call; 0, or the error to inject (an LMDB or
 * errno code for the backend to map, or STORE_FAULT_APPLIED when write). */
extern atomic_int store__fault_armed;
int store__fault_hit(int write);

/* Test hook: offset this handle's wall clock (store_now_us) by us, to
 * play a host whose clock is skewed against the others'.  Set it before
 * the handle is shared between threads. */
void store__clock_offset(store *st, long long us);

/* How far below the clock a commit's trim puts its safe point (txn.c
 * trim_written; RADOS): a version replaced longer ago than this may be
 * collected, so a running snapshot older than it may meet MRTX_ESNAPSHOT.
 * STORE_TRIM_LAG_US by default; tests set a shorter one. */
#define STORE_TRIM_LAG_US 10000000LL
extern _Atomic long long store__trim_lag_us;

/* Test hook: the next N checks that pin an LMDB view to its transaction
 * id fail, as when two commits land during each (lmdb_view.c view_exact):
 * eight in a row make a view whose timestamp is unknown. */
extern _Atomic int store__lmdb_inexact_views;

/* store__fail_at, but the n-th call and every later one fail. */
unsigned long store__fail_from(unsigned long n, int lmdb_error);

/* store__fail_at's lmdb_error for a fault after the fact: if the n-th call
 * is a store_write_rows, it runs normally, then reports each op it applied
 * as MRTX_EUNKNOWN and returns MRTX_ESTORE (a store that failed after
 * applying, as a lost reply does); any other call fails with EIO. */
#define STORE_FAULT_APPLIED (-31991)

#endif
