/*
 * crashrec.h - the I/O trace written by the crash recorder (crashrec.c, an
 * LD_PRELOAD interposer) and read by `mrtx crashsim` (tools/harness/crashsim*.c).
 *
 * The recorder follows one file, the store's data.mdb, through every
 * descriptor any process opens on it.  Each event is appended to the trace
 * with one writev(2) on an O_APPEND descriptor shared by every process of
 * the workload, so the trace is one total order: LMDB writes data.mdb only
 * under its writer lock, and each event is logged before the call that made
 * it returns to LMDB, so a later writer's events always follow.
 *
 * A record is a crashrec_hdr followed by `len` bytes of payload:
 *   CR_WRITE  bytes written at `off` (payload = the bytes); flags CR_DSYNC
 *             when the descriptor was opened O_DSYNC/O_SYNC (LMDB's meta
 *             descriptor in sync mode): the write is durable on return
 *   CR_SYNC   fsync/fdatasync of the file completed (a barrier: every write
 *             logged before it is durable); flags CR_MSYNC for msync
 *   CR_TRUNC  ftruncate to `off`
 *   CR_OPEN   the file was opened (flags CR_CREATED when the open created
 *             it, or O_TRUNC emptied it)
 *   CR_MARK   a workload annotation (payload = text): "R W T SEED U" setup
 *             complete and synced (writers, transactions each, schedule
 *             seed, unbatched), "A W SEQ" writer W's commit SEQ returned
 *             MRTX_OK
 * Failed calls (including injected faults) are not logged, except the
 * bytes a short write did write.
 */
#ifndef MRTX_TOOL_CRASHREC_H
#define MRTX_TOOL_CRASHREC_H

#include <stdint.h>

#define CR_MAGIC 0x4352u /* "CR" */

enum { CR_WRITE = 1, CR_SYNC = 2, CR_TRUNC = 3, CR_OPEN = 4, CR_MARK = 5 };
enum { CR_DSYNC = 1, CR_MSYNC = 2, CR_CREATED = 4 };

typedef struct crashrec_hdr {
	uint16_t magic;
	uint8_t type;
	uint8_t flags;
	uint32_t pid;
	uint64_t off;
	uint64_t len;
} crashrec_hdr;

/*
 * Environment of a recorded process:
 *   MRTX_CRASHREC_FILE  the file to follow (path of data.mdb); unset: off
 *   MRTX_CRASHREC_TRACE the trace to append to
 *   MRTX_CRASHREC_FAULT fault to inject on the followed file, "KIND:N:WHAT":
 *                       KIND sync (fsync/fdatasync) or write (any write
 *                       call), N the call number (1 = next), WHAT an errno
 *                       name (EIO, ENOSPC) or "short" (write half)
 * Functions the recorder exports (found with dlsym(RTLD_DEFAULT, ...) so a
 * program runs unchanged without it):
 */
/* Append a CR_MARK record with text s.  Returns 0 or -1. */
typedef int (*crashrec_mark_fn)(const char *s);
/* Arm a fault (MRTX_CRASHREC_FAULT syntax; NULL or "" disarms), counting
 * from the next call.  Returns 0, or -1 for a malformed spec. */
typedef int (*crashrec_fault_fn)(const char *spec);
/* 1 if the fault armed last has fired, else 0. */
typedef int (*crashrec_fault_fired_fn)(void);
/* Follow this file from now on (descriptors opened later), without a
 * trace unless MRTX_CRASHREC_TRACE is set: for a program that links the
 * recorder instead of preloading it. */
typedef void (*crashrec_follow_fn)(const char *path);

#endif
