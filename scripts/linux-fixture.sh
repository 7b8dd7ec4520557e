#!/usr/bin/env bash
# linux-fixture.sh OUTDIR - the Linux guest fixture of the test bench
# (docs/LINUX-FIXTURE.md): Debian bookworm's kernel and a tiny initramfs.
#
#   kernel   the current bookworm linux-image-6.1.0-*-amd64 package,
#            fetched once with `apt-get download` and cached, keyed on its
#            Debian version, in $TRACEVISOR_CACHE/linux-<version>/:
#            vmlinuz (bzImage, an EFI application through its EFI stub) and,
#            when it can be unpacked, vmlinux (the uncompressed ELF).
#   initrd   OUTDIR/initrd.img: newc cpio + gzip of busybox-static, the
#            probe (tests/linux/probe.c, static) and /init
#            (tests/linux/init.sh).  Rewritten only when its bytes change.
#   cmdline  OUTDIR/cmdline.txt: the kernel command line (\EFI\linux\cmdline.txt).
#   env      OUTDIR/linux.env: LINUX_* paths for the scenarios (sh syntax).
#
# Idempotent; seconds when cached.  The network is used by apt only.
# Exit status: 0 done, 75 the kernel could not be fetched (network or
# archive: temporary), 1 anything else.
set -euo pipefail

out=${1:?usage: linux-fixture.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TRACEVISOR_CACHE:-$HOME/.cache/tracevisor}
# The kernel command line the bench boots with (TESTBENCH.md: idle=halt and
# 115200 baud are needed under Bochs; the rest trims boot time).
cmdline='console=ttyS0,115200 initrd=\EFI\linux\initrd.img quiet idle=halt mitigations=off cryptomgr.notests init_on_alloc=0 audit=0 8250.nr_uarts=1'

step() { echo "linux-fixture: $*"; }
die() { echo "linux-fixture: error: $*" >&2; exit 1; }

mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d "$cache/tmp.linux.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# --- 1. which kernel ----------------------------------------------------------
# linux-image-amd64 (the metapackage) depends on exactly one ABI package,
# linux-image-6.1.0-N-amd64; its candidate version keys the cache.
abi=$(apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -1)
ver=""
if [ -n "$abi" ]; then
	ver=$(apt-cache show --no-all-versions "$abi" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
fi
if [ -z "$abi" ] || [ -z "$ver" ]; then
	# No package lists (apt-get update never ran): use the newest cached kernel.
	last=$(find "$cache" -maxdepth 2 -path "$cache/linux-*/.stamp" -printf '%h\n' 2>/dev/null |
		sort -V | tail -1)
	[ -n "$last" ] || die "apt knows no linux-image-amd64 and nothing is cached: run 'apt-get update' and retry"
	kdir=$last
	abi=$(sed -n 's/^abi=//p' "$kdir/.stamp")
	ver=$(sed -n 's/^version=//p' "$kdir/.stamp")
	step "kernel: apt has no linux-image-amd64, using cached $abi $ver"
else
	kdir=$cache/linux-$ver
	step "kernel: $abi $ver"
fi

# --- 2. fetch and unpack (cached) ----------------------------------------------
# Bump when what the cache holds changes: older caches are rebuilt.
layout=2
if [ -f "$kdir/.stamp" ] && [ -f "$kdir/vmlinuz" ] && grep -qx "layout=$layout" "$kdir/.stamp"; then
	step "cache: $kdir (cached)"
else
	step "download: apt-get download $abi=$ver (~70 MB, once)"
	dl=$tmp/dl
	mkdir -p "$dl"
	sandbox=()
	# apt's download sandbox user (_apt) cannot write into a root-owned 0700 dir.
	[ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
	if ! (cd "$dl" && apt-get -q "${sandbox[@]}" download "$abi=$ver") >"$tmp/apt.log" 2>&1; then
		sed 's/^/  apt: /' "$tmp/apt.log" | tail -5 >&2
		echo "linux-fixture: error: downloading $abi=$ver from the Debian archive failed." >&2
		echo "linux-fixture: check the network and apt sources ('apt-get update'), then rerun: bash scripts/linux-fixture.sh $1" >&2
		exit 75
	fi
	deb=$(find "$dl" -name '*.deb' | head -1)
	[ -n "$deb" ] || die "apt-get download left no .deb in $dl"
	step "unpack: /boot/vmlinuz-${abi#linux-image-} from $(basename "$deb")"
	stage=$tmp/stage
	mkdir -p "$stage/x"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$stage/x" ./boot
	vmlinuz=$(find "$stage/x/boot" -name 'vmlinuz-*' | head -1)
	[ -n "$vmlinuz" ] || die "no /boot/vmlinuz-* in $deb"
	cp "$vmlinuz" "$stage/vmlinuz"
	cfg=$(find "$stage/x/boot" -name 'config-*' | head -1)
	[ -z "$cfg" ] || cp "$cfg" "$stage/config"

	# vmlinux: the bzImage's payload (boot protocol >= 2.08: payload_offset
	# at 0x248 and payload_length at 0x24c, counted from the protected-mode
	# code at (setup_sects + 1) * 512; setup_sects at 0x1f1) decompressed,
	# then packed by elfpack (PT_LOAD data only, trailing zeros dropped).
	rd() { od -An -t"u$2" -j "$1" -N "$2" "$stage/vmlinuz" | tr -d ' '; }
	setup_sects=$(rd $((0x1f1)) 1)
	[ "$setup_sects" != 0 ] || setup_sects=4
	poff=$(( (setup_sects + 1) * 512 + $(rd $((0x248)) 4) ))
	plen=$(rd $((0x24c)) 4)
	magic=$(od -An -tx1 -j "$poff" -N 6 "$stage/vmlinuz" | tr -d ' ')
	case "$magic" in
	fd377a585a00*) unpack=(xz -dc --single-stream) ;;
	28b52ffd*) unpack=(zstd -dcq) ;;
	1f8b*) unpack=(gzip -dc) ;;
	*) unpack=() ;;
	esac
	if [ ${#unpack[@]} -gt 0 ] && command -v "${unpack[0]}" >/dev/null &&
		dd if="$stage/vmlinuz" bs=64K iflag=skip_bytes,count_bytes skip="$poff" \
			count="$plen" status=none | "${unpack[@]}" >"$tmp/vmlinux.raw" 2>/dev/null &&
		gcc -O2 -Wall -Wextra -Werror -o "$tmp/elfpack" "$root/tests/linux/elfpack.c" &&
		"$tmp/elfpack" "$tmp/vmlinux.raw" "$stage/vmlinux"; then
		step "vmlinux: $(( $(stat -c %s "$stage/vmlinux") / 1048576 )) MiB packed ELF (${unpack[0]} payload, $(( $(stat -c %s "$tmp/vmlinux.raw") / 1048576 )) MiB unpacked)"
	else
		rm -f "$stage/vmlinux"
		step "vmlinux: not extracted (payload magic $magic), the EFI stub path still works"
	fi
	rm -f "$tmp/vmlinux.raw"

	rm -rf "$stage/x"
	printf 'abi=%s\nversion=%s\npackage=%s\nlayout=%s\n' "$abi" "$ver" "$(basename "$deb")" \
		"$layout" >"$stage/.stamp"
	rm -rf "$kdir"
	mv "$stage" "$kdir"
	step "cache: $kdir"
fi

# --- 3. probe ------------------------------------------------------------------
# Under $tmp first, so a failed compile never leaves a stale binary behind.
step "probe: gcc -static -O2 tests/linux/probe.c"
# Linked at 0x20000000, away from busybox's 0x400000: a decoder given the
# probe (LINUX_PROBE) tells its user-space code from the shell's.
gcc -static -no-pie -O2 -Wall -Wextra -Werror -Wl,-Ttext-segment=0x20000000 -I"$root" \
	-o "$tmp/tvprobe" "$root/tests/linux/probe.c"
if ! cmp -s "$tmp/tvprobe" "$out/tvprobe"; then
	cp "$tmp/tvprobe" "$out/tvprobe"
fi

# --- 4. initramfs ----------------------------------------------------------------
bb=/bin/busybox
if [ ! -x "$bb" ] || readelf -lW "$bb" 2>/dev/null | grep -q INTERP; then
	die "$bb is missing or not static: apt-get install busybox-static"
fi
ir=$tmp/initrd
mkdir -p "$ir"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,root}
cp "$bb" "$ir/bin/busybox"
# One symlink per applet at its usual place ("bin/sh", "sbin/poweroff").
while IFS= read -r applet; do
	[ -e "$ir/$applet" ] || ln -s /bin/busybox "$ir/$applet"
done < <("$bb" --list-full)
install -m 0755 "$tmp/tvprobe" "$ir/bin/tvprobe"
install -m 0755 "$root/tests/linux/init.sh" "$ir/init"
# The kernel's built-in initramfs already has /dev/console; this one makes
# the archive stand on its own when mknod is allowed.
mknod -m 0600 "$ir/dev/console" c 5 1 2>/dev/null || true
# Fixed mtimes + gzip -n: same inputs, same bytes, so make sees no change.
find "$ir" -exec touch -h -d @0 {} +
(cd "$ir" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -9n >"$tmp/initrd.img"
if cmp -s "$tmp/initrd.img" "$out/initrd.img"; then
	step "initrd: $out/initrd.img (unchanged)"
else
	mv "$tmp/initrd.img" "$out/initrd.img"
	step "initrd: $out/initrd.img ($(( $(stat -c %s "$out/initrd.img") / 1024 )) KiB)"
fi

# --- 5. command line and environment ------------------------------------------------------------------
printf '%s\n' "$cmdline" >"$tmp/cmdline.txt"
if ! cmp -s "$tmp/cmdline.txt" "$out/cmdline.txt"; then
	mv "$tmp/cmdline.txt" "$out/cmdline.txt"
fi
vmlinux=""
[ -f "$kdir/vmlinux" ] && vmlinux=$kdir/vmlinux
{
	echo "# Written by scripts/linux-fixture.sh; sh syntax."
	printf 'LINUX_ABI=%q\n' "$abi"
	printf 'LINUX_VERSION=%q\n' "$ver"
	printf 'LINUX_VMLINUZ=%q\n' "$kdir/vmlinuz"
	printf 'LINUX_VMLINUX=%q\n' "$vmlinux"
	printf 'LINUX_INITRD=%q\n' "$out/initrd.img"
	printf 'LINUX_PROBE=%q\n' "$out/tvprobe"
	printf 'LINUX_CMDLINE=%q\n' "$cmdline"
	printf 'LINUX_CMDLINE_FILE=%q\n' "$out/cmdline.txt"
} >"$tmp/linux.env"
if cmp -s "$tmp/linux.env" "$out/linux.env"; then
	step "env: $out/linux.env (unchanged)"
else
	mv "$tmp/linux.env" "$out/linux.env"
	step "env: $out/linux.env"
fi
