"""Re-asking recorded decisions: another brain, model or prompt, at the very moment of each.

For every decision a recorded world logged (``recorded.decisions``), the brains asked for
answer the observation its brain was handed, and each answer is compared with the logged
one (``recorded.tally``). The world is only replayed, never changed, and the save folder
only read. The work is split at the folder's saved states into spans
(``persistence.spans.plan_spans``), one process each; each span writes its records to a
part file, and the parts are joined in decision order, so the output and the report are the
same bytes whatever the number of workers.

What a run writes, in its own folder (never the save folder):

- ``BRAIN.jsonl`` per brain (``policy:NAME`` as ``policy-NAME``): one record per decision,
  in decision order (docs/evaluation.md, "Re-asking recorded decisions", has the format);
- ``report.json``: the options, each brain's figures (``Tally.figures``), the files, and
  ``timing`` (wall time, workers, spans, decisions per second, latency per brain): timing
  is the one part that depends on the machine.
"""

from __future__ import annotations

import bisect
import multiprocessing
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from agent_world.config import Config, ConfigError, llm_profile_of
from agent_world.contract.llmbrain import LLMBrain
from agent_world.llm.local import find_model_file
from agent_world.persistence.folder import SaveFolder
from agent_world.persistence.snapshots import first_tick
from agent_world.persistence.spans import SetupFactory, plan_spans
from agent_world.recorded.askers import (
    Asker,
    BuiltinAsker,
    LLMAsker,
    NewDecision,
    UserAsker,
)
from agent_world.recorded.decisions import (
    Key,
    RecordedDecision,
    Selection,
    SelectionError,
    replay_decisions,
    select_decisions,
)
from agent_world.recorded.tally import Agreement, Tally
from agent_world.userbrains.registry import brain_refusal, load_brains

__all__ = ["EMPTY_MEMORY", "ReaskError", "ReaskOptions", "ReaskPlan", "ReaskResult",
           "check_options", "file_name", "prepare_reask", "reask", "record_line", "render",
           "run_reask"]

EMPTY_MEMORY = ("the LLM's prompts are rebuilt with an empty memory and no 'since your last "
                "decision' part (LLM memories are not world state, and a replay does not "
                "rebuild them); everything else in them is as the agent's prompt was")


class ReaskError(ValueError):
    """Bad input: one line naming the value and the fix."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReaskOptions:
    """What to re-ask and with what: ``brains`` (``builtin``, ``llm``, registered brains,
    ``policy:NAME``), ``model`` in place of ``llm.model``, the asked ticks
    ``first``..``last``, ``agents``, and a ``sample`` of that many drawn with ``seed``."""

    brains: tuple[str, ...]
    model: str | None = None
    brains_path: str | None = None
    first: int | None = None
    last: int | None = None
    agents: tuple[int, ...] | None = None
    sample: int | None = None
    seed: int = 0


@dataclass(slots=True)
class ReaskResult:
    selection: Selection
    tallies: dict[str, Tally]
    files: dict[str, Path]
    report: dict[str, Any]
    spans: int
    seconds: float
    notes: list[str] = field(default_factory=list)


def check_options(options: ReaskOptions, config: Config) -> Config:
    """The configuration the brains run with (``--model`` in place); ReaskError for a brain
    that is neither built in nor registered, ``llm`` without an LLM, or a model that cannot
    be (``--model`` without ``llm``, a local model file that is not there). A model the
    endpoint does not serve is found at its first call (ModelRefused)."""
    if not options.brains:
        raise ReaskError("--brain: name at least one brain (builtin, llm, a registered one "
                         "or policy:NAME)")
    try:
        registered = load_brains(config.brains, path=options.brains_path,
                                 llm=config.llm.enabled, models=config.llm.models)
    except ConfigError as exc:
        raise ReaskError(str(exc)) from None
    for brain in options.brains:
        if brain == "remote":
            raise ReaskError("--brain remote: remote agents answer over a connection of "
                             "their own and cannot be re-asked; re-ask builtin, llm or a "
                             "registered brain")
        refusal = brain_refusal(brain, registered, llm=config.llm.enabled, models=config.llm.models)
        if refusal is not None:
            raise ReaskError(f"--brain {brain}: {refusal}")
        if llm_profile_of(brain):
            raise ReaskError(f"--brain {brain}: re-asking a model profile is not supported "
                             "yet; re-ask --brain llm with --model MODEL instead")
        cls = registered.get(brain)
        if isinstance(cls, type) and issubclass(cls, LLMBrain):
            raise ReaskError(f"--brain {brain}: an LLMBrain calls the LLM itself, and "
                             "re-asking one is not supported yet; re-ask --brain llm instead")
    model = options.model
    if model is None:
        return config
    if "llm" not in options.brains:
        raise ReaskError(f"--model {model}: a model is for --brain llm; add llm to --brain "
                         "or leave --model out")
    if not model.strip():
        raise ReaskError("--model '': give the model's name, e.g. --model gpt-4o-mini")
    if config.llm.provider == "local":
        try:
            find_model_file(model)
        except Exception as exc:  # the local model's own checks: any failure means "not there"
            raise ReaskError(f"--model {model}: no such local model ({exc}); give a GGUF "
                             "file's path or the name of one in llm.local_models") from None
    return config.replace(llm={"model": model})


def _askers(options: ReaskOptions, config: Config) -> list[Asker]:
    registered = load_brains(config.brains, path=options.brains_path, llm=config.llm.enabled,
                             models=config.llm.models)
    askers: list[Asker] = []
    try:
        for brain in options.brains:
            if brain == "builtin":
                askers.append(BuiltinAsker())
            elif brain == "llm":
                askers.append(LLMAsker(config))
            else:
                askers.append(UserAsker(brain, registered[brain], config))
    except BaseException:
        for asker in askers:
            asker.close()
        raise
    return askers


def file_name(brain: str) -> str:
    return f"{brain.replace(':', '-')}.jsonl"


def record_line(index: int, item: RecordedDecision, new: NewDecision,
                agreed: Agreement) -> bytes:
    """One decision's record: the observation, the logged decision and the new one."""
    key = item.key
    return orjson.dumps({
        "index": index, "agent": key.agent, "asked_tick": key.asked_tick, "tick": key.tick,
        "seq": key.seq, "observation": item.observation.to_dict(),
        "logged": dict(item.logged.data), "new": new.to_dict(), "agree": agreed.to_dict(),
    }, option=orjson.OPT_NON_STR_KEYS) + b"\n"


