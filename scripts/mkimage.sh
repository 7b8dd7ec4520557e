#!/usr/bin/env bash
# mkimage.sh IMAGE DEST=SRC... - a GPT disk image with one FAT32 EFI system
# partition holding the given files, ready for dd to a USB stick.
#
# Layout: 64 MiB disk, partition 1 type EF00 from sector 2048 to the end.
# FAT32 needs >= 65525 clusters: with 512-byte clusters (-s 1) a 62 MiB
# partition has ~126k, enough.  Built from files in a temporary copy, then
# moved into place, so a failed run never leaves a half-written image.
set -euo pipefail
img=${1:?usage: mkimage.sh IMAGE DEST=SRC...}
shift
size_mib=${TV_IMAGE_MIB:-64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

disk=$tmp/disk.img
part=$tmp/part.img
truncate -s "${size_mib}M" "$disk"
sgdisk --clear --new=1:2048:0 --typecode=1:EF00 --change-name=1:"tracevisor ESP" "$disk" >/dev/null
# Partition geometry as sgdisk wrote it.
start=$(sgdisk --info=1 "$disk" | awk '/First sector/ {print $3}')
end=$(sgdisk --info=1 "$disk" | awk '/Last sector/ {print $3}')
sectors=$((end - start + 1))
truncate -s $((sectors * 512)) "$part"
mkfs.vfat -F 32 -s 1 -h "$start" -n TRACEVISOR "$part" >/dev/null

for spec in "$@"; do
	dest=${spec%%=*}
	src=${spec#*=}
	dir=$(dirname "$dest")
	# Create each directory level (mmd fails if it exists: ignore that).
	path=""
	IFS=/ read -ra parts <<<"$dir"
	for p in "${parts[@]}"; do
		[ -n "$p" ] && [ "$p" != . ] || continue
		path="$path/$p"
		mmd -i "$part" "::$path" 2>/dev/null || true
	done
	mcopy -o -i "$part" "$src" "::/$dest"
done

dd if="$part" of="$disk" bs=512 seek="$start" conv=notrunc status=none
mv "$disk" "$img"
echo "mkimage: $img (${size_mib} MiB GPT, FAT32 ESP at sector $start): $*"
