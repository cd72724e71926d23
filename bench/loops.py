"""The loops measured beside ecu-sim: what a user would pick instead, what ecu-sim replaces, and what
the machine charges for a wake-up and for the ECU's work with no structure around it.
"""

from __future__ import annotations

import time

from bench.roles import PERIODIC_ID, Stop, udp_bus


def periodic(port: int, period: float) -> None:
    """python-can's own periodic sender with static data: the baseline a user would pick."""
    import can

    from ecu_sim.codec.profile import Profile

    stop = Stop()
    bus = udp_bus(port)
    data = Profile.load("amp").speed.encode(80.0)
    task = bus.send_periodic(can.Message(arbitration_id=PERIODIC_ID, data=data, is_extended_id=True),
                             period)
    stop.event.wait()
    task.stop()
    bus.shutdown()


def testbed(port: int, period: float, initial_kph: float, grade_pct: float) -> None:
    """The original testbed's loop: wait up to 110 ms for APP, step with the measured dt, sleep.

    What is kept from the original is its timing style, which is what is being measured: the
    receive timeout of 1.1 periods, the model stepped with the measured interval, a missing frame
    counted as a released pedal, and "sleep for what is left of the window". Not kept: its model
    errors and its new CAN socket per tick (this uses ecu-sim's model and codec and one socket).
    """
    import can

    from ecu_sim.codec.profile import Profile
    from ecu_sim.codec.role import Invalid
    from ecu_sim.vehicle.model import TruckModel, TruckState
    from ecu_sim.vehicle.params import TruckParams

    stop = Stop()
    profile = Profile.load("amp")
    app_codec, speed_codec = profile.app, profile.speed
    bus = udp_bus(port, can_filters=[{"can_id": app_codec.frame_id, "can_mask": 0x1FFFFFFF,
                                       "extended": True}])
    truck = TruckModel(TruckParams())
    state = TruckState.from_kph(initial_kph)
    last = time.monotonic()
    while not stop:
        window_start = time.monotonic()
        msg = bus.recv(1.1 * period)
        app = 0.0
        if msg is not None:
            value = app_codec.decode(msg.data)
            if not isinstance(value, Invalid):
                app = value
        now = time.monotonic()
        dt, last = now - last, now
        if dt > 0.0:
            state = truck.step(state, app, grade_pct, dt)
        bus.send(can.Message(arbitration_id=speed_codec.frame_id, data=speed_codec.encode(state.speed_kph),
                             is_extended_id=True))
        elapsed = time.monotonic() - window_start
        if elapsed < period:
            time.sleep(period - elapsed)
    bus.shutdown()


def sleeper(wakes: int, period: float) -> None:
    """A loop that only sleeps to absolute deadlines, ``wakes`` times a period: the machine's price
    of a wake-up, measured beside the senders (ecu-sim and send_periodic wake once a tick)."""
    stop = Stop()
    start = time.monotonic()
    k = 0
    while not stop:
        k += 1
        for w in range(wakes, 0, -1):
            delay = start + k * period - 0.01 * period * (w - 1) - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def floor(port: int, period: float) -> None:
    """The ECU's tick written as one flat loop: the least its work costs in Python on this machine.

    The same libraries and the same work as ecu-sim's ECU (python-can's host-local bus, the
    profile's codecs, the testbed model), none of its structure: one wake-up at each deadline,
    every queued frame read without waiting, the newest APP decoded, one model step, one send. No
    hold time, no counters, no listeners, no status, nothing learned about the machine. Beside
    the ECU in the same minutes, the difference in CPU per tick is the price of that structure.
    """
    import can

    from ecu_sim.codec.profile import Profile
    from ecu_sim.codec.role import Invalid
    from ecu_sim.vehicle.model import TruckModel, TruckState
    from ecu_sim.vehicle.params import TruckParams

    stop = Stop()
    profile = Profile.load("amp")
    app_codec, speed_codec = profile.app, profile.speed
    bus = udp_bus(port)
    truck = TruckModel(TruckParams())
    state = TruckState.from_kph(80.0)
    app = 0.0
    start = time.monotonic()
    k = 0
    while not stop:
        k += 1
        delay = start + k * period - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        while (msg := bus.recv(0.0)) is not None:
            if msg.arbitration_id == app_codec.frame_id:
                value = app_codec.decode(msg.data)
                if not isinstance(value, Invalid):
                    app = value
        state = truck.step(state, app, 0.0, period)
        bus.send(can.Message(arbitration_id=speed_codec.frame_id, data=speed_codec.encode(state.speed_kph),
                             is_extended_id=True))
    bus.shutdown()
