"""Plain data, the same in every process: the canonical order of sets and the text of values.

A replay runs ability calls again in other worker processes (DESIGN.md section 3), so what a
call computes must not depend on the process. Python lets the process show through in two
places, and this module closes both:

- **Set order.** A set iterates in hash order. The hashes of functions, classes, NaN and (on
  3.11) None come from memory addresses, which differ in every process (ASLR); those of text
  come from PYTHONHASHSEED. ``set_order`` lists a set in one total order over plain
  immutable data instead: None, then numbers by value (NaN after them), then text, then
  tuples element by element, then ranges. A set holding anything else (a function, an
  exception ...) may exist, and ``in`` and ``len`` work on it, but it cannot be ordered.
- **Text of values.** ``repr`` of a function, generator or bound method names its address.
  ``render`` writes plain data (None, bool, int, float, str, range, and lists, tuples,
  dicts, sets and dict views of plain data) exactly as ``str``/``repr`` would, sets in
  canonical order, and refuses anything else with a TypeError naming its kind.

Dicts need nothing: they keep insertion order, and the order of insertion is decided by the
code (and by set order, which is canonical), never by a hash. So dict keys may be any
hashable value; a function as a key is looked up by identity, the same in every process.

Exceptions are rendered, not refused: ``except ValueError as e: str(e)`` is common and
harmless once its text is deterministic. An exception renders as Python renders it (its
type name and its arguments) with the arguments rendered *leniently*: a value that is not
plain data shows as its kind in angle brackets (``<function>``), never as an address, so
``KeyError(some_function)`` reads ``<function>``. Error reasons leaving a worker use the same
lenient text, and ``clean_reason`` removes anything that still looks like an address.

Rendering never recurses (an explicit stack: a value nested 100,000 deep is fine), stops at
a size limit, costs one step per value, and follows Python for self-references (``[[...]]``).
"""

from __future__ import annotations

import itertools
import math
import operator
import re
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["TooLong", "clean_reason", "exception_text", "kind_of", "render",
           "set_order"]

Step = Callable[[], None]

MAX_TUPLE_DEPTH = 32  # of a set item, when ordering it
PLAIN_ONLY = ("only text, numbers, true/false, None and lists, tuples, dicts and sets of "
              "them")

_NUMBERS = frozenset({int, float, bool})
_TEXT = frozenset({str})
_KEYS: type[Any] = type({}.keys())
_VALUES: type[Any] = type({}.values())
_ITEMS: type[Any] = type({}.items())
_KINDS: dict[type[Any], str] = {
    types.FunctionType: "function",  # lambdas too
    types.BuiltinFunctionType: "built-in function",
    types.MethodType: "method",
    types.GeneratorType: "generator",
    type: "class",
}
# A pointer printed by CPython (%p): 0x and hex digits. Seven or more digits: every address
# of a Python object (heap, arenas, even a non-PIE interpreter's data) is above 0xffffff,
# while shorter hex numbers in messages (chr's 0x110000, a user's 0xff) are left alone.
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{7,}")


class TooLong(Exception):
    """The text would pass the limit; the caller decides what that costs."""


def kind_of(value: object) -> str:
    """What a value is, in words, without anything that depends on the process."""
    kind = _KINDS.get(type(value))
    if kind is not None:
        return kind
    if isinstance(value, BaseException):
        return f"{type(value).__name__} exception"
    return f"{type(value).__name__} object"


def clean_reason(text: str) -> str:
    """``text`` with every memory address replaced: the last line of defence for reasons
    that leave a worker (the renderer and the wrapped methods keep addresses out before)."""
    return _ADDRESS.sub("0x...", text)


# -- the order of a set ------------------------------------------------------------------------


