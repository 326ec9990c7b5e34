/*
 * txn_test.h - how a handle commits, for the crash and chaos tests and the
 * tool's test switches; not part of the public API (mrtx.h).
 */
#ifndef MRTX_TXN_TEST_H
#define MRTX_TXN_TEST_H

#include "mrtx.h"

#include <stdatomic.h>

typedef struct mrtx__knobs {
	int unbatched; /* every row write is its own store call, as on a
	                  distributed store (LMDB: no one-phase commit) */
	int two_phase; /* commit every multi-row transaction in two phases,
	                  also where one write could (DESIGN §5.3) */
	int no_threads; /* start no heartbeat or tail thread: commits run their
	                   tails inline and leave their locks unrefreshed (a
	                   deterministic simulator runs one thread at a time) */
} mrtx__knobs;

/* mrtx_open with the knobs (NULL: none); returns what mrtx_open does.  A
 * second handle on an LMDB store must ask for the first one's unbatched. */
int mrtx__open_knobs(mrtx_db **out, const char *path, const mrtx_options *opts,
                     const mrtx__knobs *k);

/* How many times a handle asked its worker threads to quit (mrtx_close, a
 * fork): raised once the request is made, before the threads are joined,
 * so a test holding a worker can release it knowing the quit is seen. */
extern _Atomic unsigned long mrtx__hb_quits;
/* How many primary locks the heartbeat threads have refreshed (a write
 * that applied), and how many refreshes failed (tried again a quarter TTL
 * later), so a test that steps the clock past a refresh's due time can
 * wait for the refresh instead of sleeping. */
extern _Atomic unsigned long mrtx__hb_refreshes, mrtx__hb_refresh_failures;

#endif
