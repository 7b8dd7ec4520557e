#!/usr/bin/env bash
# scripts/deps.sh OUT.mk -- install and build everything tracevisor needs.
#
# Run by `make deps` as `bash scripts/deps.sh build/deps.mk`. On Debian 12:
#   1. installs the missing Debian packages in PACKAGES;
#   2. adds deb-src entries (bookworm for lwIP, trixie for Bochs 3.0);
#   3. fetches the lwIP 2.1.3 and Bochs 3.0 source tarballs (sha256-pinned);
#   4. builds newlib 3.3.0 (freestanding, no SSE), liblwip.a and Bochs 3.0
#      into the cache, each keyed on its inputs, so a re-run rebuilds nothing;
#   5. writes OUT.mk with absolute paths (NEWLIB_DIR, LWIP_DIR, LWIP_INC,
#      BOCHS, BOCHS_TRACE, OVMF_FD, VGABIOS).  BOCHS_TRACE is Bochs with
#      tracevisor's trace-hardware model (tests/bench/bochs-patches,
#      docs/BOCHS-MODEL.md), a cache entry of its own.
#
# Environment:
#   TRACEVISOR_CACHE       cache root (default $HOME/.cache/tracevisor)
#   TRACEVISOR_SKIP_BOCHS  1: neither fetch nor build Bochs (BOCHS := empty)
#
# A failed step names itself, prints the tail of its log and how to retry.
# docs/DEPS.md describes the cache layout.
set -euo pipefail

# Bochs' configure links readline into the debugger when libreadline-dev is
# there; requiring it keeps every machine's build the same.
# socat: the plain UDP sink of tests/bench/recv_bench.sh; tshark: the
# dissector scenario tests/build/net-tshark.sh (skipped without it).
PACKAGES="gnu-efi newlib-source qemu-system-x86 ovmf mtools dosfstools gdisk
libipt-dev libelf-dev libdw-dev libcmocka-dev busybox-static cpio clang lld
build-essential xz-utils dpkg-dev vgabios iproute2 python3 ca-certificates
pkg-config patch libreadline-dev socat tshark"

NEWLIB_VERSION=3.3.0
LWIP_VERSION=2.1.3
LWIP_ORIG=lwip_2.1.3+dfsg1.orig.tar.xz
LWIP_ORIG_SHA256=0a8276d09fc4e97bbba2f953d74af2388fc2195ea156be9d7589e297a68fde24
BOCHS_VERSION=3.0
BOCHS_ORIG=bochs_3.0+dfsg.orig.tar.xz
BOCHS_ORIG_SHA256=78f6c73d4a6472d5130a87ab9dc306d02c7c71ed8e25b3a8ef642e2a7acd282b

# Bump a *_REV when its build steps change in a way the key does not see.
NEWLIB_REV=1
LWIP_REV=1
BOCHS_REV=1

# Freestanding flags shared by newlib and lwIP: no red zone (interrupts and
# VM exits run on the same stack), no SSE (VMX root must not touch the
# guest's vector state), short wchar for UEFI's CHAR16.
TARGET_CFLAGS="-O2 -g -ffreestanding -fno-stack-protector -fno-stack-check -fshort-wchar -mno-red-zone -fPIC -mgeneral-regs-only"

NEWLIB_CONFIGURE_ARGS=(--target=x86_64-elf --disable-multilib
	--disable-newlib-supplied-syscalls --disable-newlib-io-float
	--enable-newlib-io-long-long --enable-newlib-io-c99-formats)
# Objects that need floating point (an SSE register return under
# -mgeneral-regs-only): dropped from libc.a; a hypervisor needs none of them.
NEWLIB_DROP_STDLIB="__adjust __exp10 __ten_mu atof atoff dtoa mprec strtod wcstod ecvtbuf efgcvt drand48 erand48"
NEWLIB_DROP_TIME="difftime"
NEWLIB_REQUIRED_SYMS="snprintf vsnprintf memcpy memset strtoul strncmp"

