#!/usr/bin/env bash
# build/source-list.sh - the trace sources are listed once, TV_SOURCE_LIST in
# vmm/trace/format.h; C code takes every table from it.  What cannot include
# C is checked here against it: the Wireshark dissector's SOURCES table
# (value -> name, the HELLO's source field) and the `source` row of
# docs/CONFIG.md.
#
#   bash tests/build/source-list.sh          check (ok / not ok lines)
#   bash tests/build/source-list.sh --print  the dissector line the list gives
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
work=$TV_BUILD/test/source-list
mkdir -p "$work"
lua=$TV_ROOT/host-tools/wireshark/tracevisor.lua
conf=$TV_ROOT/docs/CONFIG.md

# The dissector's line, printed by C from the X-macro itself.
cat >"$work/gen.c" <<'EOF'
#include <stdio.h>
#include "vmm/trace/format.h"

#define LUA_ENTRY(id, value, name, pmi, desc) printf(", [%d] = \"%s\"", value, name);
#define NAME_LINE(id, value, name, pmi, desc) printf("%s\n", name);

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) {           /* the names, one a line */
		TV_SOURCE_LIST(NAME_LINE)
		return 0;
	}
	printf("local SOURCES = { [%d] = \"none\"", TV_SOURCE_NONE);
	TV_SOURCE_LIST(LUA_ENTRY)
	printf(" }\n");
	return 0;
}
EOF
if ! gcc -std=gnu11 -Wall -Wextra -Werror -I"$TV_ROOT" "$work/gen.c" -o "$work/gen" \
	>"$work/gen.log" 2>&1; then
	tv_fail "source-list: generator builds from vmm/trace/format.h" "$(cat "$work/gen.log")"
	exit 0
fi
want=$("$work/gen")
if [ "${1:-}" = --print ]; then
	echo "$want"
	exit 0
fi

have=$(grep -E '^local SOURCES = ' "$lua" || true)
if [ "$have" = "$want" ]; then
	tv_ok "source-list: wireshark dissector's SOURCES match TV_SOURCE_LIST"
else
	tv_fail "source-list: wireshark dissector's SOURCES match TV_SOURCE_LIST" \
		"$(basename "$lua") has '${have:-no SOURCES line}', the list gives '$want'"
fi

# The row's second column: the values (the prose after it names some too).
row=$(grep -E '^\| `source` \|' "$conf" | awk -F'|' '{ print $3 }' || true)
missing=
for n in auto $("$work/gen" names); do
	case "$row" in
	*"\`$n\`"*) ;;
	*) missing="$missing $n" ;;
	esac
done
if [ -n "$row" ] && [ -z "$missing" ]; then
	tv_ok "source-list: docs/CONFIG.md's source values name every source"
else
	tv_fail "source-list: docs/CONFIG.md's source values name every source" \
		"missing:${missing:- the row itself}"
fi
exit 0
