#!/bin/sh
# Install or upgrade ecu-sim as a systemd service on Debian 12 (BeagleBone Black, Raspberry Pi, PC).
#
#   sudo sh deploy/install.sh [options] ecu_sim-X.Y.Z-py3-none-any.whl
#
#   --enable IFACE      enable and (re)start ecu-sim@IFACE (repeatable); writes /etc/ecu-sim/IFACE.env
#                       if missing: LINK_ARGS=--create for vcan*, else --bitrate/--restart-ms below
#   --ccm               also enable and (re)start ecu-sim-ccm@IFACE on every --enable IFACE
#   --bitrate N         bit rate written to a new IFACE.env of a real interface (default 250000, J1939)
#   --restart-ms MS     bus-off auto restart written to a new IFACE.env (default 100)
#   --no-start          enable only; the services start at the next boot
#   --find-links DIR    install offline from a directory of wheels (pip --no-index --find-links DIR)
#   --no-apt            never run apt-get (fail instead when a Debian package is missing)
#
# Idempotent: running it again with the same wheel changes nothing. Upgrade = run it with a new wheel;
# running instances are restarted on the new code. Existing configuration (/etc/ecu-sim/*) is never
# overwritten: a changed default is written next to it as ecu-sim.ini.dist.
#
# Layout:
#   /opt/ecu-sim/venv               virtualenv with --system-site-packages, so Debian's python3-systemd
#                                   (journal, sd_notify) is used without compiling systemd-python
#   /usr/local/bin/ecu-sim          symlink, e.g. for `sudo ecu-sim link can1 --show`
#   /etc/systemd/system/ecu-sim@.service, ecu-sim-ccm@.service
#   /etc/ecu-sim/ecu-sim.ini        shared configuration; /etc/ecu-sim/IFACE.env per interface
set -eu

PREFIX=/opt/ecu-sim
VENV=$PREFIX/venv
CONF=/etc/ecu-sim
UNITDIR=/etc/systemd/system
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

wheel=""
ifaces=""
ccm=0
start=1
bitrate=250000
restart_ms=100
find_links=""
apt=1
while [ $# -gt 0 ]; do
    case $1 in
        --enable) [ $# -ge 2 ] || die "--enable needs an interface name"; ifaces="$ifaces $2"; shift 2 ;;
        --ccm) ccm=1; shift ;;
        --bitrate) bitrate=$2; shift 2 ;;
        --restart-ms) restart_ms=$2; shift 2 ;;
        --no-start) start=0; shift ;;
        --find-links) find_links=$2; shift 2 ;;
        --no-apt) apt=0; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$wheel" ] || die "only one wheel, please"; wheel=$1; shift ;;
    esac
done

[ "$(id -u)" = 0 ] || die "must run as root: sudo sh $0 ..."
if [ -z "$wheel" ]; then
    # convenience: exactly one wheel next to this script or in ../dist
    set -- "$here"/ecu_sim-*.whl "$here"/../dist/ecu_sim-*.whl
    for candidate; do [ -f "$candidate" ] && { [ -z "$wheel" ] || die "several wheels found; name one"; wheel=$candidate; }; done
    [ -n "$wheel" ] || die "no wheel given (build one with: python3 -m pip wheel --no-deps -w dist .)"
fi
[ -f "$wheel" ] || die "wheel not found: $wheel"
wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
for iface in $ifaces; do
    case $iface in
        *[!A-Za-z0-9_.-]*|"") die "not an interface name: '$iface'" ;;
    esac
    [ ${#iface} -le 15 ] || die "interface names have at most 15 characters: $iface"
done
case $bitrate in *[!0-9]*|"") die "--bitrate needs a number in bit/s" ;; esac
case $restart_ms in *[!0-9]*|"") die "--restart-ms needs a number of milliseconds" ;; esac

# Units and the default configuration come from the source tree or a release tarball next to this
# script: deploy/ and systemd/ side by side.
units=""
for d in "$here/../systemd" "$here/systemd"; do
    [ -f "$d/ecu-sim@.service" ] && { units=$(cd "$d" && pwd); break; }
done
[ -n "$units" ] || die "cannot find the unit files (systemd/ecu-sim@.service next to deploy/)"
[ -f "$here/ecu-sim.ini" ] || die "cannot find the default configuration $here/ecu-sim.ini"

# ---- Debian packages: python3-venv to create the venv, python3-systemd for journal and sd_notify
missing=""
python3 -c 'import ensurepip' 2>/dev/null || missing="$missing python3-venv"
python3 -c 'import systemd.daemon, systemd.journal' 2>/dev/null || missing="$missing python3-systemd"
command -v ip >/dev/null || missing="$missing iproute2"
if [ -n "$missing" ]; then
    [ "$apt" = 1 ] || die "missing Debian packages:$missing (apt-get install$missing)"
    say "installing Debian packages:$missing"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing \
        || die "apt-get failed; run 'apt-get update' first or install$missing by hand"
fi
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "Python 3.11 or newer is needed"