@dataclass(slots=True)
class _SpanDone:
    tallies: dict[str, Tally]
    system: str  # the LLM's system prompt (empty without llm)


def _reask_span(root: Path, config: Config, options: ReaskOptions, keys: Sequence[Key],
                offset: int, parts: dict[str, Path],
                setup_factory: SetupFactory | None) -> _SpanDone:
    """One span's decisions, re-asked (in a worker process, or in this one)."""
    folder = SaveFolder.open(root)
    askers = _askers(options, config)
    tallies = {a.name: Tally(a.name) for a in askers}
    files: dict[str, IO[bytes]] = {}
    try:
        for name, path in parts.items():
            files[name] = path.open("wb")

        def prepare(world: Any, key: Key, seen: Any) -> list[object]:
            return [asker.prepare(world, key, seen) for asker in askers]

        decisions = replay_decisions(folder, config, keys, setup_factory=setup_factory,
                                     at_ask=prepare)
        for i, item in enumerate(decisions):
            assert isinstance(item.aside, list)
            for asker, prepared in zip(askers, item.aside, strict=True):
                new = asker.answer(prepared)
                agreed = tallies[asker.name].add(item.logged.actions, new)
                files[asker.name].write(record_line(offset + i, item, new, agreed))
        system = next((a.system_prompt() for a in askers if isinstance(a, LLMAsker)), "")
    finally:
        for handle in files.values():
            handle.close()
        for asker in askers:
            asker.close()
    return _SpanDone(tallies, system)


def _groups(folder: SaveFolder, selection: Selection, workers: int,
            min_work: int | None) -> list[list[Key]]:
    """The keys split at saved states into up to ``workers`` groups (``plan_spans``), each
    replayed on its own from the saved state nearest before its first key."""
    keys = selection.keys
    first_asked, last_asked = keys[0].asked_tick, keys[-1].asked_tick
    states = folder.saved_states(until=first_asked)
    start = states[-1][0] if states else first_tick(folder)
    spans = plan_spans(folder, start, last_asked, workers, until=last_asked,
                       min_work=min_work)
    bounds = [span.start_tick for span in spans[1:]]
    groups: list[list[Key]] = [[] for _ in spans]
    for key in keys:  # a key asked at a span's first tick is that span's: its state is there
        groups[bisect.bisect_right(bounds, key.asked_tick)].append(key)
    return [group for group in groups if group]


