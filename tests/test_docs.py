"""README.md and docs/*.md against the program, so the docs cannot drift from it again.

Issue 29 found a README whose sample line showed another world's hash, a ``/top gold 3``
the console refuses, an ``eval --brains builtin,forager`` that names no brain, a
``replay --verify`` flag that does not exist and a documented 405 that was a 415. Each check
here reads what the docs show and asks the program itself:

- every command line of this repository's programs (in blocks and inline) is parsed by the
  real argument parser of that command, and its scenario, brains, seeds, policy and the
  files it names are resolved by the program's own registries;
- every console example with output is run (a real subprocess in a scratch folder, or the
  real console on a new world) and its output compared: the ``--ticks 3000 --seed 42``
  sample line field by field (all but the timings), the rest line by line (``...`` stands
  for lines left out);
- console commands, metric, scenario, ability and policy names, settings, flags, YAML
  examples and the files the docs point at are looked up in the program;
- docs/api.md's HTTP status codes and curl examples are asked of a real running server.

A failure names the file and line and says what the program prints or takes instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from agent_world import cli
from agent_world.cli.eval import parse_seeds
from agent_world.commands.dispatch import COMMANDS
from agent_world.commands.parsing import CommandError
from agent_world.config import Config, ConfigError, config_from_dict, load_config
from agent_world.core.items import ITEMS
from agent_world.core.metrics import METRICS
from agent_world.core.world import World
from agent_world.eval.scenario import DERIVED, ScenarioError, built_in_names, load_scenario
from agent_world.policies.library import example_policies
from agent_world.sandbox import load_builtins
from agent_world.web.playback import Playback
from bench import cli as bench_cli
from tests.docs_helpers import (
    DOCS,
    PLACEHOLDER,
    ROOT,
    Command,
    ConsoleLine,
    Doc,
    Where,
    all_docs,
    commands,
    concrete,
    console_lines,
    names_after,
    table_column,
)
from tests.web_helpers import served

ALL = all_docs()
FIXTURES = ROOT / "tests" / "doc_fixtures"


def _fail(problems: list[str], what: str) -> None:
    if problems:
        pytest.fail(f"{len(problems)} place(s) in the docs disagree with the program "
                    f"({what}):\n" + "\n".join(problems), pytrace=False)


def _doc(name: str) -> Doc:
    return next(doc for doc in ALL if doc.name == name)


# -- the program's registries ------------------------------------------------------------------

POLICIES = {policy.name for policy in example_policies()}
SCENARIOS = set(built_in_names())
SECTIONS = {f.name: {g.name for g in dataclasses.fields(getattr(Config(), f.name))}
            for f in dataclasses.fields(Config)}
# A placeholder the docs use for a number: what the parser gets instead.
NUMBERS = {"N", "M", "T", "TICK", "SPEED", "X", "HZ", "S", "F", "K"}


def _replay_commands() -> set[str]:
    """The console commands of a served replay (``replay --serve``): its own table, which
    uses nothing of the player but its methods."""
    return set(Playback.commands(Playback.__new__(Playback)))


CONSOLE_NAMES = set(COMMANDS) | _replay_commands()


def _registered_brains(doc: Doc) -> set[str]:
    """Brains a document registers in one of its YAML examples (``brains: {NAME: ...}``)."""
    names: set[str] = set()
    for block in doc.blocks:
        if block.lang != "yaml":
            continue
        for data in _yaml_documents(block.text):
            brains = data.get("brains") if isinstance(data, dict) else None
            if isinstance(brains, dict):
                names |= {k for k in brains if k not in SECTIONS["brains"]}
                names |= set(brains.get("registered") or {})
    return names


def _model_profiles() -> set[str]:
    """Model profiles the docs define in a YAML example (``llm: {models: {NAME: ...}}``)."""
    names: set[str] = set()
    for doc in all_docs():
        for block in doc.blocks:
            if block.lang != "yaml":
                continue
            for data in _yaml_documents(block.text):
                llm = data.get("llm") if isinstance(data, dict) else None
                models = llm.get("models") if isinstance(llm, dict) else None
                if isinstance(models, dict):
                    names |= set(models)
    return names


def _brain_problem(doc: Doc, name: str) -> str | None:
    """Why ``name`` is not a brain the program knows (None: it is)."""
    if name in ("builtin", "llm", "remote") or PLACEHOLDER.match(name):
        return None
    if name.startswith("llm:"):
        profile = name.removeprefix("llm:")
        if profile in _model_profiles() or PLACEHOLDER.match(profile):
            return None
        return (f"no model profile {profile!r} in the docs' examples (they define "
                f"{', '.join(sorted(_model_profiles())) or 'none'}); use one of them")
    if name.startswith("policy:"):
        policy = name.removeprefix("policy:")
        # A trained version (training.md: STEM_vN) is a file of its run's folder, which the
        # example puts in brains.policies.
        stem = re.sub(r"_v\d+$", "", policy)
        if policy in POLICIES or stem in POLICIES:
            return None
        return (f"no policy {policy!r} (the program ships {', '.join(sorted(POLICIES))}); "
                f"write one of them, or register the file in brains.policies")
    if name in _registered_brains(doc):
        return None
    return (f"{name!r} is not a brain unless registered (builtin, llm, policy:NAME with NAME "
            f"one of {', '.join(sorted(POLICIES))}); write policy:{name} if the example "
            f"policy is meant, or show its registration (brains: {{{name}: ...}})")


# -- 1. command lines --------------------------------------------------------------------------


class _ArgError(Exception):
    pass


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args`` with its complaint as an exception instead of an exit."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code == 0:
            return argparse.Namespace()
        lines = err.getvalue().strip().splitlines()
        raise _ArgError(lines[-1] if lines else f"exit status {exc.code}") from None


def _filled(words: list[str]) -> list[str]:
    """The words with ``[optional]`` brackets dropped, ``...`` left out and numbers put
    where the docs write N, TICK, SPEED ..."""
    out = []
    for written in words:
        word = written.strip("[]")
        if not word or word == "...":
            continue
        out.append("3" if word in NUMBERS else word)
    return out


def _segments(words: tuple[str, ...]) -> Iterator[list[str]]:
    """The commands of a shell line (split at ``&&``, ``||``, ``;``; redirections off)."""
    part: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("&&", "||", ";"):
            yield part
            part = []
        elif word in (">", ">>", "2>", "<"):
            skip = True
        else:
            part.append(word)
    yield part


def _load_module(path: Path) -> ModuleType:
    """A script of the repository as a module (its dataclasses need it in sys.modules)."""
    name = f"docs_check_{path.stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _repo_file(word: str) -> Path | None:
    """The repository file a command word names, when it names one (else None)."""
    if word.startswith(("examples/", "agent_world/", "bench/", "tests/", "docs/")):
        return ROOT / word
    return None


def _main_problems(doc: Doc, cmd: Command, argv: list[str]) -> list[str]:
    name = argv[0] if argv and argv[0] in cli.SUBCOMMANDS else None
    parser = cli.SUBCOMMANDS[name].parser() if name else cli.build_parser()
    rest = argv[1:] if name else argv
    try:
        args = _parse(parser, rest)
    except _ArgError as exc:
        if cmd.inline and "the following arguments are required" in str(exc):
            return []  # a mention in running text (`python main.py report`), not an example
        return [f"`{cmd.line}` is refused by the program: {exc}; fix the command (see "
                f"`python main.py {name or ''} --help`)".replace("  ", " ")]
    problems = []
    for word in rest:
        path = _repo_file(word)
        if path is not None and not path.exists():
            problems.append(f"`{cmd.line}` names {word}, which does not exist")
    config = getattr(args, "config", None)
    if config is not None and _repo_file(str(config)) is not None:
        try:
            load_config(ROOT / str(config))
        except (ConfigError, OSError) as exc:
            problems.append(f"`{cmd.line}`: its --config is refused: {exc}")
    scenario = getattr(args, "scenario", None)
    if name in ("eval", "train") and scenario is not None and not (
            scenario in SCENARIOS or PLACEHOLDER.match(scenario)
            or scenario.endswith((".yaml", ".yml"))):
        problems.append(f"`{cmd.line}`: no scenario {scenario!r}; the built-in ones are "
                            f"{', '.join(sorted(SCENARIOS))} (or give a YAML file)")
    if name == "eval" and getattr(args, "brains", None):
        for brain in args.brains.split(","):
            why = _brain_problem(doc, brain.strip())
            if why is not None:
                problems.append(f"`{cmd.line}`: --brains {brain}: {why}")
        try:
            parse_seeds(args.seeds)
        except ValueError as exc:
            problems.append(f"`{cmd.line}`: {exc}")
    start = getattr(args, "start", None)
    if name == "train" and start is not None and not (
            start in POLICIES or start.endswith(".py") or PLACEHOLDER.match(start)):
        problems.append(f"`{cmd.line}`: --from {start!r} is neither a policy the program "
                        f"ships ({', '.join(sorted(POLICIES))}) nor a .py file")
    return problems


def _command_problems(doc: Doc, cmd: Command) -> list[str]:
    problems: list[str] = []
    for words in _segments(cmd.words):
        if len(words) < 2 or not words[0].endswith(("python", "python3")):
            continue
        program, argv = words[1], _filled(words[2:])
        if program == "main.py":
            problems += _main_problems(doc, cmd, argv)
        elif program == "-m" and argv:
            module, argv = argv[0], argv[1:]
            if module == "bench":
                problems += _bench_problems(cmd, argv)
            elif module not in ("pytest", "venv", "pip") and \
                    importlib.util.find_spec(module) is None:
                problems.append(f"`{cmd.line}`: there is no module {module}")
        else:
            path = ROOT / program
            if not path.exists():
                problems.append(f"`{cmd.line}`: {program} does not exist")
            elif path == ROOT / "examples" / "remote" / "client.py":
                try:
                    _parse(_load_module(path)._parser(), argv)
                except _ArgError as exc:
                    problems.append(f"`{cmd.line}` is refused: {exc}")
    return [f"{cmd.where}: {p}" for p in problems]


def _bench_problems(cmd: Command, argv: list[str]) -> list[str]:
    if argv[:1] == ["profile"]:
        parser, argv = bench_cli.build_profile_parser(), argv[1:]
    else:
        parser = bench_cli.build_parser()
        argv = [*argv[1:], "--only", "mesa"] if argv[:1] == ["mesa"] else argv
    try:
        _parse(parser, argv)
    except _ArgError as exc:
        return [f"`{cmd.line}` is refused by python -m bench: {exc}"]
    return []


def test_every_command_line_in_the_docs_is_one_the_program_takes() -> None:
    problems = []
    found = 0
    for doc in ALL:
        for cmd in commands(doc):
            found += 1
            problems += _command_problems(doc, cmd)
    assert found > 80, "the extraction found too few command lines: is it broken?"
    _fail(problems, "command lines")


def test_a_drifted_command_line_is_caught_with_its_place() -> None:
    # The checks above, on the mistakes issue 29 found, so they keep finding them.
    doc = _doc("docs/evaluation.md")
    where = Where(doc.path, 9)
    for words, said in [
            ("python main.py eval survival --brains builtin,forager --seeds 1-20",
             "--brains forager: 'forager' is not a brain unless registered"),
            ("python main.py replay FOLDER --verify", "unrecognized arguments: --verify"),
            ("python main.py eval survivl --brains builtin", "no scenario 'survivl'"),
            ("python main.py train foraging --from nobody", "--from 'nobody'"),
            ("python -m bench --only nothing", "unknown section 'nothing'"),
    ]:
        problems = _command_problems(doc, Command(where, tuple(shlex.split(words)),
                                                  inline=False))
        assert len(problems) == 1 and problems[0].startswith("docs/evaluation.md:9: "), problems
        assert said in problems[0], problems


# -- 2. examples with output, run --------------------------------------------------------------

# Figures of the summary line that are this machine's (the rest are the same everywhere).
MACHINE_FIELDS = {"elapsed_s", "ticks_per_s", "sandbox_ms_per_tick"}


def _readme_ability() -> str:
    """The ability the README shows as a file, which its `ability check my_ability.py`
    example checks."""
    readme = _doc("README.md")
    (block,) = [b for b in readme.blocks if b.lang == "python"
                and b.text.startswith('NAME = "fire_bolt"')]
    return block.text


def _fixture(name: str) -> Callable[[], str]:
    return lambda: (FIXTURES / name).read_text(encoding="utf-8")


# What an example needs in its folder that the docs do not show: the files it names (from
# tests/doc_fixtures, or the README's own ability), or the config.yaml its output complains
# about. An example with output that is not here runs in an empty folder.
SETUP: dict[str, dict[str, Callable[[], str]]] = {
    "python main.py ability check my_ability.py": {"my_ability.py": _readme_ability},
    "python main.py ability check sneaky.py": {"sneaky.py": _fixture("ability_sneaky.py")},
    "python main.py ability check spin.py": {"spin.py": _fixture("ability_spin.py")},
    "python main.py policy check sneaky.py": {"sneaky.py": _fixture("policy_sneaky.py")},
    "python main.py policy check spin.py": {"spin.py": _fixture("policy_spin.py")},
    "python main.py": {"config.yaml": lambda: "world: {tick_rate: fast}\n"},
}


def _examples() -> list[Command]:
    return [cmd for doc in ALL for cmd in commands(doc)
            if cmd.output and any(line.strip() for line in cmd.output)]


def _pattern(expected: list[str], *, any_number: bool) -> re.Pattern[str]:
    """Expected lines as a pattern: a line ``...`` stands for any lines, ``...`` within a
    line for any text; with ``any_number`` every number may differ (a paced world's ticks
    depend on when the commands arrive)."""
    parts = []
    for line in expected:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        text = re.escape(line.rstrip())
        text = text.replace(re.escape("..."), r"[^\n]*")
        if any_number:
            text = re.sub(r"\d+", r"\\d+", text)
        parts.append(text + r"[ \t]*\n")
    return re.compile("".join(parts))


def _run_example(cmd: Command, home: Path) -> subprocess.CompletedProcess[str]:
    for name, content in SETUP.get(cmd.line, {}).items():
        (home / name).write_text(content(), encoding="utf-8")
    argv = list(cmd.words[2:])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AW_", "AGENT_WORLD"))}
    # A file the example names from the repository is read where it is.
    argv = [str(ROOT / a) if (_repo_file(a) and (ROOT / a).exists()) else a for a in argv]
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *argv], cwd=home, env=env,
                          input=cmd.stdin, capture_output=True, text=True, timeout=240,
                          check=False)


def _compare(cmd: Command, done: subprocess.CompletedProcess[str]) -> list[str]:
    expected = list(cmd.output)
    while expected and not expected[-1].strip():
        expected.pop()
    if len(expected) == 1 and expected[0].startswith("{"):
        return _compare_summary(cmd, json.loads(expected[0]), done)
    pattern = _pattern(expected, any_number=cmd.stdin is not None)
    for shown in (done.stdout, done.stdout + done.stderr):
        if pattern.fullmatch(shown if shown.endswith("\n") or not shown else shown + "\n"):
            return []
    return [f"{cmd.where}: `{cmd.line}` shows\n    " + "\n    ".join(expected)
            + "\n  but the program printed (stdout, then stderr)\n    "
            + "\n    ".join((done.stdout + done.stderr).rstrip().splitlines())
            + "\n  fix: show what it prints (`...` on a line of its own leaves lines out)"]


def _compare_summary(cmd: Command, shown: dict[str, Any],
                     done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    wrong = [f"{key}: shown {shown.get(key)!r}, printed {printed.get(key)!r}"
             for key in sorted(set(shown) | set(printed))
             if key not in MACHINE_FIELDS and shown.get(key) != printed.get(key)]
    missing = sorted(MACHINE_FIELDS & (set(shown) ^ set(printed)))
    wrong += [f"{key}: in one line but not the other" for key in missing]
    if not wrong:
        return []
    return [f"{cmd.where}: `{cmd.line}`'s sample line disagrees with the program: "
            + "; ".join(wrong) + "\n  fix: replace the line with what it prints:\n    "
            + done.stdout.strip().splitlines()[-1]]


@pytest.mark.parametrize("cmd", _examples(), ids=lambda cmd: str(cmd.where))
def test_every_example_with_output_prints_what_the_docs_show(tmp_path: Path,
                                                             cmd: Command) -> None:
    done = _run_example(cmd, tmp_path)
    _fail(_compare(cmd, done), "an example's output")


def test_the_examples_with_output_are_the_ones_expected() -> None:
    # The sample line, the piped console, the config error and the checks of abilities and
    # policies: if this list changes, a new example needs its SETUP (or was lost).
    lines = {cmd.line for cmd in _examples()}
    assert "python main.py --headless --no-save --ticks 3000 --seed 42" in lines
    assert set(SETUP) <= lines, sorted(set(SETUP) - lines)


def test_a_drifted_sample_line_is_caught_field_by_field() -> None:
    cmd = Command(Where(ROOT / "README.md", 48), ("python", "main.py"), inline=False)
    printed = {"tick": 3000, "state_hash": "2159c0d9", "agents_alive": 20,
               "elapsed_s": 0.5, "ticks_per_s": 6000.0, "sandbox_ms_per_tick": {}}
    shown = {**printed, "state_hash": "e123daf9", "agents_alive": 15, "elapsed_s": 0.3,
             "ticks_per_s": 10000.0}
    done = subprocess.CompletedProcess([], 0, json.dumps(printed) + "\n", "")
    (problem,) = _compare_summary(cmd, shown, done)
    assert problem.startswith("README.md:48: ")
    assert "agents_alive: shown 15, printed 20" in problem
    assert "state_hash: shown 'e123daf9', printed '2159c0d9'" in problem
    assert "elapsed_s" not in problem.split("fix:")[0]  # this machine's figures may differ


def test_console_examples_with_output_answer_as_shown(tmp_path: Path) -> None:
    """``world> COMMAND`` lines with a reply under them, run by the real console on a new
    world of the default configuration (seed 42, as ``python main.py`` makes)."""
    examples = [line for doc in ALL for line in console_lines(doc)
                if not line.inline and any(out.strip() for out in line.output)]
    assert examples, "no console example with output found: is the extraction broken?"

    async def go() -> list[str]:
        config = Config().replace(web={"port": 0}, persistence={"enabled": False},
                                  paths={"logs": str(tmp_path / "logs"),
                                         "saves": str(tmp_path / "saves")})
        problems = []
        for example in examples:
            async with served(tmp_path, config=config) as s:
                reply = await s.server.console.execute(example.text)
            expected = [line for line in example.output if line.strip()]
            if reply != expected:
                problems.append(f"{example.where}: `{example.text}` shows {expected} but the "
                                f"console answers {reply}; fix: show its answer")
        return problems

    _fail(asyncio.run(go()), "console examples")


# -- 3. names the program knows ----------------------------------------------------------------


def _console_problem(line: ConsoleLine, routes: set[str]) -> str | None:
    words = line.text.split()
    name = words[0].removeprefix("/")
    if name not in CONSOLE_NAMES:
        if words[0] in routes:
            return None  # a web path (/ws, /agents), not a command
        return (f"`{line.text}`: there is no console command /{name} (/help lists them: "
                f"{', '.join(sorted(CONSOLE_NAMES))})")
    # Running text may mention a command with part of its words (`/ability load`); an
    # example (two words or more, or one with a number, = or a quote) must parse.
    example = len(words) > 2 or (len(words) == 2 and re.search(r"[\d=\"']", words[1]))
    if not concrete(line.text) or (line.inline and not example):
        return None
    command = COMMANDS.get(name)
    if command is None:
        return None  # a replay's own command: only its name is checked
    try:
        args = command.parse(shlex.split(line.text)[1:])
    except CommandError as exc:
        return f"`{line.text}` is refused by the console: {exc} (usage: {command.usage})"
    brain = getattr(args, "brain", None)
    if brain is None:
        return None
    return _brain_problem(_doc(str(line.where.path.relative_to(ROOT))), brain)


def test_every_console_command_in_the_docs_is_one_the_console_takes(tmp_path: Path) -> None:
    async def go() -> set[str]:
        async with served(tmp_path) as s:
            return {"/" + part.split("/")[1] for route in s.server.app.router.routes()
                    if route.resource is not None
                    and (part := route.resource.canonical) != "/"}

    routes = asyncio.run(go())
    problems = []
    for doc in ALL:
        for line in console_lines(doc):
            why = _console_problem(line, routes)
            if why is not None:
                problems.append(f"{line.where}: {why}")
    _fail(problems, "console commands")


def test_a_drifted_console_command_is_caught_with_the_consoles_words() -> None:
    where = Where(ROOT / "README.md", 147)
    why = _console_problem(ConsoleLine(where, "/top gold 3", inline=True), set())
    assert why is not None and "unknown metric 'gold'" in why and "gold_earned" in why
    elsewhere = Where(ROOT / "docs" / "evaluation.md", 1)  # registers no brain of its own
    why = _console_problem(ConsoleLine(elsewhere, "/spawn agent Zed brain=forager",
                                       inline=True), set())
    assert why is not None and "write policy:forager" in why
    assert _console_problem(ConsoleLine(where, "/teleport Zed", inline=True), set()) \
        .startswith("`/teleport Zed`: there is no console command /teleport")
    assert _console_problem(ConsoleLine(where, "/ws", inline=True), {"/ws"}) is None


def test_the_metric_names_the_docs_list_are_the_worlds() -> None:
    problems = []
    documented = table_column(_doc("docs/evaluation.md"), "metric")
    known = set(METRICS) | set(DERIVED)
    for where, name in documented:
        if name not in known:
            problems.append(f"{where}: no metric {name!r}; the world counts "
                            f"{', '.join(METRICS)} and episodes add {', '.join(DERIVED)}")
    missing = known - {name for _w, name in documented}
    if missing:
        problems.append(f"docs/evaluation.md: the metrics table leaves out "
                        f"{', '.join(sorted(missing))}; add a row for each")
    top = names_after(_doc("README.md"), "rank agents by one of their metrics", "|")
    assert top is not None, "README.md no longer lists /top's metrics: update this test"
    where, names = top
    assert names, f"{where}: /top's row names no metric in backticks"
    problems += [f"{where}: /top has no metric {name!r} (it takes: {', '.join(METRICS)})"
                 for name in names if name not in METRICS]
    _fail(problems, "metric names")


# Lists of names in running text, and the registry each must equal.
NAMED_LISTS: list[tuple[str, str, str, Callable[[], set[str]]]] = [
    ("README.md", "Built-in scenarios:", ";", lambda: SCENARIOS),
    ("README.md", "Eleven are built in (", ")", lambda: {s.name for s in load_builtins()}),
    ("README.md", "Three ship with the program\n(", ")", lambda: POLICIES),
]


def test_the_named_lists_of_scenarios_abilities_and_policies_are_complete() -> None:
    problems = []
    for name, anchor, end, known in NAMED_LISTS:
        found = names_after(_doc(name), anchor, end)
        assert found is not None, f"{name} no longer says {anchor!r}: update NAMED_LISTS"
        where, names = found
        if set(names) != known():
            problems.append(f"{where}: lists {', '.join(names)}; the program has "
                            f"{', '.join(sorted(known()))}")
    evaluation = table_column(_doc("docs/evaluation.md"), "scenario")
    if {n for _w, n in evaluation} != SCENARIOS:
        problems.append(f"docs/evaluation.md: the scenario table has "
                        f"{sorted(n for _w, n in evaluation)}; the program has "
                        f"{sorted(SCENARIOS)}")
    _fail(problems, "named lists")


_SETTING = re.compile(r"^(" + "|".join(SECTIONS) + r")\.([a-z_][a-z0-9_]*)(?:[:=] .*)?$")
FILE_SUFFIXES = ("log", "json", "jsonl", "py", "md", "yaml", "gz", "txt")


def test_every_setting_the_docs_name_exists() -> None:
    # docs/architecture.md names the World object's parts (`world.rng`) the same way.
    world = World.create(Config().replace(world={"size": [16, 16], "starting_agents": 0}))
    parts = set(dir(world))
    world.close()
    problems = []
    for doc in ALL:
        for span in doc.spans:
            m = _SETTING.match(span.text.removesuffix(":"))
            if m is None or m.group(2) in FILE_SUFFIXES:
                continue
            section, key = m.groups()
            if section == "world" and key in parts and key not in SECTIONS[section]:
                continue
            if key not in SECTIONS[section]:
                problems.append(f"{span.where}: `{span.text}`: there is no setting "
                                f"{section}.{key} (config.example.yaml lists the settings)")
    _fail(problems, "settings")


def _program_flags() -> set[str]:
    """Every option of every parser the program and its tools have."""
    parsers = [cli.build_parser(), bench_cli.build_parser(), bench_cli.build_profile_parser(),
               _load_module(ROOT / "examples" / "remote" / "client.py")._parser(),
               *(command.parser() for command in cli.SUBCOMMANDS.values())]
    flags: set[str] = set()
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            flags.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    return flags


# Options of other programs the docs show (Node, Ray, vLLM): not ours to check.
FOREIGN_FLAGS = {"--experimental-websocket", "--node-ip-address", "--head", "--port"}


def test_every_flag_the_docs_name_is_an_option_of_the_program() -> None:
    flags = _program_flags()
    problems = []
    for doc in ALL:
        for span in doc.spans:
            first = span.text.split()[0] if span.text.split() else ""
            flag = first.split("=")[0].split("/")[0]
            if re.fullmatch(r"--[a-z][a-z0-9-]*", flag) and flag not in flags \
                    and flag not in FOREIGN_FLAGS:
                problems.append(f"{span.where}: `{span.text}`: no command has {flag} "
                                "(each command's --help lists its options)")
    _fail(problems, "flags")


def _yaml_documents(text: str) -> list[Any]:
    """A YAML example: one document, or (when its lines are alternatives, each a one-line
    mapping under the same key) each line on its own."""
    lines = [line for line in text.splitlines() if line.strip() and
             not line.lstrip().startswith("#")]
    if lines and all(not line[0].isspace() for line in lines):
        keys = [line.split(":", 1)[0] for line in lines]
        if len(set(keys)) < len(keys):
            return [yaml.safe_load(line) for line in lines]
    return [yaml.safe_load(text)]


def test_every_yaml_example_is_a_config_or_scenario_the_program_takes(tmp_path: Path) -> None:
    problems = []
    for doc in ALL:
        for block in doc.blocks:
            if block.lang != "yaml":
                continue
            for data in _yaml_documents(block.text):
                try:
                    if isinstance(data, dict) and ({"subjects", "teams", "score"} & set(data)):
                        path = tmp_path / "scenario.yaml"
                        path.write_text(yaml.safe_dump(data), encoding="utf-8")
                        load_scenario(str(path))
                    else:
                        config_from_dict(data, source=str(block.where))
                except (ConfigError, ScenarioError) as exc:
                    problems.append(f"{block.where}: the program refuses this example: {exc}")
    _fail(problems, "YAML examples")


_LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)]*))?\)")


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub makes of a Markdown file's headings."""
    anchors = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors
_PATH = re.compile(r"(?<![\w/.])((?:examples|agent_world|bench|docs|tests)/[\w./-]*[\w/])")


def test_every_file_the_docs_point_at_exists() -> None:
    problems = []
    for doc in ALL:
        for m in _LINK.finditer(doc.text):
            target, anchor = m.group(1), m.group(2)
            if "://" in target:
                continue
            line = doc.text.count("\n", 0, m.start()) + 1
            path = doc.path.parent / target if target else doc.path
            if not path.exists():
                problems.append(f"{Where(doc.path, line)}: the link to {target} leads nowhere")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                problems.append(f"{Where(doc.path, line)}: {target or path.name} has no "
                                f"heading #{anchor}")
        for m in _PATH.finditer(doc.text):
            path = m.group(1).rstrip(".")
            if "<" in path or "NAME" in path or "*" in path:
                continue
            if not (ROOT / path).exists():
                line = doc.text.count("\n", 0, m.start()) + 1
                problems.append(f"{Where(doc.path, line)}: {path} does not exist")
    _fail(problems, "files")


# -- 4. the web API ----------------------------------------------------------------------------

API = _doc("docs/api.md")


def _said(fragment: str) -> None:
    """The statement a check stands for is still what docs/api.md says."""
    text = " ".join(API.text.split())
    assert " ".join(fragment.split()) in text, (
        f"docs/api.md no longer says {fragment!r}: update STATUS_CASES with what it says now")


