/* SPDX-License-Identifier: MIT */
/*
 * error.c - strings for enum tvh_error.
 */
#include "host-tools/lib/error.h"

static const char *const tvh_err_names[TVH_ERR_MAX] = {
	[TVH_OK] = "success",
	[TVH_ERR_INVALID] = "invalid argument",
	[TVH_ERR_NOMEM] = "out of memory",
	[TVH_ERR_IO] = "I/O error",
	[TVH_ERR_MAGIC] = "bad magic",
	[TVH_ERR_VERSION] = "unsupported version",
	[TVH_ERR_HEADER] = "bad header field",
	[TVH_ERR_TRUNCATED] = "truncated",
	[TVH_ERR_CRC] = "checksum mismatch",
	[TVH_ERR_REC_SIZE] = "bad record size",
	[TVH_ERR_REC_TYPE] = "unknown record type",
	[TVH_ERR_REC_FIELD] = "record fields do not match its type",
	[TVH_ERR_REC_NO_PREV] = "compact branch without a preceding full branch",
	[TVH_ERR_ELF] = "bad or unsupported ELF file",
	[TVH_ERR_NOT_FOUND] = "not found",
	[TVH_ERR_PT] = "Intel PT decoding error",
	[TVH_ERR_LIMIT] = "output format limit exceeded",
};

const char *tvh_errstr(int err)
{
	if (err < 0)
		err = -err;
	if (err >= TVH_ERR_MAX || !tvh_err_names[err])
		return "unknown error";
	return tvh_err_names[err];
}
