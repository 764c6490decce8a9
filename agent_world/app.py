"""A session: one world with everything attached to it (tick loop, world log, ...).

The CLI builds a session from the configuration; tests build one with a fake clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from agent_world.angel import (
    Angel,
    FallbackGenerator,
    Generator,
    LLMGenerator,
    TemplateGenerator,
    TextModel,
)
from agent_world.angel.link import AngelLink, Sent
from agent_world.angel.usage import AbilityUsage
from agent_world.config import (
    Config,
    ConfigError,
    LLMConfig,
    embeddings_profile,
    llm_profiles,
)
from agent_world.contract.brains import Brain
from agent_world.core.loop import TickLoop
from agent_world.core.world import World
from agent_world.decisions.answerer import Answerer
from agent_world.decisions.keeping import KeepsMinds, MindCapture, PendingMinds, Record
from agent_world.decisions.kinds import KINDS, KindContext
from agent_world.decisions.pipeline import Pipeline
from agent_world.gcpolicy import GcPolicy
from agent_world.llm import LLMAgents, ProviderFactory, provider_factory
from agent_world.llm.embeddings import Embedder
from agent_world.llm.gates import Gates
from agent_world.llm.providers import build_agents, build_transport
from agent_world.llm.redact import Redactor
from agent_world.llm.textmodel import ProviderTextModel
from agent_world.llm.transport import Transport
from agent_world.persistence.folder import SaveFolder
from agent_world.persistence.minds import read_legacy_memories, read_minds
from agent_world.persistence.writer import Persistence
from agent_world.play import PlayDesk
from agent_world.remote.answerer import RemoteBrains
from agent_world.sandbox import Sandbox
from agent_world.talk import Talk
from agent_world.types import Clock, MonotonicClock, TickReport
from agent_world.userbrains.answerer import UserBrains
from agent_world.worldlog import WorldLog, printable

__all__ = ["EventCounter", "Session", "choose_generator", "known_secrets"]

IDLE_COLLECT_S = 1.0
"""How often garbage is collected while the world ticks no more (paused, or held)."""
ANGEL_STOP_S = 2.0
"""How long shutdown waits for the angel to finish the request in hand (a slow model is
abandoned: its answer could not reach a stopped world anyway)."""
MINDS_GRACE_S = 0.5
"""How much longer than ``minds.capture_wait_s`` a snapshot waits for its minds (the capture
threads give up at ``capture_wait_s`` and hand in what they have)."""


def known_secrets(config: Config) -> list[str]:
    """The secrets this configuration uses: the LLM's API key and the web's access token,
    when they are set (one configured but not set hides nothing, and nothing uses it)."""
    secrets = []
    for cfg in (config.llm, *llm_profiles(config.llm).values()):
        with contextlib.suppress(ConfigError):
            secrets.append(cfg.api_key())
    token_env = config.web.token_env
    if token_env:
        secrets.append(os.environ.get(token_env, ""))
    return [s for s in secrets if s]


def choose_generator(config: Config, text_model: TextModel | None, *,
                     report: Callable[[str], None] = lambda _text: None) -> Generator:
    """The angel's writer: an LLM when configured (``angel.generator``), with the templates
    writing whatever the LLM cannot answer (``report`` says when that starts and ends);
    else the templates."""
    choice = config.angel.generator
    if choice == "templates" or (choice == "auto" and text_model is None):
        return TemplateGenerator()
    if text_model is None:
        raise ConfigError("angel.generator: 'llm' needs an LLM provider, and none is "
                          "available to the angel in this build; use auto or templates")
    return FallbackGenerator(LLMGenerator(text_model, config.abilities), TemplateGenerator(),
                             report=report)


MACHINE_EVENTS = frozenset({"overrun", "skipped"})
"""Events the tick loop adds about the machine (a long tick, ticks let go of): a replay does
not reproduce them."""


class EventCounter:
    """Counts output events by type for summaries and /stats. ``total`` counts the world's
    own events only, so equal runs report equal totals: overruns and skipped ticks depend on
    the machine."""

    def __init__(self) -> None:
        self.total = 0
        self.by_type: dict[str, int] = {}

    def on_tick(self, report: TickReport) -> None:
        by_type = self.by_type
        for event in report.events:
            kind = event["type"]
            by_type[kind] = by_type.get(kind, 0) + 1
            if kind not in MACHINE_EVENTS:
                self.total += 1


class _LastReport:
    """Keeps the latest tick's report for the work done between ticks."""

    def __init__(self) -> None:
        self.report: TickReport | None = None

    def on_tick(self, report: TickReport) -> None:
        self.report = report


