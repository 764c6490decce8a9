"""Tier 3: a memory a brain keeps for itself, beyond the observation's short ``memory``.

``Observation.memory`` holds only what happened to the agent lately. A brain that plans over
a longer life needs to remember more, and to put the *relevant* part of it into a prompt
that has room for little. The three memories here trade cost for recall:

- ``WindowMemory``: the last few entries; cheap, and enough for most brains.
- ``RetrievalMemory``: a long history ranked by Okapi BM25 against a query, so "where did I
  see apples?" finds the old entry about apples without a model or embeddings.
- ``SummaryMemory``: recent entries word for word, older ones folded into a running summary
  written by a callable (usually the brain's LLM).
- ``EmbeddingMemory``: a ``RetrievalMemory`` that ranks by meaning (cosine similarity of
  embedding vectors, from an ``/embeddings`` endpoint) when one answers in time, and by BM25
  when none is configured or it fails.

Every memory has ``get_state()``/``set_state(state)`` over JSON data (the entries, oldest
first, and a summary's text), so that a brain's ``get_state`` can save it with the world.

    from agent_world.agents import Brain, RetrievalMemory

    class Forager(Brain):
        def __init__(self) -> None:
            self.memory = RetrievalMemory(capacity=500)
            self.tick = 0

        def decide(self, obs, actions):
            self.tick = obs.tick
            food_before = self.memory.retrieve("apple berries food", k=3)
            ...

        def on_result(self, action, outcome):
            self.memory.store(f"{action}: {outcome}", tick=self.tick, kind="result")

Everything is standard library and deterministic (no randomness, no clock, no hash-order
dependence), so a replayed world and a test get the same answers (an embedding endpoint is
the one thing outside: a replay never needs it, since decisions are logged). There is no locking: a
brain belongs to one agent and its calls never overlap (``agent_world.contract.brains``).

Empty (or whitespace-only) texts are ignored rather than stored: they carry nothing and
would only push real entries out of a window. Texts are cut to ``MAX_TEXT`` characters so
one runaway line cannot fill a prompt. "Newest" means stored last, whatever its tick.
"""

from __future__ import annotations

import abc
import heapq
import math
import operator
import re
from array import array
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CHARS_PER_TOKEN", "MAX_TEXT", "EmbeddingMemory", "Memory", "MemoryEntry",
           "NoEmbeddings", "RetrievalMemory", "SummaryMemory", "WindowMemory", "tokens",
           "within_tokens"]

MAX_TEXT = 500
CHARS_PER_TOKEN = 4  # the estimate recall budgets are counted in

# Small on purpose: only words so common they would match almost every entry. A larger list
# starts dropping words an agent means ("not", "no", "near").
_STOP_WORDS = frozenset({
    "the", "a", "an", "to", "of", "and", "is", "in", "on", "at", "it", "i", "my", "me",
    "for", "with", "was", "were", "be", "by", "as", "that", "this"})

# [^\W_] is "a letter or a digit" in any script; "_" counts as a word character for \w.
_WORD = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """The words of ``text`` as the memories compare them: lowercased, split on anything
    that is not a letter or digit, without a few stop words ("the", "a", "to", "of" ...);
    in order, repeats kept."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS]


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One remembered thing: its text (at most ``MAX_TEXT`` characters), the tick it
    happened at and a free-form kind ("note", "result", "heard" ...)."""

    text: str
    tick: int
    kind: str = "note"

    def __post_init__(self) -> None:
        if len(self.text) > MAX_TEXT:
            # Frozen: the cut is part of construction, so every entry honours the bound.
            object.__setattr__(self, "text", self.text[:MAX_TEXT])


