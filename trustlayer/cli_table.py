"""Subcommands written as data: a table of commands and their options, walked by
:func:`add_commands` into an argparse parser. The table reads like the ``--help`` it gives
(options in the order shown), and a command's set-up is no long function of
``add_argument`` calls. Imports nothing heavy: the command line answers ``--help`` at once."""
from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Option:
    """One argument of a command, as given to ``add_argument``."""

    #: the flags (``"-o", "--output"``) or the positional argument's name
    names: tuple[str, ...]
    #: ``add_argument``'s keywords (``help``, ``metavar``, ``default``, ...)
    settings: dict[str, Any]


def option(*names: str, **settings: Any) -> Option:
    """An :class:`Option` written as ``add_argument`` would be called."""
    return Option(names, settings)


#: What a command's table holds: an option, or a function that adds options several
#: commands share (or a group of them) to the command's parser.
Entry = Option | Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, what runs it and its options in the order ``--help``
    lists them."""

    name: str
    #: what runs the command: called with the parsed arguments, returns the exit code
    func: Callable[[argparse.Namespace], int]
    #: the options, in the order shown
    options: Sequence[Entry]
    #: ``add_parser``'s keywords (``help``, ``description``)
    parser: dict[str, Any] = field(default_factory=dict)


def add_commands(subparsers: argparse._SubParsersAction, commands: Sequence[Command]) -> None:
    """Add each of `commands`, with its options, to `subparsers`."""
    for command in commands:
        parser = subparsers.add_parser(command.name, **command.parser)
        for entry in command.options:
            if isinstance(entry, Option):
                parser.add_argument(*entry.names, **entry.settings)
            else:
                entry(parser)
        parser.set_defaults(func=command.func)
