/*
 * crc32c.h - CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, initial
 * value ~0, final xor ~0 -- the checksum of iSCSI, ext4 and RocksDB.
 * crc32c("123456789") == 0xE3069283.
 *
 * Chaining: crc is the running value, 0 to start; the pre/post conditioning
 * (~) is applied inside, so
 *     mrtx__crc32c(mrtx__crc32c(0, a, na), b, nb) == mrtx__crc32c(0, a||b, na+nb).
 *
 * Thread-safe: no state but tables built once (pthread_once) and a cached
 * CPU feature check.  On x86-64 with SSE4.2 the crc32 instruction is used,
 * otherwise a portable slicing-by-8 table loop; both give the same result.
 * data may be NULL when n == 0 (crc is then returned unchanged).
 */
#ifndef MRTX_CRC32C_H
#define MRTX_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t mrtx__crc32c(uint32_t crc, const void *data, size_t n);
/* The CRC of a||b from 0: mrtx__crc32c(mrtx__crc32c(0, a, na), b, nb) in one
 * call (a record's seal covers its key and its value, two pieces). */
uint32_t mrtx__crc32c2(const void *a, size_t na, const void *b, size_t nb);

/* Internal, for the tests: the portable table path (same contract as
 * mrtx__crc32c), and whether mrtx__crc32c uses the hardware instruction. */
uint32_t mrtx__crc32c_sw(uint32_t crc, const void *data, size_t n);
int mrtx__crc32c_hw_active(void);

#endif
