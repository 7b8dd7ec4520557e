#!/bin/sh
# init.sh - /init of the Linux fixture's initramfs (busybox sh).
#
# Prints what Linux sees ("TVLINUX: " and, from the probe, "TVPROBE: "
# lines on the console, i.e. ttyS0) and powers the machine off.  The
# scenarios grep these lines; see docs/LINUX-FIXTURE.md.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

echo "TVLINUX: init started"
echo "TVLINUX: uptime $(cut -d' ' -f1 /proc/uptime) s, kernel $(uname -r)"
/bin/tvprobe
# A few kernel names as the running kernel has them (Debian's
# /boot/System.map is a placeholder and its vmlinux has no symbols): the
# trace scenarios check the decoded stream against these addresses.
grep -E ' (_text|startup_64|secondary_startup_64|start_kernel|x86_64_start_kernel|rest_init|kernel_init|do_idle)$' \
	/proc/kallsyms 2>/dev/null | sed 's/^/TVLINUX: kallsyms: /'
echo "TVLINUX: /proc/cpuinfo processors: $(grep -c '^processor' /proc/cpuinfo)"
# SMP bring-up, hypervisor detection, APIC mode, and the ACPI tables Linux
# took (under Bochs: linuxload's, signature APIC is the MADT).
dmesg | grep -i -E 'smp:|Brought up|hypervisor|x2apic|ACPI: MADT|ACPI: (RSDP|XSDT|FACP|DSDT|FACS|APIC) |IOAPIC\[' |
	sed 's/^/TVLINUX: /'
# Where the kernel runs (physical), for the trace scenarios' start address.
grep -E 'Kernel (code|data)' /proc/iomem | sed 's/^ */TVLINUX: iomem: /'
# The PCI functions Linux enumerated, "TVPCI: 0000:00:02.0 0x8086:0x100e"
# (tests/bochs/pci-hide.sh: a hidden function must not be listed).
for d in /sys/bus/pci/devices/*; do
	[ -r "$d/vendor" ] && echo "TVPCI: ${d##*/} $(cat "$d/vendor"):$(cat "$d/device")"
done
echo "TVPCI: done"
echo "TVLINUX: powering off"
# The UART must drain before the power goes (TESTBENCH.md: Bochs loses the
# tail of the serial output otherwise).
sleep 1
poweroff -f
