#!/usr/bin/env bash
# build/check-efi.sh - the build's guard against SSE/x87 code and foreign
# relocations accepts the real image and refuses images that break either rule.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
work=$TV_BUILD/test/check-efi
mkdir -p "$work"
check=$TV_ROOT/scripts/check-efi.sh

if bash "$check" "$TV_BUILD/tracevisor.so" >"$work/good.log" 2>&1; then
	tv_ok "check-efi: tracevisor.so accepted"
else
	tv_fail "check-efi: tracevisor.so accepted" "$(cat "$work/good.log")"
fi

# SSE: a double multiply compiled without -mgeneral-regs-only.
printf 'double scale(double x) { return x * 3.5; }\n' >"$work/sse.c"
gcc -O2 -fPIC -shared -nostdlib "$work/sse.c" -o "$work/sse.so"
if bash "$check" "$work/sse.so" >"$work/sse.log" 2>&1; then
	tv_fail "check-efi: SSE code refused" "accepted $work/sse.so"
elif grep -q 'xmm' "$work/sse.log"; then
	tv_ok "check-efi: SSE code refused"
else
	tv_fail "check-efi: SSE code refused" "refused for another reason: $(cat "$work/sse.log")"
fi

# x87: long double arithmetic.
printf 'long double half(long double x) { return x / 2; }\n' >"$work/x87.c"
gcc -O2 -fPIC -shared -nostdlib "$work/x87.c" -o "$work/x87.so"
if bash "$check" "$work/x87.so" >/dev/null 2>&1; then
	tv_fail "check-efi: x87 code refused" "accepted $work/x87.so"
else
	tv_ok "check-efi: x87 code refused"
fi

# A symbol relocation (R_X86_64_GLOB_DAT / 64) that _relocate would ignore.
printf 'extern int other; int *p = &other;\n' >"$work/rel.c"
gcc -O2 -fPIC -mgeneral-regs-only -shared -nostdlib "$work/rel.c" -o "$work/rel.so"
if bash "$check" "$work/rel.so" >"$work/rel.log" 2>&1; then
	tv_fail "check-efi: non-RELATIVE relocation refused" "accepted $work/rel.so"
elif grep -q 'R_X86_64_' "$work/rel.log"; then
	tv_ok "check-efi: non-RELATIVE relocation refused"
else
	tv_fail "check-efi: non-RELATIVE relocation refused" "$(cat "$work/rel.log")"
fi
