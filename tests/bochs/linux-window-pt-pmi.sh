#!/usr/bin/env bash
# bochs/linux-window-pt-pmi.sh - bochs/linux-window-pt.sh with pmi = on and
# no drain tick (pt_drain_us = 0): the ToPA PMI, taken by tracevisor as
# an NMI exit, is what keeps the regions from filling.  All of that
# script's checks, plus 0 ToPA stops and PMIs that were ours.
exec env TV_LINUX_PT_PMI=1 bash "$(dirname "$0")/linux-window-pt.sh" "$@"
