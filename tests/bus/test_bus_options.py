"""Opening the bus the python-can way, with the --iface shorthand and a default that works anywhere."""

from __future__ import annotations

import argparse
import errno

import can
import pytest

from ecu_sim.bus import options as bus
from ecu_sim.errors import BusUnavailableError, ConfigError
from ecu_sim.settings.values import bus_value


@pytest.fixture(autouse=True)
def no_python_can_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CAN_INTERFACE", "CAN_CHANNEL", "CAN_BITRATE", "CAN_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(can.util, "load_file_config", lambda *a, **k: {})


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    bus.add_arguments(parser)
    return parser.parse_args(argv)


def test_without_any_bus_option_the_default_is_udp_multicast_ipv4() -> None:
    options = bus.resolve_bus_options(parse(), {}, bus_value)
    assert (options.interface, options.channel) == ("udp_multicast", "239.74.163.2")


def test_iface_is_shorthand_for_socketcan() -> None:
    options = bus.resolve_bus_options(parse("--iface", "vcan0"), {}, bus_value)
    assert (options.interface, options.channel) == ("socketcan", "vcan0")


def test_iface_together_with_interface_is_refused() -> None:
    with pytest.raises(ConfigError, match="--iface"):
        bus.resolve_bus_options(parse("--iface", "vcan0", "-i", "pcan"), {}, bus_value)


def test_standard_python_can_options_pass_through() -> None:
    args = parse("-i", "pcan", "-c", "PCAN_USBBUS1", "-b", "250000")
    options = bus.resolve_bus_options(args, {}, bus_value)
    assert (options.interface, options.channel, options.bitrate) == ("pcan", "PCAN_USBBUS1", 250000)


def test_python_can_environment_configuration_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAN_INTERFACE", "virtual")
    monkeypatch.setenv("CAN_CHANNEL", "foo")
    options = bus.resolve_bus_options(parse(), {}, bus_value)
    assert (options.interface, options.channel) == ("virtual", "foo")


def test_a_python_can_config_file_names_the_interface_the_command_line_the_channel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(can.util, "load_file_config",
                        lambda *a, **k: {"interface": "virtual", "channel": "from-file"})
    options = bus.resolve_bus_options(parse("-c", "mine"), {}, bus_value)
    assert (options.interface, options.channel) == ("virtual", "mine")


def test_an_unknown_interface_in_python_can_config_is_a_configuration_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAN_INTERFACE", "nosuchbus")
    with pytest.raises(ConfigError, match=r"CAN_.*nosuchbus"):
        bus.resolve_bus_options(parse(), {}, bus_value)


def test_a_channel_without_an_interface_is_refused_with_the_socketcan_hint() -> None:
    with pytest.raises(ConfigError, match=r"needs an interface.*--iface vcan0"):
        bus.resolve_bus_options(parse("-c", "vcan0"), {}, bus_value)


def test_a_missing_driver_library_is_a_configuration_error_without_a_doubled_full_stop() -> None:
    err = bus._unavailable(argparse.Namespace(interface="pcan", channel="PCAN_USBBUS1"),
                           OSError("pcanbasic library not found."))
    assert isinstance(err, ConfigError)
    assert "pcan" in str(err) and "Install the driver" in str(err) and ".." not in str(err)


def test_missing_constructor_arguments_are_a_configuration_error() -> None:
    err = bus._unavailable(argparse.Namespace(interface="socketcand", channel="x"),
                           TypeError("__init__() missing 2 required positional arguments: 'host' and 'port'"))
    assert isinstance(err, ConfigError) and "socketcand" in str(err)


def test_config_file_bus_section_fills_what_the_command_line_leaves_open() -> None:
    options = bus.resolve_bus_options(parse("-c", "can0"), {"interface": "socketcan", "channel": "can9",
                                                            "receive_own_messages": "False"}, bus_value)
    assert (options.interface, options.channel, options.bus_kwargs) == (
        "socketcan", "can0", {"receive_own_messages": False})


def test_a_missing_socketcan_interface_says_how_to_create_it() -> None:
    options = argparse.Namespace(interface="socketcan", channel="vcan0")
    err = bus._unavailable(options, OSError(errno.ENODEV, "No such device"))
    assert isinstance(err, BusUnavailableError)
    assert "vcan0 does not exist; create it with `sudo ecu-sim link vcan0 --create`" in str(err)


def test_a_kernel_without_socketcan_is_explained() -> None:
    options = argparse.Namespace(interface="socketcan", channel="vcan0")
    err = bus._unavailable(options, can.CanOperationError("x", error_code=errno.EAFNOSUPPORT))
    assert "no SocketCAN support" in str(err)


def test_an_unknown_interface_name_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="'nosuchbus'"):
        bus.open_bus(argparse.Namespace(interface="nosuchbus", channel="x"))


def test_a_bit_rate_the_command_line_gives_wins_over_a_bad_one_in_the_config_file() -> None:
    options = bus.resolve_bus_options(parse("-i", "pcan", "-c", "PCAN_USBBUS1", "-b", "250000"),
                                      {"bitrate": "fast"}, bus_value)
    assert options.bitrate == 250000


def test_a_bit_rate_and_fd_from_the_config_file_are_typed_as_python_can_takes_them() -> None:
    options = bus.resolve_bus_options(parse("-i", "pcan", "-c", "PCAN_USBBUS1"),
                                      {"bitrate": "500000", "fd": "yes"}, bus_value)
    assert (options.bitrate, options.fd) == (500000, True)
