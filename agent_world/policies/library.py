"""Where policies come from: the examples shipped with the program and a folder of yours.

The examples (``agent_world/policies/examples/*.py``) are always there; ``brains.policies``
names a folder whose ``*.py`` files are policies too (a folder that does not exist holds
none). Each file's ``NAME`` is the policy's name, and agents use it as
``brain=policy:NAME``. A file that is not a usable policy, or a name given twice, is a
``PolicyError`` naming the file and the problem: it stops start-up, before anything is
written, as a brain that cannot be imported does.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from agent_world.policies.policy import Policy, PolicyError, load_policy
from agent_world.types import MAX_ABILITY_SOURCE

__all__ = ["MAX_POLICY_SOURCE", "available_policies", "example_policies", "folder_policies",
           "read_policy"]

MAX_POLICY_SOURCE = MAX_ABILITY_SOURCE
"""Characters a policy source may have (the gate's limit, as for abilities)."""


def read_policy(path: str | Path, origin: str | None = None) -> Policy:
    """A policy from a file; PolicyError naming the file for anything wrong with it."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_POLICY_SOURCE * 4 + 1)  # UTF-8: at most 4 bytes a character
        source = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError([f"{path}: cannot read it ({exc})"], "file") from None
    try:
        return load_policy(source, origin or str(path))
    except PolicyError as exc:
        raise PolicyError([f"{path}: {p}" for p in exc.problems], exc.category) from None


def example_policies() -> list[Policy]:
    """The examples shipped with the program, by file name; one that fails its own checks
    is a bug in the program (RuntimeError)."""
    out = []
    folder = resources.files("agent_world").joinpath("policies", "examples")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".py"):
            continue
        try:
            out.append(load_policy(entry.read_text(encoding="utf-8"), "builtin"))
        except PolicyError as exc:
            raise RuntimeError(f"built-in policy {entry.name} is refused: {exc}") from None
    return out


def folder_policies(folder: str | Path) -> list[Policy]:
    """The policies in ``folder`` (its ``*.py`` files, by name); none if it does not exist."""
    where = Path(folder)
    if not where.is_dir():
        return []
    return [read_policy(path) for path in sorted(where.glob("*.py"))]


def available_policies(folder: str | Path | None = None) -> dict[str, Policy]:
    """Every usable policy by name: the examples, then those of ``folder``
    (``brains.policies``). A name given twice is a PolicyError naming both files."""
    found: dict[str, Policy] = {}
    for policy in [*example_policies(), *(folder_policies(folder) if folder else [])]:
        other = found.get(policy.name)
        if other is not None:
            first = "a built-in example" if other.origin == "builtin" else other.origin
            raise PolicyError([f"{policy.origin}: a policy named {policy.name!r} exists "
                               f"already ({first}); give this one another NAME"], "name")
        found[policy.name] = policy
    return found
