"""What the Mistral provider says to the model, in one place (as paper-qa keeps its prompts):
the system prompts of its three calls, the user messages that carry the question and the text,
and how much of that text is shown. services/providers/mistral.py sends them; the tests' stand-in
(tests/support/mistral_standin.py) tells the calls apart by these same constants.

STITCH_SYSTEM asks for the answer shape (``stitching.shape``, shared/config.py's AnswerShape)
in words: "at most six short plain sentences, about 120 words" are its ``claims`` and ``words``;
the reply is clamped to the shape whatever the model writes."""

from __future__ import annotations

PAGE_CHARS = 2400  # of each candidate page shown for selection
PARAGRAPH_CHARS = 900  # of each paragraph shown for stitching and verification

SELECT_SYSTEM = """You select pages of HMRC's Employment Income Manual (EIM) that can answer a UK employment-tax question.
Be recall-greedy: keep every page that could contribute to the answer. A page with a rate table answers a rate
question even if it does not repeat the question's words; when two pages state the same rule, keep both.
Drop only pages that are plainly about something else.
Reply with JSON only: {"keep": ["<section id>", ...]} using the section ids given. Keep none if no page helps."""

SELECT_STRICT = """Keep only the pages that directly answer the question."""

STITCH_SYSTEM = """You answer a UK employment-tax question using ONLY the numbered paragraphs given from HMRC's
Employment Income Manual. Answer first: the first sentence answers the question asked (a figure for "how much",
"what rate" or "what limit"; yes or no with the rule for "is it taxable" or "can I"; the date or period for
"when", "by when" or "how long"; the definition for "what counts as"). Then conditions, then exceptions. At most
six short plain sentences, about 120 words in all; no sentence repeats another; a worked example only when the
question asks for one. Every sentence must cite the id(s) of the paragraph(s) that state it, and may say only
what those paragraphs say: copy figures, amounts, percentages, dates and section references exactly, and keep
the paragraph's own words for its terms. Do not add advice, hedging or anything the paragraphs do not state.
Reply with JSON only: {"sentences": [{"text": "...", "citations": ["<paragraph id>", ...]}, ...]}
If the paragraphs do not answer the question, reply {"sentences": []}."""

VERIFY_SYSTEM = """You check claims against the text they cite. For each claim give one verdict:
"supported" (the cited text states it, figures included), "partially_supported" (part of it is stated),
"unsupported" (the cited text does not state it) or "contradicted" (the cited text states otherwise),
with a one-line reason. Reply with JSON only:
{"verdicts": [{"index": <claim number>, "verdict": "...", "reason": "..."}, ...]} with one entry per claim."""

SELECT_USER = "Question: {question}\n\nPages:\n{pages}"
PAGE_ENTRY = "## {section_id}\n{text}"  # one candidate page in SELECT_USER's {pages}

STITCH_USER = "Question: {question}\n\nParagraphs:\n{paragraphs}"
PARAGRAPH_ENTRY = "[{id}] {text}"  # one paragraph, in STITCH_USER's {paragraphs} and under a claim to verify

VERIFY_USER = "Question: {question}\n\n{claims}"  # the claims, each a VERIFY_CLAIM, a blank line between
VERIFY_CLAIM = "Claim {n}: {text}\nCited text:\n{cited}"
NOTHING_CITED = "(none)"  # a claim's cited text when none of its citations resolves

# A rejected reply is answered with what was wrong, so the retry can fix it rather than repeat it.
RETRY_USER = "That reply was rejected ({problem}). Reply again with JSON only, exactly as specified."
NO_CONTENT = "(no content)"  # the rejected reply, as the retry shows it, when it had no text
