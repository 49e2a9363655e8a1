"""The evidence behind each refusal category, one typed model per category.

Each category means one thing (the README repeats these):
- ``malformed``: the text is not a question (empty, too long, no words, an instruction).
- ``out_of_scope``: another manual or another tax. When one of our other manuals covers the
  question, ``routes`` names that manual and its best pages; a tax no manual here covers is
  routed to nothing.
- ``low_coverage``: the rule, relief or amount asked about does not appear in the manual (it
  came later, or the manual never covered it), or the manual's text does not support the
  drafted answer.
- ``stale``: the manual covers the rule, but the question asks for a year or figure later
  than the cited pages' last update (a named later tax year, or "this year / now" when the
  manual's figures are for years long past); ``latest_figures`` are what the manual has.
- ``conflict``: selected pages give different values for the asked quantity under
  conditions the question does not settle; ``options`` lists them so a reader can choose.

Every model carries its ``category`` so the JSON says which shape it is; every field has a
default, so a refusal made without evidence (``Refusal(category=..., message=...)``) is valid.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class PageRef(BaseModel):
    """A page a refusal points the reader to."""

    section_id: str
    title: str
    url: str
    manual: str = ""
    public_updated_at: datetime | None = None


TITLE_WEIGHT = 0.25  # a page title holding all the question's terms counts this much over meaning alone
COVERAGE_WEIGHT = 0.1  # a passage holding all the question's terms counts this much
KEYWORD_TITLE_WEIGHT = 0.5  # the title share beside the passage share, when meaning is not compared


class ManualEvidence(BaseModel):
    """How well one manual answers a question (or a part of one), on a scale that does not
    grow with the manual's size: the mean cosine of the question to the manual's three
    nearest chunks (one embedder for every manual), plus the best share of the question's
    terms that one candidate page's title holds, plus the best share one of its five best
    keyword passages holds. Shares, not BM25 scores: BM25's idf rewards a word for being
    rare in *that* manual, so "trading loss" would score highest in the manual that seldom
    names trading. The weights were set on the three manuals' own page titles and page
    first sentences asked as questions (each should stay in its own manual)."""

    manual: str
    manual_title: str
    dense: float
    title: float
    coverage: float = 0.0
    pages: list[PageRef]
    has_vectors: bool = True  # False for a manual indexed for keywords only

    @property
    def score(self) -> float:
        return self.dense + TITLE_WEIGHT * self.title + COVERAGE_WEIGHT * self.coverage

    @property
    def keyword_score(self) -> float:
        """The evidence without meaning, when some manual has no vectors to compare."""
        return KEYWORD_TITLE_WEIGHT * self.title + self.coverage


class Route(BaseModel):
    """Where (part of) a question belongs: another manual of ours and its best pages."""

    manual: str  # slug, e.g. business-income-manual
    manual_title: str
    part: str  # the question, or the part of it, that belongs there
    pages: list[PageRef]
    score: float  # the manual's evidence for that part (see services/answering/stages/retrieval.py)
    employment_score: float  # the Employment Income Manual's evidence for the same part


class MalformedEvidence(BaseModel):
    category: Literal["malformed"] = "malformed"
    length: int = 0


class OutOfScopeEvidence(BaseModel):
    category: Literal["out_of_scope"] = "out_of_scope"
    subjects: list[str] = Field(default_factory=list)  # the other taxes the question names
    routes: list[Route] = Field(default_factory=list)  # empty: no manual here covers it


class LowCoverageEvidence(BaseModel):
    category: Literal["low_coverage"] = "low_coverage"
    missing: list[str] = Field(default_factory=list)  # what the question names that the manual lacks
    searched: list[str] = Field(default_factory=list)  # section ids looked at
    candidates: list[str] = Field(default_factory=list)
    # set when the verifier refused: the drafted answer's support
    faithfulness: float | None = None
    floor: float | None = None
    verdicts: dict[str, int] = Field(default_factory=dict)
    claims: list[dict[str, Any]] = Field(default_factory=list)


class LatestFigure(BaseModel):
    """A figure the manual gives for its latest year: what a reader can have instead."""

    text: str
    year: str  # e.g. "2012-13" or "2014"
    paragraph_id: str
    section_id: str


class StaleEvidence(BaseModel):
    category: Literal["stale"] = "stale"
    asked_for: str = ""  # "2025-26", or "the current year" for a this-year / now question
    latest_update: datetime | None = None
    pages: list[PageRef] = Field(default_factory=list)
    paragraph_ids: list[str] = Field(default_factory=list)
    latest_figures: list[LatestFigure] = Field(default_factory=list)


class ConflictOption(BaseModel):
    """One case the manual distinguishes: choosing it asks again with this condition."""

    condition: str
    value: str
    paragraph_id: str
    section_id: str


class ConflictParagraph(BaseModel):
    paragraph_id: str
    section_id: str
    text: str


class ConflictEvidence(BaseModel):
    category: Literal["conflict"] = "conflict"
    options: list[ConflictOption] = Field(default_factory=list)
    paragraph_ids: list[str] = Field(default_factory=list)
    paragraphs: list[ConflictParagraph] = Field(default_factory=list)
    statements: list[str] = Field(default_factory=list)
    what_would_decide: str = ""
    differing: list[str] = Field(default_factory=list)  # the values that differ


RefusalEvidence = Annotated[
    MalformedEvidence | OutOfScopeEvidence | LowCoverageEvidence | StaleEvidence | ConflictEvidence,
    Field(discriminator="category"),
]


# ---- what the stages found -------------------------------------------------------------------
# A stage records what it found; whether that refuses, and the refusal's message and evidence,
# is decided in one place (services/answering/refusals/decide.py), in STAGES order. The findings
# travel on the PipelineState across Celery hops as JSON; a stage's finding is None until the
# stage has run, so a state from before it (or an older sender's) reads as no refusal.


class ScopeFinding(BaseModel):
    """The scope guard's, on the text as sent, before any retrieval (services/answering/scope.py)."""

    malformed: str | None = None  # why the text is not a usable question
    length: int = 0  # the text's length as sent (the malformed evidence)
    other_regimes: list[str] = Field(default_factory=list)  # other taxes it is about, with no tie to a job
    routable: bool = False  # another ingested manual covers each of them: retrieval's evidence decides


