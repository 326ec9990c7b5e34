/*
 * lmdb_span.h - where a record's bytes may lie (storage/lmdb/lmdb_span.c).
 *
 * LMDB hands back a key or value as a pointer into its map and a length
 * it read from the page, unchecked: a damaged node size, key size or
 * overflow page number points the bytes past the end of the data file,
 * and the first read of them (the seal's CRC) is a SIGBUS or SIGSEGV in
 * mrtx's own code.  Every environment mrtx opens is registered here,
 * and its map found: LMDB does not say where it mapped the file, so the
 * map is the process's one mapping, in /proc/self/maps, of the data file
 * (its inode, on the device stat names or, where the file system shows
 * another one, on any) from offset 0, as long as the map; where none or
 * several are found, the map's spans are not judged, and a damaged size
 * faults as it did.  A span inside a found map must end within the data
 * file's length (rounded up to the OS page: the bytes past the end in the
 * last page read as zeros); past that, the first read would be a SIGBUS.
 * The length, not the newest meta page's last page: a write transaction
 * of many pages spills some of them to the file, past that page, and
 * reads them back from the map.  Wherever the page lies (the map, or a
 * write transaction's copy of it, allocated apart), a value that follows
 * its key is a leaf's inline node, which LMDB keeps under half a page: a
 * key and value larger together are refused too.  Any other span in no
 * found map (the caller's memory, an overflow value in a write
 * transaction) passes.
 *
 * I27 (DESIGN §10): a span that lmdb_span_rec passes, in a found map, can
 * be read without a fault while the transaction that produced it is open.
 * A key and inline value that lie in the OS page of the byte before the
 * key pass at once: that byte ends the node's header, which LMDB read to
 * find the key's size, so the page is mapped and in the file (most of a
 * leaf's records; no registry is consulted).  Otherwise the check costs a
 * few compares: each thread keeps a copy of the registry, renewed when an
 * environment is added, removed or remapped (the generation moves), and a
 * span past the copied end reads the file's length again first (the file
 * only grows while it is open).  A remap goes through
 * lmdb_span_set_mapsize, which holds the registry's lock and keeps the
 * generation odd while the map moves: no span is judged then.
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
	int fd;            /* its data file (LMDB's descriptor) */
	int on;            /* registered */
} lmdb_span_env;

/* Register env (opened, its map set) in node e, which stays valid and
 * unmoved until lmdb_span_del(e).  Cannot fail (a map not found is not
 * judged). */
void lmdb_span_add(lmdb_span_env *e, MDB_env *env);
/* Unregister e (no-op if it is not registered); before mdb_env_close. */
void lmdb_span_del(lmdb_span_env *e);
/* mdb_env_set_mapsize(env, size) for the environment registered in e
 * (or not yet: e zeroed), its map found again: LMDB's rc. */
int lmdb_span_set_mapsize(lmdb_span_env *e, MDB_env *env, size_t size);
/* 1 when the bytes of key k and of value v may both be read (I27
 * above), 0 when either runs past the data file of the map it starts in,
 * or when v follows k (an inline node) and they are half a page or more
 * together. */
int lmdb_span_rec(const MDB_val *k, const MDB_val *v);
/* How many registered environments have their map found (tests: where
 * none is, damage the bound would catch faults instead). */
unsigned lmdb_span_found(void);

#endif
