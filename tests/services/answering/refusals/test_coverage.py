"""low_coverage's evidence (services/answering/refusals/coverage.py): a rule dated after the
manual, a named subject the manual lacks; and the refusal decide makes of them."""

from __future__ import annotations

import pytest

from services.answering.refusals import decide
from services.answering.refusals.coverage import later_rule, missing_subjects
from services.text.terms import CorpusStats
from shared.contracts.api import Refusal
from shared.contracts.corpus import Page
from shared.contracts.refusals import SelectionFinding
from tests.services.answering.refusals.pages import PAGES_2014


def later_rule_refusal(question: str, pages: list[Page]) -> Refusal | None:
    """The check's finding as selection records it, and the refusal decide makes of it."""
    found = later_rule(question, pages)
    return decide.selection(SelectionFinding(candidates=["EIM1"], kept=[p.section_id for p in pages], later_rule=found))


@pytest.mark.parametrize(
    "question",
    [
        "How is the 2019 loan charge on disguised remuneration loans worked out?",
        "How does the April 2017 exemption for employer-funded pensions advice work?",
        "What changed under the rules introduced in April 2021 for off-payroll working?",
        # a rule noun dated by when it applies from: the rule began then, the manual lacks it
        "Who qualifies for the relief since 2019 on employer-paid training courses?",
    ],
)
def test_a_rule_dated_after_the_manual_is_low_coverage(question: str) -> None:
    refusal = later_rule_refusal(question, PAGES_2014)
    assert refusal is not None and refusal.category == "low_coverage"
    assert refusal.evidence.missing and refusal.evidence.searched == ["EIM22790", "EIM22915"]
    assert "after the manual's pages were last updated (2014-09-08)" in refusal.message


@pytest.mark.parametrize(
    "question",
    [
        "What's the van benefit charge for the 2025-26 tax year?",  # a later period: stale, not this
        "What is the charge in the 2025 tax year?",
        "How did the 2009 exemption for homeworking change?",  # a rule dated before the update
        # a figure's noun dated by when it applies from asks for a later period: stale, not this
        "What is the mileage allowance from April 2026?",
        "What are the van benefit charges since 2020?",
        "How do the rules from 6 April 2020 treat my termination payment?",  # the law for a period
        "How does the exemption from April 2013 for homeworking work?",  # dated before the update
    ],
)
def test_a_later_period_or_an_older_rule_is_not_a_later_rule(question: str) -> None:
    assert later_rule(question, PAGES_2014) is None


STATS = CorpusStats(["Salary sacrifice and PAYE settlement agreements (PSAs).", "A relocation allowance of \u00a38,000 is exempt."])


def test_missing_subject_acronym_not_in_the_manual() -> None:
    assert missing_subjects("Under the OpRA rules, how is my car valued?", STATS, ["salary sacrifice"]) == ["OpRA"]
    assert missing_subjects("Can we use PSAs for this?", STATS, []) == []
    assert missing_subjects("Explain the ESOP rules for my options", STATS, []) == ["ESOP"]
    # mentioned in passing, not the subject of the question
    assert missing_subjects("Can my employer pay my fees to a body like the ICAEW?", STATS, []) == []


def test_an_acronym_for_a_name_the_manual_spells_out_is_not_missing() -> None:
    """The manual names the body in full, never by its initials: asked by the initials, it
    is still covered; initials it never spells out are still missing."""
    stats = CorpusStats(["Rates of allowances paid under particular agreements: Electrical Contractors' Association",
                         "The Joint Industry Board sets the rates."])  # fmt: skip
    assert missing_subjects("Which allowances are paid under the ECA agreement?", stats, []) == []
    assert missing_subjects("Are the rates set under the JIB scheme?", stats, []) == []  # "The" dropped
    assert missing_subjects("Under the EOT rules, are my bonuses tax-free?", stats, []) == ["EOT"]
    assert missing_subjects("Under the TJ scheme, what applies?", stats, []) == ["TJ"]  # not the name's own initials


def test_an_acronym_the_question_spells_out_in_the_manuals_words_is_not_missing() -> None:
    """Askers define their own shorthand: "a benefit in kind (BIK)" names its subject in words
    the manual uses throughout, so the acronym the manual never writes is no missing subject;
    a long form the manual lacks ("optional remuneration arrangement") leaves it missing."""
    stats = CorpusStats(["A benefit in kind is taxable.", "The director's loan account was overdrawn.", "Salary sacrifice arrangements."])
    assert missing_subjects("Is a private check-up a benefit in kind (BIK)?", stats, []) == []
    assert missing_subjects("The Directors Loan Account (DLA) is overdrawn: is the (DLA) a benefit?", stats, []) == []
    assert missing_subjects("Is a check-up a BIK?", stats, []) == []  # not asked about as a scheme: never was
    assert missing_subjects("Under the BIK rules, is a check-up taxed?", stats, []) == ["BIK"]  # not spelled out
    assert missing_subjects("Under the optional remuneration arrangement (ORA) rules, how is my car valued?", stats, []) == ["ORA"]


def test_missing_subject_amount_named_rule_absent_from_evidence() -> None:
    question = "How does the \u00a3500 tax exemption for medical treatment work?"
    assert missing_subjects(question, STATS, ["Medical treatment provided to employees is taxable."]) == ["\u00a3500 tax exemption"]
    assert missing_subjects(question, STATS, ["An exemption of \u00a3500 applies to recommended treatment."]) == []
    # amounts that describe the asker's own facts are not the subject
    assert missing_subjects("Our party cost \u00a3160 a head. Is it taxable?", STATS, ["the limit is \u00a3150"]) == []


def test_an_amount_named_rule_needs_its_amount_where_its_subject_is() -> None:
    question = "How does the statutory \u00a350 trivial benefits exemption apply to birthday gifts?"
    elsewhere = ["Long service awards are exempt up to \u00a350 per year of service.", "There is no monetary limit below which a benefit is trivial."]
    assert missing_subjects(question, STATS, elsewhere) == ["\u00a350 trivial benefits exemption"]
    assert missing_subjects(question, STATS, [*elsewhere, "Trivial benefits costing up to \u00a350 are exempt."]) == []
    # words that only say how the rule applies ask for the amount anywhere in the passages
    assert missing_subjects("Do I get the \u00a330k tax-free treatment?", STATS, ["The first \u00a330,000 is exempt."]) == []
