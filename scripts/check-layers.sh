#!/usr/bin/env bash
# scripts/check-layers.sh [ROOT] - the include-direction rules of
# docs/ARCHITECTURE.md ("Layers"), checked over every #include "..." line
# of the C sources under ROOT (default: the repository).
#
# Each directory may include only from the directories its row allows
# (a prefix match on the quoted path; <system> headers are not checked).
# A file's row is its longest matching directory.  Prints one line per
# forbidden include, "FILE:LINE: DIR -> HEADER (rule)", and exits 1 if
# there is any, 0 if none, 2 on a usage error.
set -uo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
if [ ! -d "$root/vmm" ]; then
	echo "check-layers: $root is not a tracevisor tree (no vmm/)" >&2
	exit 2
fi

# The record/wire format (enums, record layouts) is a leaf every layer and
# the host tools may include; vmm/version.h likewise.
common='vmm/trace/format.h vmm/version.h'

# dir|allowed prefixes (space separated)|what the rule says
rules=(
	"vmm/hw|vmm/hw/|the seam: nothing above it"
	"vmm/lib|vmm/hw/ vmm/lib/|helpers: only the seam and each other"
	"vmm/vmx|vmm/hw/ vmm/lib/ vmm/vmx/ vmm/exit/|the VMX core never includes the tracer, vmm/ top or drivers"
	"vmm/exit|vmm/hw/ vmm/lib/ vmm/vmx/ vmm/exit/ vmm/hv.h|exit handlers never include the tracer (hooks) or drivers"
	"vmm/trace/backend|vmm/hw/ vmm/lib/ vmm/trace/ vmm/vmx/vmx_defs.h vmm/vmx/vmx_caps.h|a backend sees the engine's view, never exit handlers or struct per_cpu"
	"vmm/trace|vmm/hw/ vmm/lib/ vmm/vmx/ vmm/exit/ vmm/trace/|the tracer sits above VMX and exits, below vmm/ top; never drivers"
	"vmm|vmm/|vmm/ never includes drivers/ or net/: sinks come in as ops"
	"drivers|vmm/hw/ vmm/lib/ drivers/|a driver needs only the seam and helpers"
	"net|vmm/ net/ drivers/ lwip/ netif/ arch/ lwipopts.h|"
	"host-tools/lib|host-tools/lib/ vmm/trace/ vmm/lib/ net/|the host-tools library never includes the CLI"
	"host-tools/cli|host-tools/cli/ host-tools/lib/ vmm/trace/ net/|"
)

violations=0
while IFS= read -r -d '' f; do
	rel=${f#"$root"/}
	dir=$(dirname "$rel")
	best= allowed= why=
	for r in "${rules[@]}"; do
		d=${r%%|*}
		case "$dir/" in
		"$d"/*)
			if [ ${#d} -gt ${#best} ]; then
				best=$d
				rest=${r#*|}
				allowed=${rest%%|*}
				why=${rest#*|}
			fi
			;;
		esac
	done
	[ -n "$best" ] || continue
	while IFS=: read -r line inc; do
		inc=${inc#*\"}
		inc=${inc%%\"*}
		ok=0
		case "$inc" in
		*/*) ;;
		*) ok=1 ;;  # same-directory or generated header (lwipopts.h, arch/cc.h)
		esac
		for a in $allowed $common; do
			case "$inc" in "$a"*) ok=1 ;; esac
		done
		if [ "$ok" = 0 ]; then
			echo "$rel:$line: $best -> $inc (${why:-not an allowed direction})"
			violations=$((violations + 1))
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done < <(find "$root/vmm" "$root/drivers" "$root/net" "$root/host-tools" \
	-path "$root/net/lwip" -prune -o \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)

if [ "$violations" -gt 0 ]; then
	echo "check-layers: $violations forbidden include(s); rules: docs/ARCHITECTURE.md \"Layers\"" >&2
	exit 1
fi
exit 0
