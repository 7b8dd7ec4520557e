/* SPDX-License-Identifier: MIT */
/*
 * probe.c - what a Linux guest sees of the machine and of tracevisor.
 *
 * Run by the fixture's /init (tests/linux/init.sh), built static for the
 * host (scripts/linux-fixture.sh).  Every line starts with "TVPROBE: " so
 * the scenarios can grep the serial log:
 *
 *   online CPUs            sysconf(_SC_NPROCESSORS_ONLN) and
 *                          /sys/devices/system/cpu/online
 *   CPUID.1:ECX[5] (VMX)   tracevisor hides VMX from its guest
 *   CPUID.1:ECX[31]        "hypervisor present"
 *   CPUID leaf 0x40000000  EAX and the 12-byte signature in EBX, ECX, EDX
 *   VMCALL from CPL 3      only under tracevisor: the hypervisor accepts
 *                          VMCALL from CPL 0 only and must inject #UD
 *                          (SIGILL here).  Done in a child process so the
 *                          expected SIGILL does not end the probe.
 *
 * A VMCALL from CPL 0 (the real hypercall path) needs kernel code, i.e. a
 * module built for this exact kernel: not part of the fixture.
 */
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The guest ABI (vmm/exit/hypercall.h) when the tree has it; the fallback keeps
 * the probe building on its own: RAX = 0 asks for the probe function.
 */
#if __has_include("vmm/exit/hypercall.h")
#include "vmm/exit/hypercall.h"
#define PROBE_FUNCTION ((uint64_t)TV_HC_PROBE)
#define HAVE_PROBE_MAGIC 1
#else
#define PROBE_FUNCTION 0ULL
#define HAVE_PROBE_MAGIC 0
#endif

#define P "TVPROBE: "

/* The signature tracevisor answers CPUID 0x40000000 with (NUL-padded). */
#define TV_SIGNATURE "tracevisor"
#if HAVE_PROBE_MAGIC
#define PROBE_MAGIC ((uint64_t)TV_HC_PROBE_MAGIC)
#else
#define PROBE_MAGIC 0ULL
#endif

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

static void print_online(void)
{
	char buf[128] = "";
	FILE *f;

	printf(P "cpus online (sysconf): %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	f = fopen("/sys/devices/system/cpu/online", "r");
	if (f && fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		printf(P "cpus online (sysfs): %s\n", buf);
	} else {
		printf(P "cpus online (sysfs): unreadable\n");
	}
	if (f)
		fclose(f);
}

/* The 12 signature bytes (EBX, ECX, EDX) as text when printable, else as hex. */
static void format_signature(const char sig[12], char *out, size_t len)
{
	int printable = 1, n = 12;

	while (n > 0 && sig[n - 1] == '\0')
		n--;
	for (int i = 0; i < n; i++)
		if (sig[i] < 0x20 || sig[i] > 0x7e)
			printable = 0;
	if (printable && n > 0) {
		snprintf(out, len, "\"%.*s\"", n, sig);
	} else {
		size_t o = 0;

		for (int i = 0; i < 12 && o + 3 < len; i++)
			o += (size_t)snprintf(out + o, len - o, "%02x", (unsigned char)sig[i]);
	}
}

/*
 * VMCALL from user space in a child: expected to die of SIGILL (#UD).
 * If it returns instead, the child sends RAX and RBX back through a pipe.
 */
static void probe_vmcall_cpl3(void)
{
	int fds[2], status = 0;
	pid_t pid;

	fflush(stdout);
	if (pipe(fds) != 0) {
		printf(P "vmcall from CPL3: pipe failed\n");
		return;
	}
	pid = fork();
	if (pid < 0) {
		printf(P "vmcall from CPL3: fork failed\n");
		return;
	}
	if (pid == 0) {
		uint64_t rax = PROBE_FUNCTION, rbx = 0, rcx = 0, rdx = 0, out[2];

		close(fds[0]);
		__asm__ volatile("vmcall"
				 : "+a"(rax), "+b"(rbx), "+c"(rcx), "+d"(rdx)
				 :
				 : "memory");
		out[0] = rax;
		out[1] = rbx;
		if (write(fds[1], out, sizeof(out)) != (ssize_t)sizeof(out))
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	if (waitpid(pid, &status, 0) != pid) {
		printf(P "vmcall from CPL3: waitpid failed\n");
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGILL) {
		printf(P "vmcall from CPL3: SIGILL (expected)\n");
	} else if (WIFSIGNALED(status)) {
		printf(P "vmcall from CPL3: UNEXPECTED signal %d (%s)\n", WTERMSIG(status),
		       strsignal(WTERMSIG(status)));
	} else {
		uint64_t out[2] = { 0, 0 };

		if (read(fds[0], out, sizeof(out)) == (ssize_t)sizeof(out))
			printf(P "vmcall from CPL3: UNEXPECTED return rax=0x%llx rbx=0x%llx%s\n",
			       (unsigned long long)out[0], (unsigned long long)out[1],
			       HAVE_PROBE_MAGIC && out[0] == 0 && out[1] == PROBE_MAGIC ?
			       " (the probe magic: CPL 3 was let through)" : "");
		else
			printf(P "vmcall from CPL3: UNEXPECTED exit status %d\n", WEXITSTATUS(status));
	}
	close(fds[0]);
}

int main(void)
{
	uint32_t r[4], max;
	char vendor[13], raw[12], sig[40];

	setvbuf(stdout, NULL, _IOLBF, 0);
	print_online();

	cpuid(0, 0, r);
	max = r[0];
	memcpy(vendor + 0, &r[1], 4);
	memcpy(vendor + 4, &r[3], 4);
	memcpy(vendor + 8, &r[2], 4);
	vendor[12] = '\0';
	cpuid(1, 0, r);
	printf(P "cpu: %s max leaf 0x%x, CPUID.1:EAX 0x%08x\n", vendor, max, r[0]);
	printf(P "vmx (CPUID.1:ECX[5]): %u\n", (r[2] >> 5) & 1);
	printf(P "hypervisor bit (CPUID.1:ECX[31]): %u\n", (r[2] >> 31) & 1);

	cpuid(0x40000000, 0, r);
	memcpy(raw + 0, &r[1], 4);
	memcpy(raw + 4, &r[2], 4);
	memcpy(raw + 8, &r[3], 4);
	format_signature(raw, sig, sizeof(sig));
	printf(P "cpuid 0x40000000: eax=0x%08x signature=%s\n", r[0], sig);
	if (memcmp(raw, TV_SIGNATURE "\0\0", 12) == 0) {
		uint32_t v[4];

		printf(P "hypervisor: tracevisor (max hypervisor leaf 0x%08x)\n", r[0]);
		if (r[0] >= 0x40000001u) {
			cpuid(0x40000001, 0, v);
			printf(P "tracevisor version code 0x%08x, hypercall ABI %u\n", v[0], v[1]);
		}
		probe_vmcall_cpl3();
	} else {
		/* Another hypervisor (QEMU TCG answers "TCGTCGTCGTCG") is not ours. */
		printf(P "hypervisor: none (not tracevisor)\n");
	}
	printf(P "done\n");
	return 0;
}
