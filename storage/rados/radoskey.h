/*
 * radoskey.h - omap key codec for the RADOS backend.
 *
 * RADOS omap keys are sorted by memcmp (shorter prefix first), but the
 * listing calls take `start_after` and `filter_prefix` as C strings: a key
 * holding 0x00 cannot be resumed after or filtered on, and the empty key is
 * never listed.  Every key the backend writes is therefore built from these
 * encodings, none of which emits 0x00:
 *
 *   rkey(s)  order-preserving and self-delimiting; emits neither 0x00 nor
 *            0xFF.  Low escape 0x01, high escape 0xFE:
 *              0x00 -> 01 02    0x01 -> 01 03    0xFE -> FE 01    0xFF -> FE 02
 *              other bytes as is; terminator 01 01 (so rkey("") = 01 01,
 *              never the empty key).
 *            memcmp-sign(rkey(a), rkey(b)) == memcmp-with-prefix sign(a, b),
 *            and rkey(a) is a proper prefix of no rkey(b): rkey(a) . x sorts
 *            by a first, whatever x is.
 *   rkey_desc(s)  each byte b of rkey(s) as 0xFF - b: also free of 0x00 and
 *            0xFF, self-delimiting, and sorts in DESCENDING order of s (omap
 *            has no reverse iteration, so a reverse index stores these).
 *   rqual(s) for a last, unterminated component (a qualifier): 0x00 -> 01 02,
 *            0x01 -> 01 03, other bytes (0xFF included) as is.  Preserves
 *            order (a prefix sorts first) and emits no 0x00.
 *
 * Why rkey preserves order: at the first raw position where a and b differ,
 * the first emitted byte is a non-decreasing function of the raw byte
 * (00,01 -> 01; FE,FF -> FE; others -> themselves) and, where two raw bytes
 * share it, the second emitted byte (02 < 03, 01 < 02) orders them; if a
 * ended there, its terminator 01 01 sorts below every encoding of a byte
 * (>= 02, or 01 followed by 02/03).  A terminator cannot occur inside an
 * encoding (after an escape 01 comes 02 or 03), hence self-delimiting.
 *
 * Decoders never trust their input: malformed or truncated input returns
 * RKEY_BAD and reads nothing past len.  Output buffers for decoding need at
 * most len bytes (decoding never grows).  Sizes never overflow for inputs
 * below SIZE_MAX / 2.
 */
#ifndef MRTX_RADOSKEY_H
#define MRTX_RADOSKEY_H

#include <stddef.h>
#include <stdint.h>

#define RKEY_BAD ((size_t)-1)

/* Size of rkey(s) (and of rkey_desc(s)): n + escapes + 2. */
size_t rkey_size(const uint8_t *s, size_t n);
/* Write rkey(s) to out (rkey_size(s, n) bytes); returns the bytes written. */
size_t rkey_put(uint8_t *out, const uint8_t *s, size_t n);
/* Write rkey_desc(s) to out (rkey_size(s, n) bytes); returns the bytes written. */
size_t rkey_put_desc(uint8_t *out, const uint8_t *s, size_t n);
/*
 * Decode the rkey (or, with desc, rkey_desc) encoding at the start of
 * in[0..len): the raw bytes go to out, *used gets the encoded size (bytes
 * after it are not looked at).  Returns the decoded length, or RKEY_BAD
 * when in does not start with a well-formed, terminated encoding.
 */
size_t rkey_get(uint8_t *out, const uint8_t *in, size_t len, size_t *used);
size_t rkey_get_desc(uint8_t *out, const uint8_t *in, size_t len, size_t *used);

/* Size of rqual(s). */
size_t rqual_size(const uint8_t *s, size_t n);
/* Write rqual(s) to out (rqual_size(s, n) bytes); returns the bytes written. */
size_t rqual_put(uint8_t *out, const uint8_t *s, size_t n);
/* Decode all of in[0..len) as rqual; returns the raw length or RKEY_BAD
 * (a 0x00 byte, or 0x01 not followed by 02/03). */
size_t rqual_get(uint8_t *out, const uint8_t *in, size_t len);

#endif
