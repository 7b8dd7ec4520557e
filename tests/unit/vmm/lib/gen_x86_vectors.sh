#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# gen_x86_vectors.sh [OUT] - ground-truth vectors for tests/unit/vmm/lib/test_x86_decode.c.
#
# The decoder's tables are checked against a second opinion that shares
# nothing with them: GNU objdump disassembling real code.  Sources (each is
# skipped with a note on stderr when missing):
#   64-bit: /usr/bin/bash, the system libc and libcrypto (hand-written
#           SSE/AVX/AVX-512 code), a C corpus compiled here for several
#           -march levels, and an assembler file of edge cases
#   32-bit: /usr/lib32/libc.so.6, the C corpus built with -m32, edge cases
#   16-bit: the C corpus built with -m16 (.code16gcc, disassembled with
#           -M i8086), edge cases in .code16
# Large binaries are sampled: the first few instructions of every
# (mnemonic, length) pair plus every Nth one; the compiled corpus and the
# edge cases are kept whole.
#
# Output (OUT, default build/x86_vectors.txt), one instruction a line:
#   MODE ADDR HEXBYTES CLASS TARGET MNEMONIC SOURCE
# MODE 16/32/64; ADDR hex ("-" when unknown); CLASS from objdump's
# mnemonic (none jcc jmp jmp_ind call call_ind ret far_jmp far_call
# far_ret int syscall sysret iret); TARGET objdump's hex target of a
# direct near branch, "-" otherwise.
#
# objdump runs with -M intel64 for 64-bit code (Intel semantics: 66 does
# not shorten near branches), --insn-width=15 so every byte is on one line.
# Lines objdump prints as prefixes alone (a REX before a legacy prefix,
# which the CPU ignores) are merged into the next instruction; FWAIT
# merged into an x87 mnemonic (9B D9 /7 "fstcw") is split back into the
# two instructions the CPU executes.  Lines with "(bad)" and ".byte" are
# dropped.  Libraries carry data in .text (tables), so some vectors are
# objdump's view of data: still a fair test of sizing.
#
# Exit status: 0 written, 77 objdump missing (the test skips), 1 error.
set -euo pipefail

out=${1:-build/x86_vectors.txt}

if ! command -v objdump >/dev/null 2>&1; then
	echo "gen_x86_vectors: objdump not found" >&2
	exit 77
fi
have_gcc=1
command -v gcc >/dev/null 2>&1 || have_gcc=0
have_as=1
command -v as >/dev/null 2>&1 || have_as=0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
vec=$tmp/vectors.txt
: >"$vec"

