"""docs/world.md's tables are written from the program's definitions and never drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_world import worlddoc
from agent_world.core.items import ITEMS


def test_the_committed_document_is_current() -> None:
    assert worlddoc.main(["--check"]) == 0, "run: python -m agent_world.worlddoc"


def test_every_table_appears_in_the_document() -> None:
    text = worlddoc.DOC.read_text(encoding="utf-8")
    for name in worlddoc.TABLES:
        assert f"<!-- table: {name} -->" in text, name


def test_a_drifted_table_is_found_and_rewritten(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "world.md"
    current = worlddoc.DOC.read_text(encoding="utf-8")
    doc.write_text(current.replace("| berries | food | 2 |", "| berries | food | 99 |"),
                   encoding="utf-8")
    assert worlddoc.main(["--check", "--doc", str(doc)]) == 1
    assert "tables out of date: items" in capsys.readouterr().err
    assert worlddoc.main(["--doc", str(doc)]) == 0
    assert doc.read_text(encoding="utf-8") == current
    assert f"| berries | food | {ITEMS['berries'].value:g} |" in current


def test_an_unknown_table_marker_is_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "world.md"
    doc.write_text("<!-- table: dragons -->\n<!-- /table -->\n", encoding="utf-8")
    assert worlddoc.main(["--check", "--doc", str(doc)]) == 2
    assert "marker 'dragons'" in capsys.readouterr().err