BOCHS_CONFIGURE_ARGS=(--with-nogui --enable-x86-64 --enable-vmx=2
	--enable-smp --enable-cpu-level=6 --enable-all-optimizations
	--enable-pci --enable-e1000 --enable-debugger --enable-avx
	--enable-evex --enable-cet --disable-plugins --enable-usb=no)

# ---------------------------------------------------------------------------

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${TRACEVISOR_CACHE:-$HOME/.cache/tracevisor}
SKIP_BOCHS=${TRACEVISOR_SKIP_BOCHS:-0}
JOBS=$(nproc)
SRC_LIST=/etc/apt/sources.list.d/tracevisor-src.sources

if [ $# -ne 1 ]; then
	echo "usage: $0 OUT.mk" >&2
	exit 2
fi
case $1 in
/*) OUT_MK=$1 ;;
*) OUT_MK=$PWD/$1 ;;
esac

CURRENT_STEP=setup
REPORTED=0
TMP_DIRS=()
on_exit() {
	local rc=$? d
	for d in "${TMP_DIRS[@]}"; do
		rm -rf "$d"
	done
	if [ "$rc" -ne 0 ] && [ "$REPORTED" = 0 ]; then
		echo "deps: stopped during step '$CURRENT_STEP' (exit $rc); fix the cause and run \`make deps\` again" >&2
	fi
}
trap on_exit EXIT

progress() {
	echo "deps: $*"
}

# Steps that found everything in place say so only with TRACEVISOR_VERBOSE=1,
# so an up-to-date `make` prints one line.
quiet_progress() {
	if [ "${TRACEVISOR_VERBOSE:-0}" = 1 ]; then
		echo "deps: $*"
	fi
}

die() {
	echo "deps: FAILED: $*" >&2
	REPORTED=1
	exit 1
}

# step_failed STEP LOG RETRY: report a failed step and stop.
step_failed() {
	local step=$1 log=$2 retry=$3
	{
		echo "deps: FAILED: $step (log: $log)"
		echo "---- last 30 lines of $log ----"
		tail -n 30 "$log"
		echo "----"
		echo "deps: retry with: $retry"
	} >&2
	REPORTED=1
	exit 1
}

# run_step STEP RETRY CMD...: run CMD with errexit in a subshell, all output
# to $CACHE/logs/STEP.log. Must not be called from a condition (if, ||, &&):
# bash ignores errexit inside those, even when set again.
run_step() {
	local step=$1 retry=$2 rc
	shift 2
	local log=$CACHE/logs/$step.log
	: >"$log"
	set +e
	(
		set -euo pipefail
		trap - EXIT
		"$@"
	) >>"$log" 2>&1
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		step_failed "$step" "$log" "$retry"
	fi
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

sha256_of() {
	sha256sum "$1" | cut -d' ' -f1
}

# A short key for a block of text on stdin.
key_of() {
	sha256sum | cut -c1-12
}

# new_tmp NAME: a fresh directory in $NEW_TMP, removed when the script ends.
# (Not echoed: a command substitution would lose the TMP_DIRS entry.)
new_tmp() {
	NEW_TMP=$(mktemp -d "$CACHE/tmp/$1.XXXXXX")
	TMP_DIRS+=("$NEW_TMP")
}

# install_dir TMP FINAL: move a finished build into place. The stamp inside
# is written before the rename, so FINAL exists complete or not at all.
install_dir() {
	local tmp=$1 final=$2
	rm -rf "$final"
	mv -T "$tmp" "$final"
}

mkdir -p "$CACHE/logs" "$CACHE/tmp" "$CACHE/downloads"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
	progress "waiting for another deps run to finish ($CACHE/.lock)"
	flock 9
fi
# Leftovers of runs that were killed: nobody else holds the lock now.
rm -rf "${CACHE:?}/tmp/"*

# ---- 1. Debian packages ---------------------------------------------------

step_packages() {
	local p installed missing=()
	CURRENT_STEP=packages
	# shellcheck disable=SC2086 # word list
	installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' $PACKAGES 2>/dev/null |
		awk '$2 == "ii" { print $1 }' || true)
	for p in $PACKAGES; do
		grep -qx "$p" <<<"$installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		quiet_progress "packages ... ok ($(wc -w <<<"$PACKAGES") installed)"
		return
	fi
	progress "packages ... installing ${missing[*]}"
	# shellcheck disable=SC2016 # $@ is expanded by the inner sh
	run_step apt-install "make deps" \
		as_root env DEBIAN_FRONTEND=noninteractive \
		sh -c 'apt-get update && apt-get install -y --no-install-recommends "$@"' \
		sh "${missing[@]}"
}

# ---- 2. deb-src entries ---------------------------------------------------

# Same mirror and key as the binary entries, as deb-src only: trixie must
# never become a source of binary packages.
src_list_text() {
	local uri=http://deb.debian.org/debian
	local key=/usr/share/keyrings/debian-archive-keyring.gpg
	local f=/etc/apt/sources.list.d/debian.sources
	if [ -r "$f" ]; then
		# First stanza that is not the security archive.
		uri=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' "$f")
		key=$(awk '/^Signed-By:/ { print $2; exit }' "$f")
		[ -n "$uri" ] || uri=http://deb.debian.org/debian
		[ -n "$key" ] || key=/usr/share/keyrings/debian-archive-keyring.gpg
	fi
	cat <<EOF
# Written by tracevisor scripts/deps.sh: source packages only.
# bookworm: lwIP 2.1.3. trixie: Bochs 3.0 (deb-src only, never deb).
Types: deb-src
URIs: $uri
Suites: bookworm bookworm-updates
Components: main
Signed-By: $key

Types: deb-src
URIs: $uri
Suites: trixie
Components: main
Signed-By: $key
EOF
}

SRC_LISTS_FRESH=0

step_src_lists() {
	local want
	CURRENT_STEP=deb-src
	want=$(src_list_text)
	if [ -r "$SRC_LIST" ] && [ "$(cat "$SRC_LIST")" = "$want" ]; then
		quiet_progress "deb-src entries ... ok ($SRC_LIST)"
		return
	fi
	progress "deb-src entries ... writing $SRC_LIST, apt-get update"
	printf '%s\n' "$want" >"$CACHE/tmp/src.sources"
	as_root install -m 0644 "$CACHE/tmp/src.sources" "$SRC_LIST.tmp"
	as_root mv -f "$SRC_LIST.tmp" "$SRC_LIST"
	run_step apt-update "make deps" as_root apt-get update
	SRC_LISTS_FRESH=1
}

# ---- 3. source tarballs ---------------------------------------------------

# orig_uri_line PKG SELECTOR FILE: the `apt-get --print-uris source` line
# for FILE, e.g. 'http://.../x.orig.tar.xz' x.orig.tar.xz 802896 SHA256:...
orig_uri_line() {
	{ apt-get --print-uris source "$2" 2>/dev/null || true; } |
		awk -v f="$3" '$2 == f && !done { print; done = 1 }'
}

# fetch_orig NAME FILE SHA256 SELECTOR...: put FILE into $CACHE/downloads,
# verified against the pinned SHA256 and the hash apt's index lists for it.
fetch_orig() {
	local name=$1 file=$2 sha=$3
	shift 3
	local dest=$CACHE/downloads/$file line="" sel uri apt_sha tmp
	CURRENT_STEP="$name source"
	if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$sha" ]; then
		quiet_progress "$name source ... cached ($file)"
		return
	fi
	for sel in "$@"; do
		line=$(orig_uri_line "$name" "$sel" "$file")
		[ -n "$line" ] && break
	done
	if [ -z "$line" ] && [ "$SRC_LISTS_FRESH" = 0 ]; then
		# Source indexes may be stale or missing: refresh once.
		run_step apt-update "make deps" as_root apt-get update
		SRC_LISTS_FRESH=1
		for sel in "$@"; do
			line=$(orig_uri_line "$name" "$sel" "$file")
			[ -n "$line" ] && break
		done
	fi
	[ -n "$line" ] || die "$name source: no $file in 'apt-get --print-uris source $*' (check $SRC_LIST)"
	uri=$(awk '{ print $1 }' <<<"$line")
	uri=${uri#\'}
	uri=${uri%\'}
	apt_sha=$(awk '{ print $4 }' <<<"$line")
	apt_sha=${apt_sha#SHA256:}
	[ "$apt_sha" = "$sha" ] ||
		die "$name source: the archive lists $file with sha256 $apt_sha, this script pins $sha"
	progress "$name source ... downloading $file"
	new_tmp "fetch-$name"
	tmp=$NEW_TMP
	# apt-helper checks the hash itself; `apt-get source` is not used because
	# it may 404 on a .dsc that the mirror has already dropped.
	run_step "fetch-$name" "make deps" \
		/usr/lib/apt/apt-helper download-file "$uri" "$tmp/$file" "SHA256:$sha"
	[ "$(sha256_of "$tmp/$file")" = "$sha" ] || die "$name source: sha256 mismatch for $tmp/$file"
	mv -f "$tmp/$file" "$dest"
}

# ---- 4a. newlib -----------------------------------------------------------

newlib_tarball() {
	local t
	for t in /usr/src/newlib/newlib-"$NEWLIB_VERSION".tar.*; do
		[ -f "$t" ] && { echo "$t"; return; }
	done
	die "newlib: no /usr/src/newlib/newlib-$NEWLIB_VERSION.tar.* (package newlib-source)"
}

tool_versions() {
	gcc -dumpmachine
	gcc --version | sed -n 1p
	ld --version | sed -n 1p
}

# drop_objects MAKEFILE_IN NAMES: remove lib_a-NAME.$(OBJEXT) from the
# object lists; fail if a name is not there (the tarball changed).
drop_objects() {
	local mf=$1 n
	shift
	for n in "$@"; do
		grep -qF "lib_a-$n.\$(OBJEXT)" "$mf" || { echo "lib_a-$n not in $mf" >&2; return 1; }
		sed -i "s/lib_a-$n\.\$(OBJEXT)//g" "$mf"
	done
}

build_newlib() {
	local tmp=$1 tarball=$2 key_text=$3
	local src=$tmp/src bld=$tmp/build out=$tmp/out
	mkdir -p "$src" "$bld" "$out/include" "$out/lib"
	tar -xf "$tarball" -C "$src" --strip-components=1
	# shellcheck disable=SC2086 # word lists
	drop_objects "$src/newlib/libc/stdlib/Makefile.in" $NEWLIB_DROP_STDLIB
	# shellcheck disable=SC2086
	drop_objects "$src/newlib/libc/time/Makefile.in" $NEWLIB_DROP_TIME
	cd "$bld"
	"$src/configure" "${NEWLIB_CONFIGURE_ARGS[@]}" \
		CC_FOR_TARGET=gcc AR_FOR_TARGET=ar AS_FOR_TARGET=as \
		LD_FOR_TARGET=ld NM_FOR_TARGET=nm RANLIB_FOR_TARGET=ranlib \
		OBJDUMP_FOR_TARGET=objdump READELF_FOR_TARGET=readelf \
		STRIP_FOR_TARGET=strip CFLAGS_FOR_TARGET="$TARGET_CFLAGS"
	make configure-target-newlib
	make -C x86_64-elf/newlib stmp-targ-include
	# Never -k: it hides failed objects and yields a libc.a without them.
	make -j"$JOBS" -C x86_64-elf/newlib/libc AR_FLAGS=rc
	# Headers as the compiler saw them: generic ones, then the
	# target-specific overlay (newlib.h, machine/, sys/).
	cp -a "$src/newlib/libc/include/." "$out/include/"
	cp -a "$bld/x86_64-elf/newlib/targ-include/." "$out/include/"
	cp "$bld/x86_64-elf/newlib/libc/libc.a" "$out/lib/libc.a"
	check_lib "$out/lib/libc.a" "$NEWLIB_REQUIRED_SYMS"
	printf '%s\n' "$key_text" >"$out/.stamp"
}

# check_lib LIB SYMS: LIB defines every SYM and never touches vector state.
check_lib() {
	local lib=$1 syms=$2 defined vec s
	defined=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u)
	for s in $syms; do
		grep -qx "$s" <<<"$defined" || { echo "$lib does not define $s" >&2; return 1; }
	done
	vec=$(objdump -d "$lib" | grep -E '%[xyz]mm[0-9]' || true)
	if [ -n "$vec" ]; then
		echo "$lib uses SSE/AVX registers:" >&2
		sed -n 1,5p <<<"$vec" >&2
		return 1
	fi
}

step_newlib() {
	local tarball key_text key final tmp
	CURRENT_STEP=newlib
	tarball=$(newlib_tarball)
	key_text=$(printf '%s\n' "newlib $NEWLIB_VERSION rev $NEWLIB_REV" \
		"tarball $(sha256_of "$tarball")" "cflags $TARGET_CFLAGS" \
		"configure ${NEWLIB_CONFIGURE_ARGS[*]}" \
		"drop $NEWLIB_DROP_STDLIB $NEWLIB_DROP_TIME" "$(tool_versions)")
	key=$(key_of <<<"$key_text")
	final=$CACHE/newlib-$NEWLIB_VERSION-$key
	NEWLIB_DIR=$final
	if [ -f "$final/.stamp" ]; then
		quiet_progress "newlib $NEWLIB_VERSION ... cached ($final)"
		return
	fi
	progress "newlib $NEWLIB_VERSION ... building (~80 s on 2 cores)"
	new_tmp newlib
	tmp=$NEW_TMP
	run_step newlib "rm -rf $final; make deps" build_newlib "$tmp" "$tarball" "$key_text"
	install_dir "$tmp/out" "$final"
	progress "newlib $NEWLIB_VERSION ... built ($final)"
}

# ---- 4b. lwIP -------------------------------------------------------------

# Everything under net/lwip/include that the compiler can see.
port_headers_hash() {
	(cd "$REPO" && find net/lwip/include -type f -name '*.h' -print0 |
		LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -d' ' -f1
}

lwip_cflags() {
	printf '%s' "$TARGET_CFLAGS -Wall -nostdinc -isystem $NEWLIB_DIR/include -isystem $(gcc -print-file-name=include) -I$REPO/net/lwip/include -I$1/src/include"
}

build_lwip() {
	local tmp=$1 key_text=$2
	local out=$tmp/out f o cflags
	mkdir -p "$out/lib" "$tmp/obj"
	tar -xf "$CACHE/downloads/$LWIP_ORIG" -C "$out" --strip-components=1
	cflags=$(lwip_cflags "$out")
	for f in "$out"/src/core/*.c "$out"/src/core/ipv4/*.c "$out"/src/netif/ethernet.c; do
		o=$tmp/obj/$(basename "$(dirname "$f")")-$(basename "$f" .c).o
		echo "gcc $f"
		# shellcheck disable=SC2086 # cflags is a flag list
		gcc $cflags -c "$f" -o "$o"
	done
	ar rcs "$out/lib/liblwip.a" "$tmp"/obj/*.o
	check_lib "$out/lib/liblwip.a" "lwip_init netif_add etharp_output dhcp_start tcp_new udp_new sys_check_timeouts"
	printf '%s\n' "$key_text" >"$out/.stamp"
}

step_lwip() {
	local key_text key final tmp warnings
	CURRENT_STEP=lwip
	# The repository's path is left out so that worktrees share the build.
	key_text=$(printf '%s\n' "lwip $LWIP_VERSION rev $LWIP_REV" \
		"tarball $LWIP_ORIG_SHA256" "port $(port_headers_hash)" \
		"newlib $NEWLIB_DIR" "cflags $TARGET_CFLAGS -Wall" "$(tool_versions)")
	key=$(key_of <<<"$key_text")
	final=$CACHE/lwip-$LWIP_VERSION-$key
	LWIP_DIR=$final
	if [ -f "$final/.stamp" ]; then
		quiet_progress "lwip $LWIP_VERSION ... cached ($final)"
		return
	fi
	progress "lwip $LWIP_VERSION ... building (~10 s)"
	new_tmp lwip
	tmp=$NEW_TMP
	run_step lwip "rm -rf $final; make deps" build_lwip "$tmp" "$key_text"
	install_dir "$tmp/out" "$final"
	warnings=$(grep -c 'warning:' "$CACHE/logs/lwip.log" || true)
	progress "lwip $LWIP_VERSION ... built, $warnings warnings ($final; log $CACHE/logs/lwip.log)"
}

# ---- 4c. Bochs ------------------------------------------------------------

bochs_patches() {
	local d=$REPO/tests/bench/patches
	[ -d "$d" ] || return 0
	find "$d" -maxdepth 1 -type f -name '*.patch' | LC_ALL=C sort
}

build_bochs() {
	local tmp=$1 key_text=$2
	local src=$tmp/src out=$tmp/out p
	mkdir -p "$src" "$out/bin"
	tar -xf "$CACHE/downloads/$BOCHS_ORIG" -C "$src" --strip-components=1
	while read -r p; do
		[ -n "$p" ] || continue
		echo "applying $p"
		patch -d "$src" -p1 --forward --batch -i "$p" ||
			{ echo "patch does not apply: $p" >&2; return 1; }
	done < <(bochs_patches)
	cd "$src"
	./configure "${BOCHS_CONFIGURE_ARGS[@]}"
	make -j"$JOBS"
	cp bochs "$out/bin/bochs"
	[ ! -f bximage ] || cp bximage "$out/bin/bximage"
	"$out/bin/bochs" -help cpu >"$tmp/cpus.txt" 2>&1 || true
	grep -q corei7_skylake_x "$tmp/cpus.txt" ||
		{ echo "built bochs does not list corei7_skylake_x" >&2; return 1; }
	printf '%s\n' "$key_text" >"$out/.stamp"
}

step_bochs() {
	local key_text key final tmp p
	CURRENT_STEP=bochs
	BOCHS=""
	if [ "$SKIP_BOCHS" = 1 ]; then
		progress "bochs $BOCHS_VERSION ... skipped (TRACEVISOR_SKIP_BOCHS=1)"
		return
	fi
	fetch_orig bochs "$BOCHS_ORIG" "$BOCHS_ORIG_SHA256" bochs/trixie "bochs=3.0+dfsg-1"
	CURRENT_STEP=bochs
	key_text=$(
		printf '%s\n' "bochs $BOCHS_VERSION rev $BOCHS_REV" "tarball $BOCHS_ORIG_SHA256" \
			"configure ${BOCHS_CONFIGURE_ARGS[*]}" "$(g++ --version | sed -n 1p)"
		while read -r p; do
			[ -n "$p" ] || continue
			echo "patch $(basename "$p") $(sha256_of "$p")"
		done < <(bochs_patches)
	)
	key=$(key_of <<<"$key_text")
	final=$CACHE/bochs-$BOCHS_VERSION-$key
	BOCHS=$final/bin/bochs
	if [ -f "$final/.stamp" ]; then
		quiet_progress "bochs $BOCHS_VERSION ... cached ($final)"
		return
	fi
	progress "bochs $BOCHS_VERSION ... building (~3 min on 2 cores; log $CACHE/logs/bochs.log)"
	new_tmp bochs
	tmp=$NEW_TMP
	run_step bochs "rm -rf $final; make deps" build_bochs "$tmp" "$key_text"
	install_dir "$tmp/out" "$final"
	progress "bochs $BOCHS_VERSION ... built ($BOCHS)"
}

# ---- 4d. Bochs with the trace-hardware model (BOCHS_TRACE) ----------------
# Debian's Bochs 3.0 plus tracevisor's own patches (tests/bench/bochs-patches,
# applied in the order of their series file): IA32_DEBUGCTL, LBR and BTF,
# BTS, Intel PT, the performance counters and architectural LBRs, each
# turned on per bochsrc (`cpu: lbr=1`, `bts=1`, `pt=1`, `pmc=1`,
# `arch_lbr=1`; docs/BOCHS-MODEL.md).  A cache entry of its own, keyed on
# the stock inputs plus every patch's hash, so the stock BOCHS entry and its
# key stay as they are.

BOCHS_TRACE_PATCH_DIR=$REPO/tests/bench/bochs-patches

# The series, one absolute path a line; a listed patch that is missing fails.
# The stock build's fixes (tests/bench/patches, bochs_patches) come first:
# the model runs on the same corrected Bochs.
bochs_trace_patches() {
	local p
	[ -f "$BOCHS_TRACE_PATCH_DIR/series" ] || return 0
	bochs_patches
	while read -r p; do
		case $p in '' | '#'*) continue ;; esac
		[ -f "$BOCHS_TRACE_PATCH_DIR/$p" ] || { echo "missing patch $BOCHS_TRACE_PATCH_DIR/$p" >&2; return 1; }
		echo "$BOCHS_TRACE_PATCH_DIR/$p"
	done <"$BOCHS_TRACE_PATCH_DIR/series"
}

build_bochs_trace() {
	local tmp=$1 key_text=$2 patches=$3
	local src=$tmp/src out=$tmp/out p
	mkdir -p "$src" "$out/bin"
	tar -xf "$CACHE/downloads/$BOCHS_ORIG" -C "$src" --strip-components=1
	# Every hunk must apply exactly (no fuzz): a patch written against
	# another source fails here, loudly, instead of building something else.
	while read -r p; do
		[ -n "$p" ] || continue
		echo "applying $p"
		patch -d "$src" -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch -i "$p" ||
			{ echo "patch does not apply to $BOCHS_ORIG: $p" >&2; return 1; }
	done <<<"$patches"
	if find "$src" -name '*.rej' | grep -q .; then
		echo "rejected hunks left in $src" >&2
		return 1
	fi
	cd "$src"
	./configure "${BOCHS_CONFIGURE_ARGS[@]}"
	make -j"$JOBS"
	cp bochs "$out/bin/bochs"
	grep -q 'Model IA32_DEBUGCTL, LBR and BTF' "$out/bin/bochs" ||
		{ echo "built bochs has no cpu: lbr option" >&2; return 1; }
	if grep -q '^0002-bts-ds-model.patch$' "$BOCHS_TRACE_PATCH_DIR/series"; then
		grep -q 'Model BTS and the DS save area' "$out/bin/bochs" ||
			{ echo "built bochs has no cpu: bts option" >&2; return 1; }
	fi
	if grep -q '^0003-intel-pt-model.patch$' "$BOCHS_TRACE_PATCH_DIR/series"; then
		grep -q 'Model a subset of Intel Processor Trace' "$out/bin/bochs" ||
			{ echo "built bochs has no cpu: pt option" >&2; return 1; }
	fi
	if grep -q '^0004-intel-pt-vmx.patch$' "$BOCHS_TRACE_PATCH_DIR/series"; then
		grep -q 'VMCS guest IA32_RTIT_CTL invalid' "$out/bin/bochs" ||
			{ echo "built bochs has no PT VMX controls (patch 0004)" >&2; return 1; }
	fi
	if grep -q '^0005-pmc-branch-counter.patch$' "$BOCHS_TRACE_PATCH_DIR/series"; then
		grep -q 'Model the general-purpose performance counters' "$out/bin/bochs" ||
			{ echo "built bochs has no cpu: pmc option" >&2; return 1; }
	fi
	if grep -q '^0006-arch-lbr-model.patch$' "$BOCHS_TRACE_PATCH_DIR/series"; then
		grep -q 'Model architectural LBRs' "$out/bin/bochs" ||
			{ echo "built bochs has no cpu: arch_lbr option" >&2; return 1; }
	fi
	printf '%s\n' "$key_text" >"$out/.stamp"
}

step_bochs_trace() {
	local key_text key final tmp p patches
	CURRENT_STEP=bochs-trace
	BOCHS_TRACE=""
	if [ "$SKIP_BOCHS" = 1 ]; then
		return
	fi
	patches=$(bochs_trace_patches) || die "bochs-trace: $BOCHS_TRACE_PATCH_DIR/series names a missing patch"
	if [ -z "$patches" ]; then
		quiet_progress "bochs $BOCHS_VERSION trace model ... no patches ($BOCHS_TRACE_PATCH_DIR/series)"
		return
	fi
	key_text=$(
		printf '%s\n' "bochs $BOCHS_VERSION trace rev $BOCHS_REV" "tarball $BOCHS_ORIG_SHA256" \
			"configure ${BOCHS_CONFIGURE_ARGS[*]}" "$(g++ --version | sed -n 1p)"
		while read -r p; do
			echo "trace patch $(basename "$p") $(sha256_of "$p")"
		done <<<"$patches"
	)
	key=$(key_of <<<"$key_text")
	final=$CACHE/bochs-$BOCHS_VERSION-trace-$key
	BOCHS_TRACE=$final/bin/bochs
	if [ -f "$final/.stamp" ]; then
		quiet_progress "bochs $BOCHS_VERSION trace model ... cached ($final)"
		return
	fi
	progress "bochs $BOCHS_VERSION trace model ... building (~5 min on 2 cores; log $CACHE/logs/bochs-trace.log)"
	new_tmp bochs-trace
	tmp=$NEW_TMP
	run_step bochs-trace "rm -rf $final; make deps" build_bochs_trace "$tmp" "$key_text" "$patches"
	install_dir "$tmp/out" "$final"
	progress "bochs $BOCHS_VERSION trace model ... built ($BOCHS_TRACE)"
}

# ---- 5. firmware images and the makefile fragment -------------------------

find_firmware() {
	local f size
	CURRENT_STEP=firmware
	OVMF_FD=""
	# Bochs needs the combined CODE+VARS image (2 or 4 MiB), not OVMF_CODE.
	for f in /usr/share/ovmf/OVMF.fd /usr/share/qemu/OVMF.fd; do
		[ -f "$f" ] || continue
		size=$(stat -L -c %s "$f")
		if [ "$size" -eq 2097152 ] || [ "$size" -eq 4194304 ]; then
			OVMF_FD=$(readlink -f "$f")
			break
		fi
	done
	[ -n "$OVMF_FD" ] || die "firmware: no combined OVMF.fd in /usr/share/ovmf (package ovmf)"
	VGABIOS=/usr/share/vgabios/vgabios.bin
	[ -f "$VGABIOS" ] || die "firmware: no $VGABIOS (package vgabios)"
	quiet_progress "firmware ... ok ($OVMF_FD, $VGABIOS)"
}

write_fragment() {
	local tmp
	CURRENT_STEP="write $OUT_MK"
	mkdir -p "$(dirname "$OUT_MK")"
	tmp=$(mktemp "$OUT_MK.XXXXXX")
	cat >"$tmp" <<EOF
# Generated by scripts/deps.sh; do not edit. Re-run \`make deps\`.
NEWLIB_DIR := $NEWLIB_DIR
LWIP_DIR := $LWIP_DIR
LWIP_INC := $LWIP_DIR/src/include
BOCHS :=${BOCHS:+ $BOCHS}
BOCHS_TRACE :=${BOCHS_TRACE:+ $BOCHS_TRACE}
OVMF_FD := $OVMF_FD
VGABIOS := $VGABIOS
EOF
	chmod 0644 "$tmp"
	# Unchanged content keeps the old file and its mtime: make need not
	# rebuild what depends on it.
	if cmp -s "$tmp" "$OUT_MK"; then
		rm -f "$tmp"
		quiet_progress "$OUT_MK ... unchanged"
	else
		mv -f "$tmp" "$OUT_MK"
		progress "wrote $OUT_MK"
	fi
}

# ---------------------------------------------------------------------------

step_packages
step_src_lists
fetch_orig lwip "$LWIP_ORIG" "$LWIP_ORIG_SHA256" lwip/bookworm "lwip=2.1.3+dfsg1-2"
step_newlib
step_lwip
step_bochs
step_bochs_trace
find_firmware
write_fragment