def _order_key(value: Any, step: Step, depth: int) -> tuple[Any, ...]:
    t = type(value)
    if value is None:
        return (0,)
    if t is int or t is bool:
        return (1, value)
    if t is float:
        return (2,) if math.isnan(value) else (1, value)
    if t is str:
        return (3, value)
    if t is tuple:
        if depth >= MAX_TUPLE_DEPTH:
            raise TypeError(f"a set item nested more than {MAX_TUPLE_DEPTH} tuples deep "
                           "cannot be ordered; keep such values in a list")
        keys = []
        for item in value:
            step()
            keys.append(_order_key(item, step, depth + 1))
        return (4, tuple(keys))
    if t is range:
        return (5, value.start, value.stop, value.step)
    raise TypeError(f"sets may only hold plain data (None, numbers, text and tuples of them) "
                   f"to be iterated, popped or shown; this one holds a {kind_of(value)}. "
                   "Keep such values in a list")


def _no_step() -> None:
    pass


def set_order(items: set[Any] | frozenset[Any], step: Step = _no_step) -> list[Any]:
    """The items of a set in canonical order (see the module docstring); TypeError if it holds
    something that has none. ``step`` is charged for every tuple item looked at."""
    out = list(items)
    kinds = set(map(type, out))
    # The common sets, text or numbers without NaN (the only value unequal to itself), sort
    # as they are: a total order already. Checked in C, item by item, not in Python.
    if kinds <= _TEXT or (kinds <= _NUMBERS and not any(map(operator.ne, out, out))):
        out.sort()
        return out
    keys = [_order_key(x, step, 0) for x in out]
    order = sorted(range(len(out)), key=keys.__getitem__)
    for a, b in itertools.pairwise(order):
        if keys[a] == keys[b]:  # only NaN makes two different items look the same
            raise TypeError("this set holds more than one NaN (or tuples that differ only by "
                           "a NaN): NaNs never equal each other, so nothing decides their "
                           "order. Keep such values in a list")
    return [out[i] for i in order]


# -- the text of a value -----------------------------------------------------------------------


class _Literal(str):
    """Text the renderer writes as it is (brackets, separators), never as a value."""

    __slots__ = ()


