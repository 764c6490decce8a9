"""The core stands alone: it imports nothing from the layers built on top of it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_world"
# What agent_world.core may import from the package besides itself.
CORE_MAY_USE = ("agent_world.core", "agent_world.config", "agent_world.types")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_core_imports_only_itself_config_and_types() -> None:
    offenders = []
    for path in sorted((PACKAGE / "core").rglob("*.py")):
        for name in _imports(path):
            if name.startswith("agent_world") and not name.startswith(CORE_MAY_USE):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_only_the_entity_store_touches_esper() -> None:
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if any(n == "esper" or n.startswith("esper.") for n in _imports(p)))
    assert users == ["core/ecs.py"]


def test_config_and_types_import_no_other_package_module() -> None:
    inner = [n for n in _imports(PACKAGE / "types.py") if n.startswith("agent_world")]
    assert inner == [], f"types.py imports {inner}"
    for path in sorted((PACKAGE / "config").rglob("*.py")):
        inner = [n for n in _imports(path)
                 if n.startswith("agent_world") and not n.startswith("agent_world.config")]
        assert inner == [], f"{path.relative_to(PACKAGE)} imports {inner}"


def test_relative_imports_are_not_used() -> None:
    """Absolute imports keep the import-graph check above honest."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
        assert not relative, f"{path} uses a relative import"


def test_only_the_command_line_attaches_the_web_layer() -> None:
    """The web is an outer layer: the session and the console work without it."""
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if not str(p.relative_to(PACKAGE)).startswith("web/")
                   and any(n.startswith("agent_world.web") for n in _imports(p)))
    assert users == ["cli/program.py"]


# The brain contract is the seam every deciding layer builds on (issue 31): it builds on the
# core alone, and no deciding layer reaches up into users' brains' runner to get it.
CONTRACT_MAY_USE = ("agent_world.contract", "agent_world.core", "agent_world.config",
                    "agent_world.types", "agent_world.worldlog")
BELOW_THE_RUNNER = ("decisions", "llm", "policies", "remote", "contract", "userbrains")


def test_the_brain_contract_builds_on_the_core_alone() -> None:
    offenders = [f"{path.relative_to(PACKAGE)} imports {name}"
                 for path in sorted((PACKAGE / "contract").rglob("*.py"))
                 for name in _imports(path)
                 if name.startswith("agent_world") and not name.startswith(CONTRACT_MAY_USE)]
    assert not offenders, "\n".join(offenders)


def test_no_deciding_layer_imports_the_user_brains_runner() -> None:
    offenders = [f"{path.relative_to(PACKAGE)} imports {name}"
                 for layer in BELOW_THE_RUNNER
                 for path in sorted((PACKAGE / layer).rglob("*.py"))
                 for name in _imports(path)
                 if name == "agent_world.agents" or name.startswith("agent_world.agents.")]
    assert not offenders, "\n".join(offenders)


# Deciding off the tick, lowest first: the brain contract; its public face for users'
# brains (agents/); sandboxed policies (brain classes and their sandbox calls); the decision
# pipeline (decisions/); then the kinds of brain on it, the LLM's before users' brains (an
# LLMBrain calls it) and remote agents. A layer imports only the layers before it, so no
# import runs up (issue 31). decisions/kinds.py is the registration table above them all.
DECIDING_LAYERS = ("contract", "agents", "policies", "decisions", "llm", "userbrains",
                   "remote")
REGISTRATION = "decisions/kinds.py"


def test_no_deciding_layer_imports_one_above_it() -> None:
    offenders = []
    for rank, layer in enumerate(DECIDING_LAYERS):
        above = tuple(f"agent_world.{name}" for name in DECIDING_LAYERS[rank + 1:])
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            if str(path.relative_to(PACKAGE)) == REGISTRATION:
                continue
            offenders.extend(f"{path.relative_to(PACKAGE)} imports {name}"
                             for name in _imports(path)
                             if any(name == up or name.startswith(f"{up}.") for up in above))
    assert not offenders, "\n".join(offenders)


def test_the_brain_api_is_the_contract_alone() -> None:
    """``agent_world.agents`` is what users import: it re-exports the contract and runs
    nothing (the runner of users' brains is ``userbrains/``)."""
    inner = sorted({name for path in (PACKAGE / "agents").rglob("*.py")
                    for name in _imports(path) if name.startswith("agent_world")})
    assert inner and all(name.startswith("agent_world.contract") for name in inner), inner


