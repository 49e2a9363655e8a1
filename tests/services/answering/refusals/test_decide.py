"""The refusal module: the stages' findings decide a refusal in one place, in STAGES order,
each with its evidence; the findings cross a Celery hop as JSON; the scope guard's refusal
comes before any retrieval."""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from services.answering.pipeline import new_state
from services.answering.refusals import decide
from shared.config import Settings
from shared.contracts.api import QuestionRequest, Sentence
from shared.contracts.pipeline import PipelineState, VerificationResult
from services.text.reading import new_query
from shared.contracts.refusals import (
    ConflictEvidence,
    ConflictOption,
    Findings,
    LaterRule,
    PageRef,
    Route,
    RoutingFinding,
    ScopeFinding,
    SelectionFinding,
    StaleEvidence,
    StitchingFinding,
)

SERVICES = Path(__file__).parents[4] / "services"


def _state(**findings: object) -> PipelineState:
    return PipelineState(query=new_query(id="q", question="q", manual="employment-income-manual"), findings=Findings(**findings))


def _route(part: str) -> Route:
    page = PageRef(section_id="BIM1", title="t", url="https://www.gov.uk/x", manual="business-income-manual")
    return Route(manual="business-income-manual", manual_title="Business Income Manual", part=part, pages=[page], score=0.9, employment_score=0.3)


CONFLICT = ConflictEvidence(options=[ConflictOption(condition="nurses", value="£100", paragraph_id="EIM1#c0.p0", section_id="EIM1")])
STALE = StaleEvidence(asked_for="2025-26", latest_update=datetime(2014, 9, 8, tzinfo=timezone.utc))


def test_one_module_of_services_builds_a_refusal() -> None:
    builders = sorted(str(p.relative_to(SERVICES)) for p in SERVICES.rglob("*.py") if re.search(r"\bRefusal\(", p.read_text()))
    assert builders == ["answering/refusals/decide.py"]


def test_nothing_found_refuses_nothing() -> None:
    assert decide.refusal(_state(), Settings()) is None
    found = _state(
        scope=ScopeFinding(length=20),
        routing=RoutingFinding(parts=1),
        selection=SelectionFinding(candidates=["EIM1"], kept=["EIM1"]),
        stitching=StitchingFinding(searched=["EIM1"], claims=2),
    )
    assert decide.refusal(found, Settings()) is None


def test_the_first_finding_that_refuses_in_stages_order_decides() -> None:
    later = {
        "selection": SelectionFinding(candidates=["EIM1"], kept=["EIM1"], missing_subjects=["OpRA"], stale=STALE),
        "stitching": StitchingFinding(searched=["EIM1"], claims=2, conflict=CONFLICT),
    }
    refusal = decide.refusal(_state(**later), Settings())
    assert refusal is not None and refusal.category == "low_coverage" and refusal.evidence.missing == ["OpRA"]
    # within selection: a subject the manual lacks, then a later rule, then a later period
    rule = LaterRule(named="the 2019 loan charge", year=2019, latest_update=date(2014, 9, 8))
    refusal = decide.selection(SelectionFinding(candidates=["EIM1"], kept=["EIM1"], later_rule=rule, stale=STALE))
    assert refusal is not None and refusal.category == "low_coverage" and refusal.evidence.missing == ["the 2019 loan charge"]
    assert refusal.message == (
        "The question is about a rule dated 2019, after the manual's pages were last updated (2014-09-08): the manual does not contain it."
    )
    refusal = decide.selection(SelectionFinding(candidates=["EIM1"], kept=["EIM1"], stale=STALE))
    assert refusal is not None and refusal.category == "stale" and refusal.evidence == STALE
    assert refusal.message == "The question asks about 2025-26, but the manual pages that answer it were last updated on 2014-09-08."
    # a scope guard's malformed finding comes before anything later
    malformed = _state(scope=ScopeFinding(malformed="The question is empty.", length=0), **later)
    assert decide.refusal(malformed, Settings()).category == "malformed"


def test_selection_names_at_most_twelve_candidates_when_it_keeps_none() -> None:
    nothing = decide.selection(SelectionFinding())
    assert nothing is not None and nothing.message == "Nothing in the manual matches the question." and nothing.evidence.candidates == []
    pages = [f"EIM{i}" for i in range(20)]
    refusal = decide.selection(SelectionFinding(candidates=pages))
    assert refusal is not None and refusal.evidence.candidates == pages[:12]


def test_a_covered_other_tax_goes_on_and_routing_decides() -> None:
    assert decide.scope(ScopeFinding(other_regimes=["VAT"])).category == "out_of_scope"
    assert decide.scope(ScopeFinding(other_regimes=["self-employed trading income"], routable=True)) is None
    # every part routed: out of scope, naming the manual; some parts: answered with routes
    routes = [_route("a"), _route("b")]
    refusal = decide.routing(RoutingFinding(parts=2), routes)
    assert refusal is not None and refusal.evidence.routes == routes
    assert refusal.message == "This question belongs to another manual, not employment income: see the Business Income Manual (BIM1)."
    assert decide.routing(RoutingFinding(parts=3, other_regimes=["VAT"]), routes) is None
    # nothing routed: the keyword filter's other tax stands, routed to nothing
    fallback = decide.routing(RoutingFinding(parts=1, other_regimes=["self-employed trading income"]), [])
    assert fallback is not None and fallback.evidence.subjects == ["self-employed trading income"] and fallback.evidence.routes == []


def test_stitching_refuses_no_claim_before_a_conflict_and_verification_at_the_floor() -> None:
    empty = decide.stitching(StitchingFinding(searched=["EIM1"], claims=0, conflict=CONFLICT))
    assert empty is not None and empty.category == "low_coverage" and empty.evidence.searched == ["EIM1"]
    assert decide.stitching(StitchingFinding(searched=["EIM1"], claims=1, conflict=CONFLICT)).evidence == CONFLICT
    claims = [Sentence(text="x", citations=["EIM1#c0.p0"], verdict=v, reason="r") for v in ("supported", "unsupported")]
    assert decide.verification(VerificationResult(sentences=claims, faithfulness=0.5), floor=0.5) is None
    refusal = decide.verification(VerificationResult(sentences=claims, faithfulness=0.5), floor=0.6)
    assert refusal is not None and refusal.evidence.verdicts == {"supported": 1, "unsupported": 1}
    assert refusal.evidence.faithfulness == 0.5 and refusal.evidence.floor == 0.6 and len(refusal.evidence.claims) == 2


def test_findings_cross_a_celery_hop_as_json_and_decide_the_same() -> None:
    state = _state(
        scope=ScopeFinding(length=5),
        routing=RoutingFinding(parts=1),
        selection=SelectionFinding(candidates=["EIM1"], kept=["EIM1"], stale=STALE),
    )
    again = PipelineState.model_validate_json(state.model_dump_json())
    assert again == state
    assert decide.refusal(again, Settings()) == decide.refusal(state, Settings())
    # a state without findings (an older sender's) reads as nothing found
    bare = PipelineState.model_validate_json(state.model_dump_json(exclude={"findings"}))
    assert bare.findings == Findings() and decide.refusal(bare, Settings()) is None


@pytest.mark.parametrize(
    "question, category",
    [("?? 1234 ## 56", "malformed"), ("What's the VAT registration threshold for my small business?", "out_of_scope")],
)
def test_the_scope_guard_refuses_before_any_retrieval(question: str, category: str) -> None:
    state = new_state(QuestionRequest(question=question), Settings())
    assert state.refusal is not None and state.refusal.category == category
    assert state.findings.scope is not None and state.retrieval is None and state.trace == []
