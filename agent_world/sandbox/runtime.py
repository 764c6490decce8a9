"""What ability code runs against, inside a worker process: guards, budget and builtins.

Every call gets fresh globals (nothing survives from one call to the next) holding:

- a trimmed set of builtins: small pure functions, with the ones that iterate in C
  (``list``, ``sorted``, ``sum``, ``min`` ...) wrapped so that every item they take costs a
  step, and the ones that build values bounded and counted against the allocation budget;
  no module objects, no ``getattr``/``type``/``open``/``id``/``hash`` (the gate refuses the
  names too);
- RestrictedPython's guard hooks: ``_getattr_`` (an allowlist by exact type and name:
  plain-data methods only), ``_getitem_``, ``_write_`` (dicts and lists only), ``_getiter_``
  (every item costs a step), RestrictedPython's own guarded unpacking, ``_inplacevar_``;
- the step budget ``_step_`` and the size guards ``_add_``, ``_sub_``, ``_mul_``, ``_pow_``,
  ``_lshift_``, ``_mod_``, ``_fstr_`` that the compiler injects, ``_compare_`` and
  ``_chain_`` (comparisons), and ``_fval_`` (every ``{value}`` of an f-string) and
  ``_escalate_`` (first thing in every handler);
- work done in C in proportion to the size of a value costs steps too, one per ``SCAN``
  items looked at or copied (text counts ``TEXT_CHARS`` characters as an item): comparing
  and searching (``==``, ``<``, ``in``, ``list.index``, ``str.find`` ...) count every item
  nested in what they may look at, copying and shifting (slices, ``list.copy``,
  ``list.insert``, new values) the items made, sorting n·log2(n). So the step budget bounds
  the CPU time of every call that finishes, which is what lets the sandbox's wall-clock and
  CPU limits be backstops that code within its budget never meets. Small values (fewer than
  ``SCAN`` items) cost nothing extra;
- the call's own random numbers (splitmix64 seeded from ``ctx["seed"]``: the same on every
  machine and Python version).

Nothing a call computes may depend on the process (the replay runs it in another one), so:

- text comes from values only through ``plain.render``: ``str()`` and f-strings accept plain
  data (None, bool, int, float, str, range, and lists, tuples, dicts, sets and dict views of
  it) and exceptions, written exactly as Python writes them, and refuse functions,
  generators, classes ... whose Python text holds a memory address;
- every way to see the order of a set gives the canonical order of ``plain.set_order``:
  iteration (``for``, comprehensions, unpacking, all go through ``_getiter_``), every
  builtin and method that iterates (they go through ``counted``), ``set.pop`` and rendering.
  Dicts keep insertion order, which the code decides, so their keys are not restricted;
- ``list.index`` (whose Python message embeds a repr) says what it did not find in plain
  text; the other allowed methods' messages hold no repr of their argument (``KeyError``
  holds the key itself, which is rendered like any exception's arguments);
- ``RecursionError`` and ``MemoryError`` cannot be caught: the depth at which recursion
  stops and the moment memory runs out depend on the interpreter and the heap, so
  ``_escalate_`` turns them into ``Escalated`` in any handler or ``finally`` that sees them;
- ``id``, ``hash``, ``type``, ``repr``, ``format`` and ``iter`` are not provided.

A limit that is hit (steps, allocation, a size guard) raises ``SandboxLimit``, which is a
``BaseException``: ``except Exception`` in ability code does not catch it, and the meter
stays spent, so every later step raises again. The harness reads the meter after the call,
so even a call that somehow swallowed it is reported as failed.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import orjson
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

from agent_world.sandbox.plain import TooLong, render, set_order

__all__ = ["COMPARE", "DECISION_KEYS", "MAX_INT_BITS", "MAX_SEQUENCE", "SCAN", "TEXT_CHARS",
           "Escalated", "Meter", "Rng",
           "SandboxLimit", "build_globals", "export_decision", "export_result", "memory_size"]

T = TypeVar("T")

SCAN = 64  # items looked at or copied in C that cost one step
TEXT_CHARS = 8  # characters of text that count as one item
DIGITS_SQUARED = 1024  # int(text): the square of its length over this is its items
MAX_INT_BITS = 1024
MAX_SEQUENCE = 100_000  # characters of one string, items of one list
MAX_RANGE = 1_000_000
MASK64 = (1 << 64) - 1

# Result caps: what may come back out of a call.
RESULT_NODES = 512
RESULT_DEPTH = 4
RESULT_STRING = 500
RESULT_INT = 2**53
RESULT_KEY = 40  # characters of a key in an ability's result

# What a policy's decide may return (export_decision).
DECISION_KEYS = ("action", "args", "memory", "reasoning")
ACTION_NAME = 40  # characters of an action's name
REASONING = 300  # characters of a decision's reasoning
MEMORY_DEPTH = 8  # levels of nesting in a policy's memory


class SandboxLimit(BaseException):
    """A limit was hit (steps, allocation, size). Not an Exception, so ``except Exception``
    in ability code cannot catch it."""


class Escalated(BaseException):
    """A RecursionError or MemoryError that ability code tried to catch (see ``_escalate_``
    in ``build_globals``). Not an Exception, so no handler can keep it; the harness reports
    ``original`` as if nothing had caught it."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(original)
        self.original = original