def within_tokens(entries: Sequence[MemoryEntry], budget: int) -> list[MemoryEntry]:
    """The first of ``entries`` (best first) whose texts fit ``budget`` tokens, at about
    ``CHARS_PER_TOKEN`` characters a token; the first always, cut to the budget, so that a
    recall is never empty only because one memory is long. ``budget`` 0: no limit."""
    if budget <= 0:
        return list(entries)
    left = budget * CHARS_PER_TOKEN
    out: list[MemoryEntry] = []
    for entry in entries:
        if len(entry.text) > left:
            if not out:
                out.append(MemoryEntry(entry.text[:left], entry.tick, entry.kind))
            break
        out.append(entry)
        left -= len(entry.text)
    return out


def _entry_state(entry: MemoryEntry) -> dict[str, Any]:
    return {"tick": entry.tick, "kind": entry.kind, "text": entry.text}


def _entries_from(state: Any) -> list[MemoryEntry]:
    """The entries of a saved state (ValueError naming what is wrong)."""
    if not isinstance(state, dict) or not isinstance(state.get("entries"), list):
        raise ValueError("a memory's state is an object with a list of entries "
                         f"(got {type(state).__name__})")
    out = []
    for i, item in enumerate(state["entries"]):
        if (not isinstance(item, dict) or not isinstance(item.get("text"), str)
                or not isinstance(item.get("tick"), int) or isinstance(item.get("tick"), bool)
                or not isinstance(item.get("kind", "note"), str)):
            raise ValueError(f"entries[{i}] is not {{tick: int, kind: str, text: str}}")
        if item["text"].strip():
            out.append(MemoryEntry(item["text"], item["tick"], item.get("kind", "note")))
    return out


class Memory(abc.ABC):
    """What every memory answers. ``store`` ignores empty text; ``retrieve`` answers at
    most ``k`` entries, best first; ``entries`` is what is held word for word, oldest
    first; ``summarize`` is a short text of all of it, for a prompt; ``get_state`` and
    ``set_state`` save and restore it as JSON data (by default its entries, stored again in
    order: a subclass that keeps more overrides both)."""

    def get_state(self) -> dict[str, Any]:
        """``{"entries": [{"tick", "kind", "text"}, ...]}``, oldest first."""
        return {"entries": [_entry_state(e) for e in self.entries()]}

    def set_state(self, state: Any) -> None:
        """Forget everything and hold what ``get_state`` gave (ValueError when ``state`` is
        not such a state; the memory is then left empty)."""
        self.clear()
        for entry in _entries_from(state):
            self.store(entry.text, tick=entry.tick, kind=entry.kind)

    @abc.abstractmethod
    def store(self, text: str, *, tick: int, kind: str = "note") -> None: ...

    @abc.abstractmethod
    def retrieve(self, query: str, k: int = 5) -> list[MemoryEntry]: ...

    @abc.abstractmethod
    def summarize(self) -> str: ...

    @abc.abstractmethod
    def clear(self) -> None: ...

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def entries(self) -> list[MemoryEntry]: ...


def _new_entry(text: str, tick: int, kind: str) -> MemoryEntry | None:
    return MemoryEntry(text, tick, kind) if text.strip() else None


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k!r}; ask for one or more entries")


def _positive(name: str, value: int) -> int:
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value!r}; pass a positive count")
    return value


def _newest(entries: Sequence[MemoryEntry], k: int) -> list[MemoryEntry]:
    return list(reversed(entries[-k:]))


def _by_overlap(entries: Sequence[MemoryEntry], query: str, k: int) -> list[MemoryEntry]:
    """The entries sharing the most distinct query words, newest first among equals; the
    newest ``k`` when none shares a word."""
    _check_k(k)
    wanted = set(tokens(query))
    scored = [(len(wanted.intersection(tokens(e.text))), i) for i, e in enumerate(entries)]
    ranked = sorted(((n, i) for n, i in scored if n), key=lambda s: (-s[0], -s[1]))
    if not ranked:
        return _newest(entries, k)
    return [entries[i] for _n, i in ranked[:k]]


