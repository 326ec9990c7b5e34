/*
 * keyenc.h - order-preserving, self-delimiting encoding of byte strings.
 *
 * enc(s): every 0x00 becomes 0x00 0xFF, and 0x00 0x01 terminates.  For any
 * byte strings a, b: memcmp-order(enc(a), enc(b)) == memcmp-order(a, b), and
 * enc(a) is never a proper prefix of enc(b) (self-delimiting), so
 * enc(row) . anything sorts by row first.
 *
 * A data cell key is  enc(row) . family-id (1 byte) . qualifier (raw, last).
 */
#ifndef MRTX_KEYENC_H
#define MRTX_KEYENC_H

#include <stddef.h>
#include <stdint.h>

/* Size of enc(s). */
size_t keyenc_size(const uint8_t *s, size_t n);
/* Write enc(s) to out (keyenc_size(s, n) bytes); returns bytes written. */
size_t keyenc_put(uint8_t *out, const uint8_t *s, size_t n);
/*
 * Decode enc(s) at the start of in[0..len): writes the raw bytes to out (at
 * most len bytes needed) and sets *used to the encoded size.  Returns the
 * decoded length, or (size_t)-1 if in does not start with a well-formed,
 * terminated encoding.
 */
size_t keyenc_get(uint8_t *out, const uint8_t *in, size_t len, size_t *used);
/*
 * The smallest string above every string that starts with p[0..n), into
 * out (n bytes of room; out may be p): p less its trailing 0xFF bytes, its
 * last byte then raised by one.  Returns its size; 0 when p is all 0xFF
 * (or empty): no bound, every string sorts below the end.
 */
size_t keyenc_prefix_end(uint8_t *out, const uint8_t *p, size_t n);
/* Size of a cell key for (row, qualifier). */
size_t keyenc_cell_size(const uint8_t *row, size_t rn, size_t qn);
/* Build a cell key in out (keyenc_cell_size bytes); returns its size. */
size_t keyenc_cell(uint8_t *out, const uint8_t *row, size_t rn, uint8_t fid,
                   const uint8_t *qual, size_t qn);

#endif
