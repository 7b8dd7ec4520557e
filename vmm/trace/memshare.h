/* SPDX-License-Identifier: MIT */
/*
 * memshare.h - mtrace's cache-line sharing filter (mem_filter = sharing,
 * docs/MEMTRACE.md), as a pure state machine over caller-given memory.
 *
 * mtrace logs an access to a 64-byte line only when it may move the line
 * between caches:
 *   - a read by CPU c is logged only if another CPU wrote the line since
 *     c last read it;
 *   - a write by c only if another CPU read or wrote it since c last
 *     wrote it.
 * Each CPU's first read and first write of a line are logged.  A
 * read-modify-write is logged when either rule logs it; its read and
 * write both update the state.
 *
 * State per line: one 64-bit word, bits 31:0 "c has read the line since
 * the last foreign write" (its next read is quiet), bits 63:32 "c has
 * written it since the last foreign access" (its next write is quiet).
 * One compare-and-swap per access, so every CPU filters at once without a
 * lock.  CPUs numbered MEMSHARE_MAX_CPUS and above have no bit: their
 * accesses are always logged (counted as wide by the caller) and they
 * clear the other CPUs' bits as any foreign access does.
 *
 * Lines are found in an open-addressed table of keys (the line address
 * | 1, 0 empty) claimed with compare-and-swap; a line for which no slot is
 * left within MEMSHARE_PROBES is logged unfiltered (memshare_access
 * returns MEMSHARE_NO_SLOT).
 */
#ifndef TV_MEMSHARE_H
#define TV_MEMSHARE_H

#include <stdbool.h>
#include <stdint.h>

#define MEMSHARE_LINE      64u
#define MEMSHARE_MAX_CPUS  32u
#define MEMSHARE_PROBES    32u

/* memshare_access's answers */
#define MEMSHARE_QUIET     0   /* mtrace's rule leaves it out */
#define MEMSHARE_LOG       1   /* log it */
#define MEMSHARE_NO_SLOT   2   /* log it: no state for this line (table full) */
#define MEMSHARE_WIDE      3   /* log it: the CPU has no bit (>= MEMSHARE_MAX_CPUS) */

struct memshare {
	uint64_t *keys;          /* nslots: line address | 1, 0 empty */
	uint64_t *state;         /* nslots: the line's word (above) */
	uint32_t nslots;         /* a power of two */
};

/*
 * memshare_init - use keys[0..nslots) and state[0..nslots) (zeroed here);
 * nslots must be a power of two.  Returns 0 or -1 (bad arguments).
 */
int memshare_init(struct memshare *s, uint64_t *keys, uint64_t *state, uint32_t nslots);

/* memshare_reset - forget every line (all accesses logged again). */
void memshare_reset(struct memshare *s);

/*
 * memshare_access - CPU cpu reads (read), writes (write) or both the
 * line holding gpa: one of MEMSHARE_* above, the state updated.  An
 * access that neither reads nor writes is MEMSHARE_LOG, state untouched.
 */
int memshare_access(struct memshare *s, uint32_t cpu, uint64_t gpa, bool read, bool write);

/* memshare_logs - true for the answers that log the access. */
static inline bool memshare_logs(int answer)
{
	return answer != MEMSHARE_QUIET;
}

/*
 * memshare_step - the pure rule on one line's word: the new word in
 * *word, the answer MEMSHARE_QUIET/LOG/WIDE.  Exposed for the tests.
 */
int memshare_step(uint64_t *word, uint32_t cpu, bool read, bool write);

#endif /* TV_MEMSHARE_H */
