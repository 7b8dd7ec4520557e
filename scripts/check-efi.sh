#!/usr/bin/env bash
# check-efi.sh ELF - refuse an EFI image that the hypervisor must not ship:
#  1. no x87, MMX, SSE, AVX or AVX-512 instruction anywhere: code that runs in
#     VMX root must not touch the guest's floating-point/vector state, which
#     it never saves;
#  2. only R_X86_64_RELATIVE dynamic relocations: gnu-efi's _relocate applies
#     nothing else, anything more would be silently left unrelocated.
set -euo pipefail
elf=${1:?usage: check-efi.sh ELF}
fail=0

# Mnemonic is the first word of the second tab-separated field of objdump -d.
bad_insn=$(objdump -d --no-show-raw-insn "$elf" | awk -F'\t' '
	NF >= 2 && $1 ~ /^ *[0-9a-f]+:$/ {
		split($2, w, " "); m = w[1]; ops = $2
		if (m ~ /^(f[a-z0-9]*|emms|ldmxcsr|stmxcsr|vldmxcsr|vstmxcsr|xsave[a-z0-9]*|xrstor[a-z0-9]*)$/ ||
		    ops ~ /%(x|y|z)mm[0-9]+|%mm[0-7]|%st(\(|\b)|%k[0-7]/)
			print $1 " " $2
	}' | head -20)
if [ -n "$bad_insn" ]; then
	echo "check-efi: $elf contains x87/MMX/SSE/AVX instructions (not allowed in VMX-root code):" >&2
	echo "$bad_insn" >&2
	fail=1
fi

bad_rel=$(readelf -rW "$elf" | awk '$3 ~ /^R_X86_64_/ && $3 != "R_X86_64_RELATIVE" { print }' | head -20)
if [ -n "$bad_rel" ]; then
	echo "check-efi: $elf has dynamic relocations other than R_X86_64_RELATIVE:" >&2
	echo "$bad_rel" >&2
	fail=1
fi
nrel=$(readelf -rW "$elf" | grep -c R_X86_64_RELATIVE || true)

if [ "$fail" != 0 ]; then
	exit 1
fi
echo "check-efi: $(basename "$elf"): no x87/SSE/AVX instructions, $nrel R_X86_64_RELATIVE relocations only"
