"""Whether what the stages found refuses the question, and the refusal: the one module of
services/ that builds a ``Refusal``.

Each stage records a typed finding on the state (shared/contracts/refusals.py, ``Findings``);
``refusal`` reads them in STAGES order, the scope guard's first, and returns the first refusal
they call for with its message and evidence. The pipeline asks it when the question arrives
(``new_state``) and after every stage (``run_stage``), so a refusal still comes right after
the stage that found it and no later stage runs. The rules per stage:

- scope guard: malformed text; another tax named with no tie to a job (out_of_scope), unless
  another ingested manual covers it (then retrieval's evidence decides);
- retrieval: every part of the question belongs to another manual (out_of_scope naming it), or
  nothing was routed and the keyword filter's other tax stands (out_of_scope, routed nowhere);
- selection: nothing matches, nothing kept, a named subject the manual lacks, a rule dated
  after the manual (low_coverage); a period or today's figure later than the pages (stale);
- stitching: no sentence answers (low_coverage); figures that differ between cases the
  question does not settle (conflict);
- verification: faithfulness below ``verification.faithfulness_floor`` (low_coverage).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from shared.config import Settings
from shared.contracts.api import Refusal
from shared.contracts.pipeline import PipelineState, VerificationResult
from shared.contracts.refusals import (
    LowCoverageEvidence,
    MalformedEvidence,
    OutOfScopeEvidence,
    Route,
    RoutingFinding,
    ScopeFinding,
    SelectionFinding,
    StitchingFinding,
)
from services.answering.refusals.stale import CURRENT_YEAR

SHOWN_CANDIDATES = 12  # candidate pages named when selection kept none


def refusal(state: PipelineState, settings: Settings) -> Refusal | None:
    """The first refusal the state's findings call for, in STAGES order; None to go on."""
    found = state.findings
    rules: list[tuple[Any, Callable[[Any], Refusal | None]]] = [
        (found.scope, scope),
        (found.routing, partial(routing, routes=state.routes)),
        (found.selection, selection),
        (found.stitching, stitching),
        (state.verification, partial(verification, floor=settings.verification.faithfulness_floor)),
    ]
    for finding, rule in rules:
        if finding is not None and (refused := rule(finding)) is not None:
            return refused
    return None


def scope(found: ScopeFinding) -> Refusal | None:
    """Before any retrieval: malformed text, or another tax with no tie to a job that no other
    ingested manual covers (a covered one goes on: retrieval compares the manuals)."""
    if found.malformed is not None:
        return Refusal(category="malformed", message=found.malformed, evidence=MalformedEvidence(length=found.length))
    if found.other_regimes and not found.routable:
        return other_tax(found.other_regimes)
    return None


def other_tax(regimes: list[str]) -> Refusal:
    """out_of_scope routed to nothing: no manual here covers the tax named."""
    return Refusal(
        category="out_of_scope",
        message=f"This is about {', '.join(regimes)}, not employment income; the Employment Income Manual does not cover it.",
        evidence=OutOfScopeEvidence(subjects=regimes),
    )


def routing(found: RoutingFinding, routes: list[Route]) -> Refusal | None:
    """out_of_scope when another manual takes every part (nothing is left for this one to
    answer); when it takes some, this manual answers the rest and the routes go with it."""
    if routes and len(routes) >= found.parts:
        named = ", ".join(dict.fromkeys(f"{r.manual_title} ({', '.join(p.section_id for p in r.pages)})" for r in routes))
        return Refusal(
            category="out_of_scope",
            message=f"This question belongs to another manual, not employment income: see the {named}.",
            evidence=OutOfScopeEvidence(routes=routes),
        )
    if not routes and found.other_regimes:
        return other_tax(found.other_regimes)  # no clear home elsewhere: the keyword filter's refusal stands
    return None


def low_coverage(message: str, **evidence: object) -> Refusal:
    return Refusal(category="low_coverage", message=message, evidence=LowCoverageEvidence.model_validate(evidence))


def selection(found: SelectionFinding) -> Refusal | None:
    if not found.candidates:
        return low_coverage("Nothing in the manual matches the question.", candidates=[])
    if not found.kept:
        return low_coverage(
            "No page of the manual is close enough to the question to answer it.", candidates=found.candidates[:SHOWN_CANDIDATES]
        )
    if found.missing_subjects:
        return low_coverage(
            f"The manual does not cover {', '.join(repr(m) for m in found.missing_subjects)}, which the question is about.",
            missing=found.missing_subjects,
            searched=found.kept,
        )
    if found.later_rule is not None:  # before stale: a rule the manual never had is not out of date
        rule = found.later_rule
        return low_coverage(
            f"The question is about a rule dated {rule.year}, after the manual's pages were last updated "
            f"({rule.latest_update.isoformat()}): the manual does not contain it.",
            missing=[rule.named],
            searched=found.kept,
        )
    if found.stale is not None:
        stale, updated = found.stale, found.stale.latest_update.date().isoformat()  # type: ignore[union-attr]  (always set)
        if stale.asked_for == CURRENT_YEAR:
            message = (
                f"The question asks for today's figure, but the latest figure the manual gives is for {stale.latest_figures[0].year} "
                f"(its pages were last updated on {updated})."
            )
        else:
            message = f"The question asks about {stale.asked_for}, but the manual pages that answer it were last updated on {updated}."
        return Refusal(category="stale", message=message, evidence=stale)
    return None


def stitching(found: StitchingFinding) -> Refusal | None:
    if not found.claims:
        return low_coverage("The selected pages contain no sentence that answers the question.", searched=found.searched)
    if found.conflict is not None:
        return Refusal(
            category="conflict",
            message="The manual gives different figures for this in different cases, and the question does not say which case applies: choose one.",
            evidence=found.conflict,
        )
    return None


def verification(verified: VerificationResult, floor: float) -> Refusal | None:
    """low_coverage when too few of the drafted claims are supported, counting the verdicts."""
    if verified.faithfulness >= floor:
        return None
    counts: dict[str, int] = {}
    for s in verified.sentences:
        counts[s.verdict] = counts.get(s.verdict, 0) + 1
    return low_coverage(
        "The manual's text does not support enough of the drafted answer to give it.",
        faithfulness=round(verified.faithfulness, 3),
        floor=floor,
        verdicts=counts,
        claims=[s.model_dump() for s in verified.sentences],
    )