# (what docs/api.md says, method, path, body or None, headers, server settings, status)
STATUS_CASES: list[tuple[str, str, str, Any, dict[str, str], dict[str, Any], int]] = [
    ("a wrong method gives 405", "POST", "/api/state", {}, {}, {}, 405),
    ('An unknown `/api` path gives `{"error": "Not Found", "status": 404}`', "GET",
     "/api/no_such_thing", None, {}, {}, 404),
    ("`web.read_only: true` gives **403**", "POST", "/api/commands", {"command": "/pause"},
     {}, {"read_only": True}, 403),
    ("a missing or wrong `Authorization: Bearer TOKEN` gives **401**",
     "POST", "/api/commands", {"command": "/pause"}, {"Authorization": "Bearer wrong"},
     {}, 401),
    ("an `Origin` header whose `host:port` is not this server's gives **403**", "POST",
     "/api/commands", {"command": "/pause"}, {"Origin": "http://elsewhere.example"}, {}, 403),
    ("a `Content-Type` other than `application/json` gives **415**", "POST", "/api/commands",
     "command=/pause", {"Content-Type": "text/plain"}, {}, 415),
    ("Request bodies are capped at 64 KB (**413**)", "POST", "/api/commands",
     {"command": "/" + "x" * 70_000}, {}, {}, 413),
    ("A command line is capped at 2,000 characters (**400**)", "POST", "/api/commands",
     {"command": "/say " + "x" * 2_100}, {}, {}, 400),
    ("A bad query parameter gives **400**", "GET", "/api/entities?limit=0", None, {}, {},
     400),
    ("an id that is not a number gives **400**", "GET", "/api/agents/abc", None, {}, {}, 400),
    ("Asking for an id that is not a living agent gives **404**", "GET",
     "/api/agents/999999", None, {}, {}, 404),
    ("A name that is not lower-case letters, digits and `_` gives 400", "GET",
     "/api/abilities/Bad-Name", None, {}, {}, 400),
    ("an unknown name gives 404", "GET", "/api/abilities/no_such_power", None, {}, {}, 404),
    ("an unknown one gives 400", "GET", "/api/agent_metrics?sort=gold", None, {}, {}, 400),
    ("an unknown name gives 400, and the message lists the known ones", "GET",
     "/api/metrics?series=nope", None, {}, {}, 400),
    ("with status 200 when the command succeeded", "POST", "/api/commands",
     {"command": "/pause"}, {}, {}, 200),
    ("**400** when it failed", "POST", "/api/commands", {"command": "/bogus"}, {}, {}, 400),
    ("A body that is not JSON, or that has no non-empty `command` string, gives a 400",
     "POST", "/api/commands", "{not json", {"Content-Type": "application/json"}, {}, 400),
    ("`400` naming what is wrong", "POST", "/api/train", {"scenario": "nowhere"}, {}, {},
     400),
    ("`507` when the run would", "POST", "/api/train",
     {"scenario": "foraging", "iterations": 1000, "episodes": 1000}, {}, {}, 507),
    ("or a name in `web.allowed_hosts` gives **403**", "GET", "/api/state", None,
     {"Host": "rebound.example:8765", "Origin": "http://rebound.example:8765"}, {}, 403),
    ("**401** without it, unless `web.public_reads: true`", "GET", "/api/state", None,
     {"Authorization": "Bearer wrong"}, {"host": "0.0.0.0"}, 401),
]
# Codes docs/api.md states that need more than one request to show, with the test that
# shows them.
STATUS_ELSEWHERE = {
    202: "tests/test_training.py (POST /api/train starts a run)",
    409: "tests/test_training.py (a second run while one is under way)",
    503: "tests/test_web_api.py::test_ws_refuses_a_foreign_origin_and_too_many_clients",
    408: "tests/test_web_hostile.py::test_a_body_sent_a_byte_at_a_time_is_cut_at_the_head_"
         "timeout",
    429: "tests/test_talk.py::test_the_web_api_asks_polls_and_surveys (a flood of questions)",
}
_STATUS = re.compile(r"\*\*(\d{3})\*\*|\b(?:gives|answers|status|with) (?:a )?`?(\d{3})\b|"
                     r"`(\d{3})`")


