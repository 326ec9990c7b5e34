/*
 * histcheck.h - a serializability checker for list-append histories (the
 * model of Jepsen's Elle), used by `mrtx chaos --workload append`.
 *
 * A history is a set of transactions, each a list of micro-operations on
 * integer keys: append(k, v) adds the unique value v to the end of k's
 * list; read(k) returns the whole list it saw.  Each transaction ended
 * ok (committed), fail (definitely not committed) or unknown (the client was
 * killed or the commit point's outcome was unknown).  The final list of
 * every key, read after recovery, gives each key's version order: the
 * order of its appends.
 *
 * From that, hc_check derives the dependency graph between committed
 * transactions (ok ones, plus unknown ones whose appends are visible):
 *   ww  T1 -> T2   T2 appended to k right after T1 in k's final list
 *   wr  T1 -> T2   T2 read k and the last value it saw was T1's
 *   rw  T1 -> T2   T1 read k and T2 appended the next value T1 did not see
 * and reports, with Adya's / Elle's names:
 *   G0        cycle of ww edges only (dirty write)
 *   G1a       aborted read: a committed read (or the final state) shows a
 *             value appended by a failed transaction
 *   G1b       intermediate read: a read ends with a value its writer later
 *             followed with another append to the same key
 *   G1c       cycle of ww and wr edges (circular information flow)
 *   G-single  cycle with exactly one rw edge (read skew, lost update)
 *   G2        cycle with two or more rw edges (write skew)
 *   lost      a committed append missing from the final list
 *   duplicate a value twice in one list
 *   torn      an unknown transaction with some, not all, appends visible
 *   garbage   a list holds a value no transaction appended
 *   incompatible-order  a read that is not a prefix of the final list
 * Cycles are printed as a shortest cycle through one of its edges, with
 * the transactions involved.
 *
 * Pure functions on an in-memory history: no store, so tests can build
 * anomalous histories by hand.
 */
#ifndef MRTX_HISTCHECK_H
#define MRTX_HISTCHECK_H

#include <stddef.h>
#include <stdint.h>

enum hc_status { HC_OK = 0, HC_FAIL = 1, HC_UNKNOWN = 2 };

/*
 * What hc_check_mode holds the history to:
 *   HC_SERIALIZABLE       every anomaly above (hc_check)
 *   HC_SNAPSHOT           snapshot isolation (Adya's PL-SI, Elle's): G0, G1a,
 *                         G1b, G1c and G-single are anomalies, G2 is not --
 *                         write skew and the read-only anomaly are allowed
 *   HC_SNAPSHOT_READONLY  what mrtx promises where read-only transactions
 *                         read a snapshot and writers validate: read-only
 *                         transactions (no appends) are held to snapshot
 *                         isolation, and transactions that append to
 *                         serializability among themselves (a G2 cycle is an
 *                         anomaly when it passes through none that only reads)
 * Every mode reports lost, duplicate, torn, garbage and incompatible-order.
 */
enum hc_mode { HC_SERIALIZABLE = 0, HC_SNAPSHOT = 1, HC_SNAPSHOT_READONLY = 2 };

enum hc_anomaly_type {
	HC_G0,
	HC_G1A,
	HC_G1B,
	HC_G1C,
	HC_GSINGLE,
	HC_G2,
	HC_LOST,
	HC_DUPLICATE,
	HC_TORN,
	HC_GARBAGE,
	HC_INCOMPATIBLE,
	HC_A__COUNT
};

typedef struct hc_history hc_history;

typedef struct hc_anomaly {
	int type;   /* enum hc_anomaly_type */
	char *text; /* one line: what and which transactions (owned by the report) */
} hc_anomaly;

typedef struct hc_report {
	int mode;                    /* enum hc_mode checked */
	size_t ok, failed, unknown;  /* transactions by status */
	size_t unknown_visible;      /* unknown ones that committed (appends seen) */
	size_t edges[3];             /* ww, wr, rw edges built */
	size_t counts[HC_A__COUNT];  /* anomalies found, by type (cycles: 0 or 1) */
	size_t total;                /* sum of counts */
	hc_anomaly *anomalies;       /* the first few of each type, with details */
	size_t nanomalies;
} hc_report;

/* A transaction id is printed as "hi.lo" (the chaos tool uses process.seq). */
#define HC_ID(hi, lo) (((uint64_t)(hi) << 32) | (uint32_t)(lo))

/* New empty history; NULL when out of memory. */
hc_history *hc_new(void);
void hc_free(hc_history *h);   /* NULL is a no-op */

/* Add a transaction; returns its index (>= 0) or -1 when out of memory. */
long hc_add_txn(hc_history *h, uint64_t id, int status);
/* Micro-operations, in the order the transaction ran them; 0 or -1 (ENOMEM). */
int hc_add_append(hc_history *h, long txn, uint32_t key, uint64_t value);
int hc_add_read(hc_history *h, long txn, uint32_t key, const uint64_t *list, size_t n);
/* The final list of a key (keys never set have an empty final list). */
int hc_set_final(hc_history *h, uint32_t key, const uint64_t *list, size_t n);

/* Check the history; fills *out (free it with hc_report_free).  0 or -1
 * (ENOMEM; an unknown mode).  hc_check is hc_check_mode(HC_SERIALIZABLE). */
int hc_check(const hc_history *h, hc_report *out);
int hc_check_mode(const hc_history *h, int mode, hc_report *out);
void hc_report_free(hc_report *r);

/* "G0", "G1a", ... */
const char *hc_anomaly_name(int type);

#endif
