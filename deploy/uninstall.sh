#!/bin/sh
# Remove ecu-sim installed by deploy/install.sh: stops and disables every ecu-sim@* and
# ecu-sim-ccm@* instance, removes the units, /opt/ecu-sim and /usr/local/bin/ecu-sim.
#
#   sudo sh deploy/uninstall.sh [--purge]
#
#   --purge   also delete the configuration in /etc/ecu-sim and the drop-ins of the units and of
#             every instance in /etc/systemd/system/ecu-sim*@*.service.d (kept by default, like
#             apt remove)
#
# Interfaces created by the services (vcan*) are left alone; `ip link del vcan0` removes one.
set -eu

purge=0
case ${1:-} in
    --purge) purge=1 ;;
    "") ;;
    -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "uninstall.sh: unknown argument $1" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "uninstall.sh: must run as root" >&2; exit 1; }

if [ -d /run/systemd/system ]; then
    # instances that run, and instances that are merely enabled (symlinks in *.wants/)
    instances=$( {
        systemctl list-units --all --plain --no-legend 'ecu-sim@*.service' 'ecu-sim-ccm@*.service' | awk '{print $1}'
        find /etc/systemd/system \( -name 'ecu-sim@?*.service' -o -name 'ecu-sim-ccm@?*.service' \) \
            -exec basename {} \; 2>/dev/null
    } | sort -u)
    if [ -n "$instances" ]; then
        # shellcheck disable=SC2086
        systemctl disable --now --quiet $instances || true
        # shellcheck disable=SC2086  # one word per instance
        echo "uninstall.sh: stopped and disabled:" $instances
    fi
fi
rm -f /etc/systemd/system/ecu-sim@.service /etc/systemd/system/ecu-sim-ccm@.service
# Drop-ins are the administrator's configuration (`systemctl edit`), like /etc/ecu-sim: kept unless
# --purge, for the template (ecu-sim@.service.d) and every instance (ecu-sim@can1.service.d) alike,
# so a reinstall picks them up again.
dropins=$(find /etc/systemd/system -maxdepth 1 -type d \
    \( -name 'ecu-sim@*.service.d' -o -name 'ecu-sim-ccm@*.service.d' \) 2>/dev/null | sort)
[ ! -d /run/systemd/system ] || { systemctl daemon-reload; systemctl reset-failed 'ecu-sim*' 2>/dev/null || true; }
if [ "$(readlink /usr/local/bin/ecu-sim 2>/dev/null)" = /opt/ecu-sim/venv/bin/ecu-sim ]; then
    rm -f /usr/local/bin/ecu-sim
fi
rm -rf /opt/ecu-sim
if [ "$purge" = 1 ]; then
    rm -rf /etc/ecu-sim
    # shellcheck disable=SC2086  # one path per line, none with spaces (unit names have none)
    [ -z "$dropins" ] || rm -rf $dropins
    echo "uninstall.sh: removed, configuration purged${dropins:+ (with the drop-ins)}"
else
    # shellcheck disable=SC2086  # one word per directory
    [ -z "$dropins" ] || echo "uninstall.sh: kept the drop-ins:" $dropins
    echo "uninstall.sh: removed; configuration kept in /etc/ecu-sim (--purge deletes it)"
fi