def test_every_status_code_in_api_md_is_what_a_real_server_answers(tmp_path: Path) -> None:
    documented = {int(next(g for g in m.groups() if g)) for m in _STATUS.finditer(API.text)}
    checked = {case[-1] for case in STATUS_CASES} | set(STATUS_ELSEWHERE)
    assert documented <= checked, (
        f"docs/api.md states status codes {sorted(documented - checked)} that no case here "
        "checks: add one to STATUS_CASES")

    async def ask(case: tuple[str, str, str, Any, dict[str, str], dict[str, Any], int]
                  ) -> str | None:
        fragment, method, path, body, headers, settings, status = case
        _said(fragment)
        token = settings.get("token")
        web = {k: v for k, v in settings.items() if k != "token"}
        async with served(tmp_path, token=token, **web) as s:
            send: dict[str, Any] = ({"json": body} if isinstance(body, dict)
                                    else {"data": body} if body is not None else {})
            async with s.http.request(method, s.url + path, headers=headers, **send) as resp:
                reply = await resp.json()
                if resp.status != status or reply.get("status", status) != status:
                    return (f"docs/api.md says {fragment!r}, but {method} {path} answers "
                            f"{resp.status} {reply}")
                if status == 404 and "Not Found" in fragment and reply != {
                        "error": "Not Found", "status": 404}:
                    return f"{method} {path} answers {reply}, not what docs/api.md shows"
        return None

    async def go() -> list[str]:
        return [p for case in STATUS_CASES if (p := await ask(case)) is not None]

    _fail(asyncio.run(go()), "HTTP status codes")