class _AsStr:
    """A value to write in ``str`` form rather than ``repr`` form (an exception's message)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


_SEP, _COLON = _Literal(", "), _Literal(": ")
_END = object()
_SCALARS: dict[type[Any], Callable[[Any], str]] = {
    type(None): lambda _none: "None",
    bool: bool.__repr__,
    int: int.__repr__,
    float: float.__repr__,
    str: str.__repr__,
    range: range.__repr__,
}
# What Python writes for a container that is already being written further out.
_RECURSION = {list: "[...]", dict: "{...}", tuple: "(...)", set: "set(...)", _KEYS: "...",
              _VALUES: "...", _ITEMS: "..."}


def _sequence(opening: str, items: Iterable[Any], closing: str) -> Iterator[Any]:
    yield _Literal(opening)
    first = True
    for item in items:
        if not first:
            yield _SEP
        first = False
        yield item
    yield _Literal(closing)


def _dict_parts(d: dict[Any, Any]) -> Iterator[Any]:
    yield _Literal("{")
    first = True
    for key, value in d.items():
        if not first:
            yield _SEP
        first = False
        yield key
        yield _COLON
        yield value
    yield _Literal("}")


def _pairs(view: Any) -> Iterator[Any]:
    yield _Literal("dict_items([")
    first = True
    for key, value in view:
        if not first:
            yield _SEP
        first = False
        yield from (_Literal("("), key, _SEP, value, _Literal(")"))
    yield _Literal("])")


def _exception_parts(exc: BaseException, as_str: bool) -> Iterator[Any]:
    """As BaseException.__str__ and __repr__ write it (KeyError quotes its one argument)."""
    args = exc.args
    if as_str:
        if len(args) == 1:
            yield args[0] if isinstance(exc, KeyError) else _AsStr(args[0])
        elif args:
            yield args
        return
    yield from _sequence(f"{type(exc).__name__}(", args, ")")


class _Writer:
    """One rendering: pieces of text up to ``limit`` characters, one step per value."""

    __slots__ = ("lenient", "limit", "pieces", "size", "step")

    def __init__(self, step: Step, limit: int, lenient: bool) -> None:
        self.step = step
        self.limit = limit
        self.lenient = lenient
        self.pieces: list[str] = []
        self.size = 0

    def add(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)
        if self.size > self.limit:
            raise TooLong(f"more than {self.limit} characters")

    def write(self, value: Any, as_str: bool, what: str) -> None:
        # A stack of part iterators: (parts, the id of the container they belong to, whether
        # values below are shown leniently). Containers on the stack are "being written".
        stack: list[tuple[Iterator[Any], int, bool]] = [
            (iter((_AsStr(value) if as_str else value,)), 0, self.lenient)]
        active: set[int] = set()
        while stack:
            parts, owner, lenient = stack[-1]
            part: Any = next(parts, _END)
            if part is _END:  # this container is done
                stack.pop()
                active.discard(owner)
                continue
            t = type(part)
            if t is _Literal:
                self.add(part)
                continue
            as_text = t is _AsStr
            if as_text:
                part = part.value
                t = type(part)
            self.step()
            if as_text and t is str:
                self.add(clean_reason(part) if lenient else part)
                continue
            scalar = _SCALARS.get(t)
            if scalar is not None:
                text = scalar(part)
                self.add(clean_reason(text) if lenient and t is str else text)
                continue
            if id(part) in active:
                self.add(_RECURSION.get(t, f"{type(part).__name__}(...)"))
                continue
            children = self._children(part, t, as_text, lenient, what)
            if children is None:
                continue
            # Below an exception, arguments are shown leniently (by kind, never refused).
            below = lenient or isinstance(part, BaseException)
            active.add(id(part))
            stack.append((children, id(part), below))

    def _children(self, value: Any, t: type[Any], as_str: bool, lenient: bool,
                  what: str) -> Iterator[Any] | None:
        """The parts of a container; None once the value was written whole (or refused)."""
        if t is list:
            return _sequence("[", value, "]")
        if t is tuple:
            return _sequence("(", value, ",)" if len(value) == 1 else ")")
        if t is dict:
            return _dict_parts(value)
        if t is set:
            return self._set_parts(value, lenient)
        if t is _KEYS or t is _VALUES:
            return _sequence(f"{t.__name__}([", value, "])")
        if t is _ITEMS:
            return _pairs(value)
        if isinstance(value, BaseException):
            return _exception_parts(value, as_str)
        if not lenient:
            raise TypeError(f"{what} of a {kind_of(value)} is not available to abilities; "
                           f"{PLAIN_ONLY}")
        self.add(f"<{kind_of(value)}>")
        return None

    def _set_parts(self, value: set[Any], lenient: bool) -> Iterator[Any] | None:
        if not value:
            self.add("set()")
            return None
        try:
            ordered = set_order(value, self.step)
        except TypeError:  # set_order raises nothing else
            if not lenient:
                raise
            self.add(f"<set of {len(value)} items>")
            return None
        return _sequence("{", ordered, "}")


def render(value: Any, *, as_str: bool, step: Step, limit: int, what: str = "str()",
           lenient: bool = False) -> str:
    """The text of ``value`` as ``str`` (``as_str``) or ``repr`` writes it, sets in
    canonical order. Strict (the default): TypeError for a value that is not plain data,
    ``what`` naming the operation; TooLong past ``limit`` characters. Lenient: such values
    show as ``<kind>`` and the text is cut at ``limit`` characters."""
    if as_str and type(value) is str:
        return value
    writer = _Writer(step, limit, lenient)
    try:
        writer.write(value, as_str, what)
    except TooLong:
        if not lenient:
            raise
        return "".join(writer.pieces)[:limit]
    return "".join(writer.pieces)


def exception_text(exc: BaseException, limit: int = 200) -> str:
    """``str(exc)``, deterministic: arguments that are not plain data show by kind, sets in
    canonical order, addresses removed, at most ``limit`` characters."""
    return render(exc, as_str=True, step=_no_step, limit=limit, lenient=True)
