#!/usr/bin/env bash
# build/layers.sh - the include-direction rules (docs/ARCHITECTURE.md
# "Layers", scripts/check-layers.sh) hold for the tree, and the checker
# refuses each forbidden direction when one include is added to a copy.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
work=$TV_BUILD/test/layers
check=$TV_ROOT/scripts/check-layers.sh
rm -rf "$work"
mkdir -p "$work"

if bash "$check" "$TV_ROOT" >"$work/tree.log" 2>&1; then
	tv_ok "layers: the tree keeps every include direction"
else
	tv_fail "layers: the tree keeps every include direction" "$(head -20 "$work/tree.log")"
fi

# One scratch copy per forbidden direction: FILE gets INCLUDE appended;
# the checker must fail and name exactly that line.
copy_tree() {
	rm -rf "$work/tree"
	mkdir -p "$work/tree"
	(cd "$TV_ROOT" && tar cf - vmm drivers net host-tools) | tar xf - -C "$work/tree"
}

refused() {
	local name=$1 file=$2 inc=$3 out
	copy_tree
	if [ ! -f "$work/tree/$file" ]; then
		tv_fail "layers: refuses $name" "$file is not in the tree"
		return
	fi
	printf '#include "%s"\n' "$inc" >>"$work/tree/$file"
	out=$(bash "$check" "$work/tree" 2>&1)
	local rc=$?
	if [ "$rc" = 1 ] && grep -qF -- "$file:" <<<"$out" && grep -qF -- "-> $inc" <<<"$out"; then
		tv_ok "layers: refuses $name"
	else
		tv_fail "layers: refuses $name" "rc $rc: $out"
	fi
}

refused "vmx -> trace" vmm/vmx/vmx.c vmm/trace/engine.h
refused "exit -> trace" vmm/exit/exit.c vmm/trace/ring.h
refused "backend -> exit" vmm/trace/backend/pt.c vmm/exit/exit.h
refused "backend -> vcpu" vmm/trace/backend/bts.c vmm/vmx/vcpu.h
refused "vmm -> drivers" vmm/hv.c drivers/serial.h
refused "lib -> vmx" vmm/lib/log.c vmm/vmx/vmx.h
refused "host-tools library -> CLI" host-tools/lib/tvt.c host-tools/cli/cli.h
rm -rf "$work/tree"
exit "$TV_FAILED"
