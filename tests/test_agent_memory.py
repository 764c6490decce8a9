"""Tier 3 memories: BM25 retrieval, the recency window and the summarising memory, with a
plain function standing in for the LLM."""

from __future__ import annotations

from collections import Counter

import pytest

from agent_world.contract.memory import (
    MAX_TEXT,
    Memory,
    MemoryEntry,
    RetrievalMemory,
    SummaryMemory,
    WindowMemory,
    tokens,
)

DISTRACTORS = [
    "walked north along the river",
    "talked with Bob about the weather",
    "slept in the shelter until morning",
    "traded two stones for gold",
    "saw a wolf near the forest edge",
]


def _fill(memory: Memory, texts: list[str], start: int = 0) -> None:
    for tick, text in enumerate(texts, start):
        memory.store(text, tick=tick)


def _texts(entries: list[MemoryEntry]) -> list[str]:
    return [e.text for e in entries]


# --- tokens and entries ---------------------------------------------------------------------

def test_tokens_lowercase_split_on_non_alphanumerics_and_drop_stop_words():
    assert tokens("The Apple-tree at (3,4) is MY_favourite!") == [
        "apple", "tree", "3", "4", "favourite"]
    assert tokens("I was in it, and that was that.") == []
    assert tokens("") == []
    assert tokens("eat eat Eat") == ["eat", "eat", "eat"]


def test_long_text_is_cut_when_stored():
    for memory in (WindowMemory(), RetrievalMemory(), SummaryMemory(lambda p: "s")):
        memory.store("x" * (MAX_TEXT + 100), tick=1)
        (entry,) = memory.entries()
        assert entry.text == "x" * MAX_TEXT
    assert MemoryEntry("y" * 600, 0).text == "y" * MAX_TEXT


def test_empty_text_is_ignored():
    for memory in (WindowMemory(), RetrievalMemory(), SummaryMemory(lambda p: "s")):
        memory.store("", tick=1)
        memory.store("   \n", tick=2)
        assert len(memory) == 0
        assert memory.entries() == []


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match=r"size must be at least 1, got -1"):
        WindowMemory(-1)
    with pytest.raises(ValueError, match=r"capacity must be at least 1, got 0"):
        RetrievalMemory(0)
    with pytest.raises(ValueError, match=r"k1 must be at least 0, got -0\.5"):
        RetrievalMemory(k1=-0.5)
    with pytest.raises(ValueError, match=r"b must be between 0 and 1, got 1\.5"):
        RetrievalMemory(b=1.5)
    with pytest.raises(ValueError, match=r"window must be at least 1, got 0"):
        SummaryMemory(str, window=0)
    with pytest.raises(ValueError, match=r"max_summary must be at least 1, got -5"):
        SummaryMemory(str, max_summary=-5)
    with pytest.raises(ValueError, match=r"fold must not exceed window"):
        SummaryMemory(str, window=3, fold=4)
    for memory in (WindowMemory(), RetrievalMemory(), SummaryMemory(str)):
        memory.store("apple", tick=0)
        with pytest.raises(ValueError, match=r"k must be at least 1, got 0; ask for one"):
            memory.retrieve("apple", k=0)


def test_memory_is_abstract():
    with pytest.raises(TypeError):
        Memory()  # type: ignore[abstract]


# --- RetrievalMemory ------------------------------------------------------------------------

def test_bm25_ranks_the_entry_about_the_query_first():
    memory = RetrievalMemory()
    _fill(memory, [*DISTRACTORS[:2], "found ripe apples under the old oak tree",
                   *DISTRACTORS[2:]])
    assert memory.retrieve("where are the apples?", k=3)[0].text == (
        "found ripe apples under the old oak tree")
    assert _texts(memory.retrieve("wolf forest")) == ["saw a wolf near the forest edge"]


def test_rare_term_outweighs_common_one():
    memory = RetrievalMemory()
    _fill(memory, ["berries by the lake", "berries by the hill", "berries by the road",
                   "berries by the cave"])
    memory.store("mushrooms by the cave", tick=10)
    memory.store("berries by the mill", tick=11)
    # Both of the last two match one query word once, with the same length; the rare word wins.
    assert memory.retrieve("mushrooms berries", k=1)[0].text == "mushrooms by the cave"


