"""The command line: ``python main.py`` (``program.py``: the world and the subcommand table) and
one module per subcommand (``eval``, ``replay``, ``report``, ``runs``, ``schema``,
``worlds``; ``train`` lives with the trainer, ``agent_world.training.command``). The only
layer that attaches the web server to a session."""

from agent_world.cli.program import SUBCOMMANDS, build_parser, main

__all__ = ["SUBCOMMANDS", "build_parser", "main"]
