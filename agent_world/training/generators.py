"""Where a trainer's new versions come from.

- ``TemplateGenerator``: works offline. It mutates the numeric constants of the best
  version so far (one to three of them, by 10-50%, in the direction that last helped when
  one did), from a seeded random generator, so a run is the same every time.
- ``LLMGenerator``: asks the configured LLM. The request holds the contract, the three
  example policies, the best version's source and its training bundle, and what became of
  the last attempts; the answer's first fenced code block is the new source.

Either returns a whole source; the trainer stamps its metadata, checks and evaluates it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent_world.angel.generators import extract_code
from agent_world.llm.gates import LLMUnavailable
from agent_world.policies import example_policies
from agent_world.training.source import Constant, numeric_constants, replace_values
from agent_world.types import LLMRequest, LLMResponse

__all__ = ["GeneratorError", "GeneratorUnavailable", "LLMGenerator", "PolicyGenerator",
           "Proposal", "TemplateGenerator"]

MAX_CHANGED = 3
MAX_TRIES = 50  # mutations drawn before a template generator gives up finding a new one
MAX_BUNDLE_CHARS = 6000  # of the bundle's JSON in an LLM request
SYSTEM = ("You improve agent policies for a simulated world: Python source files that follow "
          "the contract you are given exactly. Answer with the complete new source file in "
          "one ```python fenced block, after at most three sentences on what you changed "
          "and why.")


class GeneratorError(Exception):
    """No new source this time (the LLM failed or answered no code; no mutation left)."""


class GeneratorUnavailable(GeneratorError):
    """No new source until the LLM may be asked again: its hourly budget is spent or its
    circuit breaker is open. The run stops rather than spin through its iterations."""


@dataclass(frozen=True, slots=True)
class Proposal:
    source: str
    summary: str  # what changed, in a line


class PolicyGenerator(Protocol):
    name: str

    def propose(self, best_source: str, bundle: Mapping[str, Any],
                feedback: Sequence[str]) -> Proposal: ...

    def accepted(self) -> None:
        """The last proposal became the best."""

    def close(self) -> None:
        """Release what it holds (on the thread that used it)."""


class TemplateGenerator:
    """Mutates the best version's numeric constants; remembers what helped."""

    name = "templates"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.tried: set[str] = set()
        self.helped: dict[str, int] = {}  # constant -> direction of its last winning change
        self._last: dict[str, int] = {}

    def accepted(self) -> None:
        """The last proposal was accepted: its directions are worth trying again."""
        self.helped.update(self._last)

    def close(self) -> None:
        """Nothing held."""

    def propose(self, best_source: str, bundle: Mapping[str, Any],
                feedback: Sequence[str]) -> Proposal:
        constants = [c for c in numeric_constants(best_source) if c.value != 0
                     or isinstance(c.value, int)]
        if not constants:
            raise GeneratorError("the policy has no numeric constants to tune; start from a "
                                 "template policy (an example) or use --generator llm")
        self.tried.add(best_source)
        for _ in range(MAX_TRIES):
            chosen = self.rng.sample(constants, min(len(constants),
                                                    self.rng.randint(1, MAX_CHANGED)))
            changes, said, directions = {}, [], {}
            for const in chosen:
                direction = self.helped.get(const.name) or self.rng.choice((-1, 1))
                if self.rng.random() < 0.25:
                    direction = -direction  # now and then the other way
                new = _mutated(const, direction, self.rng)
                if new == const.value:
                    continue
                changes[const.name] = repr(new)
                directions[const.name] = direction
                said.append(f"{const.name} {const.value!r} -> {new!r}")
            if not changes:
                continue
            source = replace_values(best_source, changes)
            if source in self.tried:
                continue
            self.tried.add(source)
            self._last = directions
            return Proposal(source, "; ".join(said))
        raise GeneratorError(f"no untried change of its constants found in {MAX_TRIES} draws")


def _mutated(const: Constant, direction: int, rng: random.Random) -> int | float:
    step = rng.uniform(0.1, 0.5)
    value = const.value
    if isinstance(value, int):
        new: int | float = value + direction * max(1, round(abs(value) * step))
        if value >= 0:
            new = max(0, new)
        return new
    new = round(value * (1 + direction * step), 3) if value else round(direction * step, 3)
    return max(0.0, new) if value >= 0 else new


class TextModel(Protocol):
    def ask(self, request: LLMRequest) -> LLMResponse: ...


class LLMGenerator:
    """Asks the LLM for a better version."""

    name = "llm"

    def __init__(self, model: TextModel, contract: str, *, max_tokens: int = 2500,
                 temperature: float = 0.4) -> None:
        self.model = model
        examples = "\n\n".join(f"# Example policy {p.name}\n```python\n{p.source.strip()}\n```"
                               for p in example_policies())
        self.system = f"{SYSTEM}\n\n# The policy contract\n{contract.strip()}\n\n{examples}"
        self.max_tokens = max_tokens
        self.temperature = temperature

    def accepted(self) -> None:
        """Nothing to learn here: the LLM sees the outcome in the next request."""

    def close(self) -> None:
        close = getattr(self.model, "close", None)
        if callable(close):
            close()

    def request(self, best_source: str, bundle: Mapping[str, Any],
                feedback: Sequence[str]) -> LLMRequest:
        shown = json.dumps({k: v for k, v in bundle.items() if k != "contract"},
                           separators=(",", ":"))[:MAX_BUNDLE_CHARS]
        lately = "\n".join(f"- {line}" for line in feedback[-6:]) or "- (none yet)"
        prompt = (f"# The best version so far\n```python\n{best_source.strip()}\n```\n\n"
                  f"# Its training bundle (scenario, score, metrics, top mistakes with the "
                  f"observation that led to them, traces, errors, steps used)\n{shown}\n\n"
                  f"# What became of the last attempts\n{lately}\n\n"
                  "Write a better version: a higher score in this scenario, no new errors, "
                  "well within the step budget. Keep NAME, VERSION and PARENT as literals "
                  "(they are set for you).")
        return LLMRequest(system=self.system, prompt=prompt, schema=None,
                          temperature=self.temperature, max_tokens=self.max_tokens, seed=None)

    def propose(self, best_source: str, bundle: Mapping[str, Any],
                feedback: Sequence[str]) -> Proposal:
        try:
            answer = self.model.ask(self.request(best_source, bundle, feedback)).text
        except LLMUnavailable as exc:
            raise GeneratorUnavailable(f"the LLM may not be asked: {exc}") from None
        except Exception as exc:  # the provider's own errors, after its retries
            raise GeneratorError(f"the LLM failed: {type(exc).__name__}: "
                                 f"{str(exc)[:200]}") from None
        source = extract_code(answer)
        if "def decide" not in source:
            raise GeneratorError(f"the LLM answered no policy source ({answer[:120]!r})")
        said = answer.split("```", 1)[0].strip().replace("\n", " ")
        return Proposal(source, said[:200] or "a new version from the LLM")