class Session:
    def __init__(self, config: Config, world: World, *, clock: Clock | None = None,
                 echo: TextIO | None = None, folder: SaveFolder | None = None,
                 resumed: bool = False, sandbox: Sandbox | None = None,
                 text_model: TextModel | None = None,
                 llm_provider: ProviderFactory | None = None,
                 llm_clock: Clock | None = None,
                 brains: Mapping[str, type[Brain]] | None = None,
                 world_log: Path | None = None) -> None:
        """``sandbox`` (owned by the session from here on) lets the world run abilities and
        brings the angel; without one, use_ability fails and nothing is generated.
        ``llm_provider`` and ``llm_clock`` replace the configured provider and the clock the
        LLM layer measures with (tests). ``world_log`` is the world log's file (by default
        ``paths.logs``/world.log; ``python main.py`` gives each run its own:
        ``worldlog.world_log_path``)."""
        self.config = config
        self.world = world
        self.events = EventCounter()
        # One redactor for every way text leaves this process or enters the world: the
        # providers' errors, the angel's answers, every input, every world-log line. It is
        # in place even with no secret yet: one made later (the /agents token) joins it.
        self.redactor = Redactor(known_secrets(config))
        world.inbox.redact = self.redactor.scrub
        self.world_log = WorldLog(
            world_log or Path(config.paths.logs) / "world.log",
            max_bytes=config.log.world_log_max_bytes,
            backups=config.log.world_log_backups,
            everything=config.log.everything,
            echo=echo,
            redact=self.redactor,
        )
        self.loop = TickLoop(world, clock or MonotonicClock(), config.world.tick_rate,
                             observers=[self.events, self.world_log])
        self.persistence: Persistence | None = None
        if folder is not None:
            self.persistence = Persistence(folder, config.persistence, world,
                                           report=self.report_problem)
            self.loop.observers.append(self.persistence)
            self.persistence.marker("resume" if resumed else "start")
            if resumed:
                self.persistence.write_abilities()
        self.sandbox = sandbox
        self.angel: Angel | None = None
        self.angel_link: AngelLink | None = None
        # How each ability does (casts, effects, failures): what /ability improve teaches.
        self.ability_usage = AbilityUsage()
        # Every call of the configured LLM goes through one transport and passes these
        # gates, LLM agents', users' brains' and the angel's alike: one client (its loop
        # thread, its connections), one hourly budget, one breaker, one set of figures.
        self.llm_gates = (Gates.from_config(config.llm, clock=llm_clock or MonotonicClock(),
                                            redact=self.redactor)
                          if config.llm.enabled else None)
        self.llm_transport: Transport | None = None
        if self.llm_gates is not None:
            factory = llm_provider or provider_factory(config.llm, self.redactor)
            self.llm_transport = build_transport(config.llm, self.llm_gates, factory=factory,
                                                 clock=llm_clock)
        if sandbox is not None and text_model is None and self.llm_transport is not None:
            # With an LLM configured the angel writes with it.
            text_model = ProviderTextModel(config.llm, self.llm_transport)
        if sandbox is not None:
            sandbox.install(world)
            # The angel checks new abilities under the rules this world runs with.
            rules = dataclasses.replace(config, abilities=world.ability_rules)
            generator = choose_generator(rules, text_model, report=self.report_problem)
            self.angel_link = AngelLink(
                self.loop, pause_world=config.angel.wait == "world",
                dry_runs=config.angel.dry_runs,
                answer_ticks=config.angel.answer_ticks if generator.repeatable else 0)
            self.angel = Angel(rules, world.inbox, generator, on_done=self.angel_link.done,
                               deliver=self.angel_link.deliver, report=self.note)
            self.angel_link.angel = self.angel
            self.loop.observers.append(self.angel_link)
            self.loop.observers.append(self.ability_usage)
            self.angel_link.reopen()  # a resumed world's open requests are asked again
        # The decision pipelines (one per kind of brain that decides off the tick: the
        # LLM's, users' brains', remote agents') read each tick's report after the tick,
        # while the loop waits for the next one: never inside a tick's time, always before
        # the next tick (the world is as the tick left it).
        self._pipelines: list[Pipeline] = []
        self._last_report = _LastReport()
        self.loop.observers.append(self._last_report)
        # LLM agents (None when no provider is configured: they use their built-in brains),
        # users' brains (None when none is registered) and remote agents (attached by the
        # web server's /agents): decisions come back only as plan inputs through the inbox.
        self.llm: LLMAgents | None = None
        self.brains: UserBrains | None = None
        self.remote: RemoteBrains | None = None
        # Agents of the other model profiles (llm.models; brain llm:NAME): each profile its
        # own transport (loop thread, endpoints, concurrency), gates (budget, breaker,
        # figures) and pipeline, so a profile whose server fails or answers 429 for
        # minutes slows its own agents only.
        self.llm_models: dict[str, LLMAgents] = {}
        self.llm_profiles: dict[str, LLMConfig] = (
            llm_profiles(config.llm) if config.llm.enabled else {})
        for name, cfg in self.llm_profiles.items():
            self.llm_models[name] = build_agents(
                cfg, world, settings=config.decisions.of("llm"), clock=llm_clock,
                report=self.report_problem, redactor=self.redactor, profile=name,
                gates=Gates.from_config(cfg, clock=llm_clock or MonotonicClock(),
                                        redact=self.redactor),
                prompt_log=((folder.root / "llm" if folder is not None
                             else Path(config.paths.logs)) / f"prompts-{name}.jsonl"
                            if config.llm.log_prompts else None))
        # Memory by meaning (minds.embeddings): one embedder for every brain, on a loop
        # thread of its own, with the profile's budget and breaker.
        self.embedder: Embedder | None = None
        embed_cfg = embeddings_profile(config)
        if embed_cfg is not None:
            self.embedder = Embedder(
                embed_cfg, Gates.from_config(embed_cfg, clock=llm_clock or MonotonicClock(),
                                             redact=self.redactor),
                deadline_s=config.minds.recall_deadline_ms / 1000,
                profile=config.minds.embeddings)
        context = KindContext(
            config=config, world=world, report=self.report_problem, redactor=self.redactor,
            llm_gates=self.llm_gates, llm_transport=self.llm_transport, llm_clock=llm_clock,
            prompt_log=((folder.root / "llm" if folder is not None
                         else Path(config.paths.logs)) / "prompts.jsonl"
                        if config.llm.log_prompts else None),
            brains=brains, llm_models=self.llm_models, embedder=self.embedder)
        started: dict[str, Answerer] = {}
        for kind in KINDS:
            answerer = kind.make(context, started)
            if answerer is not None:
                started[kind.name] = answerer
                self.attach_kind(kind.name, answerer)
        for model in self.llm_models.values():
            self.attach_kind("", model)
        # Interviews and surveys (/ask, /survey): answered off the tick by the kinds above
        # (or plainly from an agent's state), each answer an ``interview`` input.
        self.talk = Talk(world, config.talk, parts=self.thinking_parts,
                         save_dir=folder.root if folder is not None else None,
                         note=self.note)
        # Minds that last: restored from the newest minds file at or before the world's tick
        # (a resume, a crash recovery, a fork), then saved with every snapshot.
        self._unserved: dict[int, Record] = {}  # restored minds no kind here takes
        if folder is not None and self.persistence is not None:
            self._restore_minds(folder)
            self.persistence.keep_minds(self._capture_minds,
                                        config.minds.max_bytes_per_agent)
        # Asked in turn when the operator presses Ctrl-C; one that returns True handled it
        # (the console cancels a long command), otherwise the world stops.
        self.interrupt_handlers: list[Callable[[], bool]] = []
        # The web viewer, when one serves this session (attached by the command line; the
        # core never imports it): /stats reports it like the other parts.
        self.web: Any = None
        # The console's command table when it is not the usual one (a served replay's).
        self.commands: Mapping[str, Any] | None = None
        # Who holds which played agent from where, and the idle timeout (agent_world/play).
        self.play = PlayDesk(lambda: self.world, idle_s=config.web.play_idle_s,
                             note=lambda text: self.world_log.note(self.world.tick, text))
        self.loop.observers.append(self.play)
        self.gc = GcPolicy(sweep_after=config.collector.sweep_after_connections,
                           sweep_every_s=config.collector.sweep_every_minutes * 60)
        self.loop.between_ticks = self._between_ticks
        self.started = time.monotonic()
        self.start_tick = world.tick
        self._closed = False
        self._saved = True

    def _keepers(self) -> list[KeepsMinds]:
        return [p.answerer for p in self._pipelines if isinstance(p.answerer, KeepsMinds)]

    def _restore_minds(self, folder: SaveFolder) -> None:
        """Give the agents' minds back from the save folder (docs/save-format.md, "Minds"):
        each kind takes its agents'; one warning per agent whose mind cannot be read."""
        world = self.world
        living = {eid: world.name_of(eid) for eid, _row in world.agents()}
        read = read_minds(folder.minds_dir, world.tick, living)
        if read.tick is None and folder.memories_dir.is_dir():
            read = read_legacy_memories(folder.memories_dir, living)  # before minds/ existed
        for line in read.warnings:
            self.report_problem(line)
        if not read.records:
            return
        served: set[int] = set()
        for keeper in self._keepers():
            keeper.restore_minds(read.records, self.report_problem)
            served.update(getattr(keeper, "minds", {}))
        # Agents whose brain is not running here (not registered this run, no LLM): their
        # minds are kept as they are, snapshot after snapshot, until it runs again.
        self._unserved = {eid: r for eid, r in read.records.items() if eid not in served}
        where = (f"minds/{read.path.name}" if read.tick is not None and read.path is not None
                 else "memories/")
        self.note(f"minds: restored {len(read.records) - len(self._unserved)} agents' minds "
                  f"from {where}" + (f" (as of tick {read.tick}; the world is at tick "
                                     f"{world.tick})" if read.tick is not None
                                     and read.tick != world.tick else ""))

    def _capture_minds(self, tick: int) -> PendingMinds | None:
        """Every kind's minds as of the snapshot of ``tick`` (main thread; the persistence
        writer waits for them before it writes that snapshot)."""
        captures = [keeper.capture_minds(tick) for keeper in self._keepers()]
        world = self.world
        if self._unserved:
            kept = {}
            for eid, record in self._unserved.items():
                row = world.agent_row(eid) if world.alive(eid) else None
                if row is not None and (row.agent.brain == record.get("brain")
                                        or not record.get("brain")):
                    kept[eid] = record
            self._unserved = kept
            carried = MindCapture(tick, kept)
            for eid, record in kept.items():
                carried.put(eid, record)
            captures.append(carried)
        if not captures:
            return None
        names = {eid: world.name_of(eid) for capture in captures for eid in capture.waiting()}
        return PendingMinds(tick, captures, self.config.minds.capture_wait_s + MINDS_GRACE_S,
                            names)

    def _between_ticks(self) -> None:
        report, self._last_report.report = self._last_report.report, None
        if report is not None:
            for pipeline in self._pipelines:
                pipeline.on_tick(report)
            self.talk.on_tick(report)  # after the decisions: interviews take what they leave
        forked = False
        if self.persistence is not None:
            # The tick's cost spaces the seek points: a replay of it costs about the same.
            forked = self.persistence.between_ticks(self.loop.last_tick_seconds)
        self.gc.between_ticks(busy=forked)

    def attach_kind(self, name: str, answerer: Answerer) -> Pipeline:
        """Start deciding with a kind of brain (``decisions.kinds``): its pipeline runs after
        each tick, and the kind is found as ``session.<name>`` (no name: not found so; a
        model profile's LLM agents are found in ``session.llm_models``)."""
        pipeline = Pipeline(self.world, answerer, report=self.report_problem,
                            note=lambda text: self.world_log.note(self.world.tick, text))
        self._pipelines.append(pipeline)
        if name:
            setattr(self, name, answerer)
        return pipeline

    def detach_kind(self, name: str, answerer: Answerer) -> None:
        """Stop running the kind's pipeline (closed by whoever attached it)."""
        self._pipelines = [p for p in self._pipelines if p.answerer is not answerer]
        if getattr(self, name, None) is answerer:
            setattr(self, name, None)

    def thinking_parts(self) -> list[Any]:
        """The kinds whose agents decide off the tick: the LLM's, users' brains, remote."""
        return [p.answerer for p in self._pipelines]

    def send_queued(self) -> None:
        """Main thread: every pipeline sends what waits queued while it has room (see
        ``Pipeline.send_queued``)."""
        for pipeline in self._pipelines:
            pipeline.send_queued()

    @property
    def save_dir(self) -> Path | None:
        return self.persistence.folder.root if self.persistence else None

    def interrupt(self) -> None:
        """Ctrl-C: cancel what the operator is running, or else stop the world."""
        if not any(handler() for handler in list(self.interrupt_handlers)):
            self.loop.stop()

    def report_problem(self, message: str) -> None:
        """Say it loudly: on the terminal and in the world log (any thread may call this)."""
        print(printable(self.redactor(message)), file=sys.stderr, flush=True)
        self.world_log.note(self.world.tick, message)  # the log cleans its lines itself

    def note(self, message: str) -> None:
        """A line for the operator in the world log (any thread may call this)."""
        self.world_log.note(self.world.tick, message)

    def request_ability(self, description: str) -> Sent:
        """The operator's /ability: ask the angel for a new ability. ValueError says what is
        wrong (no angel in this session, an empty or overlong description)."""
        if self.angel_link is None:
            raise ValueError("this session has no angel (it runs without a sandbox)")
        return self.angel_link.request(description)

    def improve_ability(self, name: str) -> Sent:
        """The operator's /ability improve: ask the angel for a better version of ``name``
        with its figures in this world. ValueError names what is wrong."""
        if self.angel_link is None:
            raise ValueError("this session has no angel (it runs without a sandbox)")
        spec = self.world.abilities.get(name)
        if spec is None:
            raise ValueError(f"no ability named {name!r:.40} (/abilities lists them)")
        figures = self.ability_usage.of(spec.name)
        if not figures.casts and not figures.failures:
            raise ValueError(f"{spec.name} has not been cast in this session: there is "
                             "nothing yet to learn from (cast it with /cast, or wait)")
        return self.angel_link.improve(spec.name, spec.source, tuple(figures.lines()))

    def load_ability(self, source: str, label: str) -> Sent:
        """The operator's /ability load: check a source like the angel's own work; if it
        is accepted it enters the world as an ``ability`` input holding the source."""
        if self.angel_link is None:
            raise ValueError("this session has no angel (it runs without a sandbox)")
        return self.angel_link.load(source, label)

    def ability_stats(self) -> dict[str, Any]:
        """Abilities at a glance, for /stats: the angel's work, the world's casts and the
        sandbox's time per tick."""
        world = self.world
        counters = world.counters
        out: dict[str, Any] = {
            "known": len(world.abilities.names()),
            "generated_in_world": len(world.abilities.generated),
            "disabled": len(world.abilities.disabled),
            "disabled_names": dict(world.abilities.disabled),
            "casts": counters.get("ability_casts", 0),
            "casts_refused": counters.get("ability_casts_refused", 0),
            "requests": counters.get("ability_requests", 0),
        }
        if self.angel is not None:
            out["angel"] = self.angel.stats()
            out["generated"] = out["angel"]["generated"]
            out["accepted"] = out["angel"]["accepted"]
            out["rejected"] = out["angel"]["rejected"]
        if self.sandbox is not None:
            sandbox = self.sandbox.stats()
            out["sandbox"] = sandbox
            out["sandbox_ms_per_tick"] = sandbox["ms_per_tick"]
        return out

    async def run(self, *, max_ticks: int | None = None, paced: bool = True) -> None:
        self.world_log.note(self.world.tick, f"world '{self.config.world.name}' running from "
                            f"tick {self.world.tick} (seed {self.world.seed})")
        if self.angel_link is not None:
            self.angel_link.aio_loop = asyncio.get_running_loop()
        idle = asyncio.create_task(self._collect_while_idle(), name="gc-idle")
        try:
            await self.loop.run(max_ticks=max_ticks, paced=paced)
        finally:
            idle.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await idle
            if self.angel_link is not None:
                self.angel_link.aio_loop = None

    async def _collect_while_idle(self) -> None:
        """Collect while no tick runs (a paused or held world): garbage is collected
        between ticks only, and clients come and go while the world waits."""
        ticks = self.loop.ticks_run
        while True:
            await asyncio.sleep(IDLE_COLLECT_S)
            if self.loop.ticks_run == ticks:
                self.gc.collect()
            ticks = self.loop.ticks_run

    def summary(self) -> dict[str, Any]:
        """The one-line result of a run, for scripts comparing runs."""
        elapsed = time.monotonic() - self.started
        ticks = self.world.tick - self.start_tick
        return {
            "world": self.config.world.name,
            "seed": self.world.seed,
            "tick": self.world.tick,
            "state_hash": self.world.state_hash(),
            "agents_alive": len(self.world.agents()),
            "events": self.events.total,
            "ticks_run": ticks,
            "elapsed_s": round(elapsed, 3),
            "ticks_per_s": round(ticks / elapsed, 1) if elapsed > 0 else None,
            **({"llm_decisions": self.llm.metrics.applied} if self.llm is not None else {}),
            **({"llm_decisions_by_model": {
                "default": self.llm.metrics.applied if self.llm is not None else 0,
                **{name: m.metrics.applied for name, m in self.llm_models.items()}}}
               if self.llm_models else {}),
        } | self._ability_summary()

    def _ability_summary(self) -> dict[str, Any]:
        if self.sandbox is None:
            return {}
        sandbox = self.sandbox.stats()
        # Calls a backstop stopped: outside events, which a quiet machine never has.
        return {"ability_casts": self.world.counters.get("ability_casts", 0),
                "abilities_disabled": len(self.world.abilities.disabled),
                "sandbox_calls": sandbox["calls"],
                "sandbox_calls_stopped": self.events.by_type.get("ability_killed", 0),
                "sandbox_ms_per_tick": sandbox["ms_per_tick"]}

    def close(self) -> bool:
        """Stop everything attached to the world: the final snapshot first (nothing else
        changes the world any more), then the LLM workers (which save their memories), the
        angel and the sandbox, and last the world's lock. Never raises: a part that fails to
        stop is reported and the rest still stop. Returns False when the final snapshot could
        not be written (the reason has been reported; the lock is then kept until exit)."""
        if self._closed:
            return self._saved
        self._closed = True
        self._stopping("the interviews", self.talk.close)  # surveys under way written down
        persistence = self.persistence
        if persistence is not None:
            self._saved = self._stopping("the save folder",
                                         lambda: persistence.close(keep_lock=True))
        if self.llm is not None:
            self._stopping("the LLM workers", self.llm.close)
        for name, model in self.llm_models.items():
            self._stopping(f"the LLM workers of model {name}", model.close)
        if self.brains is not None:
            self._stopping("the brains' workers", self.brains.close)
        if self.angel is not None:
            angel = self.angel
            if self._stopping("the angel", lambda: angel.close(ANGEL_STOP_S)) is False:
                self.note(f"the angel was still writing after {ANGEL_STOP_S:g} s; its work "
                          "is dropped")
        if self.llm_transport is not None:  # after everyone who calls it
            self._stopping("the LLM transport", self.llm_transport.close)
        if self.embedder is not None:
            self._stopping("the embeddings", self.embedder.close)
        if self.sandbox is not None:
            self._stopping("the sandbox", self.sandbox.close)
        lock = persistence.folder.lock if persistence is not None else None
        if lock is not None and self._saved:
            lock.release()  # last: the LLM's memory files go into the folder too
        self.world_log.note(self.world.tick, f"world '{self.config.world.name}' stopped at "
                            f"tick {self.world.tick}")
        self.world_log.close()
        self.gc.close()
        return self._saved

    def _stopping(self, what: str, stop: Callable[[], object]) -> bool:
        """Run one part's stop; False (and said loudly) if it raised or reported failure."""
        try:
            return stop() is not False
        except Exception as exc:  # one part's failure must not keep the others running
            self.report_problem(f"shutdown: {what} did not stop cleanly "
                                f"({type(exc).__name__}: {exc})")
            return False
