"""Layer 1 of the sandbox: source limits and an AST allowlist, checked before anything else.

Everything here fails closed: any exception while validating is a rejection (``GateError``
with the reason). Nothing recurses over the untrusted tree before its depth is known: the
size and depth checks walk it with an explicit stack, and only a tree that passed them
reaches RestrictedPython (whose transformer recurses).

Two kinds of source pass the same gate, each by its ``Contract``: an **ability** is a module
of literal metadata assignments (``NAME``, ``DESCRIPTION``, ``ENERGY_COST``, ``COOLDOWN``,
``RANGE``, optionally ``ARGS``) and exactly one ``def execute(ctx):``; a **policy** (an
agent's brain, docs/policies.md) is literal metadata (``NAME``, ``DESCRIPTION``,
``VERSION``, optionally ``PARENT``), literal ``UPPER_CASE`` constants, helper functions and
one ``def decide(obs, memory):``. Both are written in a small subset of Python:

- statements: assignment (also augmented), if, for, while, break, continue, pass, return,
  raise, assert, del, try/except/else/finally (each handler naming an exception), nested
  ``def`` without decorators, annotations, defaults or ``*``/``**``/``/`` parameters;
- no import, global, nonlocal, class, decorator, async, await, yield, with, match,
  ``try/except*``, lambda with defaults, starred expressions or ``**`` unpacking;
- every identifier, parameter, keyword and attribute is ASCII (so no Unicode form can
  normalise to a name the checks did not see) and does not start with ``_``;
- attributes only from a fixed list of plain-data methods (``.get``, ``.append`` ...), so
  frame, code, generator and format attributes cannot even be spelled;
- every name read is either bound in the file or one of the runtime's names;
- constants are ints, floats, strings and booleans of bounded size; f-string format specs
  are short constants (no width that builds a huge string).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_world.types import ABILITY_METADATA as METADATA_NAMES
from agent_world.types import MAX_ABILITY_SOURCE as MAX_SOURCE_CHARS
from agent_world.types import POLICY_METADATA

__all__ = ["ABILITY", "ALLOWED_ATTRIBUTES", "CONTRACTS", "POLICY", "RUNTIME_NAMES", "Contract",
           "GateError", "Gated", "gate"]

MAX_LINES = 600
MAX_DEPTH = 40
MAX_NODES = 6000
MAX_STR_CONSTANT = 2000
MAX_INT_BITS = 256
MAX_FUNCTIONS = 16

RUNTIME_NAMES = frozenset({
    # plain builtins and guarded wrappers (see runtime.py)
    "abs", "all", "any", "bool", "chr", "dict", "divmod", "enumerate", "float", "int", "len",
    "list", "max", "min", "ord", "range", "reversed", "round", "set", "sorted", "str", "sum",
    "tuple", "zip", "type_name",
    # exceptions an ability may raise or catch
    "Exception", "ArithmeticError", "LookupError", "ValueError", "TypeError", "KeyError",
    "IndexError", "ZeroDivisionError",
    # math and helpers
    "sqrt", "floor", "ceil", "hypot", "atan2", "sin", "cos", "exp", "log", "pi", "clamp",
    "sign", "chebyshev",
    # the call's own seeded random numbers
    "rand", "rand_int", "rand_choice", "rand_chance",
})
"""Names the runtime provides; every other name an ability reads must be its own."""

ALLOWED_ATTRIBUTES = frozenset({
    # str
    "lower", "upper", "title", "capitalize", "strip", "lstrip", "rstrip", "split", "rsplit",
    "splitlines", "startswith", "endswith", "find", "rfind", "count", "index", "isdigit",
    "isalpha", "isalnum", "isspace", "islower", "isupper", "join", "replace",
    # list
    "append", "pop", "insert", "remove", "reverse", "sort", "copy", "clear", "extend",
    # dict
    "get", "keys", "values", "items", "setdefault", "update",
    # set
    "add", "discard", "union", "intersection", "difference",
    # numbers
    "is_integer", "bit_length",
})
"""Every attribute an ability may name. The runtime checks the object's exact type too."""

