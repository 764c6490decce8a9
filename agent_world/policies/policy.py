"""A policy source, checked: its metadata, its constants, its digest and where it came from.

``load_policy(source)`` gates the source under the policy contract (the sandbox's gate, the
same layers abilities pass), checks its metadata and compiles it with RestrictedPython and
the step budget, so that anything wrong is found here, with one line per problem, before
any worker runs it. Workers compile the source themselves (they trust nothing from here).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_world.sandbox.compiler import compile_gated
from agent_world.sandbox.gate import POLICY, GateError, gate

__all__ = ["MAX_DESCRIPTION", "NAME_PATTERN", "PARENT_PATTERN", "Policy", "PolicyError",
           "PolicyMeta", "load_policy", "policy_digest"]

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{1,31}")
PARENT_PATTERN = re.compile(r"[a-z][a-z0-9_]{1,31}(@[1-9][0-9]{0,8})?")
MAX_DESCRIPTION = 300
MAX_VERSION = 10**9


class PolicyError(ValueError):
    """A policy source that cannot be used: ``problems`` holds one line per problem found
    (the message joins them), ``category`` says at which layer (gate, restricted,
    metadata, file)."""

    def __init__(self, problems: list[str] | tuple[str, ...], category: str = "metadata"
                 ) -> None:
        self.problems = tuple(problems)
        self.category = category
        super().__init__("; ".join(self.problems))


def _metadata_problems(values: Mapping[str, Any]) -> list[str]:
    problems = []
    name = values.get("NAME")
    if type(name) is not str or not NAME_PATTERN.fullmatch(name):
        problems.append(f"NAME must be 2-32 characters of a-z, 0-9 and _, starting with a "
                        f"letter, got {name!r:.60}")
    description = values.get("DESCRIPTION")
    if (type(description) is not str or not description.strip()
            or len(description) > MAX_DESCRIPTION or not description.isprintable()):
        problems.append(f"DESCRIPTION must be 1-{MAX_DESCRIPTION} printable characters, "
                        f"got {description!r:.60}")
    version = values.get("VERSION")
    if type(version) is not int or not 1 <= version <= MAX_VERSION:
        problems.append(f"VERSION must be a whole number >= 1, got {version!r:.40}")
    parent = values.get("PARENT")
    if parent is not None and (type(parent) is not str or not PARENT_PATTERN.fullmatch(parent)):
        problems.append(f"PARENT must be None (an original) or the name of the policy it "
                        f"was made from, optionally with @VERSION (e.g. 'forager@1'), got "
                        f"{parent!r:.60}")
    return problems


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyMeta:
    """A policy's metadata, validated. ``constants`` are the literal values of its
    ``UPPER_CASE`` constants, in file order (what a generator may change)."""

    name: str
    description: str
    version: int
    parent: str | None = None
    constants: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = _metadata_problems({"NAME": self.name, "DESCRIPTION": self.description,
                                       "VERSION": self.version, "PARENT": self.parent})
        if problems:
            raise PolicyError(problems)

    @classmethod
    def from_source_values(cls, values: Mapping[str, Any],
                           constants: Mapping[str, Any] | None = None) -> PolicyMeta:
        """From the literal assignments of a source file; PolicyError listing every
        problem."""
        problems = _metadata_problems(values)
        if problems:
            raise PolicyError(problems)
        return cls(name=values["NAME"], description=values["DESCRIPTION"],
                   version=values["VERSION"], parent=values.get("PARENT"),
                   constants=dict(constants or {}))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "version": self.version,
                "parent": self.parent, "constants": dict(self.constants)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """A checked policy source. ``origin`` is ``builtin`` (an example shipped with the
    program), the file it was read from, or what the caller says (``text``)."""

    meta: PolicyMeta
    source: str
    digest: str
    origin: str = "text"

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def brain(self) -> str:
        """The brain's name agents are given: ``policy:NAME``."""
        return f"policy:{self.meta.name}"


def policy_digest(source: str) -> str:
    """The sha256 of a policy's source (UTF-8), as hex: how a worker knows the code."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def load_policy(source: object, origin: str = "text") -> Policy:
    """Gate, check and compile a policy source; PolicyError (one line per problem) if it
    cannot be used."""
    try:
        gated = gate(source, POLICY)
    except GateError as exc:
        raise PolicyError([str(exc)], "gate") from None
    assert isinstance(source, str)  # the gate refuses anything else
    meta = PolicyMeta.from_source_values(gated.values, gated.constants)
    try:
        compile_gated(gated, meta.name, POLICY.kind)
    except GateError as exc:
        category = "restricted" if str(exc).startswith("RestrictedPython") else "gate"
        raise PolicyError([str(exc)], category) from None
    return Policy(meta=meta, source=source, digest=policy_digest(source), origin=origin)
