"""The action set: validation on construction, lenient parsing at the edge, the JSON schema."""

from __future__ import annotations

import math

import pytest

from agent_world.core.actions import (
    ACTIONS,
    MAX_QTY,
    MAX_TEXT,
    Action,
    ActionError,
    action_schema,
    parse_action,
)
from agent_world.core.items import ITEMS

# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "args"), [
    ("idle", {}),
    ("idle", {"ticks": 100}),
    ("move_to", {"x": 0, "y": 0}),
    ("move_to", {"target": 3}),
    ("use", {"item": "herb"}),
    ("use", {"target": 9}),
    ("say", {"text": "hi", "to": 4}),
    ("say", {"text": "x" * MAX_TEXT}),
    ("give", {"target": 2, "item": "gold", "qty": MAX_QTY}),
    ("trade_offer", {"target": 2, "give": {"apple": 1, "wood": 2, "stone": 3, "iron": 4},
                     "want": {"gold": 5}}),
    ("trade_accept", {"offer": 2**62}),
    ("defend", {}),
])
def test_valid_actions_are_built(name, args) -> None:
    action = Action(name=name, args=args)
    assert action.spec is ACTIONS[name]
    assert Action.from_dict(action.to_dict()) == action


@pytest.mark.parametrize(("name", "args", "message"), [
    ("atack", {"target": 2}, "unknown action 'atack'; did you mean 'attack'?"),
    ("fly", {}, "unknown action 'fly' (actions: idle,"),
    ("idle", {"tick": 5}, "idle: unknown argument 'tick' (arguments: ticks)"),
    ("defend", {"target": 5}, "defend: unknown argument 'target' (arguments: none)"),
    ("attack", {}, "attack: missing argument 'target'"),
    ("attack", {"target": 0}, "attack.target must be a whole number in [1, "),
    ("attack", {"target": True}, "attack.target must be a whole number"),
    ("attack", {"target": 3.0}, "attack.target must be a whole number"),
    ("idle", {"ticks": 0}, "idle.ticks must be a whole number in [1, 100], got 0"),
    ("idle", {"ticks": 101}, "idle.ticks must be a whole number in [1, 100], got 101"),
    ("drop", {"item": "appel"}, "did you mean 'apple'?"),
    ("drop", {"item": 7}, "drop.item must be an item kind"),
    ("say", {"text": "   "}, "say.text must be non-empty text"),
    ("say", {"text": "x" * (MAX_TEXT + 1)}, "say.text must be non-empty text of at most 160"),
    ("say", {"text": "a\nb"}, "say.text must not contain control characters"),
    ("say", {"text": "a\x7fb"}, "say.text must not contain control characters"),
    ("trade_offer", {"target": 2, "give": {}, "want": {"gold": 1}},
     "trade_offer.give must map 1-4 item kinds"),
    ("trade_offer", {"target": 2, "give": dict.fromkeys(list(ITEMS)[:5], 1),
                     "want": {"gold": 1}}, "trade_offer.give must map 1-4"),
    ("trade_offer", {"target": 2, "give": {"gems": 1}, "want": {"gold": 1}},
     "trade_offer.give: 'gems' is not an item kind"),
    ("trade_offer", {"target": 2, "give": {"apple": 0}, "want": {"gold": 1}},
     "trade_offer.give['apple'] must be a whole number in [1, 10000], got 0"),
    ("trade_offer", {"target": 2, "give": {"apple": MAX_QTY + 1}, "want": {"gold": 1}},
     "must be a whole number in [1, 10000]"),
    ("trade_offer", {"target": 2, "give": {"apple": True}, "want": {"gold": 1}},
     "must be a whole number"),
    ("trade_offer", {"target": 2, "give": [["apple", 1]], "want": {"gold": 1}},
     "trade_offer.give must map"),
    ("move_to", {}, "move_to: give exactly one of {x, y} or {target}"),
    ("move_to", {"x": 3}, "move_to: give exactly one of {x, y} or {target}"),
    ("move_to", {"x": 3, "y": 4, "target": 5}, "move_to: give exactly one of"),
    ("use", {"item": "herb", "target": 5}, "use: give exactly one of {target} or {item}"),
    ("trade_accept", {"offer": 0}, "trade_accept.offer must be a whole number in [1, "),
])
def test_invalid_actions_cannot_be_built(name, args, message) -> None:
    with pytest.raises(ActionError) as info:
        Action(name=name, args=args)
    assert message in str(info.value)


def test_args_must_be_a_mapping() -> None:
    with pytest.raises(ActionError, match="idle: args must be an object"):
        Action(name="idle", args=[("ticks", 3)])


def test_action_error_is_a_value_error() -> None:
    assert issubclass(ActionError, ValueError)


def test_action_reads_and_prints_its_arguments() -> None:
    action = Action(name="give", args={"target": 4, "item": "apple", "qty": 2})
    assert action.get("qty") == 2
    assert action.get("nothing", "x") == "x"
    assert str(action) == "give(target=4, item=apple, qty=2)"
    assert action.to_dict() == {"name": "give", "args": {"target": 4, "item": "apple",
                                                          "qty": 2}}


def test_every_spec_names_itself_and_its_one_of_groups_are_optional_arguments() -> None:
    for name, spec in ACTIONS.items():
        assert spec.name == name
        for group in spec.one_of:
            for key in group:
                assert key in spec.args
                assert not spec.args[key].required


# -- parse_action ----------------------------------------------------------------------------


