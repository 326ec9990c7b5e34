/*
 * versions.h - what every backend's reads of cell versions share (DESIGN
 * §9): a family's policy rule, and choosing what a read shows from a
 * cell's versions.
 */
#ifndef MRTX_STORE_VERSIONS_H
#define MRTX_STORE_VERSIONS_H

#include "storage/store.h"

/* Version flags (stored beside a version's value by every backend). */
#define CELL_GONE 1u    /* versions older than this one were collected */
#define CELL_DELETED 2u /* the cell was deleted at this version's ts */

/* One version as a backend read it. */
typedef struct store_ver {
	uint8_t fid, flags;
	mrtx_bytes qual, value;
	uint64_t ts;
} store_ver;

/* Is the version at ts, the i-th newest of its cell (0: newest), kept by
 * policy p at time now_us? */
int store_version_kept(const store_policy *p, size_t i, uint64_t ts, uint64_t now_us);

/* The order of versions: by cell (family, qualifier), newest first; of two
 * at one timestamp, the one with the lower rank first (ra, rb: 0 for a
 * value, 1 for a deletion). */
int store_version_order(uint8_t fa, const void *qa, size_t qan, uint64_t ta, int ra,
                        uint8_t fb, const void *qb, size_t qbn, uint64_t tb, int rb);

/* Append x to the growable array *vs (n entries, room for *cap), copying
 * its qualifier and value into a.  MRTX_ENOMEM. */
int store_ver_add(mrtx_arena *a, store_ver **vs, size_t *n, size_t *cap, const store_ver *x);

/* A growable array in an arena (old storage is left to the arena): arr
 * with room for at least n + 1 elements, or NULL. */
void *store_arr_grow(mrtx_arena *a, void *arr, size_t n, size_t *cap, size_t elem);

/*
 * What a read with filter f shows of t's cells whose versions are vs[0..n),
 * sorted by store_version_order: for each cell, the versions at or below
 * f->at (0: all), newest first, up to f->versions (0 or 1: one), stopping
 * at a deletion and at the first version the family's policy no longer
 * keeps (a version's rank counts every version of the cell in vs; with
 * f->live, those at or below f->at).
 * Appended to out->cells.  MRTX_ESNAPSHOT when a read at f->at cannot know
 * what a cell held then (not live: its version there is past its TTL, or none is at
 * or below f->at and the oldest says GONE); MRTX_ENOMEM.
 */
int store_versions_select(const store_table *t, const store_filter *f, const store_ver *vs,
                          size_t n, mrtx_arena *a, store_row *out);

/* A stored policy (a table's record of them holds one per family):
 * u32 max_versions, u32 min_versions, u64 ttl_ms, little-endian. */
#define STORE_POL_SIZE 16u
void store_policy_put(uint8_t *p, const store_policy *x);
void store_policy_get(const uint8_t *p, store_policy *x);
/* Parse a record of policies (v: n * STORE_POL_SIZE bytes) into a new set
 * (older NULL; mrtx__free it): MRTX_ECORRUPT (no message) when malformed. */
int store_policies_parse(mrtx_bytes v, store_polset **out);
/* Publish s as t's policies, keeping the set it replaces on s's older
 * list (callers serialise publications of one table). */
void store_policies_publish(store_table *t, store_polset *s);

#endif
