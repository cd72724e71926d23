"""How an attack is written, and what the attacker refuses: one line, exit 2, before any bus opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from ecu_sim.attack.safety import is_virtual
from ecu_sim.attack.spec import parse_attack
from tests.conftest import REPO, Cli
from tests.helpers.attacked import record


def test_an_attack_takes_its_parameters_and_the_fault_grammars_window() -> None:
    attack = parse_attack("tsc1:target=0x00,speed=2000@30+10")
    assert (attack.kind, attack.params.target, attack.params.speed) == ("tsc1", 0, 2000.0)
    assert (attack.start_s, attack.end_s) == (30.0, 40.0)


def test_a_parameter_not_given_takes_the_kinds_default() -> None:
    assert parse_attack("request").params.pgn == 0xFEEB


@pytest.mark.parametrize(("spec", "says"), [
    ("xbr:mode=foo", "mode=foo is not one of add, max"),
    ("tsc1:mode=fast,speed=1", "mode=fast is not one of speed, torque, limit"),
    ("tsc1:target=0x00", "tsc1 needs speed=RPM or torque=PCT"),
    ("bam:size=2000", "size=2000 is not a transport size 9..1785"),
    ("fuzz:pgn=0xfeeb,spn=84", "fuzz takes pgn= or spn=, not both"),
    ("replay", "replay needs file=LOG"),
])
def test_a_value_the_kind_does_not_take_is_refused_when_the_spec_is_read(spec: str, says: str) -> None:
    from ecu_sim.errors import ConfigError

    with pytest.raises(ConfigError, match=says):
        parse_attack(spec)


@pytest.mark.parametrize(("spec", "says"), [
    ("nope@1", "unknown attack 'nope'"),
    ("tsc1:sped=2000", "tsc1 takes no 'sped'"),
    ("tsc1:speed=fast", "speed=fast is not a finite number"),
    ("request:target=0x1ff", "target=0x1ff is not an address"),
    ("request:rate=-1", "rate=-1 is not"),
    ("claim@5-2", "the window ends before it starts"),
    ("claim@soon", "the window must be @FROM"),
    ("cts:packets=256", "packets=256 is not a whole number 0..255"),
    ("rts:false=8", "false=8 is not a transport size 9..1785"),
    ("rtsflood:source=0xf0,count=40", "source+count passes 0xfd"),
    ("interrupt:by=timeout", "by=timeout is not one of eoma, abort"),
    ("dt:mode=swap", "mode=swap is not one of spoof, overwrite"),
    ("cts:peer=0x00", "the peer must be another address than the target"),
    ("replay:from=-1", "from=-1 is not a finite number"),
])
def test_a_bad_attack_exits_2_with_one_line_saying_what_is_wrong(cli_main: Cli, spec: str, says: str) -> None:
    result = cli_main("attack", "--attack", spec)
    assert result.status == 2
    assert says in result.err and len(result.err.strip().splitlines()) == 1
    assert "Traceback" not in result.err


def test_a_window_past_the_runs_end_exits_2(cli_main: Cli) -> None:
    result = cli_main("simulate", "--vehicle", "class6", "--profile", "j1939", "--network", "powertrain",
                      "--duration", "5", "--attack", "tsc1:speed=2000@3+10")
    assert result.status == 2
    assert "reaches past the run's end at 5 s" in result.err


def test_the_attacker_refuses_a_socketcan_interface_that_is_not_virtual(cli_main: Cli) -> None:
    result = cli_main("attack", "-i", "socketcan", "-c", "can0", "--attack", "claim")
    assert result.status == 2
    assert "refusing to attack socketcan can0" in result.err and "--allow-real-bus" in result.err


def test_the_attacker_refuses_udp_multicast_that_leaves_the_host(cli_main: Cli) -> None:
    result = cli_main("attack", "-i", "udp_multicast", "--bus-kwargs", "hop_limit=1", "--attack", "claim")
    assert result.status == 2
    assert len(result.err.strip().splitlines()) == 1
    assert "refusing to attack udp_multicast" in result.err and "--allow-real-bus" in result.err


def test_a_vcan_interface_counts_as_virtual_and_a_device_backed_one_does_not(tmp_path: Path) -> None:
    net = tmp_path / "class" / "net"
    net.mkdir(parents=True)
    for name, home in (("vcan0", "devices/virtual/net/vcan0"), ("can0", "devices/platform/can/net/can0")):
        (tmp_path / home).mkdir(parents=True)
        (net / name).symlink_to(tmp_path / home)
    assert is_virtual("socketcan", "vcan0", str(net))
    assert not is_virtual("socketcan", "can0", str(net))
    assert not is_virtual("socketcan", "absent0", str(net))


@pytest.mark.parametrize("interface", ["virtual", "udp_multicast"])
def test_python_cans_in_host_buses_count_as_virtual(interface: str) -> None:
    assert is_virtual(interface, "any")


def test_udp_multicast_with_a_hop_limit_is_not_virtual() -> None:
    assert is_virtual("udp_multicast", "any", bus_kwargs={"hop_limit": 0})
    assert not is_virtual("udp_multicast", "any", bus_kwargs={"hop_limit": 1})


def test_list_names_every_attack_with_its_parameters_and_defaults(cli_main: Cli) -> None:
    from ecu_sim.attack.spec import ATTACKS

    result = cli_main("attack", "--list")
    assert result.status == 0
    listed = {line.split()[0] for line in result.out.splitlines() if not line.startswith(" ")}
    assert listed == set(ATTACKS.names())
    assert "target=0x00,source=0xf9,pgn=0xfeeb,rate=2000" in result.out


def test_every_attack_kind_builds_its_frames_from_the_j1939_profile(tmp_path: Path) -> None:
    from ecu_sim.attack.plan import AttackPlan
    from ecu_sim.attack.spec import ATTACKS
    from ecu_sim.calibration.files import write_image
    from ecu_sim.codec.profile import Profile
    from ecu_sim.nodes.calibrated import builtin_image
    from ecu_sim.settings.model import Settings

    write_image(builtin_image("engine", Settings()), tmp_path / "engine.s19")
    needs = {"tsc1": ":speed=1500", "replay": f":file={record(tmp_path / 'recorded.log')}",
             "reflash": f":file={tmp_path / 'engine.s19'}", "hijack": f":file={tmp_path / 'engine.s19'}"}
    attacks = [parse_attack(f"{kind}{needs.get(kind, '')}@0+1") for kind in ATTACKS.names()]
    plan = AttackPlan(attacks, Profile.load("j1939").database, 0.01, seed=1)
    labels = {label for tick in range(100) for _, label in plan.frames_at(tick)}
    assert labels == set(range(1, len(ATTACKS) + 1))


def test_the_attack_page_has_a_row_for_every_kind_with_its_parameters() -> None:
    import re

    from ecu_sim.attack.spec import ATTACKS

    page = (REPO / "docs" / "attacks.md").read_text(encoding="utf-8")
    rows: dict[str, str] = {}  # the first row of a kind: the grammar's table comes first
    for m in re.finditer(r"^\| `(?P<kind>\w+)` \| (?P<params>[^|]*) \|", page, re.MULTILINE):
        rows.setdefault(m["kind"], m["params"])
    assert set(rows) >= set(ATTACKS.names())
    for kind in ATTACKS:
        assert all(f"`{p.key}" in rows[kind.name] for p in kind.parameters()), kind.name