@dataclass(frozen=True, slots=True)
class ReaskPlan:
    """A checked re-ask, before anything is written: the folder, the configuration the
    brains run with, the selected decisions and their groups (one process each)."""

    folder: SaveFolder
    config: Config
    options: ReaskOptions
    selection: Selection
    groups: tuple[tuple[Key, ...], ...]
    out: Path
    workers: int


def prepare_reask(root: Path, config: Config, options: ReaskOptions, out: Path, *,
                  workers: int = 1, min_work: int | None = None) -> ReaskPlan:
    """Check everything and select the decisions, writing nothing. ReaskError or
    SelectionError (one line each) for bad input: ``out`` inside the save folder, an
    unknown brain or model, a tick outside the log, an agent not alive then, nothing to
    re-ask. ``min_work``: the least replay worth a span of its own (``plan_spans``)."""
    folder = SaveFolder.open(root)
    source, target = folder.root.resolve(), out.resolve()
    if target == source or source in target.parents:
        raise ReaskError(f"--out {out}: inside the save folder {root}, which re-asking "
                         "never writes to; give a folder elsewhere")
    config = check_options(options, config)
    selection = select_decisions(folder, first=options.first, last=options.last,
                                 agents=options.agents, sample=options.sample,
                                 seed=options.seed)
    if not selection.keys:
        skipped = (f"; {selection.undated} plan inputs there have no asked_tick (logged "
                   "before it was recorded) and cannot be re-asked" if selection.undated
                   else "")
        raise SelectionError(f"no logged decisions to re-ask at ticks {selection.first}.."
                             f"{selection.last} of {root}{skipped}; only agents whose brain "
                             "decides off the tick (llm, a registered brain, a policy, "
                             "remote) log decisions")
    groups = _groups(folder, selection, max(1, workers), min_work)
    return ReaskPlan(folder, config, options, selection,
                     tuple(tuple(g) for g in groups), out, workers)


def run_reask(plan: ReaskPlan, *, setup_factory: SetupFactory | None = None,
              log: Callable[[str], None] = lambda _text: None) -> ReaskResult:
    """Re-ask the planned decisions and write the records and the report into ``plan.out``.
    ModelRefused when the endpoint refuses the model; RecordError when the recording
    cannot be replayed to a decision."""
    began = time.perf_counter()
    folder, options, selection, groups = plan.folder, plan.options, plan.selection, plan.groups
    out = plan.out
    log(f"re-asking {len(selection.keys)} decisions of {folder.root} with "
        f"{', '.join(options.brains)} in {len(groups)} span{'s' * (len(groups) != 1)}")
    out.mkdir(parents=True, exist_ok=True)
    parts_dir = out / ".parts"
    parts_dir.mkdir(exist_ok=True)
    parts = [{brain: parts_dir / f"{i:04d}-{file_name(brain)}" for brain in options.brains}
             for i in range(len(groups))]
    offsets = [sum(len(g) for g in groups[:i]) for i in range(len(groups))]
    try:
        done = _run_groups(folder.root, plan.config, options, groups, offsets, parts,
                           setup_factory)
        files = _join(out, options.brains, parts)
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)
    tallies = {brain: Tally(brain) for brain in options.brains}
    for span in done:
        for brain, tally in span.tallies.items():
            tallies[brain].merge(tally)
    seconds = time.perf_counter() - began
    system = next((span.system for span in done if span.system), "")
    report = _report(folder, plan.config, options, selection, tallies, files, system,
                     seconds=seconds, workers=plan.workers, spans=len(groups))
    (out / "report.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    return ReaskResult(selection, tallies, files, report, len(groups), seconds)


def reask(root: Path, config: Config, options: ReaskOptions, out: Path, *, workers: int = 1,
          min_work: int | None = None, setup_factory: SetupFactory | None = None,
          log: Callable[[str], None] = lambda _text: None) -> ReaskResult:
    """``prepare_reask`` then ``run_reask``."""
    plan = prepare_reask(root, config, options, out, workers=workers, min_work=min_work)
    return run_reask(plan, setup_factory=setup_factory, log=log)


def _run_groups(root: Path, config: Config, options: ReaskOptions,
                groups: Sequence[Sequence[Key]],
                offsets: list[int], parts: list[dict[str, Path]],
                setup_factory: SetupFactory | None) -> list[_SpanDone]:
    if len(groups) == 1:
        return [_reask_span(root, config, options, groups[0], 0, parts[0], setup_factory)]
    # Spawned, not forked: the caller may hold threads (a sandbox pool's, an LLM client's).
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(groups), mp_context=context) as pool:
        futures = [pool.submit(_reask_span, root, config, options, group, offset, part,
                               setup_factory)
                   for group, offset, part in zip(groups, offsets, parts, strict=True)]
        return [future.result() for future in futures]


