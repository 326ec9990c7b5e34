/*
 * lmdb_span.h - where a record's bytes may lie (storage/lmdb/lmdb_span.c).
 *
 * LMDB hands back a key or value as a pointer into its map and a length
 * it read from the page, unchecked: a damaged node size, key size or
 * overflow page number points the bytes past the end of the data file,
 * and the first read of them (the seal's CRC) is a SIGBUS or SIGSEGV in
 * mrtx's own code.  Every environment mrtx opens is registered here,
 * and its map found: LMDB does not say where it mapped the file, so the
 * map is the process's one mapping of the data file from its start, as
 * long as the map, in /proc/self/maps (where none or several are found,
 * as on a file system whose mappings name another device than stat, the
 * map's spans are not judged, and a damaged size faults as it did).  A
 * span inside a found map must end within the pages written so far (the
 * last page number of the newest meta page: the file holds every page up
 * to it, and lmdb_file_check refused a shorter one at the open).  A span
 * in no found map is the caller's memory and passes.
 *
 * I27 (DESIGN §10): a span that lmdb_span_rec passes can be read without a
 * fault while the transaction that produced it is open.  The check costs
 * a few compares: each thread keeps a copy of the registry, renewed when
 * an environment is added, removed or remapped (the generation moves), and
 * a span past the copied end re-reads the environment's last page first
 * (the file only grows while it is open).
 */
#ifndef MRTX_LMDB_SPAN_H
#define MRTX_LMDB_SPAN_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

/* A record's size runs past the pages of the data file (not an LMDB or
 * errno code; beside lmdb_seal.h's LMDB_BADSUM). */
#define LMDB_BADSPAN (-30605)

/* One registered environment; lives in its owner (no allocation). */
typedef struct lmdb_span_env {
	MDB_env *env;
	struct lmdb_span_env *next;
	uintptr_t lo, top; /* its map, [lo, top); 0, 0: not found */
	int on;            /* registered */
} lmdb_span_env;

/* Register env (opened, its map set) in node e, which stays valid and
 * unmoved until lmdb_span_del(e).  Cannot fail. */
void lmdb_span_add(lmdb_span_env *e, MDB_env *env);
/* Unregister e (no-op if it is not registered); before mdb_env_close. */
void lmdb_span_del(lmdb_span_env *e);
/* After mdb_env_set_mapsize on e's environment (registered or not):
 * its map may have moved. */
void lmdb_span_moved(lmdb_span_env *e);
/* 1 when the bytes of key k and of value v may both be read (I27
 * above), 0 when either runs past the written pages of the map it
 * starts in. */
int lmdb_span_rec(const MDB_val *k, const MDB_val *v);

#endif