def test_parse_accepts_the_decision_form_and_the_record_form() -> None:
    want = Action(name="attack", args={"target": 7})
    assert parse_action({"action": "attack", "args": {"target": 7}}) == want
    assert parse_action({"name": "attack", "args": {"target": 7}}) == want
    assert parse_action({"action": "  attack ", "args": {"target": 7}}) == want


@pytest.mark.parametrize("raw", ["17", " 17 ", "#17", 17.0, "0017"])
def test_parse_reads_integer_spellings_as_whole_numbers(raw) -> None:
    assert parse_action({"action": "attack", "args": {"target": raw}}).args["target"] == 17


@pytest.mark.parametrize("raw", [17.5, "17a", "-17", "+17", "1e3", True, None, [17],
                                 math.inf, math.nan, "", "#"])
def test_parse_guesses_nothing_else_about_numbers(raw) -> None:
    with pytest.raises(ActionError, match=r"attack\.target must be a whole number"):
        parse_action({"action": "attack", "args": {"target": raw}})


@pytest.mark.parametrize("raw", ["²", "١٢", "9" * 5000])
def test_parse_of_digit_like_strings_gives_a_number_or_an_action_error(raw) -> None:
    """"²".isdigit() is true but int("²") raises ValueError; so does int() of a 5000-digit
    string (Python's int max-str-digits limit). parse_action must answer ActionError."""
    try:
        action = parse_action({"action": "attack", "args": {"target": raw}})
    except ActionError:
        return
    assert action.args["target"] == int(raw)


def test_parse_normalises_whitespace_in_text() -> None:
    action = parse_action({"action": "say", "args": {"text": "  Hello\n\tthere   friend "}})
    assert action.args["text"] == "Hello there friend"
    long_spaced = "a" + " " * 300 + "b"
    assert parse_action({"action": "say", "args": {"text": long_spaced}}).args["text"] == "a b"


def test_parse_reads_goods_quantities_leniently() -> None:
    action = parse_action({"action": "trade_offer",
                           "args": {"target": "3", "give": {"apple": "2"},
                                    "want": {"gold": 5.0}}})
    assert action == Action(name="trade_offer", args={"target": 3, "give": {"apple": 2},
                                                      "want": {"gold": 5}})


def test_parse_treats_missing_or_null_args_as_none() -> None:
    assert parse_action({"action": "defend"}) == Action(name="defend")
    assert parse_action({"action": "defend", "args": None}) == Action(name="defend")


@pytest.mark.parametrize(("obj", "message"), [
    ("attack", "an action must be a JSON object, got str"),
    ([{"action": "idle"}], "an action must be a JSON object, got list"),
    ({}, "an action needs a string field 'action', got None"),
    ({"action": 3}, "an action needs a string field 'action', got 3"),
    ({"action": "idle", "args": [1]}, "idle: args must be an object, got list"),
    ({"action": "idle", "args": {"ticks": 5, "why": "bored"}}, "unknown argument 'why'"),
    ({"action": "dance"}, "unknown action 'dance'"),
    ({"action": "drop", "args": {"item": "Apple"}}, "did you mean 'apple'?"),
])
def test_parse_rejects_what_it_cannot_read(obj, message) -> None:
    with pytest.raises(ActionError) as info:
        parse_action(obj)
    assert message in str(info.value)


def test_parse_round_trips_every_valid_action() -> None:
    for action in (Action(name="say", args={"text": "Good day, Ada!", "to": 3}),
                   Action(name="wander", args={"ticks": 30}),
                   Action(name="trade_offer", args={"target": 2, "give": {"gold": 3},
                                                    "want": {"apple": 1}})):
        assert parse_action(action.to_dict()) == action


# -- action_schema ---------------------------------------------------------------------------


def test_schema_has_one_variant_per_action_with_the_same_arguments() -> None:
    variants = action_schema()["oneOf"]
    assert [v["properties"]["action"]["const"] for v in variants] == list(ACTIONS)
    for variant in variants:
        spec = ACTIONS[variant["properties"]["action"]["const"]]
        args = variant["properties"]["args"]
        assert variant["required"] == ["action", "args"]
        assert set(args["properties"]) == set(spec.args)
        assert args["required"] == [k for k, a in spec.args.items() if a.required]
        assert args["additionalProperties"] is False


def test_schema_types_follow_argument_kinds() -> None:
    variants = {v["properties"]["action"]["const"]: v["properties"]["args"]["properties"]
                for v in action_schema()["oneOf"]}
    assert variants["attack"]["target"] == {"type": "integer", "minimum": 1, "maximum": 2**62}
    assert variants["drop"]["item"] == {"type": "string", "enum": list(ITEMS)}
    assert variants["say"]["text"]["maxLength"] == MAX_TEXT
    assert variants["trade_offer"]["give"]["additionalProperties"] == {
        "type": "integer", "minimum": 1, "maximum": MAX_QTY}
    assert variants["trade_offer"]["give"]["propertyNames"] == {"enum": list(ITEMS)}
    assert variants["idle"]["ticks"]["minimum"] == 1
    assert variants["defend"] == {}


def test_schema_bounds_match_the_validation_bounds() -> None:
    """An action the schema allows should not be rejected by Action: idle.ticks=1000 passes
    the schema (no "maximum") but Action allows at most 100."""
    for variant in action_schema()["oneOf"]:
        spec = ACTIONS[variant["properties"]["action"]["const"]]
        props = variant["properties"]["args"]["properties"]
        for key, arg in spec.args.items():
            if arg.kind == "int":
                assert props[key].get("maximum") == arg.high, f"{spec.name}.{key}"
