"""Layers 2 and 3: RestrictedPython's transformer, then the step budget and size guards.

``compile_ability`` takes a source that passed the gate, lets RestrictedPython's
``RestrictingNodeTransformer`` rewrite it (attribute, item, iteration and write access go
through guard functions the runtime supplies; its own checks refuse what it knows to be
dangerous), and then rewrites the result once more:

- ``_step_()`` at the start of every function body and every loop body, and as the first
  thing every ``except`` handler and ``finally`` block does: the step budget. Once it is
  spent, every later step raises again, so a handler or ``finally`` cannot catch it away.
  Then ``_escalate_()``, so that no handler keeps a RecursionError or MemoryError (how deep
  recursion goes and when memory runs out depend on the process, not on the code);
- lambdas become ``_step_() or <body>``;
- ``+``, ``-``, ``*``, ``**``, ``<<`` and ``%`` become calls of size-guarded functions,
  since they run in C and could build huge values in one step (and an integer past
  ``MAX_INT_BITS`` whichever way it is made);
- every comparison but ``is``/``is not`` becomes ``_compare_(a, b, "op")``, which charges
  the step budget for the items it looks at in C (``x in a_long_list`` or ``==`` between big
  values costs steps, as a loop over them would); a chain ``a < b < c`` becomes
  ``_chain_(a, ("<", "<"), lambda: b, lambda: c)``, which keeps Python's order and
  short-circuit (``c`` is not evaluated when ``a < b`` is false); the key of ``d[k] = v``
  and ``del d[k]`` becomes ``_key_(k)``, which charges for hashing it;
- every f-string becomes ``_fstr_(<f-string>)``, which bounds and counts its length, and
  every ``{value!c:spec}`` in it becomes ``{_fval_(value, c, 'spec')}``: CPython would
  format any object (a function's text holds its address), ``_fval_`` plain data only.

The injected names start with ``_``, which the gate refuses in ability code, so the code can
neither call nor replace them. Policies (``agent_world.policies``) pass the same gate under
their own contract and are rewritten exactly the same way.
"""

from __future__ import annotations

import ast
from types import CodeType
from typing import TYPE_CHECKING, Any

from RestrictedPython.transformer import RestrictingNodeTransformer

from agent_world.sandbox.gate import ABILITY, Contract, Gated, GateError, gate

if TYPE_CHECKING:
    from agent_world.core.abilities import AbilityMeta

__all__ = ["BINARY_GUARDS", "COMPARISONS", "compile_ability", "compile_gated",
           "compile_source"]

COMPARISONS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}
"""The comparisons ``_compare_`` makes (``is`` and ``is not`` look at no items)."""

BINARY_GUARDS: dict[type[ast.operator], str] = {
    ast.Add: "_add_",
    ast.Sub: "_sub_",
    ast.Mult: "_mul_",
    ast.Pow: "_pow_",
    ast.LShift: "_lshift_",
    ast.Mod: "_mod_",
}


def _step_stmt() -> ast.stmt:
    return ast.Expr(ast.Call(ast.Name("_step_", ast.Load()), [], []))


def _step_expr() -> ast.expr:
    return ast.Call(ast.Name("_step_", ast.Load()), [], [])


def _handler_prologue() -> list[ast.stmt]:
    return [_step_stmt(), ast.Expr(ast.Call(ast.Name("_escalate_", ast.Load()), [], []))]


def _constant_spec(spec: ast.expr | None) -> str | None:
    """The text of an f-string format spec, which the gate allowed only as a constant."""
    if spec is None:
        return None
    if isinstance(spec, ast.JoinedStr) and all(
            isinstance(v, ast.Constant) and isinstance(v.value, str) for v in spec.values):
        return "".join(v.value for v in spec.values)  # type: ignore[attr-defined]
    raise GateError("f-string format spec must be a short constant such as :.1f or :>3")


