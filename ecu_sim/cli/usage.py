"""What to say about a command line argparse cannot place: a misspelt command, a foreign option.

argparse alone says ``unrecognized arguments: simulat`` under the top-level usage; a person wants
the command meant (``simulate``), or the command that takes the option given to another one.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence


def unknown_command(word: str, commands: Iterable[str]) -> str:
    names = sorted(commands)
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    hint = f"did you mean 'ecu-sim {close[0]}'?" if close else f"the commands are {', '.join(names)}"
    return f"unknown command {word!r}: {hint} (see 'ecu-sim --help')"


def unknown_arguments(command: str, extra: Sequence[str], takers: Callable[[str], list[str]]) -> str:
    """``extra`` are the words ``command`` did not take; the first option among them is explained."""
    for word in extra:
        option = word.split("=", 1)[0]
        if not option.startswith("-"):
            continue
        commands = [name for name in takers(option) if name != command]
        if commands:
            names = [f"'ecu-sim {name}'" for name in commands]
            which = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            return (f"'ecu-sim {command}' does not take {option}; {which} "
                    f"{'does' if len(commands) == 1 else 'do'} (see 'ecu-sim {command} --help')")
        return f"unknown option {option} for 'ecu-sim {command}' (see 'ecu-sim {command} --help')"
    return f"'ecu-sim {command}' takes no argument {extra[0]!r} (see 'ecu-sim {command} --help')"
