"""Command-line options that several commands share, in a module that imports nothing
heavy (the command line answers ``--help`` at once)."""
from __future__ import annotations

import argparse


def unsigned_ok(command: argparse.ArgumentParser) -> None:
    """The option that lets a command read a model made or edited by hand."""
    command.add_argument("--unsigned-ok", action="store_true",
                         help="read a model file without the digest `learn` wrote, or changed "
                         "since (made by hand): by default such a file is refused")