class ResultError(Exception):
    """The returned value is not plain effect data within the caps."""


class Meter:
    """Steps and allocation of one call. Once a limit is hit it stays hit."""

    __slots__ = ("alloc_left", "failure", "steps_left", "steps_total")

    def __init__(self, steps: int, alloc: int) -> None:
        self.steps_left = steps
        self.steps_total = steps
        self.alloc_left = alloc
        self.failure: str | None = None

    @property
    def steps_used(self) -> int:
        return self.steps_total - max(0, self.steps_left)

    def fail(self, reason: str) -> SandboxLimit:
        if self.failure is None:
            self.failure = reason
        self.steps_left = 0
        return SandboxLimit(self.failure)

    def step(self) -> None:
        if self.steps_left <= 0:
            raise self.fail(f"step budget of {self.steps_total} steps spent")
        self.steps_left -= 1

    def spend(self, n: int) -> None:
        """``n`` steps at once (work done in C that grows with the size of a value)."""
        if self.steps_left < n:
            raise self.fail(f"step budget of {self.steps_total} steps spent")
        self.steps_left -= n

    def alloc(self, n: int) -> None:
        self.alloc_left -= n
        if self.alloc_left < 0:
            raise self.fail("allocation budget spent (abilities.alloc_budget)")


class Rng:
    """splitmix64: a small, fully specified generator (no dependence on ``random``)."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next64(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def random(self) -> float:
        return (self.next64() >> 11) * (1.0 / (1 << 53))


def _made(like: object, n: int) -> int:
    """Items of a new value of ``n`` items or characters of the type of ``like``."""
    return n // TEXT_CHARS if type(like) is str else n


def _is_int(x: object) -> bool:
    return type(x) is int or type(x) is bool


_CONTAINERS = (list, tuple, dict, set)
_FLAT = frozenset({int, float, bool, type(None)})  # values with no items to look at
_TEXT = _FLAT | {str}


def _is_text(x: object) -> bool:
    return type(x) is str



def _comparisons() -> dict[str, Callable[[Any, Any], Any]]:
    import operator  # noqa: PLC0415 - only here, where the table is made

    return {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge, "in": lambda a, b: a in b,
            "not in": lambda a, b: a not in b}


COMPARE = _comparisons()
"""What ``_compare_`` does for each comparison the compiler rewrites."""

_TEXT_METHODS = "text"  # every str method reads the text and its text arguments
_SEARCHES = "search"  # compares the items (list.count, list.remove, tuple.index ...)
_COPIES = "copy"  # moves or copies the items (list.copy, list.insert, list.reverse ...)
_KEYED = "keyed"  # hashes its first argument (dict.get, set.add ...)
_SORTS = "sort"
METHOD_COSTS: dict[tuple[type[Any], str], str] = {
    (list, "count"): _SEARCHES, (list, "remove"): _SEARCHES, (tuple, "index"): _SEARCHES,
    (tuple, "count"): _SEARCHES, (list, "insert"): _COPIES, (list, "pop"): _COPIES,
    (list, "copy"): _COPIES, (list, "reverse"): _COPIES, (list, "clear"): _COPIES,
    (dict, "copy"): _COPIES, (dict, "clear"): _COPIES, (set, "copy"): _COPIES,
    (set, "clear"): _COPIES, (dict, "get"): _KEYED, (dict, "pop"): _KEYED,
    (dict, "setdefault"): _KEYED, (set, "add"): _KEYED, (set, "discard"): _KEYED,
    (set, "remove"): _KEYED, (list, "sort"): _SORTS,
}
"""How a method that works in C in proportion to its values is charged (str methods: all
by their text; methods not listed: a fixed small cost, a step of the loop that calls them)."""


def _size(x: object) -> int:
    t = type(x)
    if t in (str, list, tuple, dict, set):
        return len(x)  # type: ignore[arg-type]
    return 0


# Values whose own __format__ is plain (an f-string spec such as :.1f applies to them).
_FORMATTED = frozenset({str, int, float, bool, type(None)})
_STR, _REPR, _ASCII = ord("s"), ord("r"), ord("a")  # FormattedValue.conversion


def _escalate() -> None:
    """The second thing every except handler and finally block of ability code does (after
    ``_step_``): a RecursionError or MemoryError being handled goes on as ``Escalated``,
    and an ``Escalated`` on its way out goes on through a ``finally`` (which could otherwise
    swallow it with ``return``). Ordinary exceptions stay catchable."""
    exc = sys.exc_info()[1]
    if exc is None:
        return
    if isinstance(exc, Escalated):
        raise exc
    if isinstance(exc, (RecursionError, MemoryError)):
        raise Escalated(exc)


def build_globals(meter: Meter, seed: int, kind: str = "ability") -> dict[str, Any]:
    """Fresh globals for one call of ``kind`` code (``ability`` or ``policy``: the two
    differ only in how their error messages name them)."""
    where, whom = ("a policy", "policies") if kind == "policy" else ("an ability", "abilities")
    step = meter.step
    alloc = meter.alloc
    rng = Rng(seed)

    def charge(items: int) -> None:
        """Steps for ``items`` looked at or copied in C."""
        if items >= SCAN:
            meter.spend(items // SCAN)

    def deep(value: Any) -> int:
        """The items a comparison or search may look at in ``value``: its items, text by
        ``TEXT_CHARS`` characters, and each container nested in it ``SCAN`` more (a
        step: looking into it costs what a turn of a loop does) with its own items; counted
        until the budget could not pay for more (a value that holds itself counts until
        then)."""
        t = type(value)
        if t is str:
            return len(value) // TEXT_CHARS
        if t not in _CONTAINERS:
            return 0
        cap = (max(0, meter.steps_left) + 1) * SCAN
        total = 0
        stack = [value]
        while stack and total <= cap:
            item = stack.pop()
            total += len(item)
            for part in (item.keys(), item.values()) if type(item) is dict else (item,):
                kinds = set(map(type, part))  # in C: most values hold numbers or text only
                if kinds <= _FLAT:
                    continue
                if kinds <= _TEXT:
                    total += sum(map(len, filter(_is_text, part))) // TEXT_CHARS
                    continue
                for x in part:
                    tx = type(x)
                    if tx is str:
                        total += len(x) // TEXT_CHARS
                    elif tx in _CONTAINERS:
                        total += SCAN
                        stack.append(x)
        return total

    def compare(a: Any, b: Any, op: str) -> Any:
        if op in ("in", "not in") and type(b) in (dict, set):
            charge(deep(a))  # a hash lookup looks at the key only
        else:
            charge(deep(a) + deep(b))
        return COMPARE[op](a, b)

    def chain(first: Any, ops: tuple[str, ...], *rest: Callable[[], Any]) -> Any:
        """``first op0 rest[0]() op1 rest[1]() ...`` as Python chains comparisons: each
        operand evaluated once, in order, and none after the first false comparison."""
        left, result = first, True
        for op, later in zip(ops, rest, strict=True):
            right = later()
            result = compare(left, right, op)
            if not result:
                return result
            left = right
        return result

    def sort_cost(items: list[Any]) -> int:
        n = len(items)
        return deep(items) * max(1, n.bit_length()) if n > 1 else 0

    def account(value: T) -> T:
        n = _size(value)
        if n:
            if n > MAX_SEQUENCE:
                raise meter.fail(f"a value of {n} items or characters; the limit is "
                                 f"{MAX_SEQUENCE}")
            alloc(n)
            charge(n // TEXT_CHARS if type(value) is str else n)
        return value

    def method_cost(obj: Any, kind: str, args: tuple[Any, ...]) -> int:
        if kind == _TEXT_METHODS:
            return (len(obj) + sum(len(a) for a in args if type(a) is str)) // TEXT_CHARS
        if kind == _SEARCHES:
            return deep(obj) + sum(deep(a) for a in args)
        if kind == _COPIES:
            return len(obj)
        if kind == _KEYED:
            return deep(args[0]) if args else 0
        return sort_cost(obj)

    def counted(iterable: Iterable[Any]) -> Iterator[Any]:
        """The items of ``iterable``, a step each; a set's in canonical order."""
        if type(iterable) is set:
            return in_order(iterable)
        return each(iterable)

    def each(iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            step()
            yield item

    def in_order(items: set[Any]) -> Iterator[Any]:
        # A snapshot in canonical order; a change of size fails as Python's own iteration
        # of a set does.
        ordered = set_order(items, step)
        size = len(items)
        for item in ordered:
            if len(items) != size:
                raise RuntimeError("Set changed size during iteration")
            step()
            yield item

    def materialise(iterable: Iterable[Any]) -> list[Any]:
        out = list(counted(iterable))
        alloc(len(out))
        return out

    # -- guard hooks (RestrictedPython) -----------------------------------------------------

    def getiter(obj: Any) -> Iterator[Any]:
        return counted(obj)

    def getitem(obj: Any, key: Any) -> Any:
        t = type(obj)
        if t not in (dict, list, tuple, str, range):
            raise TypeError(f"a {t.__name__} cannot be indexed in {where}")
        if type(key) is slice:
            return account(obj[key])
        if t is dict:
            charge(deep(key))  # hashing a key reads all of it
        return obj[key]

    def write(obj: Any) -> Any:
        if type(obj) not in (dict, list):
            raise TypeError(f"a {type(obj).__name__} cannot be changed in {where}")
        return obj

    def unpack_sequence(it: Any, spec: Any, _getiter_: Any) -> Any:
        return guarded_unpack_sequence(it, spec, getiter)  # type: ignore[no-untyped-call]

    def iter_unpack_sequence(it: Any, spec: Any, _getiter_: Any) -> Any:
        return guarded_iter_unpack_sequence(  # type: ignore[no-untyped-call]
            it, spec, getiter)

    # -- size guards -------------------------------------------------------------------------

    def int_ok(value: int) -> int:
        if value.bit_length() > MAX_INT_BITS:
            raise meter.fail(f"an integer of {value.bit_length()} bits; the limit is "
                             f"{MAX_INT_BITS}")
        return value

    def add(a: Any, b: Any) -> Any:
        if _is_int(a) and _is_int(b):
            return int_ok(a + b)
        if type(a) in (str, list, tuple) and type(b) is type(a):
            if len(a) + len(b) > MAX_SEQUENCE:
                raise meter.fail(f"joining {len(a)} + {len(b)} items; the limit is "
                                 f"{MAX_SEQUENCE}")
            alloc(len(a) + len(b))
            charge(_made(a, len(a) + len(b)))
        return a + b

    def sub(a: Any, b: Any) -> Any:
        if _is_int(a) and _is_int(b):
            return int_ok(a - b)
        return a - b

    def mul(a: Any, b: Any) -> Any:
        if _is_int(a) and _is_int(b):
            if a.bit_length() + b.bit_length() > MAX_INT_BITS:
                raise meter.fail(f"multiplying integers of {a.bit_length()} and "
                                 f"{b.bit_length()} bits; the limit is {MAX_INT_BITS}")
            return a * b
        seq, n = (a, b) if _is_int(b) else (b, a)
        if type(seq) in (str, list, tuple) and _is_int(n):
            size = len(seq) * max(0, n)
            if size > MAX_SEQUENCE:
                raise meter.fail(f"repeating {len(seq)} items {n} times; the limit is "
                                 f"{MAX_SEQUENCE}")
            alloc(size)
            charge(_made(seq, size))
        return a * b

    def power(a: Any, b: Any) -> Any:
        if (_is_int(a) and _is_int(b) and b > 0 and abs(a) > 1
                and a.bit_length() * b > MAX_INT_BITS):
            raise meter.fail(f"{a.bit_length()}-bit integer to the power {b}; the limit "
                             f"is {MAX_INT_BITS} bits")
        return a**b

    def lshift(a: Any, b: Any) -> Any:
        if _is_int(a) and _is_int(b) and a and b > 0 and a.bit_length() + b > MAX_INT_BITS:
            raise meter.fail(f"shifting by {b} bits; the limit is {MAX_INT_BITS} bits")
        return a << b

    def mod(a: Any, b: Any) -> Any:
        if type(a) is str:
            raise TypeError("% formatting is not available; use an f-string")
        return a % b

    def fstr(value: str) -> str:
        return account(value)

    def text(value: Any, as_str: bool, what: str) -> str:
        try:
            return render(value, as_str=as_str, step=step, limit=MAX_SEQUENCE, what=what)
        except TooLong:
            raise meter.fail(f"{what} would make more than {MAX_SEQUENCE} characters; the "
                             f"limit is {MAX_SEQUENCE}") from None

    def fval(value: Any, conversion: int, spec: str | None) -> str:
        """One ``{value!conversion:spec}`` of an f-string (the compiler passes the spec as a
        constant). Python's FORMAT_VALUE would call any object's __format__; this takes
        plain data only and writes it as Python does."""
        t = type(value)
        if conversion == -1 and t in _FORMATTED:  # the common case: a type check, no walk
            return format(value, spec) if spec else format(value)
        if conversion not in (-1, _STR, _REPR, _ASCII):  # a compiler bug: fail closed
            raise TypeError(f"unknown f-string conversion {conversion}")
        what = "an f-string value"
        if conversion == _ASCII:  # ascii(): repr with non-ASCII characters escaped
            shown = text(value, False, what).encode("ascii", "backslashreplace").decode()
        else:
            shown = text(value, conversion != _REPR, what)
        if spec and conversion == -1:  # object.__format__ takes no spec
            raise TypeError(f"unsupported format string passed to {t.__name__}.__format__")
        return format(shown, spec) if spec else shown

    inplace_ops: dict[str, Callable[[Any, Any], Any]] = {
        "+=": add, "*=": mul, "**=": power, "<<=": lshift, "%=": mod,
        "-=": sub, "/=": lambda a, b: a / b, "//=": lambda a, b: a // b,
        ">>=": lambda a, b: a >> b, "&=": lambda a, b: a & b, "|=": lambda a, b: a | b,
        "^=": lambda a, b: a ^ b,
    }

    def inplacevar(op: str, x: Any, y: Any) -> Any:
        fn = inplace_ops.get(op)
        if fn is None:
            raise TypeError(f"{op} is not available in {where}")
        return fn(x, y)

    # -- attributes ---------------------------------------------------------------------------

    def join(sep: str) -> Callable[[Iterable[Any]], str]:
        def joined(parts: Iterable[Any]) -> str:
            items = materialise(parts)
            total = sum(len(p) if type(p) is str else 0 for p in items)
            total += len(sep) * max(0, len(items) - 1)
            if total > MAX_SEQUENCE:
                raise meter.fail(f"joining {total} characters; the limit is {MAX_SEQUENCE}")
            alloc(total)
            charge(total // TEXT_CHARS)
            return sep.join(items)
        return joined

    def replace(s: str) -> Callable[..., str]:
        def replaced(old: str, new: str, count: int = -1) -> str:
            if type(old) is not str or type(new) is not str:
                raise TypeError("replace takes text")
            charge((len(s) + len(old)) // TEXT_CHARS)  # the search
            hits = s.count(old) if old else len(s) + 1
            if _is_int(count) and count >= 0:
                hits = min(hits, count)
            size = len(s) + hits * (len(new) - len(old))
            if size > MAX_SEQUENCE:
                raise meter.fail(f"replace would make {size} characters; the limit is "
                                 f"{MAX_SEQUENCE}")
            alloc(size)
            charge(size // TEXT_CHARS)
            return s.replace(old, new, count)
        return replaced

    def extend(target: list[Any]) -> Callable[[Iterable[Any]], None]:
        def extended(items: Iterable[Any]) -> None:
            new = materialise(items)
            if len(target) + len(new) > MAX_SEQUENCE:
                raise meter.fail(f"a list of {len(target) + len(new)} items; the limit is "
                                 f"{MAX_SEQUENCE}")
            target.extend(new)
        return extended

    def update(target: dict[Any, Any]) -> Callable[..., None]:
        def updated(other: Any = ()) -> None:
            pairs = materialise(other.items() if type(other) is dict else other)
            target.update(pairs)
        return updated

    def index_of(seq: list[Any]) -> Callable[..., int]:
        # Python's message is "%R is not in list": an address for a function.
        def index(value: Any, *bounds: Any) -> int:
            charge(deep(seq) + deep(value))
            try:
                return seq.index(value, *bounds)
            except ValueError:
                shown = render(value, as_str=False, step=step, limit=200, lenient=True)
                raise ValueError(f"{shown} is not in list") from None
        return index

    def pop_first(target: set[Any]) -> Callable[[], Any]:
        # Python's set.pop returns whichever item comes first in hash order.
        def pop() -> Any:
            if not target:
                raise KeyError("pop from an empty set")
            meter.spend(len(target))  # ordering looks at every item
            first = set_order(target, step)[0]
            target.remove(first)
            return first
        return pop

    def set_op(target: set[Any], name: str) -> Callable[..., set[Any]]:
        def combined(*others: Any) -> set[Any]:
            charge(len(target))
            result: set[Any] = getattr(target, name)(*[materialise(o) for o in others])
            return account(result)
        return combined

    sized: dict[tuple[type[Any], str], Callable[[Any], Callable[..., Any]]] = {
        (str, "join"): join, (str, "replace"): replace, (list, "extend"): extend,
        (list, "index"): index_of, (dict, "update"): update, (set, "pop"): pop_first,
        (set, "union"): lambda s: set_op(s, "union"),
        (set, "intersection"): lambda s: set_op(s, "intersection"),
        (set, "difference"): lambda s: set_op(s, "difference"),
    }

    def getattr_guard(obj: Any, name: Any, default: Any = None) -> Any:
        if type(name) is not str:
            raise TypeError("attribute names must be str")
        t = type(obj)
        allowed = SAFE_ATTRIBUTES.get(t)
        if allowed is None or name not in allowed:
            raise AttributeError(f"{t.__name__}.{name} is not available to {whom}")
        maker = sized.get((t, name))
        if maker is not None:
            return maker(obj)
        method = getattr(obj, name)
        cost = _TEXT_METHODS if t is str else METHOD_COSTS.get((t, name))

        def call(*args: Any, **kwargs: Any) -> Any:
            if cost is not None:
                charge(method_cost(obj, cost, args))
            return account(method(*args, **kwargs))
        return call

    # -- builtins ----------------------------------------------------------------------------

    def g_float(value: Any = 0.0) -> float:
        if type(value) is str:
            charge(len(value) // TEXT_CHARS)
        return float(value)

    def g_int(value: Any = 0, *args: Any, **kwargs: Any) -> int:
        if type(value) is str:
            # Decimal text to int takes time in the square of its length in CPython.
            charge(len(value) * len(value) // DIGITS_SQUARED)
        return int_ok(int(value, *args, **kwargs))

    def key(value: T) -> T:
        """A key stored or deleted by ``d[key] = ...`` (hashing reads all of it)."""
        charge(deep(value))
        return value

    def g_range(*args: Any) -> range:
        if not all(_is_int(a) for a in args):
            raise TypeError("range takes whole numbers")
        r = range(*args)
        if len(r) > MAX_RANGE:
            raise meter.fail(f"a range of {len(r)} numbers; the limit is {MAX_RANGE}")
        return r

    def g_list(iterable: Iterable[Any] = ()) -> list[Any]:
        return materialise(iterable)

    def g_tuple(iterable: Iterable[Any] = ()) -> tuple[Any, ...]:
        return tuple(materialise(iterable))

    def g_set(iterable: Iterable[Any] = ()) -> set[Any]:
        return set(materialise(iterable))

    def g_dict(iterable: Any = (), **kwargs: Any) -> dict[Any, Any]:
        pairs = materialise(iterable.items() if type(iterable) is dict else iterable)
        out = dict(pairs)
        out.update(kwargs)
        return out

    def g_sorted(iterable: Iterable[Any], key: Any = None, reverse: bool = False) -> list[Any]:
        items = materialise(iterable)
        charge(sort_cost(items))
        items.sort(key=key, reverse=bool(reverse))
        return items

    def g_reversed(iterable: Iterable[Any]) -> list[Any]:
        items = materialise(iterable)
        items.reverse()
        return items

    def g_sum(iterable: Iterable[Any], start: Any = 0) -> Any:
        total = start
        for x in counted(iterable):
            if type(x) not in (int, float, bool):
                raise TypeError("sum adds numbers only")
            total = add(total, x)
        return total

    def extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
        def chosen(*args: Any, **kwargs: Any) -> Any:
            if set(kwargs) - {"key", "default"}:
                raise TypeError("min and max take key= and default= only")
            items = materialise(args[0]) if len(args) == 1 else list(args)
            charge(deep(items))  # comparing nested values looks into them
            if not items and "default" in kwargs:
                return kwargs["default"]
            key = kwargs.get("key")
            return pick(items, key=key) if key is not None else pick(items)
        return chosen

    def g_any(iterable: Iterable[Any]) -> bool:
        return any(counted(iterable))

    def g_all(iterable: Iterable[Any]) -> bool:
        return all(counted(iterable))

    def g_enumerate(iterable: Iterable[Any], start: int = 0) -> Iterator[tuple[int, Any]]:
        return enumerate(counted(iterable), start)

    def g_zip(*iterables: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        return zip(*[counted(i) for i in iterables], strict=False)

    def g_str(value: Any = "") -> str:
        if type(value) in _FORMATTED:  # the common case: a type check, no walk
            return account(str(value))
        return account(text(value, True, "str()"))

    def type_name(value: Any) -> str:
        t = type(value)
        return {bool: "bool", int: "int", float: "float", str: "str", list: "list",
                dict: "dict", tuple: "tuple", set: "set", type(None): "none"}.get(t, "other")

    def clamp(x: Any, low: Any, high: Any) -> Any:
        return max(low, min(high, x))

    def sign(x: Any) -> int:
        return int((x > 0) - (x < 0))

    def chebyshev(x1: int, y1: int, x2: int, y2: int) -> Any:
        return max(abs(x1 - x2), abs(y1 - y2))

    def rand() -> float:
        return rng.random()

    def rand_int(low: int, high: int) -> int:
        if not (_is_int(low) and _is_int(high)) or high < low or high - low > 2**53:
            raise ValueError("rand_int(low, high) needs whole numbers with low <= high")
        return int(low + rng.next64() % (high - low + 1))

    def rand_choice(seq: Any) -> Any:
        if type(seq) not in (list, tuple, str) or not seq:
            raise ValueError("rand_choice needs a non-empty list, tuple or text")
        return seq[rng.next64() % len(seq)]

    def rand_chance(p: Any) -> bool:
        return bool(rng.random() < p)

    builtins: dict[str, Any] = {
        "abs": abs, "bool": bool, "chr": chr, "divmod": divmod, "float": g_float, "int": g_int,
        "len": len, "ord": ord, "round": round,
        "all": g_all, "any": g_any, "dict": g_dict, "enumerate": g_enumerate, "list": g_list,
        "max": extreme(max), "min": extreme(min), "range": g_range, "reversed": g_reversed,
        "set": g_set, "sorted": g_sorted, "str": g_str, "sum": g_sum, "tuple": g_tuple,
        "zip": g_zip, "type_name": type_name,
        "Exception": Exception, "ArithmeticError": ArithmeticError,
        "LookupError": LookupError, "ValueError": ValueError, "TypeError": TypeError,
        "KeyError": KeyError, "IndexError": IndexError,
        "ZeroDivisionError": ZeroDivisionError,
        "sqrt": math.sqrt, "floor": math.floor, "ceil": math.ceil, "hypot": math.hypot,
        "atan2": math.atan2, "sin": math.sin, "cos": math.cos, "exp": math.exp,
        "log": math.log, "pi": math.pi, "clamp": clamp, "sign": sign, "chebyshev": chebyshev,
        "rand": rand, "rand_int": rand_int, "rand_choice": rand_choice,
        "rand_chance": rand_chance,
    }
    return {
        "__builtins__": builtins,
        "__name__": kind,
        "_getattr_": getattr_guard,
        "_getitem_": getitem,
        "_getiter_": getiter,
        "_write_": write,
        "_unpack_sequence_": unpack_sequence,
        "_iter_unpack_sequence_": iter_unpack_sequence,
        "_inplacevar_": inplacevar,
        "_step_": step,
        "_add_": add,
        "_sub_": sub,
        "_mul_": mul,
        "_pow_": power,
        "_lshift_": lshift,
        "_mod_": mod,
        "_fstr_": fstr,
        "_fval_": fval,
        "_compare_": compare,
        "_key_": key,
        "_chain_": chain,
        "_escalate_": _escalate,
    }


SAFE_ATTRIBUTES: dict[type[Any], frozenset[str]] = {
    str: frozenset({"lower", "upper", "title", "capitalize", "strip", "lstrip", "rstrip",
                    "split", "rsplit", "splitlines", "startswith", "endswith", "find",
                    "rfind", "count", "index", "isdigit", "isalpha", "isalnum", "isspace",
                    "islower", "isupper", "join", "replace"}),
    list: frozenset({"append", "pop", "index", "count", "insert", "remove", "reverse", "sort",
                     "copy", "clear", "extend"}),
    dict: frozenset({"get", "keys", "values", "items", "pop", "setdefault", "copy", "clear",
                     "update"}),
    tuple: frozenset({"index", "count"}),
    set: frozenset({"add", "discard", "remove", "pop", "clear", "copy", "union",
                    "intersection", "difference"}),
    float: frozenset({"is_integer"}),
    int: frozenset({"bit_length"}),
}
"""Attributes by exact type; everything else is refused (no frames, code, dunders ...)."""


def export_result(value: Any) -> Any:
    """Check that a call's return value is plain effect data within the caps; returns it
    unchanged or raises ResultError (``_plain_walk``: iterative, every visit counted)."""
    if type(value) is not list:
        raise ResultError(f"execute must return a list of effect dicts, got a "
                          f"{type(value).__name__}")
    # The list itself is the first level: its effects' values may nest two more.
    _plain_walk(value, what="the result", nodes=RESULT_NODES, depth=RESULT_DEPTH - 1,
                text=RESULT_STRING, key=RESULT_KEY)
    return value


def _plain_walk(value: Any, *, what: str, nodes: int, depth: int, text: int,
                key: int | None = None) -> int:
    """Check that ``value`` is JSON data (dicts with text keys, lists, text, finite numbers,
    true/false and None) within ``nodes`` values, ``depth`` levels, ``text`` characters
    per string and ``key`` (default ``text``) per key; the number of values seen.
    Iterative, every visit counted (shared references cannot hide their expanded size)."""
    key_chars = text if key is None else key
    seen = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        seen += 1
        if seen > nodes:
            raise ResultError(f"{what} has more than {nodes} values")
        t = type(node)
        if t is dict or t is list:
            if level > depth:
                raise ResultError(f"{what} is nested deeper than {depth} levels")
            if t is dict:
                for k, v in node.items():
                    if type(k) is not str:
                        raise ResultError(f"{what} has a key of type {kind_name(k)}; keys "
                                          "must be text")
                    if len(k) > key_chars:
                        raise ResultError(f"{what} has a key of {len(k)} characters; at most "
                                          f"{key_chars}")
                    stack.append((v, level + 1))
            else:
                stack.extend((v, level + 1) for v in node)
        elif t is str:
            if len(node) > text:
                raise ResultError(f"{what} holds a text of {len(node)} characters; at most "
                                  f"{text}")
        elif t is int:
            if abs(node) > RESULT_INT:
                raise ResultError(f"{what} holds an integer beyond 2**53")
        elif t is float:
            if not math.isfinite(node):
                raise ResultError(f"{what} holds a number that is not finite")
        elif t is not bool and node is not None:
            raise ResultError(f"{what} holds a {kind_name(node)}; only dicts, lists, text, "
                              "numbers, true/false and None may come back")
    return seen


def kind_name(value: Any) -> str:
    """A value's kind in words, never its text (which could hold an address)."""
    return {tuple: "tuple", set: "set", frozenset: "frozenset", bytes: "bytes",
            range: "range", type(None): "None"}.get(type(value), type(value).__name__)


def memory_size(memory: Any, limit: int) -> int:
    """The size of a policy's memory in bytes of compact JSON (ResultError if it is not
    JSON data, or more than ``limit`` bytes)."""
    if type(memory) is not dict:
        raise ResultError(f"memory must be a dict, got a {kind_name(memory)}")
    _plain_walk(memory, what="memory", nodes=max(1, limit), depth=MEMORY_DEPTH, text=limit)
    size = _json_size(memory)
    if size > limit:
        raise ResultError(f"memory is {size} bytes of JSON; at most {limit}")
    return size


def _json_size(value: Any) -> int:
    return len(orjson.dumps(value))


def export_decision(value: Any, memory_bytes: int) -> dict[str, Any]:
    """Check what a policy's ``decide(obs, memory)`` returned: a dict with ``action`` (text)
    and optionally ``args`` (a dict), ``memory`` (a dict of JSON data of at most
    ``memory_bytes`` bytes) and ``reasoning`` (text). Returns it (``args`` filled in) or
    raises ResultError. The action and its arguments are checked against the action set by
    the host, which knows it."""
    if type(value) is not dict:
        raise ResultError(f"decide must return a dict {{\"action\": ..., \"args\": {{...}}, "
                          f"\"memory\": {{...}}}}, got a {kind_name(value)}")
    for key in value:
        if type(key) is not str or key not in DECISION_KEYS:
            shown = repr(key)[:40] if type(key) is str else f"a {kind_name(key)}"
            raise ResultError(f"decide returned the key {shown}; a decision has only "
                              f"{', '.join(DECISION_KEYS)}")
    action = value.get("action")
    if type(action) is not str or not action or len(action) > ACTION_NAME:
        shown = repr(action)[:40] if type(action) is str else f"a {kind_name(action)}"
        raise ResultError(f"'action' must be an action's name, got {shown}")
    args = value.get("args")
    if args is None:
        args = {}
    if type(args) is not dict:
        raise ResultError(f"'args' must be a dict, got a {kind_name(args)}")
    _plain_walk(args, what="'args'", nodes=RESULT_NODES, depth=RESULT_DEPTH,
                text=RESULT_STRING)
    reasoning = value.get("reasoning")
    if reasoning is not None and (type(reasoning) is not str or len(reasoning) > REASONING):
        raise ResultError(f"'reasoning' must be text of at most {REASONING} characters")
    out: dict[str, Any] = {"action": action, "args": args}
    if reasoning is not None:
        out["reasoning"] = reasoning
    if "memory" in value:
        memory_size(value["memory"], memory_bytes)
        out["memory"] = value["memory"]
    return out
