"""`taxnav ask`'s reading of an answer: each answer claim's mark beside its verdict, and the
alternatives with the option that asks again about one."""

from __future__ import annotations

from shared.contracts.api import Alternative, Answer, QuestionResult, Sentence
from taxnav.ask import render


def _text(result: QuestionResult) -> list[str]:
    return [text.plain for _, text in render(result)]


def test_marks_and_alternatives_are_shown_and_the_detail_carries_no_mark() -> None:
    answer = Answer(
        sentences=[
            Sentence(text="Tips are taxable as earnings.", citations=["EIM07900#c0.p1"], verdict="supported", reason="quoted", relevance="answering", confidence=0.8),
            Sentence(text="A tronc is run by a troncmaster.", citations=["EIM07900#c0.p2"], verdict="supported", reason="quoted", relevance="background", confidence=0.2),
            Sentence(text="Further detail.", citations=["EIM07900#c0.p3"], verdict="supported", reason="quoted", role="detail"),
        ],
        faithfulness=1.0,
        alternatives=[Alternative(section_id="EIM11835", title="Organised arrangements for sharing tips", url="https://www.gov.uk/x", confidence=0.44)],
    )
    lines = _text(QuestionResult(id="q", question="Do I pay tax on tips?", status="answered", answer=answer))
    assert any(line.endswith("(answers) supported") and line.startswith("Tips are taxable") for line in lines)
    assert any(line.endswith("(background) supported") for line in lines)
    assert any(line.startswith("Further detail.") and line.endswith("] supported") for line in lines)
    at = lines.index("Or did you mean")
    assert lines[at + 1] == "EIM11835 Organised arrangements for sharing tips (--focus EIM11835)"


def test_no_alternatives_no_heading() -> None:
    answer = Answer(sentences=[Sentence(text="Tips are taxable.", citations=["EIM07900#c0.p1"], verdict="supported", reason="quoted")], faithfulness=1.0)
    assert "Or did you mean" not in _text(QuestionResult(id="q", question="Tips?", status="answered", answer=answer))
