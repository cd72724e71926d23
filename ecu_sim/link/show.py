"""The ``ecu-sim link --show`` text: one ``key: value`` per line so scripts and tests can pick fields out."""

from __future__ import annotations

from dataclasses import fields

from ecu_sim.link.state import DeviceStats, LinkState


def _onoff(value: bool | None) -> str:
    return "n/a" if value is None else ("on" if value else "off")


def format_state(state: LinkState) -> str:
    """Controller lines appear only for a controller: a vcan has no bit timing to show as "unset"."""
    rows: list[tuple[str, str]] = [
        ("kind", state.kind or "unknown"),
        ("admin", "up" if state.up else "down"),
        ("operstate", state.operstate),
    ]
    if state.mtu is not None:
        rows.append(("mtu", str(state.mtu)))
    if state.is_controller:
        # the enum's name, as the kernel spells enum can_state: what --show has always printed
        rows.append(("controller state",
                     state.controller_state.name if state.controller_state is not None else "unknown"))
        bitrate = "unset" if state.bitrate is None else str(state.bitrate)
        if state.sample_point is not None:
            bitrate += f" (sample point {state.sample_point:.1f}%)"
        rows += [
            ("bitrate", bitrate),
            ("restart-ms", "n/a" if state.restart_ms is None else str(state.restart_ms)),
            ("berr-reporting", _onoff(state.berr_reporting)),
            ("listen-only", _onoff(state.listen_only)),
        ]
        if state.tx_error_counter is not None or state.rx_error_counter is not None:
            rows.append(("error counters", f"tx {state.tx_error_counter} rx {state.rx_error_counter}"))
        if state.stats is not None:
            rows.append(("device stats", " ".join(
                f"{counter.name.replace('_', '-')} {getattr(state.stats, counter.name)}"
                for counter in fields(DeviceStats))))
    width = max(len(key) for key, _ in rows) + 1
    return "\n".join([state.name] + [f"  {key + ':':<{width}} {value}" for key, value in rows])