# ---- virtualenv: recreated only when missing or made by another Python (e.g. after a dist-upgrade)
want=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
have=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
if [ "$have" != "$want" ] || ! grep -q '^include-system-site-packages = true' "$VENV/pyvenv.cfg" 2>/dev/null; then
    say "creating $VENV (Python $want, with system site packages)"
    rm -rf "$VENV"
    mkdir -p "$PREFIX"
    python3 -m venv --system-site-packages "$VENV"
fi

# ---- the wheel and its dependencies
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check --no-input --quiet "$@"; }
index=""
[ -z "$find_links" ] || index="--no-index --find-links $find_links"
# shellcheck disable=SC2086  # $index is a list of options
pip install $index "$wheel[link]" || die "pip could not install $wheel and its dependencies"
# The same version number with new content (a development build) would be "already satisfied":
# reinstall the package itself, without touching its dependencies, when the wheel's content differs.
# Its RECORD lists a hash of every file, so it identifies the content regardless of zip timestamps.
record=$(python3 -c 'import hashlib, sys, zipfile
w = zipfile.ZipFile(sys.argv[1])
print(hashlib.sha256(w.read(next(n for n in w.namelist() if n.endswith(".dist-info/RECORD")))).hexdigest())' "$wheel")
stampfile=$PREFIX/.installed-wheel
changed=0
if [ ! -f "$stampfile" ] || [ "$(cat "$stampfile")" != "$record" ]; then
    # shellcheck disable=SC2086
    pip install $index --force-reinstall --no-deps "$wheel" || die "pip could not install $wheel"
    echo "$record" >"$stampfile"
    changed=1
    say "installed $(basename "$wheel")"
fi
"$VENV/bin/ecu-sim" --help >/dev/null || die "the installed ecu-sim does not run"
ln -sfn "$VENV/bin/ecu-sim" /usr/local/bin/ecu-sim

# ---- units and configuration
changed_units=0
for unit in ecu-sim@.service ecu-sim-ccm@.service; do
    if ! cmp -s "$units/$unit" "$UNITDIR/$unit"; then
        install -m 0644 "$units/$unit" "$UNITDIR/$unit"
        changed_units=1
        changed=1
    fi
done
install -d -m 0755 "$CONF"
if [ ! -f "$CONF/ecu-sim.ini" ]; then
    install -m 0644 "$here/ecu-sim.ini" "$CONF/ecu-sim.ini"
    say "wrote $CONF/ecu-sim.ini"
elif ! cmp -s "$here/ecu-sim.ini" "$CONF/ecu-sim.ini"; then
    install -m 0644 "$here/ecu-sim.ini" "$CONF/ecu-sim.ini.dist"
    say "kept your $CONF/ecu-sim.ini; the new default is $CONF/ecu-sim.ini.dist"
fi
for iface in $ifaces; do
    [ ! -f "$CONF/$iface.env" ] || continue
    case $iface in
        vcan*) link_args="--create" ;;
        *) link_args="--bitrate $bitrate --restart-ms $restart_ms" ;;
    esac
    cat >"$CONF/$iface.env" <<EOF
# Settings for ecu-sim@$iface and ecu-sim-ccm@$iface (systemd EnvironmentFile= syntax).
# Arguments of the privileged link step run before each start: \`ecu-sim link $iface \$LINK_ARGS\`
LINK_ARGS=$link_args
# Any configuration item can be overridden for this interface only, e.g.:
#ECU_SIM_TRUCK_MASS_KG=30000
#ECU_SIM_RUN_SET_SPEED_KPH=85
EOF
    chmod 0644 "$CONF/$iface.env"
    say "wrote $CONF/$iface.env ($link_args)"
done

# ---- systemd
if [ ! -d /run/systemd/system ]; then
    say "systemd is not running (chroot or image build): units installed, nothing enabled or started"
    exit 0
fi
[ "$changed_units" = 0 ] || systemctl daemon-reload
services=""
for iface in $ifaces; do
    services="$services ecu-sim@$iface.service"
    [ "$ccm" = 0 ] || services="$services ecu-sim-ccm@$iface.service"
done
if [ -n "$services" ]; then
    # shellcheck disable=SC2086
    systemctl enable --quiet $services
    say "enabled:$services"
fi
# After a change (new wheel or units) running instances are restarted on it (upgrade); otherwise
# re-running this script leaves them alone. The instances asked for are started (CCM after ECU).
running=$(systemctl list-units --plain --no-legend --state=active 'ecu-sim@*.service' 'ecu-sim-ccm@*.service' \
    | awk '{print $1}' | tr '\n' ' ')
if [ "$changed" = 1 ] && [ -n "$running" ]; then
    say "restarting on the new version: $running"
    # shellcheck disable=SC2086
    systemctl try-restart $running
fi
if [ "$start" = 1 ] && [ -n "$services" ]; then
    # shellcheck disable=SC2086
    systemctl start $services || die "starting failed; see: journalctl -b -u 'ecu-sim*'"
    say "running:$services"
fi
say "done: $("$VENV/bin/python" -c 'import importlib.metadata as m; print("ecu-sim", m.version("ecu-sim"))')"
