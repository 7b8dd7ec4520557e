/* SPDX-License-Identifier: MIT */
/*
 * error.h - error codes of the host tools library.
 *
 * Every function of the library returns 0 (or a positive count) on
 * success and a negative enum tvh_error on failure; tvh_errstr() names
 * each code.  Codes are stable: tests and the CLI compare against them.
 */
#ifndef TVH_ERROR_H
#define TVH_ERROR_H

enum tvh_error {
	TVH_OK = 0,
	TVH_ERR_INVALID = 1,     /* bad argument (NULL, out of range, bad syntax) */
	TVH_ERR_NOMEM,           /* allocation failed */
	TVH_ERR_IO,              /* read/write/open/mmap failed (errno kept) */
	TVH_ERR_MAGIC,           /* file or chunk magic wrong */
	TVH_ERR_VERSION,         /* file version this reader does not know */
	TVH_ERR_HEADER,          /* a header field out of range */
	TVH_ERR_TRUNCATED,       /* data ends inside a structure */
	TVH_ERR_CRC,             /* chunk checksum mismatch */
	TVH_ERR_REC_SIZE,        /* record size < 8, not a multiple of 8 or > max */
	TVH_ERR_REC_TYPE,        /* record type unknown */
	TVH_ERR_REC_FIELD,       /* record size or field does not fit its type */
	TVH_ERR_REC_NO_PREV,     /* compact branch without a full branch before it */
	TVH_ERR_ELF,             /* ELF file unreadable or unsuitable */
	TVH_ERR_NOT_FOUND,       /* no module/symbol/CPU/stream for the request */
	TVH_ERR_PT,              /* libipt reported an error */
	TVH_ERR_LIMIT,           /* an output format limit was exceeded */
	TVH_ERR_MAX
};

/* A human readable string for err (either sign); never NULL. */
const char *tvh_errstr(int err);

#endif /* TVH_ERROR_H */
