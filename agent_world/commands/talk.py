"""Commands that talk to agents: /ask (an interview), /survey (many) and /surveys.

The question is checked at once (a living agent, a question of the allowed length, the
bounds on what may wait) and answered later, off the tick: the reply says it was asked,
and the answer is told when it comes (the terminal prints it; the web gives an id to poll,
``GET /api/interviews/{id}``). The answer is logged as an ``interview`` input; with
``remember=yes`` the agent keeps it in its memory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_world.commands.lookup import resolve
from agent_world.commands.parsing import CommandError, EntityRef, did_you_mean, parse_entity_ref
from agent_world.talk import Filter, FilterError, Interview, Survey, TalkError
from agent_world.talk.surveys import FILTER_KEYS

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["ASK_HELP", "SURVEY_HELP", "AskArgs", "SurveyArgs", "SurveysArgs", "ask",
           "parse_ask", "parse_survey", "parse_surveys", "parse_yes_no", "survey", "surveys"]

_OPTION = re.compile(r"[a-z_]{1,20}")
YES = ("yes", "true", "on", "1")
NO = ("no", "false", "off", "0")
SHOWN_ROWS = 20  # rows /surveys ID shows

ASK_HELP = (
    "Asks AGENT (a name or an id) QUESTION; the answer comes off the tick, in the agent's own "
    "voice: an LLM agent's model with its memory and what it sees, a user's brain through "
    "its interview(), any other brain plainly from its state (needs, goods, plan, likes, "
    "what happened lately). The console prints it when it comes.",
    "remember=yes keeps the interview in the agent's memory (a logged input, replayed "
    "exactly); remember=no (the default, talk.remember) leaves its memory alone. Either way "
    "the question and the answer are in the event log.",
    'Examples: /ask Zed "how are you?" | /ask 12 what do you want most? remember=yes',
    "/ask alone lists the latest interviews and their answers.",
)
SURVEY_HELP = (
    "Asks every living agent the filters match the same QUESTION; the answers come as they "
    "come, and the table (who answered what, from which brain and model) is written to "
    "surveys/ID.csv and surveys/ID.json in the save folder when the last is in.",
    "Filters (each may list values separated by commas; all given must match): "
    "personality=trader brain=llm model=NAME (a model profile; default for brain llm) "
    "team=NAME area=X0,Y0,X1,Y1. No filter: every living agent. remember=yes|no as for /ask.",
    'Examples: /survey "what do you need most?" personality=trader | /survey "are you safe?" '
    "area=0,0,20,20 remember=yes",
    "/surveys lists the surveys; /surveys ID shows one's progress and first answers.",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AskArgs:
    agent: EntityRef | None = None  # None: list the latest interviews
    question: str = ""
    remember: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SurveyArgs:
    question: str
    filter: Filter
    remember: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SurveysArgs:
    id: str | None = None


def parse_yes_no(word: str, key: str) -> bool:
    value = word.lower()
    if value in YES:
        return True
    if value in NO:
        return False
    raise CommandError(f"{key}= takes yes or no, got {word!r:.40}")


def _remember(words: Sequence[str]) -> tuple[list[str], bool | None]:
    rest: list[str] = []
    remember: bool | None = None
    for word in words:
        key, eq, value = word.partition("=")
        if eq and key.lower() == "remember":
            if remember is not None:
                raise CommandError("remember= is given twice")
            remember = parse_yes_no(value, "remember")
        else:
            rest.append(word)
    return rest, remember


def parse_ask(argv: Sequence[str]) -> AskArgs:
    if not argv:
        return AskArgs()
    if len(argv) < 2:
        raise CommandError('name the agent and the question, e.g. /ask Zed "how are you?"')
    rest, remember = _remember(argv[1:])
    return AskArgs(agent=parse_entity_ref(argv[0]), question=" ".join(rest),
                   remember=remember)


def parse_survey(argv: Sequence[str]) -> SurveyArgs:
    if not argv:
        raise CommandError('give the question, e.g. /survey "how are you?" personality=trader')
    rest, remember = _remember(argv)
    question: list[str] = []
    given: dict[str, str] = {}
    for word in rest:
        key, eq, value = word.partition("=")
        key = key.lower()
        if eq and key in FILTER_KEYS:
            if key in given:
                raise CommandError(f"filter {key}= is given twice")
            given[key] = value
        elif eq and _OPTION.fullmatch(key):
            raise CommandError(f"unknown filter {key!r} (filters: "
                               f"{', '.join(f'{k}=' for k in FILTER_KEYS)}, remember=)"
                               f"{did_you_mean(key, FILTER_KEYS)}; quote the question if it "
                               "holds an =")
        else:
            question.append(word)
    try:
        filt = Filter.parse(given)
    except FilterError as exc:
        raise CommandError(str(exc)) from None
    return SurveyArgs(question=" ".join(question), filter=filt, remember=remember)


def parse_surveys(argv: Sequence[str]) -> SurveysArgs:
    if len(argv) > 1:
        raise CommandError(f"takes at most one survey id, got {len(argv)} words")
    return SurveysArgs(id=argv[0] if argv else None)


async def ask(console: Console, args: AskArgs) -> list[str]:
    talk = console.session.talk
    if args.agent is None:
        latest = talk.recent()
        if not latest:
            return ["no interviews yet; /ask AGENT QUESTION asks one"]
        return [_state_line(i) for i in latest]
    eid = resolve(console.world, args.agent, agent=True)
    try:
        interview = talk.ask(eid, args.question, remember=args.remember,
                             source=console.source,
                             listener=lambda done: console.tell(done.line()))
    except TalkError as exc:
        raise CommandError(str(exc)) from None
    kept = "yes" if interview.remember else "no"
    return [f"asked {interview.name}#{eid} [{interview.id}]: \"{interview.question}\" "
            f"(remember={kept}); the answer comes when its brain has it"]


def _state_line(interview: Interview) -> str:
    if interview.done:
        return interview.line()
    return (f"{interview.name}#{interview.agent} [{interview.id}] {interview.state}: "
            f"\"{interview.question}\"")


async def survey(console: Console, args: SurveyArgs) -> list[str]:
    talk = console.session.talk
    try:
        made = talk.survey(args.question, args.filter, remember=args.remember,
                           source=console.source,
                           listener=lambda done: console.tell(_finished_line(done)))
    except TalkError as exc:
        raise CommandError(str(exc)) from None
    counts = made.counts()
    many = "s" if counts["agents"] != 1 else ""
    return [f"survey {made.id}: asking {counts['agents']} agent{many} \"{made.question}\" "
            f"({made.filter.describe()}); /surveys {made.id} shows how far it is"]


def _finished_line(done: Survey) -> str:
    counts = done.counts()
    where = (f"; table: {', '.join(done.files)}" if done.files else f" ({done.unwritten})")
    return (f"survey {done.id} finished: {counts['answered']} of {counts['agents']} agents "
            f"answered{where}")


def _survey_line(s: Survey) -> str:
    counts = s.counts()
    state = "done" if s.done else "collecting"
    return (f"{s.id} {state}: {counts['answered']} answered, {counts['failed']} not, "
            f"{counts['waiting']} waiting of {counts['agents']} — \"{s.question}\" "
            f"({s.filter.describe()})")


async def surveys(console: Console, args: SurveysArgs) -> list[str]:
    talk = console.session.talk
    if args.id is None:
        if not talk.surveys:
            return ["no surveys yet; /survey QUESTION [filters] asks one"]
        return [_survey_line(s) for s in reversed(talk.surveys.values())]
    found = talk.surveys.get(args.id)
    if found is None:
        known = list(talk.surveys)
        raise CommandError(f"no survey {args.id!r:.40} (/surveys lists them)"
                           f"{did_you_mean(args.id, known)}")
    lines = [_survey_line(found)]
    if found.files:
        lines.append(f"table: {', '.join(found.files)}")
    rows: list[Any] = sorted(found.rows.values(), key=lambda r: r.agent)
    for row in rows[:SHOWN_ROWS]:
        said = (f"\"{row.answer}\"" if row.status == "answered"
                else row.error or row.status)
        how = f"{row.answered_by}{' ' + row.model if row.model else ''}" or row.brain
        lines.append(f"  {row.name}#{row.agent} [{how}]: {said}")
    if len(rows) > SHOWN_ROWS:
        lines.append(f"  ... and {len(rows) - SHOWN_ROWS} more (GET /api/surveys/{found.id}, "
                     "or the table)")
    return lines