def test_ties_are_newest_first():
    memory = RetrievalMemory()
    _fill(memory, ["gold coin", "gold coin", "gold coin", "iron ore"])
    ranked = memory.retrieve("gold", k=3)
    assert [e.tick for e in ranked] == [2, 1, 0]
    window = WindowMemory()
    _fill(window, ["gold coin", "gold coin", "iron ore"])
    assert [e.tick for e in window.retrieve("gold", k=5)] == [1, 0]


def test_stop_words_are_ignored():
    memory = RetrievalMemory()
    _fill(memory, ["the the the the wolf", "apple", "a tree"])
    # "the" matches nothing; the entry full of "the" gains nothing from it.
    assert _texts(memory.retrieve("the apple")) == ["apple"]


def test_empty_query_or_no_match_answers_the_newest():
    memory = RetrievalMemory()
    _fill(memory, DISTRACTORS)
    newest = list(reversed(memory.entries()))[:2]
    assert memory.retrieve("", k=2) == newest
    assert memory.retrieve("the of and", k=2) == newest
    assert memory.retrieve("zebra", k=2) == newest
    assert memory.retrieve("zebra", k=50) == list(reversed(memory.entries()))


def _fresh_frequencies(memory: RetrievalMemory) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for entry in memory.entries():
        counts.update(set(tokens(entry.text)))
    return dict(counts)


def test_eviction_forgets_the_oldest_and_its_terms():
    memory = RetrievalMemory(capacity=4)
    _fill(memory, ["unicorn seen by the lake", "apple tree near lake", "apple on ground",
                   "lake water cold", "wolf near apple tree", "stone by the lake"])
    assert len(memory) == 4
    assert [e.tick for e in memory.entries()] == [2, 3, 4, 5]
    # Nothing holds "unicorn" any more: the fallback answers the newest.
    assert memory.retrieve("unicorn", k=2) == list(reversed(memory.entries()))[:2]
    assert memory._document_frequencies() == _fresh_frequencies(memory)
    assert memory._total_length == sum(len(tokens(e.text)) for e in memory.entries())

    fresh = RetrievalMemory(capacity=4)
    for entry in memory.entries():
        fresh.store(entry.text, tick=entry.tick, kind=entry.kind)
    for query in ("apple tree", "lake", "wolf near", "cold water apple", "unicorn"):
        assert memory._scored(query) == fresh._scored(query)
        assert memory.retrieve(query, k=3) == fresh.retrieve(query, k=3)


def test_clear_and_summarize():
    memory = RetrievalMemory()
    assert memory.summarize() == ""
    _fill(memory, ["apple tree", "apple pie", "wolf", "apple core", "stone", "river", "wolf"])
    summary = memory.summarize()
    assert summary.splitlines()[0].startswith("Frequent: apple x3, wolf x2, ")
    assert summary.splitlines()[-5:] == [
        "t=2 note: wolf", "t=3 note: apple core", "t=4 note: stone", "t=5 note: river",
        "t=6 note: wolf"]
    memory.clear()
    assert len(memory) == 0
    assert memory._document_frequencies() == {}
    assert memory.retrieve("apple") == []


def test_same_entries_give_identical_results():
    texts = [f"{word} near the {place} at dawn {i}" for i, (word, place) in enumerate(
        [("apple", "river"), ("wolf", "river"), ("apple", "hill"), ("stone", "cave"),
         ("apple", "cave"), ("wolf", "hill")] * 3)]
    one, two = RetrievalMemory(capacity=10), RetrievalMemory(capacity=10)
    _fill(one, texts)
    _fill(two, texts)
    for query in ("apple river", "wolf", "cave dawn", "nothing"):
        assert one.retrieve(query, k=4) == two.retrieve(query, k=4)
        assert one._scored(query) == two._scored(query)
    assert one.summarize() == two.summarize()


# --- WindowMemory ---------------------------------------------------------------------------

def test_window_keeps_the_last_n_and_retrieves_by_overlap():
    memory = WindowMemory(size=3)
    _fill(memory, ["apple tree", "wolf by river", "apple by river", "stone", "red apple"])
    assert _texts(memory.entries()) == ["apple by river", "stone", "red apple"]
    assert _texts(memory.retrieve("apple river", k=2)) == ["apple by river", "red apple"]
    assert _texts(memory.retrieve("wolf", k=2)) == ["red apple", "stone"]  # evicted: newest
    assert memory.summarize() == "t=2 note: apple by river\nt=3 note: stone\nt=4 note: red apple"
    memory.clear()
    assert len(memory) == 0
    assert memory.summarize() == ""


