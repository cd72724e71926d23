#!/bin/sh
# Install or upgrade ecu-sim as a systemd service on Debian 12 (BeagleBone Black, Raspberry Pi, PC).
#
#   sudo sh deploy/install.sh [options] ecu_sim-X.Y.Z-py3-none-any.whl
#
#   --enable IFACE      enable and (re)start ecu-sim@IFACE (repeatable); writes /etc/ecu-sim/IFACE.env
#                       if missing: LINK_ARGS=--create for vcan*, else --bitrate/--restart-ms below
#                       (an IFACE with "-" becomes the instance `systemd-escape IFACE`, e.g. can\x2da)
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
#                                   (journal, sd_notify) is used without compiling systemd-python;
#                                   no pip inside: install.sh runs Debian's pip wheel for it
#                                   (/opt/ecu-sim/venv/bin/python /usr/share/python-wheels/pip-*.whl/pip list)
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

# ---- Debian packages (apt-get update first, only when one is missing): python3-venv (venv + Debian's pip wheel), python3-systemd (journal, sd_notify), python3-msgpack (python-can's udp_multicast; msgpack has no armv7l wheel and a board has no C compiler)
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=""
for pkg in python3-venv python3-systemd python3-msgpack iproute2; do
    have_pkg "$pkg" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    [ "$apt" = 1 ] || die "missing Debian packages:$missing (apt-get install$missing)"
    say "installing Debian packages:$missing"
    # A fresh image has no package lists (or stale ones naming versions the mirror no longer has):
    # refresh them first, only on this path, so an installed system never waits for the network.
    DEBIAN_FRONTEND=noninteractive apt-get update -q \
        || die "apt-get update failed (network or /etc/apt/sources.list?); install$missing by hand"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing \
        || die "apt-get install failed; install$missing by hand"
fi
want=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case $want in 3.1[1-9]|3.[2-9][0-9]) ;; *) die "Python 3.11 or newer is needed (this is $want)" ;; esac

# ---- virtualenv: recreated only when missing or made by another Python (e.g. after a dist-upgrade).
# Without pip of its own: Debian's pip wheel (python3-pip-whl, pulled in by python3-venv) runs pip
# for it, which spares unpacking and byte-compiling pip and setuptools into the venv (the better
# part of a minute on a BeagleBone).
# shellcheck disable=SC2012  # Debian's wheel file names: no spaces or newlines
pipwhl=$(ls /usr/share/python-wheels/pip-*.whl 2>/dev/null | sort -V | tail -n1)
have=$(sed -n 's/^version = \([0-9]*\.[0-9]*\).*/\1/p' "$VENV/pyvenv.cfg" 2>/dev/null || true)
if [ "$have" != "$want" ] || [ ! -x "$VENV/bin/python" ] \
        || ! grep -q '^include-system-site-packages = true' "$VENV/pyvenv.cfg" 2>/dev/null; then
    say "creating $VENV (Python $want, with system site packages)"
    rm -rf "$VENV"
    mkdir -p "$PREFIX"
    if [ -n "$pipwhl" ]; then
        python3 -m venv --system-site-packages --without-pip "$VENV"
    else
        python3 -m venv --system-site-packages "$VENV"
    fi
fi

# ---- the wheel and its dependencies
pip() {
    if [ -x "$VENV/bin/pip" ] || [ -z "$pipwhl" ]; then
        "$VENV/bin/python" -m pip --disable-pip-version-check --no-input --quiet "$@"
    else
        "$VENV/bin/python" "$pipwhl/pip" --disable-pip-version-check --no-input --quiet "$@"
    fi
}
index=""
[ -z "$find_links" ] || index="--no-index --find-links $find_links"
# The stamp holds a hash of the wheel's RECORD (a hash of every file in it), i.e. of its content
# regardless of zip timestamps: re-running with the same wheel skips pip altogether. It lives in the
# venv, so a recreated venv is always filled again.
record=$(python3 -c 'import hashlib, sys, zipfile
w = zipfile.ZipFile(sys.argv[1])
print(hashlib.sha256(w.read(next(n for n in w.namelist() if n.endswith(".dist-info/RECORD")))).hexdigest())' "$wheel")
stampfile=$VENV/.ecu-sim-wheel
changed=0
if [ "$(cat "$stampfile" 2>/dev/null)" != "$record" ]; then
    # shellcheck disable=SC2012  # dist-info names made by pip: no spaces or newlines
    installed_version=$(ls -d "$VENV"/lib/python3*/site-packages/ecu_sim-*.dist-info 2>/dev/null \
        | sed -n 's/.*ecu_sim-\(.*\)\.dist-info$/\1/p' | head -n1)
    if [ -n "$installed_version" ] && [ "$installed_version" = "$(basename "$wheel" | cut -d- -f2)" ]; then
        # Same version number, new content (a development build): pip would call it "already
        # satisfied", so replace the package itself first; the next line settles its dependencies.
        # shellcheck disable=SC2086  # $index is a list of options
        pip install $index --force-reinstall --no-deps "$wheel" || die "pip could not install $wheel"
    fi
    # shellcheck disable=SC2086
    pip install $index "${wheel}[link]" || die "pip could not install $wheel and its dependencies"
    "$VENV/bin/ecu-sim" --help >/dev/null || die "the installed ecu-sim does not run"
    echo "$record" >"$stampfile"
    changed=1
    say "installed $(basename "$wheel")"
fi
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
    # the instance is the escaped name ("-" becomes \x2d), which the units turn back with %I
    instance=$(systemd-escape "$iface")
    services="$services ecu-sim@$instance.service"
    [ "$ccm" = 0 ] || services="$services ecu-sim-ccm@$instance.service"
done
for s in $services; do
    if ! systemctl is-enabled --quiet "$s" 2>/dev/null; then
        systemctl enable --quiet "$s"
        say "enabled $s"
    fi
done
# After a change (new wheel or units) running instances are restarted on it (upgrade); otherwise
# re-running this script leaves them alone. The instances asked for are started (CCM after ECU).
running=$(systemctl list-units --plain --no-legend --state=active,activating,reloading \
    'ecu-sim@*.service' 'ecu-sim-ccm@*.service' \
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
# shellcheck disable=SC2012  # as above
say "done: ecu-sim $(ls -d "$VENV"/lib/python3*/site-packages/ecu_sim-*.dist-info | sed -n 's/.*ecu_sim-\(.*\)\.dist-info$/\1/p')"
