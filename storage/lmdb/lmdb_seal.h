/*
 * lmdb_seal.h - the checksum every record carries (formats 7 and 8,
 * storage/lmdb/lmdb_seal.c).
 *
 * Every record of the store -- a cell, a cell's older version, a row's lock
 * record, and every metadata record (first key byte 0x00: the format, the
 * tables and their version policies, the timestamp ceiling, the safe
 * point, upper layers' records) -- ends its value with a seal, the CRC32C
 * of the key's bytes followed by the value's bytes before the seal, stored
 * u32 LE:
 *
 *   key -> payload | u32 LE crc32c(key . payload)
 *
 * Format 6 sealed the data records only; formats 3 to 5 none.  The format
 * record of those is a bare u32 (4 bytes), which the open and the upgrade
 * read raw to tell them from the sealed ones of formats 7 (8 bytes) and 8
 * (20: the format and the tally of the other metadata records).
 *
 * Every read and write of the store in the LMDB backend goes through the
 * functions below, which add the seal on the way in and check and strip it
 * on the way out: code above sees the payload only.  A record whose seal
 * does not match is LMDB_BADSUM, one whose size runs past its page or
 * the file LMDB_BADSPAN; lmdb_err reports both as MRTX_ECORRUPT.
 * Only the upgrade (which writes the seals), the format record's reads,
 * the metadata's tally (lmdb_put, lmdb_del and the metadata walk take each
 * record's part from its seal) and `check --deep` (which reads pages
 * itself) touch sealed values raw.
 */
#ifndef MRTX_LMDB_SEAL_H
#define MRTX_LMDB_SEAL_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#define LMDB_SEAL 4u
/* A record's seal does not match its bytes (not an LMDB or errno
 * code: LMDB's run from -30799 to -30780, errno values are positive). */
#define LMDB_BADSUM (-30600)
/* (Every function that returns LMDB_BADSUM from lmdb_unseal may return
 * lmdb_span.h's LMDB_BADSPAN in its place: wherever a comment here or in
 * lmdb_int.h names the one, it means both.) */

/* The seal of payload p[0..n) at key k. */
uint32_t lmdb_seal_of(const MDB_val *k, const void *p, size_t n);
/* Check a sealed value read at key k and strip its seal from *v:
 * 0, LMDB_BADSUM (too short, or a mismatch), or LMDB_BADSPAN (a damaged
 * size: the key's or the value's bytes run past the data file, or an
 * inline value past half a page; lmdb_span.h). */
int lmdb_unseal(const MDB_val *k, MDB_val *v);

/* mdb_cursor_get / mdb_get, the value unsealed: LMDB's rc,
 * LMDB_BADSUM or LMDB_BADSPAN. */
int lmdb_cget(MDB_cursor *cur, MDB_val *k, MDB_val *v, MDB_cursor_op op);
int lmdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v);
/* mdb_cursor_put / mdb_put of payload *v, sealed (through a copy; not
 * with MDB_RESERVE).  Metadata is written with lmdb_put and lmdb_del
 * only, which keep the format record's tally of it (format 8,
 * lmdb_mcount.c) in the same transaction: a record added, replaced or
 * deleted moves it.  The cursor puts write data records. */
int lmdb_cput(MDB_cursor *cur, MDB_val *k, MDB_val *v, unsigned flags);
int lmdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v, unsigned flags);
/* mdb_del of the record at k (every value): LMDB's rc; for a metadata
 * record, also LMDB_BADSUM (its seal, or the format record's, does not
 * match: the tally cannot take it out), LMDB_METACOUNT (lmdb_int.h: the
 * count would go below 0) or LMDB_BADFORMAT (the format record is
 * malformed).  lmdb_put of a metadata record returns the same three, and
 * EINVAL for flags other than 0 and MDB_NOOVERWRITE (the tally needs the
 * old record LMDB hands back). */
int lmdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *k);
/* Put payload buf[0..n) at key k, sealing it in place: buf has room
 * for n + LMDB_SEAL bytes (spares lmdb_cput's copy). */
int lmdb_cput_sealed(MDB_cursor *cur, MDB_val *k, uint8_t *buf, size_t n, unsigned flags);
/* MDB_RESERVE: reserve n payload bytes (and the seal) at key k; fill
 * v->mv_data[0..n), then lmdb_seal_reserved(k, v). */
int lmdb_cput_reserve(MDB_cursor *cur, MDB_val *k, MDB_val *v, size_t n, unsigned flags);
void lmdb_seal_reserved(const MDB_val *k, const MDB_val *v);

#endif
