/* SPDX-License-Identifier: MIT */
/*
 * backend.c - the backend table, generated from TV_SOURCE_LIST
 * (vmm/trace/format.h): each listed source ID has its
 * `trace_backend_<ID>` (vmm/trace/backend/), or the image does not link.
 */
#include "vmm/trace/backend.h"

#define TRACE_BACKEND_DECL_(id, value, name, pmi, desc) extern const struct trace_backend trace_backend_##id;
TV_SOURCE_LIST(TRACE_BACKEND_DECL_)
#undef TRACE_BACKEND_DECL_

static const struct trace_backend *const backends[TV_SOURCE_COUNT] = {
#define TRACE_BACKEND_ENTRY_(id, value, name, pmi, desc) [value] = &trace_backend_##id,
	TV_SOURCE_LIST(TRACE_BACKEND_ENTRY_)
#undef TRACE_BACKEND_ENTRY_
};

const struct trace_backend *trace_backend_of(unsigned s)
{
	return s < TV_SOURCE_COUNT ? backends[s] : NULL;
}
