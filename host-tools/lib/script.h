/* SPDX-License-Identifier: MIT */
/*
 * script.h - branches as text, one line each, symbolized (the output of
 * `tracevisor script`, in the spirit of `perf script`):
 *
 *   cpu0        100  jmp-ind   0x1e1f0d9b tv_traced+0x2b (traced.S:40) => 0x1e1f0d9d tv_traced+0x2d (traced.S:41)
 *   cpu0        101  call      0x1e1f0d9d ... => 0x1e1f0dca ... tsc=1097845400
 *
 * columns: CPU, sequence number, branch kind, from => to (each address
 * with func+off (file:line) or module+off when a module holds it), then
 * tsc=N when the record has one and the flags (mispred, in-tsx,
 * tsx-abort, lbr; pt@0xOFF for a branch decoded from Intel PT, with the
 * decoder's stream offset: its sequence number is then the branch's index
 * among the CPU's PT branches, ptbranch.h).  Losses, malformed records
 * (with their file offset) and damaged chunks always print, as dump
 * prints them (dump.h); other records only when asked (all).
 */
#ifndef TVH_SCRIPT_H
#define TVH_SCRIPT_H

#include <stdbool.h>
#include <stdio.h>

#include "host-tools/lib/dump.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/walk.h"

struct tvh_script {
	FILE *out;
	struct tvh_symtab *st;   /* NULL or empty: addresses only */
	bool all;                /* also the records that are not branches */
	struct tvh_dump dump;    /* for everything but branches */
	uint64_t branches;       /* lines printed */
};

void tvh_script_init(struct tvh_script *s, FILE *out, struct tvh_symtab *st,
		     bool all);

/* A tvh_walk/tvh_pwalk callback (ctx = struct tvh_script).  Returns 0. */
int tvh_script_event(void *ctx, const struct tvh_event *ev);

#endif /* TVH_SCRIPT_H */