_STATEMENTS: tuple[type[ast.AST], ...] = (
    ast.Assign, ast.AugAssign, ast.If, ast.For, ast.While, ast.Break, ast.Continue, ast.Pass,
    ast.Return, ast.Raise, ast.Assert, ast.Delete, ast.Try, ast.Expr, ast.FunctionDef,
)
_EXPRESSIONS: tuple[type[ast.AST], ...] = (
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Lambda, ast.IfExp, ast.Dict, ast.Set, ast.ListComp,
    ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Compare, ast.Call, ast.FormattedValue,
    ast.JoinedStr, ast.Constant, ast.Attribute, ast.Subscript, ast.Name, ast.List, ast.Tuple,
    ast.Slice, ast.NamedExpr,
)
_OTHER: tuple[type[ast.AST], ...] = (
    ast.Module, ast.comprehension, ast.arguments, ast.arg, ast.keyword, ast.ExceptHandler,
    ast.Load, ast.Store, ast.Del,
    ast.And, ast.Or,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift,
    ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd,
    ast.UAdd, ast.USub, ast.Not, ast.Invert,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
)
ALLOWED_NODES = frozenset(_STATEMENTS + _EXPRESSIONS + _OTHER)

# Names that are refused even as an ability's own variables: they read as escapes.
FORBIDDEN_NAMES = frozenset({
    "eval", "exec", "compile", "open", "input", "print", "getattr", "setattr", "delattr",
    "hasattr", "globals", "locals", "vars", "dir", "type", "object", "super", "breakpoint",
    "help", "id", "hash", "iter", "next", "format", "memoryview", "bytearray", "bytes",
    "classmethod", "staticmethod", "property", "isinstance", "issubclass", "callable",
    "exit", "quit", "BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit",
    "ExceptionGroup", "BaseExceptionGroup", "printed", "string", "os", "sys", "builtins",
})

_FORMAT_SPEC = re.compile(r"[<>^]?[+-]?\d{0,2}(\.\d{1,2})?[dfeg%s]?")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")  # a policy's own top-level constants


class GateError(ValueError):
    """The source is refused; the message says what rule it breaks and where."""


@dataclass(frozen=True, slots=True)
class Gated:
    """A source that passed the gate: its literal metadata values (checked as metadata by
    ``compiler.compile_ability`` or ``agent_world.policies``), its parsed tree and (a
    policy's) the literal values of its ``UPPER_CASE`` constants, in file order."""

    values: dict[str, Any]
    tree: ast.Module
    constants: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Contract:
    """What one kind of source is: its metadata names, the function a call runs
    (``entry``) and how its top level is laid out (``layout`` returns the metadata and
    constants, or raises GateError). ``what`` and ``plural`` name the kind in messages
    ("an ability", "abilities")."""

    kind: str
    what: str
    plural: str
    metadata: tuple[str, ...]
    entry: str
    layout: Callable[[ast.Module], tuple[dict[str, Any], dict[str, Any]]]


def _where(node: ast.AST) -> str:
    line = getattr(node, "lineno", None)
    return f"line {line}: " if line else ""


