#!/bin/sh
# Find (and optionally enable) the BeagleBone Black's DCAN1 controller on P9.24 (RX) / P9.26 (TX)
# and print its interface name, which is can0 on some images and can1 on others.
#
#   sh setup-dcan1.sh                 report what is there and what to do next
#   sudo sh setup-dcan1.sh --pins     if DCAN1 has no interface yet: config-pin p9.24/p9.26 can
#   sh setup-dcan1.sh --print-iface   print only the interface name (for scripts); exit 1 if none
#
# The interface is found by the controller's address (481d0000.can), not by its name, because the
# name depends on device-tree aliases and on whether DCAN0 is enabled too.
set -eu

DCAN1_ADDR=481d0000
mode=report
case ${1:-} in
    --pins) mode=pins ;;
    --print-iface) mode=print ;;
    "") ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup-dcan1.sh: unknown argument $1" >&2; exit 2 ;;
esac

find_iface() {
    for dev in /sys/class/net/*; do
        [ -e "$dev/device" ] || continue
        case $(readlink -f "$dev/device") in
            *"$DCAN1_ADDR".can*|*"$DCAN1_ADDR".d_can*) basename "$dev"; return 0 ;;
        esac
    done
    return 1
}

if [ "$mode" = print ]; then
    find_iface || exit 1
    exit 0
fi

model=$(tr -d '\0' </proc/device-tree/model 2>/dev/null || echo unknown)
case $model in
    *BeagleBone*) echo "board: $model" ;;
    *) echo "warning: this is not a BeagleBone ($model); DCAN1 is specific to the AM335x" >&2 ;;
esac

iface=$(find_iface || true)
if [ -z "$iface" ] && [ "$mode" = pins ]; then
    [ "$(id -u)" = 0 ] || { echo "setup-dcan1.sh: --pins needs root" >&2; exit 1; }
    if command -v config-pin >/dev/null; then
        echo "configuring P9.24 (dcan1_rx) and P9.26 (dcan1_tx) with config-pin"
        config-pin p9.24 can
        config-pin p9.26 can
        modprobe c_can_platform 2>/dev/null || true
        # the driver may create the interface a moment after the pins are muxed
        for _ in 1 2 3 4 5 6 7 8 9 10; do iface=$(find_iface || true); [ -z "$iface" ] || break; sleep 0.5; done
    else
        echo "config-pin is not installed (it comes with beagleboard.org images); use the overlay" >&2
    fi
fi

if [ -z "$iface" ]; then
    cat <<EOF
DCAN1 has no network interface. Enable it, then run this again:
  persistent:  in /boot/uEnv.txt set
                   enable_uboot_overlays=1
                   uboot_overlay_addr4=/lib/firmware/BB-CAN1-00A0.dtbo
               and reboot
  this boot:   sudo sh $0 --pins     (config-pin p9.24 can; config-pin p9.26 can)
See deploy/beaglebone/README.md.
EOF
    exit 1
fi

echo "DCAN1 (P9.24 RX / P9.26 TX) is $iface"
ip -d link show "$iface" 2>/dev/null | sed 's/^/  /' || true
if command -v config-pin >/dev/null; then
    for pin in p9.24 p9.26; do printf '  %s: %s\n' "$pin" "$(config-pin -q "$pin" 2>&1 | tail -n1)"; done
fi
cat <<EOF
next:
  sudo sh deploy/install.sh --enable $iface --bitrate 250000 ecu_sim-*.whl          # ECU
  sudo sh deploy/install.sh --enable $iface --ccm --bitrate 250000 ecu_sim-*.whl    # ECU and CCM
EOF