def test_the_error_examples_of_api_md_are_the_servers_words(tmp_path: Path) -> None:
    examples = {
        '{"error": "limit must be from 1 to 5000, got 0", "status": 400}':
            "/api/events?limit=0",
        "sort takes one key (id, name, gold, kills, age, health, wealth), got ['gold', "
        "'kills']": "/api/agents?sort=gold,kills",
    }

    async def go() -> list[str]:
        problems = []
        async with served(tmp_path) as s:
            for shown, path in examples.items():
                _said(shown)
                reply = await s.get(path, status=400)
                said = json.dumps(reply, separators=(", ", ": ")) if shown.startswith("{") \
                    else reply["error"]
                if said != shown:
                    problems.append(f"docs/api.md shows {shown!r}; GET {path} answers {said!r}")
        return problems

    _fail(asyncio.run(go()), "error examples")


def _curl_examples() -> list[tuple[Where, str, str, Any, str]]:
    """docs/api.md's ``$ curl`` lines: (where, method, path, the JSON body sent or None, the
    output shown under it)."""
    found = []
    last = ""  # an example that leaves out the address (``...``) is sent where the last went
    for block in API.blocks:
        lines = list(block.lines)
        for i, (number, text) in enumerate(lines):
            if not text.startswith("$ curl"):
                continue
            command, j = text, i
            while command.rstrip().endswith("\\"):
                j += 1
                command = command.rstrip()[:-1] + " " + lines[j][1].strip()
            out = []
            for _n, after in lines[j + 1:]:
                if after.startswith("$ "):
                    break
                out.append(after)
            url = re.search(r"https?://[^\s']+", command)
            body = re.search(r"-d '([^']*)'", command)
            path = last = url.group(0).split(":8765", 1)[1] if url else last
            found.append((block.at(number), "POST" if "-X POST" in command else "GET", path,
                          json.loads(body.group(1)) if body else None, "\n".join(out)))
    return found