class RoutingFinding(BaseModel):
    """Retrieval's: the question's parts compared across the ingested manuals. The routes (the
    parts another manual takes) are ``PipelineState.routes``: an answer shows them too."""

    parts: int = 0  # the parts compared (0: no other manual to compare)
    # the scope guard's keyword filter on the words routed: it stands when nothing is routed
    other_regimes: list[str] = Field(default_factory=list)


class LaterRule(BaseModel):
    """A rule the question dates after the manual's last update ("the 2019 loan charge")."""

    named: str  # the words that name and date it
    year: int
    latest_update: date  # the newest answering page's


class SelectionFinding(BaseModel):
    """Selection's: the pages it read and kept, and what the question asks that they lack."""

    candidates: list[str] = Field(default_factory=list)  # the pages rolled up (none: nothing matches)
    kept: list[str] = Field(default_factory=list)  # the pages selection kept, best first
    missing_subjects: list[str] = Field(default_factory=list)  # named subjects the manual lacks
    later_rule: LaterRule | None = None
    stale: StaleEvidence | None = None  # a period (or today's figure) later than the pages give


class StitchingFinding(BaseModel):
    """Stitching's: how much answer the selected pages gave, and whether its figures conflict."""

    searched: list[str] = Field(default_factory=list)  # the selected pages drawn from
    claims: int = 0  # the drafted claims (none: no sentence of the pages answers)
    conflict: ConflictEvidence | None = None


class Findings(BaseModel):
    """What each stage found that may refuse the question, in STAGES order. Verification's is
    its own output (``PipelineState.verification``: the faithfulness the floor is held to)."""

    scope: ScopeFinding | None = None
    routing: RoutingFinding | None = None
    selection: SelectionFinding | None = None
    stitching: StitchingFinding | None = None


def cited_paragraphs(evidence: RefusalEvidence) -> list[str]:
    """Paragraph ids a refusal points at (the reader can open them as citations)."""
    if isinstance(evidence, StaleEvidence):
        return list(dict.fromkeys([*evidence.paragraph_ids, *(f.paragraph_id for f in evidence.latest_figures)]))
    if isinstance(evidence, ConflictEvidence):
        return list(evidence.paragraph_ids)
    return []
