"""`taxnav eval --judge mistral`: a second opinion on every claim from a chat model.

Per claim the judge says whether it is correct (a true answer to the question, as far as the
cited text goes) and whether it is grounded (its cited paragraph states it). The report gives
both rates and how often the judge agrees with the system's own verifier (a claim the
verifier marks ``supported`` agrees when the judge calls it grounded; any other verdict
agrees when the judge does not).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shared.config import Settings
from shared.contracts.api import QuestionResult

JUDGES = ("mistral",)
CITED_CHARS = 1200  # of each cited paragraph shown to the judge

JUDGE_SYSTEM = """You are a second-opinion judge of answers drawn from HMRC's Employment Income Manual.
For each numbered claim you get the question and the text the claim cites. Decide:
"correct": true if the claim is a true statement that helps answer the question, false otherwise;
"grounded": true if the cited text states the claim (figures, dates and references included), false otherwise.
Reply with JSON only: {"claims": [{"index": <claim number>, "correct": true|false, "grounded": true|false,
"reason": "<one line>"}, ...]} with one entry per claim."""


class ClaimJudgement(BaseModel):
    index: int
    correct: bool
    grounded: bool
    reason: str = Field(min_length=1)


class JudgeReply(BaseModel):
    claims: list[ClaimJudgement]


class JudgeMetrics(BaseModel):
    judge: str
    claims: int
    correct: float  # share of claims the judge calls correct
    grounded: float  # share the judge calls grounded in their cited paragraph
    agreement: float  # share where the judge's "grounded" matches the verifier's "supported"


def judge_result(question: str, result: QuestionResult, settings: Settings) -> list[ClaimJudgement]:
    """One judge call for an answered question's claims (none for a refusal)."""
    from services.providers.mistral import chat_json  # noqa: PLC0415  (the SDK is large)

    sentences = result.answer.sentences if (result.status == "answered" and result.answer) else []
    if not sentences:
        return []
    text = {c.paragraph_id: c.text for c in result.citations}
    claims = []
    for n, sentence in enumerate(sentences):
        cited = "\n".join(f"[{c}] {text[c][:CITED_CHARS]}" for c in sentence.citations if c in text)
        claims.append(f"Claim {n}: {sentence.text}\nCited text:\n{cited or '(none)'}")

    def check(parsed: JudgeReply) -> None:
        got = sorted(j.index for j in parsed.claims)
        if got != list(range(len(sentences))):
            raise ValueError(f"expected exactly one judgement for each claim 0..{len(sentences) - 1}, got indexes {got}")

    user = f"Question: {question}\n\n" + "\n\n".join(claims)
    parsed = chat_json(settings, "judging", JUDGE_SYSTEM, user, JudgeReply, check)
    return sorted(parsed.claims, key=lambda j: j.index)


def judge_metrics(judge: str, rows: list[tuple[str, bool, bool]]) -> JudgeMetrics:
    """From (the verifier's verdict, the judge's "correct", the judge's "grounded") per claim."""
    n = len(rows)

    def share(count: int) -> float:
        return count / n if n else 0.0

    return JudgeMetrics(
        judge=judge,
        claims=n,
        correct=share(sum(correct for _, correct, _ in rows)),
        grounded=share(sum(grounded for _, _, grounded in rows)),
        agreement=share(sum((verdict == "supported") == grounded for verdict, _, grounded in rows)),
    )
