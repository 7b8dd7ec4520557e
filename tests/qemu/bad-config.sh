#!/usr/bin/env bash
# qemu/bad-config.sh - a config with errors and a loader= that does not
# exist: each error reported with its line number, the loader failure
# explained, control returned to the firmware, which then boots the next
# entry itself (the payload's parent is then not tracevisor).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
work=$TV_BUILD/test/qemu-bad-config
mkdir -p "$work"
log=$TV_LOGS/qemu-bad-config.serial.log

printf '%s\n' '# broken on purpose' 'loader = \EFI\missing\nothing.efi' \
	'bogus_key = 1' 'log_level = loud' 'serial' 'console = on' 'console = off' >"$work/tracevisor.conf"
tv_image "$work/stick.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
	EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf"
tv_image "$work/disk2.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/payload.efi"

rc=$(tv_qemu "$log" 60 "$work/stick.img" "$work/disk2.img")
if [ "$rc" = 0 ]; then tv_ok "bad-config: machine still boots and powers off"; else tv_fail "bad-config: machine still boots and powers off" "qemu exit status $rc"; fi
tv_expect "bad-config: unknown key, line 3" "$log" "tracevisor.conf:3: unknown key 'bogus_key'"
tv_expect "bad-config: bad value, line 4" "$log" 'tracevisor.conf:4: log_level must be err, warn, info or debug'
tv_expect "bad-config: missing =, line 5" "$log" 'tracevisor.conf:5: expected `key = value`'
tv_expect "bad-config: duplicate, line 7" "$log" "tracevisor.conf:7: duplicate key 'console' \\(first set on line 6\\)"
tv_expect "bad-config: error count" "$log" 'config: 4 error\(s\)'
tv_expect "bad-config: loader failure explained" "$log" 'cannot load loader=\\EFI\\missing\\nothing.efi from tracevisor.s volume: EFI_NOT_FOUND'
tv_expect "bad-config: returns to firmware" "$log" 'returning to the firmware'
tv_expect "bad-config: firmware booted on" "$log" 'TRACEVISOR-PAYLOAD-OK'
read -r tvh parent < <(tv_handles "$log")
if grep -q "TRACEVISOR-PAYLOAD: image" "$log" && [ "$tvh" != 0000000000000000 ] && [ "$tvh" != "$parent" ]; then
	tv_ok "bad-config: payload started by the firmware, not tracevisor"
else
	tv_fail "bad-config: payload started by the firmware" "tracevisor handle $tvh, payload parent $parent"
fi
tv_keep_log "$log"