def test_one_pipeline_owner_and_one_plan_input() -> None:
    """Every kind of brain is an answerer composed with the one ``Pipeline`` (nothing
    subclasses it), and no deciding layer but the pipeline makes a plan input (the RL
    environment, whose learner decides within its step, makes its own)."""
    subclasses, plan_makers = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(PACKAGE))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id in ("Pipeline", "ThinkingManager")
                    for b in node.bases):
                subclasses.append(f"{where}: {node.name}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "PlanInput"
                    and path.relative_to(PACKAGE).parts[0] in DECIDING_LAYERS):
                plan_makers.append(where)
    assert subclasses == []
    assert plan_makers == ["decisions/pipeline.py"]


def test_only_the_rl_package_imports_it_or_its_extra() -> None:
    """agent_world.rl is an optional extra (PettingZoo, Gymnasium, NumPy): the rest of the
    program runs without them, so nothing outside it imports it or them."""
    extra = ("agent_world.rl", "pettingzoo", "gymnasium", "numpy")
    users = sorted(f"{p.relative_to(PACKAGE)} imports {n}" for p in PACKAGE.rglob("*.py")
                   if not str(p.relative_to(PACKAGE)).startswith("rl/")
                   for n in _imports(p) if n.startswith(extra))
    assert users == []
    inside = {n for p in (PACKAGE / "rl").rglob("*.py") for n in _imports(p)}
    assert {"pettingzoo", "gymnasium"} <= {n.split(".")[0] for n in inside}  # the check sees it


def test_the_command_surface_and_its_users_import_no_terminal_ui() -> None:
    """The web API and remote clients run commands through the command surface; none of the
    three loads the terminal's prompt (prompt_toolkit) or the console package around it."""
    offenders = [f"{path.relative_to(PACKAGE)} imports {name}"
                 for layer in ("commands", "web", "remote")
                 for path in sorted((PACKAGE / layer).rglob("*.py"))
                 for name in _imports(path)
                 if name.split(".")[0] == "prompt_toolkit"
                 or name == "agent_world.console" or name.startswith("agent_world.console.")]
    assert not offenders, "\n".join(offenders)


def test_events_are_emitted_by_their_registered_names() -> None:
    """Event types are named once (``core/events.py``): no ``emit`` takes a string of its own,
    and every name it takes is a registered world event."""
    from agent_world.core import events

    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "emit" and node.args):
                continue
            first = node.args[0]
            where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
            named = (isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name)
                     and first.value.id == "ev")
            if not named:
                offenders.append(f"{where} emits {ast.unparse(first)}, not an ev.NAME")
            elif getattr(events, first.attr, None) not in events.WORLD_EVENTS:
                offenders.append(f"{where} emits {ast.unparse(first)}, not a world event")
    assert not offenders, "\n".join(offenders)


def _reads_type(node: ast.expr) -> bool:
    """``X["type"]`` or ``X.get("type")``: an event's (or record's) type being read."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "type"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get" and bool(node.args)
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "type")


def test_events_are_matched_by_their_registered_names() -> None:
    """Outside ``core/events.py`` no module matches an event's type against a string of its
    own (``event["type"] == "death"``, ``.get("type") in ("price", ...)``), and no table is
    keyed by event-type strings: each reads ``ev.NAME``, so a renamed event cannot leave a
    reader silently matching nothing."""
    from agent_world.core import events

    names = events.EVENT_TYPES
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "core" / "events.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            where = f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Compare) and _reads_type(node.left):
                for other in node.comparators:
                    literals = [other] if isinstance(other, ast.Constant) else \
                        list(getattr(other, "elts", []))
                    offenders += [f"{where} matches {lit.value!r} as a string"
                                  for lit in literals if isinstance(lit, ast.Constant)
                                  and lit.value in names]
            elif isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                if len(keys) >= 3 and all(k in names for k in keys):
                    offenders.append(f"{where} keys a table by event-type strings")
    assert not offenders, "\n".join(offenders)


def test_the_recorded_world_sits_above_what_it_reads() -> None:
    """``recorded/`` (the recorded world as an instrument: decisions rebuilt, re-asked) builds
    on persistence, the contract, the decision layers and users' brains; nothing below it
    imports it, only the command line and the benchmark do."""
    users = sorted(f"{p.relative_to(PACKAGE)} imports {n}" for p in PACKAGE.rglob("*.py")
                   if p.relative_to(PACKAGE).parts[0] not in ("recorded", "cli")
                   for n in _imports(p)
                   if n == "agent_world.recorded" or n.startswith("agent_world.recorded."))
    assert users == []