def test_every_curl_example_of_api_md_gets_those_fields_from_a_real_server(
        tmp_path: Path) -> None:
    """The examples are trimmed (``...``), and their values are another world's; what is
    checked is that the request is answered 200 and every field they show is there."""
    examples = _curl_examples()
    assert len(examples) >= 10, "found too few curl examples: is the extraction broken?"

    def keys(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for key, inner in value.items():
                yield key
                yield from keys(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from keys(inner)

    async def go() -> list[str]:
        problems = []
        # The world the examples come from: the default one of seed 7, a few hundred ticks
        # in, with the built-in abilities.
        config = Config().replace(world={"seed": 7}, web={"port": 0}, paths={
            "logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves")})
        async with served(tmp_path, config=config, save=True, sandbox=True) as s:
            await s.step(300)
            living = sorted(eid for eid, _row in s.world.agents())
            for where, method, path, body, shown in examples:
                if not path or path.startswith("/api/train"):
                    continue  # a training run: tests/test_training.py runs one
                wanted = set(re.findall(r'"([A-Za-z_][\w .]*)":', shown))
                # One agent's example is another world's agent: any agent of this world
                # whose answer has every field shown stands for it.
                paths = ([re.sub(r"/api/agents/\d+", f"/api/agents/{eid}", path)
                          for eid in living] if re.search(r"/api/agents/\d+", path)
                         else [re.sub(r"entity=\d+", f"entity={living[0]}", path)])
                for path in paths:  # noqa: PLW2901 - the path asked is the one reported
                    async with s.http.request(method, s.url + path, json=body) as resp:
                        status = resp.status
                        reply = (await resp.json()
                                 if resp.content_type == "application/json" else {})
                    if not wanted - set(keys(reply)) - set(ITEMS):
                        break
                # A command that fails is answered 400, with the reply lines saying why.
                expected = 400 if '"ok":false' in shown.replace(" ", "") else 200
                if status != expected:
                    problems.append(f"{where}: {method} {path} answers {status} {reply}, "
                                    f"not {expected}")
                    continue
                have = set(keys(reply)) | set(ITEMS)  # goods by kind: the world's own
                lost = sorted(wanted - have)
                if lost:
                    problems.append(f"{where}: {method} {path} shows fields {lost} that the "
                                    "server's answer does not have; fix the example")
        return problems

    _fail(asyncio.run(go()), "curl examples")


def test_the_live_feed_examples_of_api_md_are_what_a_real_server_sends(tmp_path: Path) -> None:
    """The hello a client gets (same fields), the subscribe example (taken: a keyframe
    comes back) and the fields of the keyframe shown."""
    shown = {}
    for block in API.blocks:
        if block.lang == "json":
            text = block.text.strip()
            with contextlib.suppress(ValueError):
                data = json.loads(text)
                shown["hello" if data.get("t") == "hello" else data.get("op", "?")] = data
            if text.startswith('{"t":"key"'):
                shown["key"] = set(re.findall(r'"([a-z_]+)":', text))
    assert {"hello", "subscribe", "key"} <= set(shown), sorted(shown)

    async def go() -> list[str]:
        problems = []
        async with served(tmp_path) as s, s.http.ws_connect(s.url + "/ws") as ws:
            hello = await ws.receive_json(timeout=10)
            if set(hello) != set(shown["hello"]):
                problems.append(f"docs/api.md's hello has {sorted(shown['hello'])}; the "
                                f"server's has {sorted(hello)}")
            await ws.send_json(shown["subscribe"])
            key = await ws.receive_json(timeout=10)
            if key.get("t") != "key":
                problems.append(f"docs/api.md's subscribe example is answered {key}")
            elif not shown["key"] <= set(key) | set(key.get("fields", {})) | {"map"} | {
                    "width", "height"}:
                problems.append(f"docs/api.md's keyframe shows {sorted(shown['key'])}; the "
                                f"server's has {sorted(key)}")
        return problems

    _fail(asyncio.run(go()), "live feed examples")


# -- 5. the benchmark's stated time --------------------------------------------------------------


def test_bench_quick_time_in_the_readme_is_the_one_measured_in_results_md() -> None:
    """The README states how long ``python -m bench --quick`` takes; bench/RESULTS.md keeps
    the measurement (machine, load, command). The two must say the same."""
    readme = _doc("README.md").text
    stated = re.findall(r"`--quick` takes about (\d+) s", readme)
    assert stated, ("README.md no longer states `--quick` takes about N s: state the "
                    "measured time (bench/RESULTS.md)")
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    measured = re.findall(r"`python -m bench --quick` took (\d+) s", results)
    assert measured, "bench/RESULTS.md has no `python -m bench --quick` took N s measurement"
    assert set(stated) == {measured[0]}, (
        f"README.md states --quick takes about {stated} s; the latest measurement in "
        f"bench/RESULTS.md is {measured[0]} s: state that")


def test_the_docs_checked_here_are_all_the_docs() -> None:
    on_disk = {ROOT / "README.md", *(ROOT / "docs").glob("*.md")}
    assert set(DOCS) == on_disk


def test_the_architectures_tick_walk_names_the_systems_and_actions_the_world_has() -> None:
    """docs/architecture.md's "One tick": its system order and its action list are the
    program's (both had fallen behind: two systems and two actions were missing)."""
    from agent_world.core.actions import ACTIONS
    from agent_world.core.systems import SYSTEMS

    text = " ".join(_doc("docs/architecture.md").text.split())
    order = re.search(r"`(needs →[^`]*)`", text)
    assert order is not None, "docs/architecture.md no longer shows the systems' order"
    shown = [name.strip() for name in order.group(1).split("→")]
    assert shown == [s.__name__.removesuffix("_system") for s in SYSTEMS]
    actions = re.search(r"one action set \(`core/actions.py`\): `([^`]*)`", text)
    assert actions is not None, "docs/architecture.md no longer lists the action set"
    assert [a.strip() for a in actions.group(1).split(",")] == list(ACTIONS)


def test_the_event_types_api_md_lists_are_the_registered_ones() -> None:
    from agent_world.core.events import EVENT_TYPES

    text = _doc("docs/api.md").text
    start = text.index("Event types, as emitted by")
    listed = text[start:text.index("\n\n", text.index("\n- ", start))]
    shown = set(re.findall(r"`([a-z_]+)`", listed))
    assert shown == set(EVENT_TYPES), (f"docs/api.md lists {sorted(shown - EVENT_TYPES)} "
                                       f"that are not events and misses "
                                       f"{sorted(EVENT_TYPES - shown)}")