def _check_text(source: object) -> str:
    if type(source) is not str:
        raise GateError(f"source must be text, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_CHARS:
        raise GateError(f"source is {len(source)} characters; the limit is {MAX_SOURCE_CHARS}")
    if "\x00" in source:
        raise GateError("source contains a NUL character")
    if source.count("\n") > MAX_LINES:
        raise GateError(f"source has more than {MAX_LINES} lines")
    return source


def _check_tokens(source: str) -> None:
    """Identifiers must be ASCII: Python folds Unicode identifiers (NFKC) while parsing, so a
    name like ＿getattr＿ would reach the tree as one the checks never saw spelled. Text in
    plain string literals and comments may be anything; f-strings hold code, so they too
    must be ASCII."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT or tok.string.isascii():
            continue
        if tok.type == tokenize.STRING:
            prefix = tok.string[: len(tok.string) - len(tok.string.lstrip("rRbBuUfF"))]
            if "f" not in prefix.lower():
                continue
        raise GateError(f"line {tok.start[0]}: non-ASCII {tokenize.tok_name[tok.type]} "
                        f"{tok.string[:30]!r}; identifiers and f-strings must be ASCII")


def _check_shape(tree: ast.AST) -> None:
    """Depth and size, iteratively (no recursion over untrusted input)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise GateError(f"{_where(node)}nesting deeper than {MAX_DEPTH} levels")
        if nodes > MAX_NODES:
            raise GateError(f"more than {MAX_NODES} syntax nodes")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _name_ok(name: str | None, node: ast.AST, what: str, plural: str = "abilities") -> None:
    if name is None:
        return
    if not name.isascii() or not name.isidentifier():
        raise GateError(f"{_where(node)}{what} {name!r:.40} is not an ASCII identifier")
    if name.startswith("_"):
        raise GateError(f"{_where(node)}{what} {name!r:.40} starts with '_'")
    if name in FORBIDDEN_NAMES:
        raise GateError(f"{_where(node)}{what} {name!r} is not available to {plural}")


def _check_constant(node: ast.Constant) -> None:
    value: object = node.value
    if value is None or type(value) in (bool, float):
        return
    if type(value) is int:
        assert isinstance(value, int)
        if value.bit_length() > MAX_INT_BITS:
            raise GateError(f"{_where(node)}integer constant of {value.bit_length()} bits; at "
                            f"most {MAX_INT_BITS}")
        return
    if type(value) is str:
        assert isinstance(value, str)
        if len(value) > MAX_STR_CONSTANT:
            raise GateError(f"{_where(node)}string constant of {len(value)} characters; at "
                            f"most {MAX_STR_CONSTANT}")
        return
    raise GateError(f"{_where(node)}{type(value).__name__} constants are not allowed")


def _check_function(node: ast.FunctionDef | ast.Lambda) -> None:
    args = node.args
    if args.posonlyargs or args.vararg or args.kwarg or args.kwonlyargs:
        raise GateError(f"{_where(node)}parameters must be plain names (no /, *, ** or "
                        "keyword-only parameters)")
    if args.defaults or args.kw_defaults:
        raise GateError(f"{_where(node)}parameters may not have default values")
    for arg in args.args:
        if arg.annotation is not None or arg.type_comment:
            raise GateError(f"{_where(node)}annotations are not allowed")
    if isinstance(node, ast.FunctionDef):
        if node.decorator_list:
            raise GateError(f"{_where(node)}decorators are not allowed")
        if node.returns is not None or node.type_comment:
            raise GateError(f"{_where(node)}annotations are not allowed")


def _check_node(node: ast.AST, bound: set[str], contract: Contract) -> None:
    plural = contract.plural
    if type(node) not in ALLOWED_NODES:
        raise GateError(f"{_where(node)}{type(node).__name__} is not allowed in "
                        f"{contract.what}")
    if isinstance(node, ast.Name):
        _name_ok(node.id, node, "name", plural)
        if isinstance(node.ctx, ast.Load) and node.id not in bound and (
                node.id not in RUNTIME_NAMES and node.id not in contract.metadata):
            raise GateError(f"{_where(node)}unknown name {node.id!r}: not assigned in the "
                            f"{contract.kind} and not provided by the runtime")
    elif isinstance(node, ast.Attribute):
        _name_ok(node.attr, node, "attribute", plural)
        if node.attr not in ALLOWED_ATTRIBUTES:
            raise GateError(f"{_where(node)}attribute {node.attr!r} is not available; "
                            f"{plural} may use {', '.join(sorted(ALLOWED_ATTRIBUTES))}")
        if not isinstance(node.ctx, ast.Load):
            raise GateError(f"{_where(node)}assigning or deleting attributes is not allowed")
    elif isinstance(node, (ast.FunctionDef, ast.Lambda)):
        _check_function(node)
        if isinstance(node, ast.FunctionDef):
            _name_ok(node.name, node, "function name", plural)
        for arg in node.args.args:
            _name_ok(arg.arg, node, "parameter", plural)
    elif isinstance(node, ast.keyword):
        if node.arg is None:
            raise GateError(f"{_where(node)}'**' arguments are not allowed")
        _name_ok(node.arg, node, "keyword", plural)
    elif isinstance(node, ast.ExceptHandler):
        if node.type is None:
            raise GateError(f"{_where(node)}a bare 'except:' is not allowed; name the "
                            "exception (e.g. except ValueError:)")
        _name_ok(node.name, node, "exception name", plural)
    elif isinstance(node, ast.Constant):
        _check_constant(node)
    elif isinstance(node, ast.FormattedValue):
        spec = node.format_spec
        if spec is not None:
            text = "".join(v.value for v in getattr(spec, "values", [])
                           if isinstance(v, ast.Constant) and isinstance(v.value, str))
            if (not isinstance(spec, ast.JoinedStr)
                    or not all(isinstance(v, ast.Constant) for v in spec.values)
                    or not _FORMAT_SPEC.fullmatch(text)):
                raise GateError(f"{_where(node)}f-string format spec must be a short "
                                "constant such as :.1f or :>3")
    elif isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise GateError(f"{_where(node)}'**' unpacking in a dict is not allowed")
    elif isinstance(node, ast.Call) and any(isinstance(a, ast.Starred) for a in node.args):
        raise GateError(f"{_where(node)}'*' arguments are not allowed")


def _bound_names(tree: ast.AST) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(tree):  # iterative (a deque), after the depth check
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


def _without_docstring(tree: ast.Module) -> list[ast.stmt]:
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # a module docstring
    return body


def _literal(stmt: ast.Assign, name: str) -> Any:
    try:
        return ast.literal_eval(stmt.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise GateError(f"{_where(stmt)}{name} must be a literal value") from None


def _metadata(tree: ast.Module) -> tuple[dict[str, Any], dict[str, Any]]:
    """An ability's layout: metadata assignments and ``def execute(ctx)``, nothing else."""
    body = _without_docstring(tree)
    values: dict[str, Any] = {}
    functions = []
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef):
            functions.append(stmt)
            continue
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            raise GateError(f"{_where(stmt)}at the top level only metadata assignments "
                            f"({', '.join(METADATA_NAMES)}) and def execute(ctx) are allowed")
        name = stmt.targets[0].id
        if name not in METADATA_NAMES:
            raise GateError(f"{_where(stmt)}{name!r} is not metadata; top-level names are "
                            f"{', '.join(METADATA_NAMES)}")
        if name in values:
            raise GateError(f"{_where(stmt)}{name} is assigned twice")
        values[name] = _literal(stmt, name)
    if len(functions) != 1 or functions[0].name != "execute":
        raise GateError("an ability defines exactly one top-level function, def execute(ctx)")
    execute = functions[0]
    if [a.arg for a in execute.args.args] != ["ctx"]:
        raise GateError(f"{_where(execute)}execute takes exactly one parameter, ctx")
    _limit_functions(execute)
    missing = [k for k in METADATA_NAMES if k != "ARGS" and k not in values]
    if missing:
        raise GateError(f"missing metadata: {', '.join(missing)} (an ability assigns "
                        f"{', '.join(METADATA_NAMES)} as literals)")
    return values, {}


def _limit_functions(node: ast.AST) -> None:
    """At most MAX_FUNCTIONS functions and lambdas in ``node``, nested ones included."""
    count = sum(isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in ast.walk(node))
    if count > MAX_FUNCTIONS:
        raise GateError(f"more than {MAX_FUNCTIONS} functions")


def _policy_layout(tree: ast.Module) -> tuple[dict[str, Any], dict[str, Any]]:
    """A policy's layout: metadata and UPPER_CASE constants assigned literals, functions
    (``decide(obs, memory)`` and any helpers), nothing else."""
    values: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    functions: dict[str, ast.FunctionDef] = {}
    names = ", ".join(POLICY_METADATA)
    for stmt in _without_docstring(tree):
        if isinstance(stmt, ast.FunctionDef):
            if stmt.name in functions:
                raise GateError(f"{_where(stmt)}function {stmt.name!r} is defined twice")
            functions[stmt.name] = stmt
            continue
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)):
            raise GateError(f"{_where(stmt)}at the top level a policy has only metadata "
                            f"({names}), UPPER_CASE constants and functions (def "
                            "decide(obs, memory) and its helpers)")
        name = stmt.targets[0].id
        if name not in POLICY_METADATA and not _CONSTANT.fullmatch(name):
            raise GateError(f"{_where(stmt)}top-level name {name!r} is neither metadata "
                            f"({names}) nor an UPPER_CASE constant")
        if name in values or name in constants:
            raise GateError(f"{_where(stmt)}{name} is assigned twice")
        (values if name in POLICY_METADATA else constants)[name] = _literal(stmt, name)
    clash = sorted(set(functions) & (set(values) | set(constants)))
    if clash:
        raise GateError(f"{clash[0]} is both a function and a constant")
    decide = functions.get("decide")
    if decide is None:
        raise GateError("a policy defines def decide(obs, memory) at the top level")
    if [a.arg for a in decide.args.args] != ["obs", "memory"]:
        raise GateError(f"{_where(decide)}decide takes exactly two parameters, obs and "
                        "memory")
    _limit_functions(tree)
    missing = [k for k in POLICY_METADATA if k != "PARENT" and k not in values]
    if missing:
        raise GateError(f"missing metadata: {', '.join(missing)} (a policy assigns {names} "
                        "as literals; PARENT may be left out)")
    return values, constants