def _join(out: Path, brains: Sequence[str], parts: list[dict[str, Path]]) -> dict[str, Path]:
    """Each brain's part files, in span order, as its one records file."""
    files = {}
    for brain in brains:
        path = files[brain] = out / file_name(brain)
        with path.open("wb") as joined:
            for part in parts:
                with part[brain].open("rb") as piece:
                    shutil.copyfileobj(piece, joined)
    return files


def _report(folder: SaveFolder, config: Config, options: ReaskOptions, selection: Selection,
            tallies: dict[str, Tally], files: dict[str, Path], system: str, *,
            seconds: float, workers: int, spans: int) -> dict[str, Any]:
    asked = len(selection.keys)
    llm = "llm" in options.brains
    return {
        "world": folder.read_meta().get("world", folder.name),
        "folder": str(folder.root),
        "brains": list(options.brains),
        "model": config.llm.model if llm else None,
        "ticks": [selection.first, selection.last],
        "agents": list(options.agents) if options.agents else None,
        "sample": options.sample, "seed": options.seed,
        "decisions": {"in_range": selection.found, "asked": asked,
                      "undated_skipped": selection.undated},
        **({"llm_prompt": {"memory": EMPTY_MEMORY, "system": system}} if llm else {}),
        "results": {brain: tally.figures() for brain, tally in tallies.items()},
        "files": {brain: str(path) for brain, path in files.items()},
        "timing": {"seconds": round(seconds, 3), "workers": workers, "spans": spans,
                   "decisions_per_s": round(asked / seconds, 1) if seconds > 0 else None,
                   "latency": {brain: tally.latency() for brain, tally in tallies.items()}},
    }


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def render(report: dict[str, Any], top: int = 6) -> list[str]:
    """The report as the terminal shows it: a row per brain, then its actions."""
    decisions = report["decisions"]
    head = (f"{report['world']}: {decisions['asked']} decisions re-asked (of "
            f"{decisions['in_range']} logged at ticks {report['ticks'][0]}.."
            f"{report['ticks'][1]}")
    if decisions["undated_skipped"]:
        head += f"; {decisions['undated_skipped']} without asked_tick skipped"
    lines = [head + ")", ""]
    header = (f"{'brain':<16} {'asked':>6} {'valid':>7} {'exact':>7} {'same target':>12} "
              f"{'same action':>12} {'p50 ms':>8} {'p95 ms':>8} {'tokens':>9} {'cost':>9}")
    lines.append(header)
    timing = report["timing"]["latency"]
    for brain, figures in report["results"].items():
        rates = figures["rates"]
        tokens = figures["tokens"]["prompt"] + figures["tokens"]["completion"]
        cost = "-" if figures["cost"] is None else f"${figures['cost']:.4f}"
        lines.append(f"{brain:<16} {figures['asked']:>6} {_pct(rates['valid']):>7} "
                     f"{_pct(rates['exact']):>7} {_pct(rates['same_target']):>12} "
                     f"{_pct(rates['same_action']):>12} {timing[brain]['p50_ms']:>8.2f} "
                     f"{timing[brain]['p95_ms']:>8.2f} {tokens:>9} {cost:>9}")
    lines.append("")
    for brain, figures in report["results"].items():
        new, logged = figures["actions"]["new"], figures["actions"]["logged"]
        asked = max(1, figures["asked"])
        ranked = sorted(set(new) | set(logged), key=lambda a: (-new.get(a, 0), a))[:top]
        shown = ", ".join(f"{a} {100 * new.get(a, 0) / asked:.0f}% "
                          f"(logged {100 * logged.get(a, 0) / asked:.0f}%)" for a in ranked)
        lines.append(f"{brain} chose: {shown}")
        if figures["invalid"]:
            lines.append(f"{brain} invalid answers: "
                         + ", ".join(f"{k} {n}" for k, n in figures["invalid"].items()))
    if "llm_prompt" in report:
        lines.append(f"note: {report['llm_prompt']['memory']}")
    for brain, path in report["files"].items():
        lines.append(f"{brain} records: {path}")
    return lines