def _lines(entries: Iterable[MemoryEntry]) -> list[str]:
    return [f"t={e.tick} {e.kind}: {e.text}" for e in entries]


class WindowMemory(Memory):
    """The last ``size`` entries; older ones are forgotten."""

    def __init__(self, size: int = 20) -> None:
        self._held: deque[MemoryEntry] = deque(maxlen=_positive("size", size))

    def store(self, text: str, *, tick: int, kind: str = "note") -> None:
        entry = _new_entry(text, tick, kind)
        if entry is not None:
            self._held.append(entry)

    def retrieve(self, query: str, k: int = 5) -> list[MemoryEntry]:
        """The entries sharing the most query words (newest first among equals); the newest
        ``k`` when none shares one."""
        return _by_overlap(list(self._held), query, k)

    def summarize(self) -> str:
        """The entries as ``t=TICK kind: text`` lines, oldest first."""
        return "\n".join(_lines(self._held))

    def clear(self) -> None:
        self._held.clear()

    def __len__(self) -> int:
        return len(self._held)

    def entries(self) -> list[MemoryEntry]:
        return list(self._held)


@dataclass(frozen=True, slots=True)
class _Doc:
    entry: MemoryEntry
    tf: Counter[str]
    length: int


class RetrievalMemory(Memory):
    """Up to ``capacity`` entries ranked by Okapi BM25; the oldest is evicted when full.

    Document frequencies, term counts and the total length are kept up to date by ``store``
    and eviction, and an inverted index (term to entries) means a query scores only the
    entries that contain one of its words: retrieval stays cheap with a long history.
    ``k1`` is how quickly repeats of a word stop adding score, ``b`` how much long entries
    are discounted (the usual 1.5 and 0.75). The idf is ``log(1 + (N - df + 0.5) / (df +
    0.5))``, which stays positive even for a word in most entries. Each distinct query word
    counts once; only matching entries are answered, the newest ``k`` when none match."""

    def __init__(self, capacity: int = 1000, *, k1: float = 1.5, b: float = 0.75) -> None:
        self.capacity = _positive("capacity", capacity)
        if k1 < 0:
            raise ValueError(f"k1 must be at least 0, got {k1!r}; 1.2 to 2.0 is usual")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be between 0 and 1, got {b!r}; 0.75 is usual")
        self.k1 = k1
        self.b = b
        self.clear()

    def clear(self) -> None:
        # Ids only grow, so a larger id is a newer entry even across evictions.
        self._next_id = 0
        self._docs: OrderedDict[int, _Doc] = OrderedDict()
        self._postings: dict[str, set[int]] = {}
        self._term_counts: Counter[str] = Counter()
        self._total_length = 0

    def store(self, text: str, *, tick: int, kind: str = "note") -> None:
        entry = _new_entry(text, tick, kind)
        if entry is None:
            return
        tf = Counter(tokens(entry.text))
        doc_id = self._next_id
        self._next_id += 1
        self._docs[doc_id] = _Doc(entry, tf, sum(tf.values()))
        for term in tf:
            self._postings.setdefault(term, set()).add(doc_id)
        self._term_counts.update(tf)
        self._total_length += self._docs[doc_id].length
        if len(self._docs) > self.capacity:
            self._evict_oldest()

    def _evict_oldest(self) -> None:
        doc_id, doc = self._docs.popitem(last=False)
        for term, count in doc.tf.items():
            ids = self._postings[term]
            ids.discard(doc_id)
            if not ids:
                del self._postings[term]
            self._term_counts[term] -= count
            if self._term_counts[term] <= 0:
                del self._term_counts[term]
        self._total_length -= doc.length

    def _document_frequencies(self) -> dict[str, int]:
        return {term: len(ids) for term, ids in self._postings.items()}

    def _scored(self, query: str) -> list[tuple[MemoryEntry, float]]:
        """The entries containing a query word with their BM25 scores, best first."""
        n = len(self._docs)
        # Query order, not a set of strings: the float sum must not depend on hash seeds.
        terms = [t for t in dict.fromkeys(tokens(query)) if t in self._postings]
        if not terms:
            return []
        avg_length = self._total_length / n  # > 0: a posting implies an entry with words
        scores: dict[int, float] = {}
        for term in terms:
            ids = self._postings[term]
            idf = math.log(1 + (n - len(ids) + 0.5) / (len(ids) + 0.5))
            for doc_id in ids:
                doc = self._docs[doc_id]
                tf = doc.tf[term]
                norm = self.k1 * (1 - self.b + self.b * doc.length / avg_length)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (self.k1 + 1) / (
                    tf + norm)
        ranked = sorted(scores.items(), key=lambda s: (-s[1], -s[0]))
        return [(self._docs[doc_id].entry, score) for doc_id, score in ranked]

    def retrieve(self, query: str, k: int = 5) -> list[MemoryEntry]:
        """The ``k`` best entries for ``query`` by BM25, newest first among equal scores;
        the newest ``k`` when the query has no words (or only stop words) or nothing
        matches."""
        _check_k(k)
        scored = self._scored(query)
        if not scored:
            return _newest(self.entries(), k)
        return [entry for entry, _score in scored[:k]]

    def summarize(self) -> str:
        """The 10 most frequent words with their counts, then the newest 5 entries as
        lines, oldest first."""
        if not self._docs:
            return ""
        frequent = heapq.nsmallest(10, self._term_counts.items(), key=lambda t: (-t[1], t[0]))
        lines = []
        if frequent:
            lines.append("Frequent: " + ", ".join(f"{t} x{c}" for t, c in frequent))
        lines.append("Recent:")
        lines.extend(_lines(self.entries()[-5:]))
        return "\n".join(lines)

    def __len__(self) -> int:
        return len(self._docs)

    def entries(self) -> list[MemoryEntry]:
        return [doc.entry for doc in self._docs.values()]