ABILITY = Contract(kind="ability", what="an ability", plural="abilities",
                   metadata=METADATA_NAMES, entry="execute", layout=_metadata)
POLICY = Contract(kind="policy", what="a policy", plural="policies", metadata=POLICY_METADATA,
                  entry="decide", layout=_policy_layout)
CONTRACTS = {c.kind: c for c in (ABILITY, POLICY)}
"""The kinds of source the sandbox runs, by name."""


def gate(source: object, contract: Contract = ABILITY) -> Gated:
    """Check a source file against ``contract``; its metadata values, tree and constants,
    or GateError saying why not."""
    try:
        text = _check_text(source)
        try:
            _check_tokens(text)
            tree = ast.parse(text, filename=f"<{contract.kind}>", mode="exec")
        except SyntaxError as exc:
            raise GateError(f"line {exc.lineno}: syntax error: {exc.msg}") from None
        except (tokenize.TokenError, IndentationError) as exc:
            raise GateError(f"cannot read the source: {exc}") from None
        except (RecursionError, MemoryError):
            raise GateError(f"the source is nested too deeply to parse (nesting deeper "
                            f"than {MAX_DEPTH} levels is refused anyway)") from None
        _check_shape(tree)
        bound = _bound_names(tree)
        for node in ast.walk(tree):
            _check_node(node, bound, contract)
        values, constants = contract.layout(tree)
    except GateError:
        raise
    except Exception as exc:  # fail closed: anything unexpected is a rejection
        raise GateError(f"the source could not be validated ({type(exc).__name__}: "
                        f"{str(exc)[:200]})") from None
    return Gated(values, tree, constants)
