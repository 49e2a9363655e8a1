"""Claim verification: each drafted sentence against the paragraph(s) it cites.

``check_claim`` is the deterministic judge every provider's output passes through:

- a claim quoted verbatim from its cited text (headings shown above it included) is
  ``supported`` with the reason "quoted";
- any other claim (rendered, shortened, combined) is checked: every figure, date, amount and
  reference in it must be in the cited text, compared normalised so the 2014 scrape's glued
  cells ("45p25p", "10,000After") match a rendered "45p" or "10,000". A missing figure makes
  it ``contradicted`` when the cited sentence saying the same thing states a different figure
  of that kind, else ``unsupported``. With every figure there, its key terms (the stemmed
  content words, figures aside) must all be there for ``supported``; at least half makes it
  ``partially_supported``, fewer ``unsupported``. A flipped "not" is ``contradicted``.

Faithfulness = supported / claims: the stage's finding. Below ``verification.faithfulness_floor``
the answer becomes a ``low_coverage`` refusal that counts the verdicts (decided in
services/answering/refusals/decide.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from shared.config import Settings
from shared.contracts.api import Sentence, Verdict
from shared.contracts.corpus import Paragraph
from shared.contracts.pipeline import Draft, PipelineState, Query, SelectionResult, VerificationResult
from services.providers.base import Provider, VerifyRequest, enforce, paragraphs_of
from services.text.figures import checkable_facts, dated_fact
from services.text.sentences import statements
from services.text.terms import has_negation, terms
from shared.index import CorpusIndex

__all__ = [
    "check_claim", "key_terms", "paragraphs_of", "headings_of", "faithfulness", "verify", "enforce", "step", "Verification",
]

QUOTED = "quoted"  # the reason given to a verbatim quote
PARTIAL_COVERAGE = 0.5  # share of the claim's key terms in the cited text for partially_supported
ALIGNED = 0.6  # a cited sentence this close to the claim is taken to be "the same statement"
# Where the scrape lost the space between table cells: "10,000After", "earningsAnd".
_GLUED = re.compile(r"(?<=[0-9a-z])(?=[A-Z][a-z])")


def _normal(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").split()).casefold()


def key_terms(text: str) -> list[str]:
    """The content terms a rendering must keep: stemmed words without stop words or figures
    (figures are checked as figures), glued cells split apart."""
    return [t for t in terms(_GLUED.sub(" ", text)) if not any(ch.isdigit() for ch in t)]


def _coverage(claim_terms: list[str], source_terms: set[str]) -> float:
    if not claim_terms:
        return 1.0  # nothing but figures (or stop words): the figures decide
    return sum(t in source_terms for t in claim_terms) / len(claim_terms)


def fact_kind(fact: str) -> str:
    """The kind of a normalised figure: date, tax year, percent, pence, reference or number."""
    dated = dated_fact(fact)
    if dated in ("date", "tax_year"):
        return dated
    if fact.endswith("%"):
        return "percent"
    if fact.endswith("p") and fact[:-1].replace(".", "").isdigit():
        return "pence"
    if not fact[0].isdigit():
        return "reference"
    return "number"


def _short(facts: Iterable[str]) -> str:
    return ", ".join(sorted(facts))


def check_claim(claim: str, cited: list[Paragraph], headings: Iterable[str] = ()) -> tuple[Verdict, str]:
    """Judge one claim against the text of its cited paragraphs (and the ``headings`` shown
    above them, which the reader sees with the citation); returns (verdict, reason)."""
    if not cited:
        return "unsupported", "cites no paragraph of the selected pages"
    source = "\n".join([*headings, *(p.text for p in cited)])
    ids = ", ".join(p.id for p in cited)
    if _normal(claim) and _normal(claim) in _normal(source):
        return "supported", QUOTED
    claim_terms = key_terms(claim)
    source_terms = set(key_terms(source))
    coverage = _coverage(claim_terms, source_terms)
    claim_facts = checkable_facts(claim)
    missing = claim_facts - checkable_facts(source)

    # The cited sentence that says most nearly the same thing: where a figure or a "not"
    # differs from it, the claim contradicts its source rather than merely lacking support.
    # Of statements holding the claim's terms equally (rows of one table: "Resident,
    # ordinarily resident and domiciled", "Resident but not ordinarily resident"), the one
    # with the fewest terms the claim lacks is the one it renders.
    negated = has_negation(claim)
    claim_set = set(claim_terms)
    best, best_key = "", (0.0, 0.0, False)
    for sent in [*headings, *(unit for p in cited for unit in statements(p))]:
        sent_terms = set(key_terms(sent))
        key = (
            _coverage(claim_terms, sent_terms) if claim_terms else 0.0,
            len(sent_terms & claim_set) / len(sent_terms) if sent_terms else 0.0,
            has_negation(sent) == negated,  # rows in the same words but for a "not": the one agreeing
        )
        if key > best_key:
            best, best_key = sent, key
    best_cov = best_key[0]

    if missing:
        kinds = {fact_kind(f) for f in missing}
        other = {f for f in checkable_facts(best) - claim_facts if fact_kind(f) in kinds} if best_cov >= ALIGNED else set()
        if other:
            return "contradicted", f"says {_short(missing)} where {ids} says {_short(other)}"
        return "unsupported", f"{_short(missing)} not in {ids}"
    if best_cov >= ALIGNED and negated != has_negation(best):
        return "contradicted", f"{ids} states the opposite (negation differs)"
    if coverage == 1.0:
        return "supported", f"rendered: figures ({_short(claim_facts) or 'none'}) and terms found in {ids}"
    absent = sorted({t for t in claim_terms if t not in source_terms})
    if coverage >= PARTIAL_COVERAGE:
        return "partially_supported", f"terms {', '.join(absent)} not in {ids}"
    return "unsupported", f"{ids} does not state this ({coverage:.0%} of the claim's terms)"


def headings_of(selection: SelectionResult) -> dict[str, str]:
    """The heading each chunk's first paragraph sits under, by that paragraph's id (a citation
    shows its heading path, so a claim may quote the heading with the paragraph's id)."""
    out = {}
    for page in selection.pages:
        for chunk in page.chunks:
            first = next((p for p in chunk.paragraphs if p.kind != "heading"), None)
            if first is not None and chunk.heading_path:
                out[first.id] = chunk.heading_path[-1]
    return out


def faithfulness(sentences: list[Sentence]) -> float:
    return sum(s.verdict == "supported" for s in sentences) / len(sentences) if sentences else 0.0


def verify(query: Query, draft: Draft, selection: SelectionResult, settings: Settings) -> list[Sentence]:
    """The deterministic verifier (the local provider's ``verify``)."""
    del query, settings  # the judgement depends only on the claim and its cited text
    allowed = paragraphs_of(selection)
    headings = headings_of(selection)
    out: list[Sentence] = []
    for s in draft.sentences:
        unresolved = [c for c in s.citations if c not in allowed]
        if unresolved or not s.citations:
            reason = f"cites {', '.join(unresolved)}, not a paragraph of the selected pages" if unresolved else "no citation"
            out.append(Sentence(**s.model_dump(), verdict="unsupported", reason=reason))
            continue
        verdict, reason = check_claim(s.text, [allowed[c] for c in s.citations], [headings[c] for c in s.citations if c in headings])
        out.append(Sentence(**s.model_dump(), verdict=verdict, reason=reason))
    return out


class Verification:
    """The stage: every claim checked against what it cites; the provider's verdicts held to that."""

    def __init__(self, settings: Settings, provider: Provider) -> None:
        self.settings = settings
        self.provider = provider

    def run(self, state: PipelineState, index: CorpusIndex) -> PipelineState:
        del index  # the claims are checked against the selected pages the state carries
        return step(state, self.settings, self.provider)


def step(state: PipelineState, settings: Settings, provider: Provider) -> PipelineState:
    assert state.draft is not None and state.selection is not None
    checked = verify(state.query, state.draft, state.selection, settings)
    request = VerifyRequest(query=state.query, draft=state.draft, selection=state.selection, checked=checked)
    given = provider.verify(request)
    # A provider that drops or adds claims is not trusted for any of them.
    sentences = enforce(given, checked) if len(given) == len(checked) else checked
    state.verification = VerificationResult(sentences=sentences, faithfulness=faithfulness(sentences))
    return state
