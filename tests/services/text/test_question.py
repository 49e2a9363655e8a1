"""What a question asks: its weighted terms (the lexicon and the acronyms the manual defines), its parts, its kind."""

from __future__ import annotations

import json
import re

import pytest

from services.text.question import ASKS_EXAMPLE, employment_tie, names_employment, question_kind, sub_questions, question_weights
from services.text.lexicon import LAY_TO_MANUAL, expand, expansions
from services.text.terms import CorpusStats, defined_acronyms
from shared.config import LocalSelectionSettings

EXPANSION_WEIGHT = LocalSelectionSettings().expansion_weight


def test_lexicon_holds_general_tax_vocabulary_not_eval_wording(corpus_dir) -> None:  # noqa: ANN001
    assert expansions("Is my paternity pay taxed?") == ["statutory paternity pay"]  # not maternity pay
    assert expand("tips and more tips").count("troncs") == 1
    assert "tips troncs" not in expansions("the tipster")  # whole words only
    assert expansions("I take rubbish to the tip in the works van") == []  # the other tip
    assert expansions("What is the official rate of interest?") == []
    # no entry matches the wording of a question of the team's dev sets (held-out questions,
    # written later in everyday words, may well use the general vocabulary: "tips")
    eval_dir = corpus_dir.parent / "eval"
    files = [eval_dir / "questions.jsonl", eval_dir / "dialogs.jsonl"]
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    questions = [q for row in rows for q in [row.get("question", ""), *(t.get("question", "") for t in row.get("turns", []))] if q]
    assert len(questions) > 60
    for lay, _ in LAY_TO_MANUAL:
        pattern = re.compile(rf"\b(?:{lay})\b", re.I)
        assert not [q for q in questions if pattern.search(q)], lay


def test_acronyms_the_manual_defines_and_their_synonyms() -> None:
    text = (
        "Employers may enter into PAYE settlement agreements (PSAs). Employment and Support Allowance (ESA) "
        "is paid by DWP. Qualifying low emissions cars (QUALECs) have their own rates. See (UK)."
    )
    assert defined_acronyms(text) == [("PSA", "PAYE settlement agreements"), ("ESA", "Employment and Support Allowance")]
    stats = CorpusStats([text])
    assert stats.synonyms("Can we use a PAYE settlement agreement to do it?") == ["psa"]  # singular too
    assert stats.synonyms("Is an agreement on PAYE settlement possible?") == []  # not the phrase
    assert stats.synonyms("Is ESA taxable?") == ["Employment and Support Allowance"]
    assert stats.synonyms("Is my salary taxable?") == []


def test_sentences_are_weighed_by_the_manuals_own_name_for_what_the_question_names() -> None:
    stats = CorpusStats(
        ["Employment and Support Allowance (ESA) replaced incapacity benefit.", "ESA(IR) is not taxable.", "Salary is taxable.", "Other text."]
    )
    weights = question_weights("I get Employment and Support Allowance. Is it taxable?", stats, EXPANSION_WEIGHT)
    assert "esa" in weights and 0 < weights["esa"] < stats.idf("esa")  # the acronym counts, at less than the asker's words
    assert "esa" not in question_weights("Is my salary taxable?", stats, EXPANSION_WEIGHT)


def test_a_question_is_split_into_the_things_it_asks() -> None:
    assert sub_questions("I moved house. How much is tax-free, and is there a deadline?") == ["How much is tax-free", "is there a deadline?"]
    assert sub_questions("How is it worked out, what rate applies for 2014-15?") == ["How is it worked out", "what rate applies for 2014-15?"]
    assert sub_questions("Is it taxable? Can I claim relief?") == ["Is it taxable?", "Can I claim relief?"]
    # "and" joining two nouns, or a statement, is not a second question
    assert sub_questions("Are heating and lighting taxable?") == ["Are heating and lighting taxable?"]
    assert sub_questions("My employer pays for it.") == []


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much can my employer pay me per mile tax-free?", "figure"),
        ("What is the limit on exempt removal expenses?", "figure"),
        ("When must the P11D be filed?", "date"),
        ("How long can a temporary workplace last?", "date"),
        ("Is a works bus taxable?", "yes_no"),
        ("Can I claim relief for my uniform?", "yes_no"),
        ("What counts as a uniform?", "definition"),
        ("What does pooled car mean?", "definition"),
        ("Tell me about pool cars.", "other"),
        ("What are benefits in kind?", "definition"),
        # "what are the ..." asks what a thing's rules or conditions are, not what a word means
        ("What are the rules on pool cars?", "other"),
        ("What are the conditions for the exemption?", "other"),
        # yes or no about an amount is a ruling; asking whether there is a limit, or for the most, asks for the figure
        ("Is the whole amount of the allowance taxable?", "yes_no"),
        ("Are gifts worth up to the limit exempt?", "figure"),
        ("Is there a maximum amount for removal expenses?", "figure"),
        ("What's the most my employer can pay without tax?", "figure"),
    ],
)
def test_question_kind(question: str, kind: str) -> None:
    assert question_kind(question) == kind


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("Is there a worked example of the van benefit?", True),
        ("Can you give an example?", True),
        ("How is that benefit worked out?", False),  # asks how, not for an example
        ("How much is the van benefit?", False),
    ],
)
def test_a_question_asks_for_an_example_only_in_so_many_words(question: str, asks: bool) -> None:
    assert bool(ASKS_EXAMPLE.search(question)) is asks


def test_self_employed_is_no_tie_to_a_job() -> None:
    """"Self-employed" is employment income's opposite: it neither ties a question to a job nor
    names an employer, while an employee, an employer, staff or pay do."""
    for trader in ("I'm self-employed. Can I claim my van?", "as a self employed plumber", "my self-employment income"):
        assert not employment_tie(trader) and not names_employment(trader), trader
    for tied in ("I'm employed by a charity", "my employer pays", "our staff", "I am an employee, and self-employed at weekends"):
        assert employment_tie(tied) and names_employment(tied), tied
    assert employment_tie("I work from home") and not names_employment("I work from home")  # working alone is no employer