# --- SummaryMemory --------------------------------------------------------------------------

class FakeLLM:
    """Records each prompt and answers "summary N"."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return f"  summary {len(self.prompts)}\n"


def test_summary_memory_folds_the_oldest_into_the_summary():
    llm = FakeLLM()
    memory = SummaryMemory(llm, window=4, fold=2)
    _fill(memory, ["found apples", "met Bob", "slept", "ate apple"])
    assert llm.prompts == []
    memory.store("lost a fight", tick=4)
    assert len(llm.prompts) == 1
    assert "t=0 note: found apples\nt=1 note: met Bob" in llm.prompts[0]
    assert "third person" in llm.prompts[0]
    assert _texts(memory.entries()) == ["slept", "ate apple", "lost a fight"]
    assert memory.summarize() == (
        "Earlier: summary 1\nt=2 note: slept\nt=3 note: ate apple\nt=4 note: lost a fight")

    _fill(memory, ["rested", "drank"], start=5)
    assert len(llm.prompts) == 2
    assert "summary 1" in llm.prompts[1]
    assert "t=2 note: slept\nt=3 note: ate apple" in llm.prompts[1]
    assert memory.summarize().startswith("Earlier: summary 2\n")
    assert (memory.summaries, memory.failures, memory.last_error) == (2, 0, None)
    assert _texts(memory.retrieve("fight", k=1)) == ["lost a fight"]

    memory.clear()
    assert len(memory) == 0
    assert memory.summarize() == ""


def test_summary_is_cut_to_max_summary():
    memory = SummaryMemory(lambda prompt: "z" * 50, window=1, fold=1, max_summary=10)
    _fill(memory, ["one", "two"])
    assert memory.summarize() == "Earlier: zzzzzzzzzz\nt=1 note: two"


def _raises(prompt: str) -> str:
    raise RuntimeError("model\nunavailable")


@pytest.mark.parametrize(("summarise", "error"), [
    (_raises, "RuntimeError: model unavailable"),
    (lambda prompt: "", "ValueError: summarise answered an empty text"),
    (lambda prompt: 42, "TypeError: summarise answered int, not a str"),
])
def test_summary_falls_back_to_extractive_when_the_summariser_fails(summarise, error):
    memory = SummaryMemory(summarise, window=2, fold=2)
    _fill(memory, ["found apples", "met Bob", "slept"])
    assert memory.summarize() == "Earlier: found apples; met Bob\nt=2 note: slept"
    _fill(memory, ["ate", "ran"], start=3)
    assert memory.summarize().startswith("Earlier: found apples; met Bob; slept; ate\n")
    assert (memory.summaries, memory.failures, memory.last_error) == (0, 2, error)


def test_fallback_keeps_the_newest_end():
    memory = SummaryMemory(_raises, window=1, fold=1, max_summary=14)
    _fill(memory, ["aaaa", "bbbb", "cccc", "dddd"])
    # "aaaa; bbbb; cccc" is 16 characters: the oldest end goes.
    assert memory.summarize() == "Earlier: aa; bbbb; cccc\nt=3 note: dddd"


def test_summary_memory_recovers_after_a_failure():
    answers = iter(["", "all fine"])
    memory = SummaryMemory(lambda prompt: next(answers), window=1, fold=1)
    _fill(memory, ["one", "two", "three"])
    assert memory.summarize() == "Earlier: all fine\nt=2 note: three"
    assert (memory.summaries, memory.failures) == (1, 1)
    assert memory.last_error == "ValueError: summarise answered an empty text"


def test_window_and_summary_retrieval_is_deterministic():
    texts = [f"{w} {i}" for i, w in enumerate(["apple", "wolf", "apple wolf", "stone"] * 4)]
    for make in (lambda: WindowMemory(8), lambda: SummaryMemory(FakeLLM(), window=8, fold=4)):
        one, two = make(), make()
        _fill(one, texts)
        _fill(two, texts)
        for query in ("apple", "wolf apple", "none"):
            assert one.retrieve(query, k=3) == two.retrieve(query, k=3)