class BudgetRewriter(ast.NodeTransformer):
    """Injects the step budget and the size guards (after RestrictedPython ran)."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        self.generic_visit(node)
        node.body.insert(0, _step_stmt())
        return node

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        self.generic_visit(node)
        node.body = ast.BoolOp(ast.Or(), [_step_expr(), node.body])
        return node

    def visit_For(self, node: ast.For) -> Any:
        self.generic_visit(node)
        node.body.insert(0, _step_stmt())
        return node

    def visit_While(self, node: ast.While) -> Any:
        self.generic_visit(node)
        node.body.insert(0, _step_stmt())
        return node

    def visit_Try(self, node: ast.Try) -> Any:
        self.generic_visit(node)
        for handler in node.handlers:
            handler.body[:0] = _handler_prologue()
        if node.finalbody:
            node.finalbody[:0] = _handler_prologue()
        return node

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        self.generic_visit(node)
        guard = BINARY_GUARDS.get(type(node.op))
        if guard is None:
            return node
        return ast.Call(ast.Name(guard, ast.Load()), [node.left, node.right], [])

    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        if not all(type(op) in COMPARISONS for op in node.ops):
            return node  # a chain with ``is`` in it: compares no items itself
        ops: list[ast.expr] = [ast.Constant(COMPARISONS[type(op)]) for op in node.ops]
        if len(node.ops) == 1:
            return ast.Call(ast.Name("_compare_", ast.Load()),
                            [node.left, node.comparators[0], ops[0]], [])
        if any(isinstance(n, ast.NamedExpr) for c in node.comparators for n in ast.walk(c)):
            # A lambda would keep the name to itself.
            raise GateError("an assignment expression (:=) may not stand inside a chained "
                            "comparison; assign it on a line of its own")
        thunks = [ast.Lambda(ast.arguments([], [], None, [], [], None, []), c)
                  for c in node.comparators]
        return ast.Call(ast.Name("_chain_", ast.Load()),
                        [node.left, ast.Tuple(ops, ast.Load()), *thunks], [])

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) and not isinstance(node.slice, ast.Slice):
            # ``d[k] = v`` and ``del d[k]`` hash the key (a read goes through ``_getitem_``).
            node.slice = ast.Call(ast.Name("_key_", ast.Load()), [node.slice], [])
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> Any:
        self.generic_visit(node)
        return ast.Call(ast.Name("_fstr_", ast.Load()), [node], [])

    def visit_FormattedValue(self, node: ast.FormattedValue) -> Any:
        # The conversion and spec move into the guard, which returns text; CPython then
        # inserts that text as it is (FORMAT_VALUE of a str with no spec is the identity).
        call = ast.Call(ast.Name("_fval_", ast.Load()),
                        [self.visit(node.value), ast.Constant(node.conversion),
                         ast.Constant(_constant_spec(node.format_spec))], [])
        return ast.FormattedValue(value=call, conversion=-1, format_spec=None)


def compile_gated(gated: Gated, name: str, kind: str = "ability") -> CodeType:
    """Restrict, budget and compile a tree that passed the gate (it is consumed); ``kind``
    names the code object (``<ability NAME>``, ``<policy NAME>``)."""
    errors: list[str] = []
    warnings: list[str] = []
    used: dict[str, bool] = {}
    try:
        tree = RestrictingNodeTransformer(errors, warnings, used).visit(gated.tree)
    except Exception as exc:  # fail closed
        raise GateError(f"RestrictedPython could not transform the source "
                        f"({type(exc).__name__}: {str(exc)[:200]})") from None
    if errors:
        raise GateError(f"RestrictedPython: {errors[0]}")
    try:
        tree = BudgetRewriter().visit(tree)
        ast.fix_missing_locations(tree)
        return compile(tree, f"<{kind} {name}>", "exec", dont_inherit=True)
    except GateError:
        raise
    except Exception as exc:  # fail closed
        raise GateError(f"the source could not be compiled ({type(exc).__name__}: "
                        f"{str(exc)[:200]})") from None


def compile_source(source: object, name: str = "ability",
                   contract: Contract = ABILITY) -> CodeType:
    """Gate, restrict and compile (what a worker does; the host checked the metadata)."""
    return compile_gated(gate(source, contract), name, contract.kind)


def compile_ability(source: object) -> tuple[AbilityMeta, CodeType]:
    """Gate a source, check its metadata, restrict and compile it; GateError says why one
    is refused. (The worker uses ``compile_source`` and so never imports the core.)"""
    from agent_world.core.abilities import (  # noqa: PLC0415 - keeps workers light
        AbilityError,
        AbilityMeta,
    )

    gated = gate(source)
    try:
        meta = AbilityMeta.from_source_values(gated.values)
    except AbilityError as exc:
        raise GateError(str(exc)) from None
    return meta, compile_gated(gated, meta.name)