_FOLD_PROMPT = """\
You keep the memory of an agent living in a simulated world. Update the summary of what has \
happened to the agent so that it also covers the new events below.
Write a short, factual summary in the third person ("The agent ..."), under {limit} \
characters. Keep names, places, items, numbers and what the agent learned; drop repetition. \
Do not guess, advise or add anything the events do not say. Answer with the summary only.

Summary so far:
{summary}

New events (t = tick), oldest first:
{events}
"""


def _one_line(error: Exception) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


class SummaryMemory(Memory):
    """The last ``window`` entries word for word; older ones folded into a summary.

    When a store makes the window overflow, its oldest ``fold`` entries are folded: the
    prompt (an instruction, the summary so far and those entries as lines) goes to
    ``summarise`` and its answer, stripped and cut to ``max_summary`` characters, becomes
    the summary (``self.summaries`` counts these). Folding in batches rather than one entry
    at a time keeps the number of calls down.

    ``summarise`` is typically the configured LLM (an ``LLMBrain`` passes
    ``self.llm.complete``). It runs on the brain's worker thread, in whichever brain method
    stores the entry; its time counts against the decision's deadline only when that is
    ``decide()``, which is why brains usually store, and so fold, from ``reflect()``.

    A summariser that raises or answers something other than a non-empty text never makes
    the memory raise: the summary falls back to the previous one plus the folded texts
    joined with "; " (the newest end kept), ``self.failures`` counts it and
    ``self.last_error`` keeps the latest reason as one "Type: message" line."""

    def __init__(self, summarise: Callable[[str], str], *, window: int = 20, fold: int = 10,
                 max_summary: int = 1200) -> None:
        self.window = _positive("window", window)
        self.fold = _positive("fold", fold)
        if fold > window:
            raise ValueError(f"fold must not exceed window, got fold={fold} and "
                             f"window={window}; fold at most {window} entries at a time")
        self.max_summary = _positive("max_summary", max_summary)
        self._summarise = summarise
        self._recent: deque[MemoryEntry] = deque()
        self._summary = ""
        self.summaries = 0
        self.failures = 0
        self.last_error: str | None = None

    def store(self, text: str, *, tick: int, kind: str = "note") -> None:
        entry = _new_entry(text, tick, kind)
        if entry is None:
            return
        self._recent.append(entry)
        if len(self._recent) > self.window:
            self._fold([self._recent.popleft() for _ in range(self.fold)])

    def _prompt(self, folded: Sequence[MemoryEntry]) -> str:
        """What ``summarise`` is asked when ``folded`` joins the summary."""
        return _FOLD_PROMPT.format(limit=self.max_summary, summary=self._summary or "(none yet)",
                                   events="\n".join(_lines(folded)))

    def _fold(self, folded: Sequence[MemoryEntry]) -> None:
        try:
            # object, not str: the callable is the user's, and its annotation is no promise.
            answer: object = self._summarise(self._prompt(folded))
            if not isinstance(answer, str):
                raise TypeError(f"summarise answered {type(answer).__name__}, not a str")
            if not answer.strip():
                raise ValueError("summarise answered an empty text")
        except Exception as error:
            self.failures += 1
            self.last_error = _one_line(error)
            parts = [self._summary] if self._summary else []
            parts.extend(e.text for e in folded)
            self._summary = "; ".join(parts)[-self.max_summary:]
            return
        self._summary = answer.strip()[:self.max_summary]
        self.summaries += 1

    def retrieve(self, query: str, k: int = 5) -> list[MemoryEntry]:
        """Like ``WindowMemory.retrieve``, over the recent entries (the summary is text,
        not entries: ``summarize`` carries it)."""
        return _by_overlap(list(self._recent), query, k)

    def summarize(self) -> str:
        """``Earlier: SUMMARY`` when there is one, then the recent entries as lines."""
        earlier = [f"Earlier: {self._summary}"] if self._summary else []
        return "\n".join(earlier + _lines(self._recent))

    def clear(self) -> None:
        """Forget the entries and the summary; the counters of summariser calls stay."""
        self._recent.clear()
        self._summary = ""

    def get_state(self) -> dict[str, Any]:
        """The recent entries, oldest first, and the summary of the older ones."""
        return {"summary": self._summary, **super().get_state()}

    def set_state(self, state: Any) -> None:
        """Hold the saved entries and summary as they were (nothing is folded again: the
        newest ``window`` entries are kept, any older ones were the summary's already)."""
        entries = _entries_from(state)
        summary = state.get("summary", "")
        if not isinstance(summary, str):
            raise ValueError(f"summary is {type(summary).__name__}, not text")
        self.clear()
        self._recent.extend(entries[-self.window:])
        self._summary = summary[:self.max_summary]

    def __len__(self) -> int:
        return len(self._recent)

    def entries(self) -> list[MemoryEntry]:
        return list(self._recent)