# emit MODE LABEL KEEP_PER_KEY EVERY_NTH OBJDUMP-ARGS... : disassemble, classify, sample
emit() {
	local mode=$1 label=$2 keep=$3 nth=$4
	shift 4
	objdump -d --insn-width=15 "$@" 2>/dev/null | awk -v mode="$mode" -v src="$label" \
		-v keep="$keep" -v nth="$nth" '
	function isprefix(w) {
		return w ~ /^(cs|ds|es|ss|fs|gs|data16|data32|addr16|addr32|lock|rep|repz|repnz|repe|repne|bnd|notrack|xacquire|xrelease)$/ ||
		       w ~ /^rex(\.[WRXB]+)?$/ || w ~ /^rex64$/ || w ~ /^\{/
	}
	function classify(m, ops) {
		sub(/,p[nt]$/, "", m)
		if (m ~ /^jmp[wlq]?$/) return (ops ~ /^\*/) ? "jmp_ind" : "jmp"
		if (m ~ /^ljmp[wlq]?$/) return "far_jmp"
		if (m ~ /^call[wlq]?$/) return (ops ~ /^\*/) ? "call_ind" : "call"
		if (m ~ /^lcall[wlq]?$/) return "far_call"
		if (m ~ /^ret[wlq]?$/) return "ret"
		if (m ~ /^lret[wlq]?$/) return "far_ret"
		if (m ~ /^loop/ || m ~ /^j/) return "jcc"
		if (m ~ /^(int|int3|into|int1|icebp)$/) return "int"
		if (m ~ /^(syscall|sysenter)$/) return "syscall"
		if (m ~ /^(sysret|sysexit)[lq]?$/) return "sysret"
		if (m ~ /^iret[wdlq]?$/) return "iret"
		return "none"
	}
	function put(addr, hex, cls, tgt, mn) {
		printf "%s %s %s %s %s %s %s\n", mode, addr, hex, cls, tgt, mn, src
	}
	/^ *[0-9a-f]+:\t/ {
		n = split($0, f, "\t")
		addr = f[1]; sub(/^ +/, "", addr); sub(/:$/, "", addr)
		hex = f[2]; gsub(/ /, "", hex)
		text = (n >= 3) ? f[3] : ""
		nw = split(text, w, /[ \t]+/)
		i = 1
		while (i <= nw && (w[i] == "" || isprefix(w[i]))) i++
		if (i > nw) {   # prefixes only: they belong to the next line
			if (pend == "") pend_addr = addr
			pend = pend hex
			next
		}
		if (pend != "") { hex = pend hex; addr = pend_addr; pend = "" }
		mn = w[i]
		ops = (i + 1 <= nw) ? w[i + 1] : ""
		if (text ~ /\(bad\)/ || mn ~ /^\./ || mn == "?") next
		cls = classify(mn, ops)
		tgt = "-"
		if (cls == "jcc" || cls == "jmp" || cls == "call") {
			t = ops; sub(/^0x/, "", t)
			if (t ~ /^[0-9a-f]+$/) tgt = t
		}
		total++
		key = mn "/" length(hex)
		if (src !~ /^(cc|asm)/ && ++seen[key] > keep && total % nth != 0) next
		# FWAIT (9B) is an instruction of its own to the CPU, objdump
		# folds it into a following x87 one.  Split it off; drop the
		# rarer prefixes + 9B + x87 lines that have no such split.
		if (substr(hex, 1, 2) == "9b" && length(hex) > 2) {
			while (substr(hex, 1, 2) == "9b" && length(hex) > 2) {
				put(addr, "9b", "none", "-", "fwait")
				hex = substr(hex, 3)
				addr = "-"
			}
			put("-", hex, cls, "-", mn)
			next
		}
		for (k = 1; k < length(hex); k += 2) {
			b = substr(hex, k, 2)
			if (b == "9b") next
			if (b !~ /^(26|2e|36|3e|64|65|66|67|f0|f2|f3)$/ && !(mode == 64 && b ~ /^4/)) break
		}
		put(addr, hex, cls, tgt, mn)
	}' >>"$vec" || echo "gen_x86_vectors: objdump $* failed, skipped" >&2
}

# --- real binaries -----------------------------------------------------------
for f in /usr/bin/bash /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libcrypto.so.3; do
	if [ -r "$f" ]; then
		emit 64 "$(basename "$f")" 3 97 -M intel64 -j .text "$f"
	else
		echo "gen_x86_vectors: $f missing, skipped" >&2
	fi
done
if [ -r /usr/lib32/libc.so.6 ]; then
	emit 32 lib32-libc.so.6 3 97 -j .text /usr/lib32/libc.so.6
else
	echo "gen_x86_vectors: /usr/lib32/libc.so.6 missing, skipped" >&2
fi

# --- a compiled C corpus (never run: only disassembled) ------------------------
cat >"$tmp/corpus.c" <<'EOF'
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int (*fn_t)(int);
extern int ext(int);
extern void ext2(void *, int);
short arr16[64];
u8 bytes[256];
struct mix { char c; short h; int i; long long q; double d; } gmix;

int table_switch(int x, fn_t f)
{
	switch (x) {
	case 0: return f(1);
	case 1: return arr16[x] + 1;
	case 2: return ext(x * 3);
	case 3: return x * 7;
	case 4: return 9;
	case 5: return 11 + f(x);
	case 6: return bytes[x];
	case 7: return ext(-x);
	case 8: return 0x12345;
	default: return f(x) + arr16[x & 63];
	}
}
u16 arith16(u16 a, u16 b) { return (u16)((a * b) ^ (a >> 3) ^ (u16)(b << 5) ^ (a / (b | 1))); }
short neg16(short *p, int i) { p[i] = (short)-p[i]; return (short)(p[i] * 0x1234); }
u64 arith64(u64 a, u64 b) { return a / (b | 1) + a % (b | 1) * (a << (b & 63)) + (a >> (b & 7)); }
long long smul(long long a, long long b) { return a * b - (a >> 40); }
int sum(const int *p, int n) { int s = 0; for (int i = 0; i < n; i++) s += p[i] * 3 + (p[i] >> 2); return s; }
void scale(float *restrict a, const float *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = a[i] * b[i] + 2.5f; }
void dscale(double *restrict a, const double *restrict b, int n) { for (int i = 0; i < n; i++) a[i] = a[i] / b[i] - b[i]; }
void bytemix(u8 *restrict d, const u8 *restrict s, int n) { for (int i = 0; i < n; i++) d[i] = (u8)(s[i] ^ (s[i] >> 1) ^ 0x5a); }
void shortmix(u16 *restrict d, const u16 *restrict s, int n) { for (int i = 0; i < n; i++) d[i] = (u16)(s[i] * 3 + d[i]); }
void copy(char *d, const char *s, int n) { __builtin_memcpy(d, s, (unsigned)n); __builtin_memset(d + n, 0, 64); }
double fp(double a, double b) { return a * b + a / b - (double)(long long)a; }
float fp32(float a, int i) { return a * (float)i + (float)(u32)i; }
int bits(u32 x, u64 y) { return __builtin_popcount(x) + __builtin_ctz(x | 1) + __builtin_clz(x | 1) + __builtin_popcountll(y) + __builtin_ctzll(y | 1); }
u32 bswap(u32 x, u64 y) { return __builtin_bswap32(x) ^ (u32)__builtin_bswap64(y) ^ __builtin_bswap16((u16)x); }
int atomics(int *p, long long *q) { return __sync_fetch_and_add(p, 1) + __sync_val_compare_and_swap(p, 1, 2) + (int)__sync_fetch_and_or(q, 3) + (int)__sync_bool_compare_and_swap(q, 5, 6); }
void *computed(int i) { static void *t[] = { &&l0, &&l1, &&l2 }; goto *t[i % 3]; l0: return 0; l1: return t; l2: return &t[1]; }
int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int cmov(int a, int b, int c) { return a < b ? c : a > c ? b : a; }
int tail(int x) { if (x > 3) return ext(x + 1); return ext2(&x, x), x; }
void stores(struct mix *p) { p->c = 1; p->h = 0x1234; p->i = 0x12345678; p->q = 0x123456789abcdefLL; p->d = 1.5; }
int lookup(int i) { return bytes[i & 255] + arr16[(i >> 8) & 63]; }
int strlen_like(const char *s) { const char *p = s; while (*p) p++; return (int)(p - s); }
int cmp(const u8 *a, const u8 *b, int n) { for (int i = 0; i < n; i++) if (a[i] != b[i]) return a[i] - b[i]; return 0; }
u64 big_const(u64 x) { return x * 0x9e3779b97f4a7c15ull + 0x123456789ull; }
int bigframe(int x) { volatile char buf[5000]; buf[x] = 1; buf[4999] = (char)x; return buf[x + 1]; }
int many_args(int a, int b, int c, int d, int e, int f, int g, int h) { return ext(a + b * c - d / (e | 1) + f % (g | 1) + h); }
EOF

cc_variant() {   # cc_variant MODE LABEL GCC-FLAGS...
	local mode=$1 label=$2
	shift 2
	if gcc -c -ffreestanding -fno-asynchronous-unwind-tables "$@" "$tmp/corpus.c" \
		-o "$tmp/$label.o" 2>"$tmp/$label.err"; then
		if [ "$mode" = 16 ]; then
			emit 16 "cc-$label" 0 1 -M i8086 "$tmp/$label.o"
		elif [ "$mode" = 64 ]; then
			emit 64 "cc-$label" 0 1 -M intel64 "$tmp/$label.o"
		else
			emit 32 "cc-$label" 0 1 "$tmp/$label.o"
		fi
	else
		echo "gen_x86_vectors: gcc $* failed, skipped ($(head -1 "$tmp/$label.err"))" >&2
	fi
}

if [ "$have_gcc" = 1 ]; then
	cc_variant 64 m64-O2 -O2
	cc_variant 64 m64-Os-large -Os -mcmodel=large -fno-pic
	cc_variant 64 m64-haswell -O3 -march=haswell
	cc_variant 64 m64-avx512 -O3 -march=skylake-avx512 -mprefer-vector-width=512
	cc_variant 64 m64-spr -O3 -march=sapphirerapids
	cc_variant 32 m32-O2 -m32 -O2 -fno-pic
	cc_variant 32 m32-pic-387 -m32 -O2 -fpic -mfpmath=387
	cc_variant 32 m32-haswell -m32 -O3 -march=haswell
	cc_variant 32 m32-avx512 -m32 -O3 -march=skylake-avx512 -mprefer-vector-width=512
	cc_variant 16 m16-O2 -m16 -O2
	cc_variant 16 m16-Os -m16 -Os -march=i686
	cc_variant 16 m16-avx512 -m16 -O3 -march=skylake-avx512 -mprefer-vector-width=512
else
	echo "gen_x86_vectors: gcc missing, compiled corpus skipped" >&2
fi

# --- edge cases, assembled by gas ----------------------------------------------
cat >"$tmp/edge64.s" <<'EOF'
	.code64
	.text
a64:
	jmp a64
	jmp far64
	je a64
	jne far64
	jrcxz a64
	jecxz a64
	loop a64
	loope a64
	loopne a64
	call far64
	call *%rax
	call *(%rax)
	call *0x10(%rip)
	call *0x12345678(%rsp,%rbx,4)
	jmp *%r11
	jmp *(%rax,%rcx,8)
	notrack jmp *%rax
	bnd jmp *%rax
	bnd call far64
	bnd ret
	repz ret
	lcall *(%rax)
	ljmp *(%rax)
	.byte 0x48, 0xff, 0x18
	.byte 0x48, 0xff, 0x28
	.byte 0x66, 0xff, 0x18
	ret
	ret $8
	lret
	lret $16
	lretq
	iretq
	iret
	iretw
	syscall
	sysret
	sysretq
	sysenter
	sysexit
	.byte 0x48, 0x0f, 0x35
	int3
	int $0x80
	.byte 0xf1
	ud2
	.byte 0x0f, 0xb9, 0xc0
	.byte 0x0f, 0xff, 0x40, 0x10
	.byte 0x66, 0xe8, 0x00, 0x00, 0x00, 0x00
	.byte 0x66, 0xe9, 0x00, 0x00, 0x00, 0x00
	.byte 0x66, 0x0f, 0x85, 0x00, 0x00, 0x00, 0x00
	.byte 0x66, 0xeb, 0x00
	.byte 0x66, 0xc3
	.byte 0x66, 0xc2, 0x08, 0x00
	.byte 0x48, 0x66, 0x90
	.byte 0x2e, 0x74, 0x00
	.byte 0x3e, 0x75, 0x00
	movabs $0x1122334455667788, %rax
	movabs $0x1122334455667788, %r15
	movabs 0x1122334455667788, %al
	movabs 0x1122334455667788, %rax
	movabs %eax, 0x1122334455667788
	.byte 0x67, 0xa0, 0x44, 0x33, 0x22, 0x11
	.byte 0x66, 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8
	.byte 0x66, 0xb8, 0x34, 0x12
	mov $0x12345678, %eax
	mov $0x1234, %cx
	mov $0x12, %r8b
	mov $-1, %rax
	movq $0x12345678, 0x10(%rsp)
	movw $0x1234, (%rax)
	movb $1, 0x12345678(%rip)
	movw $0x1234, 0x12345678(%rip)
	enter $0x10, $1
	leave
	push $0x12345678
	pushw $0x1234
	push $1
	push %fs
	pop %gs
	push %r12
	pushq 8(%rax)
	popq (%rax)
	imul $0x1000, %eax, %ebx
	imul $3, %rax, %rbx
	imul $0x1234, %ax, %bx
	testb $1, (%rax)
	testl $0x10000, (%rax)
	testw $1, (%rax)
	testq $1, 0x12(%rax,%rbx,2)
	.byte 0xf6, 0x08, 0x01
	.byte 0xf7, 0xc8, 0x01, 0x00, 0x00, 0x00
	.byte 0x66, 0xf7, 0xc8, 0x01, 0x00
	test $1, %al
	test $0x12345678, %eax
	test $0x1234, %ax
	notl (%rax)
	negq %rax
	mulb (%rcx)
	idivl 4(%rsp)
	mov %cr0, %rax
	mov %rax, %cr3
	mov %cr8, %rax
	mov %dr7, %rax
	mov %rax, %dr0
	.byte 0x0f, 0x20, 0x00
	.byte 0x0f, 0x22, 0x45
	.byte 0x0f, 0x21, 0x84
	mov 0x12345678(,%rax,8), %rbx
	mov (%rbp), %rax
	mov (%r13), %rax
	mov (%r12), %rax
	mov (%rsp), %rax
	mov 0x1000(%rip), %rax
	lea 0x10(%rsp), %rax
	lea (%rax,%rbx), %rcx
	lea (%r13,%r12,2), %rcx
	mov 0x11223344, %eax
	mov %fs:0x28, %rax
	mov (%eax), %eax
	mov 0x10(%ebp,%eax,4), %eax
	add $1, %al
	add $0x12345678, %eax
	add $0x12345678, %rax
	add $0x1234, %ax
	addw $0x1234, (%rax)
	add $1, %r9d
	adcb $1, (%rax)
	sbbl $0x12345678, (%rax)
	cmpq $-1, 8(%rsp)
	xbegin a64
	xabort $1
	xend
	xtest
	in $0x60, %al
	out %al, $0x80
	in (%dx), %eax
	outsb
	rep movsb
	rep stosq
	repne scasb
	lock cmpxchg %rcx, (%rdx)
	lock xadd %eax, (%rdx)
	cmpxchg16b (%rax)
	xchg %rax, %rbx
	bswap %eax
	bswap %r9
	cpuid
	rdmsr
	wrmsr
	rdtsc
	rdtscp
	rdpmc
	hlt
	pause
	nop
	clc
	cli
	sti
	cld
	cmc
	sahf
	lahf
	cwtl
	cltq
	cqto
	xlat
	nopw 0x0(%rax,%rax,1)
	nopl 0x0(%rax)
	cs nopw 0x0(%rax,%rax,1)
	.byte 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0
	endbr64
	movslq %eax, %rbx
	movzbl (%rax), %eax
	movswq (%rax), %rax
	cmovne %rax, %rbx
	sete %al
	setg (%rax)
	bt $3, %eax
	btsq $63, (%rax)
	btr %eax, (%rbx)
	btc $1, %ax
	shld $3, %eax, %ebx
	shrd %cl, %eax, %ebx
	rol $3, %eax
	shl %eax
	sar %cl, %rax
	rcrb $2, (%rax)
	incb (%rax)
	decw (%rax)
	incq %rax
	popcnt %eax, %ebx
	tzcnt %eax, %ebx
	lzcnt %rax, %rbx
	movbe (%rax), %eax
	crc32b %al, %eax
	crc32q %rax, %rbx
	adcx %rax, %rbx
	adox %eax, %ebx
	mulx %rax, %rbx, %rcx
	rorx $3, %eax, %ebx
	shlx %eax, %ebx, %ecx
	andn %eax, %ebx, %ecx
	bextr %eax, %ebx, %ecx
	pdep %rax, %rbx, %rcx
	blsr %eax, %ebx
	rdrand %eax
	rdseed %rax
	rdpid %rax
	xgetbv
	xsetbv
	xsave (%rax)
	xrstor (%rax)
	xsavec (%rax)
	xsaves 0x10(%rax)
	fxsave (%rax)
	vmcall
	vmlaunch
	vmresume
	vmxoff
	vmread %rax, %rbx
	vmwrite %rax, %rbx
	vmptrld (%rax)
	vmptrst (%rax)
	vmclear (%rax)
	vmxon (%rax)
	invept (%rax), %rax
	invvpid (%rax), %rax
	vmfunc
	swapgs
	lgdt (%rax)
	sgdt (%rax)
	lidt (%rax)
	sidt 2(%rax)
	lldt %ax
	sldt %ax
	ltr %ax
	str %ax
	verr %ax
	lmsw %ax
	smsw %eax
	invlpg (%rax)
	invpcid (%rax), %rax
	clts
	invd
	wbinvd
	clflush (%rax)
	clflushopt (%rax)
	clwb (%rax)
	prefetcht0 (%rax)
	prefetchnta 0x40(%rax)
	prefetchw (%rax)
	lfence
	mfence
	sfence
	monitor
	mwait
	clac
	stac
	rdfsbase %rax
	wrgsbase %rax
	lar %ax, %bx
	lsl %eax, %ebx
	getsec
	fld1
	fldl (%rax)
	fstps 4(%rsp)
	fnstcw (%rax)
	fldcw (%rax)
	fwait
	fstcw (%rax)
	fstsw %ax
	faddp %st, %st(1)
	fxch %st(2)
	fildll (%rax)
	fistpl (%rax)
	fnstsw %ax
	fucomip %st(1), %st
	movaps %xmm0, %xmm1
	movdqa (%rax), %xmm2
	movdqu %xmm3, (%rbx)
	pxor %xmm0, %xmm0
	pshufd $0x1b, %xmm0, %xmm1
	pshufw $1, %mm0, %mm1
	psrldq $4, %xmm0
	psllw $2, %mm0
	palignr $3, %xmm0, %xmm1
	pextrw $1, %xmm0, %eax
	pinsrw $2, %eax, %xmm0
	shufps $1, %xmm0, %xmm1
	cmpps $1, %xmm0, %xmm1
	pcmpestri $0, %xmm0, %xmm1
	pshufb %xmm0, %xmm1
	aesenc %xmm0, %xmm1
	aeskeygenassist $1, %xmm0, %xmm1
	pclmulqdq $0, %xmm0, %xmm1
	sha256rnds2 %xmm0, %xmm1, %xmm2
	roundsd $1, %xmm0, %xmm1
	cvtsi2sd %rax, %xmm0
	movq %rax, %xmm0
	movd %eax, %mm0
	emms
	ldmxcsr (%rax)
	lddqu (%rax), %xmm0
	haddps %xmm0, %xmm1
	movnti %eax, (%rbx)
	maskmovq %mm0, %mm1
	vmovaps %ymm0, %ymm1
	vpaddd %ymm0, %ymm1, %ymm2
	vpaddd 0x100(%rax), %ymm1, %ymm2
	vpshufd $1, %ymm0, %ymm1
	vpermq $1, %ymm0, %ymm1
	vpermilps $1, (%rax), %ymm0
	vzeroupper
	vzeroall
	vblendvps %xmm3, %xmm2, %xmm1, %xmm0
	vpsrldq $3, %ymm0, %ymm1
	vcmpps $1, %ymm0, %ymm1, %ymm2
	vpextrw $1, %xmm0, %eax
	vpinsrw $1, %eax, %xmm0, %xmm1
	vshufps $1, %ymm0, %ymm1, %ymm2
	vfmadd231ps %ymm0, %ymm1, %ymm2
	vpbroadcastd %xmm0, %ymm1
	vgatherdps %ymm0, (%rax,%ymm1,4), %ymm2
	vmovdqu %ymm8, (%r9)
	vpxor %ymm15, %ymm14, %ymm13
	vmovdqu 0x12345678(%rip), %ymm3
	kmovw %k1, %eax
	kmovq %k1, %k2
	kandw %k1, %k2, %k3
	vldmxcsr (%rax)
	vpaddd %zmm1, %zmm2, %zmm3
	vpaddd 0x40(%rax), %zmm2, %zmm3{%k1}{z}
	vpaddd (%rax){1to16}, %zmm2, %zmm3
	vpshufd $1, %zmm0, %zmm1
	vpsrldq $3, %zmm0, %zmm1
	vcmpps $1, %zmm1, %zmm2, %k1
	vpcmpd $1, %zmm1, %zmm2, %k1
	vmovdqu64 0x40(%rax), %zmm1
	vmovdqu8 %zmm31, 0x1000(%r15)
	vpternlogd $0xff, %zmm0, %zmm1, %zmm2
	vextracti64x4 $1, %zmm0, %ymm1
	vpermt2d %zmm0, %zmm1, %zmm2
	vaddps {rn-sae}, %zmm0, %zmm1, %zmm2
	vpextrw $1, %xmm16, %eax
	vpinsrw $1, %eax, %xmm16, %xmm17
	vshufps $1, %zmm0, %zmm1, %zmm2
	vmovdqu32 0x12345678(%rip), %zmm20
	vaddph %zmm1, %zmm2, %zmm3
	vfmadd132ph %zmm1, %zmm2, %zmm3
	vcmpph $1, %zmm1, %zmm2, %k1
	ldtilecfg (%rax)
	tileloadd (%rax,%rbx,1), %tmm0
	tdpbssd %tmm0, %tmm1, %tmm2
	tilerelease
EOF

cat >"$tmp/edge32.s" <<'EOF'
	.code32
	.text
a32:
	jmp a32
	jmp far32
	je far32
	jne a32
	jcxz a32
	jecxz a32
	loop a32
	addr16 loop a32
	call far32
	call *%eax
	call *(%eax)
	call *0x10(%ebx,%esi,4)
	jmp *%eax
	jmp *a32(,%eax,4)
	ljmp $0x10, $0x12345678
	lcall $0x10, $0x12345678
	ljmpw $0x10, $0x1234
	lcallw $0x10, $0x1234
	ljmp *(%eax)
	lcall *(%eax)
	ljmpw *(%eax)
	ret
	ret $4
	lret
	lret $8
	lretw
	iret
	iretw
	into
	int3
	int $0x21
	.byte 0xf1
	sysenter
	sysexit
	syscall
	sysret
	.byte 0x66, 0xe9, 0x10, 0x00
	.byte 0x66, 0xe8, 0x00, 0x00
	.byte 0x66, 0x0f, 0x84, 0x00, 0x00
	.byte 0x66, 0xeb, 0xfe
	.byte 0x66, 0x74, 0x00
	.byte 0x66, 0xc3
	aaa
	aas
	daa
	das
	aam
	aad
	aam $16
	aad $16
	pusha
	popa
	push %es
	pop %ds
	push %cs
	push %ss
	pop %ss
	bound %eax, (%ebx)
	bound %ax, 0x10(%ebx)
	les (%eax), %ebx
	lds 4(%esp), %esi
	les (%eax), %bx
	arpl %ax, (%ebx)
	.byte 0x82, 0xc0, 0x01
	mov 0x12345678, %eax
	mov %al, 0x12345678
	.byte 0x67, 0xa1, 0x34, 0x12
	.byte 0x66, 0x67, 0xa1, 0x34, 0x12
	mov (%bx,%si), %eax
	mov 0x1234(%bp), %eax
	mov 0x12(%bp,%di), %ax
	lea 0x1234, %eax
	.byte 0x67, 0x8d, 0x06, 0x34, 0x12
	.byte 0x67, 0x8b, 0x46, 0x00
	mov (%esp), %eax
	mov (%ebp), %eax
	mov 0x12345678(,%eax,4), %ebx
	mov 0x11223344, %ecx
	mov $0x12345678, %eax
	mov $0x1234, %ax
	movw $0x1234, (%eax)
	movl $1, (%eax)
	push $0x12345678
	pushw $0x1234
	push $1
	enter $8, $0
	imul $0x1234, %ax, %bx
	test $0x1234, %ax
	testw $0x1234, (%eax)
	testl $0x12345678, 0x10(%eax,%ebx,2)
	vpaddd %ymm0, %ymm1, %ymm2
	vpermq $1, %ymm0, %ymm1
	vzeroupper
	vblendvps %xmm3, %xmm2, %xmm1, %xmm0
	vpextrw $1, %xmm0, %eax
	vmovdqu 0x12345678, %ymm1
	vpaddd %zmm1, %zmm2, %zmm3
	vpaddd 0x40(%eax), %zmm2, %zmm3{%k1}
	vpshufd $1, %zmm0, %zmm1
	vcmpps $1, %zmm1, %zmm2, %k1
	kmovw %k1, %eax
	fld1
	fnstcw (%eax)
	fstcw (%eax)
	mov %cr0, %eax
	mov %eax, %cr3
	mov %dr7, %eax
	in $0x60, %al
	outl %eax, (%dx)
	rep movsl
	lock cmpxchg8b (%eax)
	inc %eax
	dec %ecx
	inc %ax
	cpuid
	vmcall
	ud2
EOF

cat >"$tmp/edge16.s" <<'EOF'
	.code16
	.text
a16:
	jmp a16
	jmp far16
	je far16
	jne a16
	call far16
	calll far16
	jcxz a16
	jecxz a16
	loop a16
	addr32 loop a16
	call *%ax
	call *(%bx)
	call *0x10(%bx,%si)
	jmp *%ax
	jmp *(%bx,%di)
	calll *(%bx)
	.byte 0xeb, 0xe0
	.byte 0xe9, 0x00, 0xf0
	.byte 0x66, 0xe9, 0x00, 0xf0, 0xff, 0xff
	.byte 0x0f, 0x84, 0x00, 0x80
	.byte 0x66, 0x0f, 0x84, 0x00, 0x00, 0x00, 0x00
	ljmp $0x1000, $0x1234
	ljmpl $0x10, $0x12345678
	lcall $0xf000, $0xfff0
	lcall *(%bx)
	ljmp *(%si)
	ljmpl *(%si)
	ret
	ret $2
	lret
	lret $4
	retl
	lretl
	iret
	iretl
	int $0x10
	int3
	into
	.byte 0xf1
	mov 0x1234, %ax
	mov %al, 0x1234
	addr32 mov 0x12345678, %eax
	mov (%bx,%si), %ax
	mov 0x12(%bp), %ax
	mov (%bp), %ax
	mov 0x1234(%bp,%di), %ax
	mov 0x1234, %bx
	mov (%si), %ax
	mov (%eax,%ebx,4), %ax
	mov 0x12345678(%eax), %ax
	mov (%esp), %ax
	mov (%ebp), %ax
	mov 0x12345678(,%ecx,2), %edx
	mov $0x1234, %ax
	mov $0x12345678, %eax
	movw $0x1234, (%bx)
	movl $0x12345678, (%bx)
	movl $0x12345678, 0x1234(%bx,%si)
	push $0x1234
	pushl $0x12345678
	push $1
	enter $4, $0
	imul $0x1234, %ax, %bx
	imul $0x12345678, %eax, %ebx
	test $0x1234, %ax
	testw $0x1234, (%bx)
	testl $0x12345678, (%bx)
	add $0x1234, %ax
	add $0x12345678, %eax
	lgdt (%bx)
	lidt 0x10(%si)
	mov %cr0, %eax
	mov %eax, %cr0
	les (%bx), %ax
	lds (%si), %si
	bound %ax, (%bx)
	pusha
	popa
	pushf
	popf
	pushfl
	aam
	aad
	daa
	rep movsb
	rep movsw
	rep movsl
	in $0x60, %al
	outb %al, $0x80
	cli
	hlt
	vpaddd %xmm0, %xmm1, %xmm2
	vpermq $1, %ymm0, %ymm1
	vpaddd %zmm1, %zmm2, %zmm3
	vpaddd 0x40(%bx), %zmm2, %zmm3
EOF

if [ "$have_as" = 1 ]; then
	for m in 64 32 16; do
		if [ "$m" = 64 ]; then asflag=--64; else asflag=--32; fi
		if as "$asflag" "$tmp/edge$m.s" -o "$tmp/edge$m.o" 2>"$tmp/edge$m.err"; then
			case $m in
			64) emit 64 asm-edge64 0 1 -M intel64 "$tmp/edge64.o" ;;
			32) emit 32 asm-edge32 0 1 "$tmp/edge32.o" ;;
			16) emit 16 asm-edge16 0 1 -M i8086 "$tmp/edge16.o" ;;
			esac
		else
			echo "gen_x86_vectors: as edge$m.s failed, skipped:" >&2
			head -5 "$tmp/edge$m.err" >&2
		fi
	done
else
	echo "gen_x86_vectors: as missing, edge cases skipped" >&2
fi

count=$(wc -l <"$vec")
if [ "$count" -eq 0 ]; then
	echo "gen_x86_vectors: no vectors produced" >&2
	exit 1
fi
mkdir -p "$(dirname "$out")"
{
	echo "# generated by tests/unit/vmm/lib/gen_x86_vectors.sh ($(objdump --version | head -1)); $count instructions"
	echo "# MODE ADDR HEXBYTES CLASS TARGET MNEMONIC SOURCE"
	cat "$vec"
} >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
echo "gen_x86_vectors: $count instructions -> $out" >&2