class NoEmbeddings(Exception):
    """The embedding function has nothing to call (no endpoint configured): recall is by
    words (BM25), and this is not counted as a failure."""


Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Texts in, one vector each out, in order (``self.llm.embed`` for a brain)."""


def _unit(vector: Sequence[float]) -> array[float]:
    """``vector`` scaled to length 1 (ValueError when it is not finite numbers, or zero)."""
    values = array("d", vector)
    norm = math.sqrt(sum(x * x for x in values))
    if not math.isfinite(norm) or norm == 0:
        raise ValueError("an embedding vector is zero or not finite")
    return array("d", (x / norm for x in values))


class EmbeddingMemory(RetrievalMemory):
    """A ``RetrievalMemory`` that ranks by meaning when it can.

    ``embed`` turns texts into vectors (``self.llm.embed``: the ``/embeddings`` endpoint of
    ``minds.embeddings``). ``retrieve`` sends the query with up to ``batch`` entries not yet
    embedded (the newest first) in one call and ranks every embedded entry by cosine
    similarity to the query (the newest first among equals): a small in-process vector
    index, one unit vector per entry, searched exhaustively. Entries are embedded lazily,
    at recall time, never when stored: storing stays free, and a memory restored from a
    save (whose vectors are not saved) is embedded again over its next recalls.

    When ``embed`` is None or raises ``NoEmbeddings`` (nothing configured) recall is BM25
    (``RetrievalMemory``), uncounted; when it fails in any other way (an error, a timeout,
    an open circuit breaker, an answer of the wrong shape) recall is BM25 for that call,
    ``failures`` counts it and ``last_error`` says why. ``by_meaning`` and ``by_words``
    count the recalls made each way. Its time is bounded by ``embed`` (the endpoint's call
    carries ``minds.recall_deadline_ms``)."""

    def __init__(self, embed: Embed | None, capacity: int = 1000, *, batch: int = 64,
                 k1: float = 1.5, b: float = 0.75) -> None:
        self._embed = embed
        self.batch = _positive("batch", batch)
        self.failures = 0
        self.last_error: str | None = None
        self.by_meaning = 0
        self.by_words = 0
        super().__init__(capacity, k1=k1, b=b)

    def clear(self) -> None:
        super().clear()
        self._vectors: dict[int, array[float]] = {}
        self._dimensions = 0

    def _evict_oldest(self) -> None:
        oldest = next(iter(self._docs))
        super()._evict_oldest()
        self._vectors.pop(oldest, None)

    def embedded(self) -> int:
        """How many entries have a vector."""
        return len(self._vectors)

    def retrieve(self, query: str, k: int = 5) -> list[MemoryEntry]:
        """The ``k`` entries closest in meaning to ``query``; by BM25 (``RetrievalMemory``)
        when there is no embedding to be had."""
        _check_k(k)
        ranked = self._by_meaning(query, k) if self._embed is not None and self._docs else None
        if ranked is None:
            self.by_words += 1
            return super().retrieve(query, k)
        self.by_meaning += 1
        return ranked

    def _by_meaning(self, query: str, k: int) -> list[MemoryEntry] | None:
        assert self._embed is not None
        pending = [doc_id for doc_id in reversed(self._docs) if doc_id not in self._vectors]
        pending = pending[:self.batch]
        texts = [query or " ", *(self._docs[doc_id].entry.text for doc_id in pending)]
        try:
            answer: object = self._embed(texts)
            vectors = self._check(answer, len(texts))
        except NoEmbeddings:
            return None
        except Exception as error:  # the endpoint's or the user's: recall goes on by words
            self.failures += 1
            self.last_error = _one_line(error)
            return None
        wanted = vectors[0]
        for doc_id, vector in zip(pending, vectors[1:], strict=True):
            self._vectors[doc_id] = vector
        if not self._vectors:
            return None
        mul = operator.mul
        scored = sorted(((sum(map(mul, wanted, vector)), doc_id)
                         for doc_id, vector in self._vectors.items()),
                        key=lambda s: (-s[0], -s[1]))
        return [self._docs[doc_id].entry for _score, doc_id in scored[:k]]

    def _check(self, answer: object, count: int) -> list[array[float]]:
        """The vectors as unit vectors of one length (a model that changed its length
        makes every entry be embedded again)."""
        if not isinstance(answer, Sequence) or len(answer) != count:
            raise ValueError(f"embed answered {type(answer).__name__} where {count} vectors "
                             "were asked for")
        vectors = [_unit(v) for v in answer]
        sizes = {len(v) for v in vectors}
        if len(sizes) != 1:
            raise ValueError(f"embed answered vectors of lengths {sorted(sizes)}")
        size = sizes.pop()
        if size != self._dimensions:
            self._vectors.clear()  # another model: the old vectors mean nothing now
            self._dimensions = size
        return vectors
