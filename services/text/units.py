"""Quotable units: the sentences and table rows of a chunk (a sentence the 2014 scrape split
over paragraphs joined up again), the lists they introduce, and what a sentence gives (a
ruling, a time limit, a definition) or whether it only illustrates or signposts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from shared.config import LocalStitchingSettings
from shared.contracts.corpus import Chunk, Paragraph
from services.text.question import QuestionKind
from services.text.tables import TERMINAL, continue_row, has_header, header_rows, is_figure, render_row, rows_of, states_nothing
from services.text.figures import MONTH, checkable_facts, dated_fact
from services.text.sentences import split_sentences
from services.text.vocabulary import phrases


# ---- worked examples: one test, read wherever the manual names one -------------------------

# A worked example as the manual names one: in a page title ("Example: car with no CO2
# figure"), a heading ("Example 2", "Examples") or the paragraph that opens one. (Over the
# three manuals' headings this matches exactly where the text "example" appears.)
_EXAMPLE = phrases(("example", "examples"))


def names_example(text: str) -> bool:
    """Whether a page title or a heading names a worked example."""
    return bool(_EXAMPLE.search(text))


def under_example(headings: Sequence[str]) -> bool:
    """Whether a chunk's headings (the part of its heading path a caller reads) name a worked example."""
    return any(_EXAMPLE.search(h) for h in headings)


def opens_example(paragraph: str) -> bool:
    """Whether a paragraph opens a worked example ("Example", "Example 1: ...")."""
    return bool(_EXAMPLE.match(paragraph.lstrip()))


# A sentence that says it gives an example ("For example, ...", "e.g. ..."): its figures are
# the example's, not the rule's.
_GIVES_EXAMPLE = phrases(("for example", "for instance", "e.g.", "e.g", "eg.", "eg"), opening=True, spaced=True)


def gives_example(sentence: str) -> bool:
    return bool(_GIVES_EXAMPLE.match(sentence))


_CONTINUES = re.compile(r"^[a-z0-9(\u00a3\u2018'\"]")
# A list item runs on into the next only when it stops on a word that needs more ("... a
# scheme and", "... less"); otherwise each item is its own statement.
_RUNS_ON = re.compile(r"(?:\b(?:and|or|but|nor|of|the|to|for|by|with|in|on|at|a|an|less|plus|than|that|which|where|if|is|are)|[,(\u2013-])$", re.I)
# Quoting is stricter: a line ending on a comma or on a word no statement ends on was broken
# off by the scrape or a chunk boundary ("... conditions outlined in EIM05200 and EIM30055 and",
# "... on which such benefits are given,"), whatever case the line after it opens in, and so
# was one ending on a capitalised word (a name cut in two: "... from the National" /
# "Insurance contributions"). English's closed word classes, not any question's words; unlike
# ``_RUNS_ON``, not "in", "on" or "at", which end a statement as often as not ("unless the
# customer opts in"): the list items it joins sit in one chunk, a quote's lines may not.
_OPEN_ENDINGS = frozenset(
    "a an the and or nor but of to by for from with within under into onto than as that which whose who whom "
    "is are was were be been being would should could may might must can will shall its their his her our your per via".split()
)
# A heading that states a rule ("SMP is taxable") says it more plainly than the paragraphs
# under it; most headings name a topic ("Two or more functions") or ask ("Is PAYE due ...":
# ``_ASKS``, read at the heading's start).
_STATES = phrases(("is", "are", "isn't", "aren't", "must", "cannot", "can", "does not", "do not", "applies", "apply", "remain", "remains"))
_ASKS = phrases(("is", "are", "does", "do", "how", "what", "when", "which", "who", "where", "why", "can", "should", "example"))
NOTE = phrases(("note", "notes"), opening=True)
_PAGE_REF = re.compile(r"\b[A-Z]{2,5} ?\d{4,6}\b")
SEE_NOTE = phrases(("see note", "see notes"))


@dataclass
class Unit:
    """A quotable sentence or table row; ``parts`` holds more than one (paragraph, text)
    when the scrape split the sentence over paragraphs (each part is quoted with its own id)."""

    parts: list[tuple[Paragraph, str]]
    page_rank: int
    order: tuple[int, int, int]  # chunk position, paragraph index, unit index
    row: int | None = None  # table row (0 = the header, never quoted on its own)
    last_row: int | None = None  # the last table row it holds (rows under one label are one unit)
    score: float = 0.0
    heading: bool = False  # the chunk's heading, quoted with the id of the paragraph under it
    cells: str = ""  # a table row as the table has it ("Car or van | First 10,000 | 45p")
    example: bool = False  # part of a worked example (its heading, page title or paragraph says so)
    looked_up: bool = False  # a table row keyed by the asker's own figure or date (142 g/km -> the 140 row)
    rate_row: bool = False  # a rate question's row: the best of a rate table about its subject (the car's row of the mileage rates)
    aside: bool = False  # a signpost, or a worked example the question did not ask for: never an answer's first claim
    features: dict[str, float] = field(default_factory=dict)  # what the passage ranker reads (stitching.UNIT_FEATURES)

    @property
    def text(self) -> str:
        return " ".join(text for _, text in self.parts)

    @property
    def paragraph(self) -> Paragraph:
        return self.parts[0][0]

    @property
    def last_paragraph(self) -> Paragraph:
        return self.parts[-1][0]


def ends_unfinished(unit: Unit) -> bool:
    """Whether a line stops mid-sentence: no closing stop, and a comma, a word no statement
    ends on, or a capitalised word last (a name the scrape cut in two: "the United" /
    "Kingdom", "notified to the Inland" / "Revenue")."""
    text = unit.text.rstrip()
    if unit.row is not None or unit.heading or not text or TERMINAL.search(text):
        return False
    last = text.split()[-1]
    return last.endswith(",") or last.casefold() in _OPEN_ENDINGS or (last.isalpha() and last[:1].isupper() and last[1:].islower())


# A rule the manual says has ended: "THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013", "This
# exemption was withdrawn from 6 April 2006", "Section 89 ITEPA 2003 was repealed by ...".
_WITHDRAWN = re.compile(r"\b(?:was|were|has been|have been)\s+(?:withdrawn|abolished|repealed)\b", re.I)


def withdraws(sentence: str) -> bool:
    """Whether a sentence says that a rule was withdrawn, abolished or repealed."""
    return bool(_WITHDRAWN.search(sentence))


# A signpost restates the topic in the question's words but says nothing about it: one to
# another page ("See EIM74650 for an overview of ...", "For details of X see EIM42260": with
# a page reference, ``_PAGE_REF``), or one of the manual's pointers to guidance elsewhere
# ("Detailed guidance on troncs is provided in the PAYE Online Manual", "Full guidance on van
# benefit for these years can be found using the contents page at EIM22700"; 59 such
# sentences on EIM pages), with or without one (``pointer``). The two never open on one word.
_SIGNPOST = re.compile(
    r"^(?:see\b|for (?:[\w'\u2019-]+ ){0,12}?see\b)"
    r"|^(?P<pointer>(?:(?:further|more|detailed|full|additional|general)\s+)?(?:guidance|details|information|advice)\b[^.]{0,80}?"
    r"\b(?:is|are|can be)\s+(?:provided|given|set out|available|found|contained|included)\b)",
    re.I,
)


def is_label(unit: Unit) -> bool:
    """Whether a paragraph's line only names a topic ("Possibility of partial revocation",
    "Conditions", "Example: deferred bonus"; about 300 on EIM pages, headings the scrape
    left as text): a few words, no figure, no closing punctuation (a statement's end, or the
    comma of a line that runs on). It states nothing."""
    text = unit.text.strip()
    return (
        unit.row is None and not unit.heading and unit.paragraph.kind == "p" and len(text.split()) <= 8
        and not (TERMINAL.search(text) or text.endswith(",")) and not any(ch.isdigit() for ch in text)
    )


def is_signpost(sentence: str) -> bool:
    """Whether a sentence only sends the reader to another page or manual."""
    m = _SIGNPOST.match(sentence)
    return m is not None and (m.group("pointer") is not None or bool(_PAGE_REF.search(sentence)))


def states_rule(heading: str) -> bool:
    """Whether a heading is a short statement (quotable as a claim) rather than a topic or a question."""
    return bool(
        _STATES.search(heading) and not _ASKS.match(heading) and ":" not in heading and len(heading.split()) <= 12 and not checkable_facts(heading)
    )


def chunk_units(chunk: Chunk, page_rank: int, tuning: LocalStitchingSettings, heading: str | None = None) -> list[Unit]:
    """The chunk's sentences and table rows in order, split sentences joined up again; first
    its ``heading`` when given (a heading that states a rule), cited by the paragraph under it."""
    units: list[Unit] = []
    first = next((p for p in chunk.paragraphs if p.kind != "heading"), None)
    if heading and first is not None:
        units.append(Unit([(first, heading)], page_rank, (chunk.position, -1, 0), heading=True))
    for p_index, paragraph in enumerate(chunk.paragraphs):
        if paragraph.kind == "heading":
            continue
        if paragraph.kind == "table":
            rows = rows_of(paragraph)
            header, header_count = header_rows(rows)
            label = ""
            for i, r in enumerate(rows):
                if i < header_count:
                    continue  # the header rows are never quoted on their own
                first = r.split("|")[0].strip()
                label = first or (label if header else "")  # a row that goes on the one above ("| 25p after that") keeps its label
                if header and states_nothing(r):
                    continue  # a label whose columns are all blank ('1-75 (unrounded) | | |'): its rate is elsewhere
                last = units[-1] if units else None
                if first and last is not None and last.paragraph.id == paragraph.id and last.row and last.cells.split("|")[0].strip() == first:
                    last.parts[0] = (paragraph, continue_row(last.parts[0][1], r))
                    last.last_row = i
                    continue
                text = render_row(header, r if first else f"{label} {r}", tuning.short_cell_words)
                units.append(Unit([(paragraph, text)], page_rank, (chunk.position, p_index, i), row=i, last_row=i, cells=r))
            continue
        for u_index, sentence in enumerate(with_markers(split_sentences(paragraph.text))):
            last = units[-1] if units else None
            if (
                u_index == 0
                and last is not None
                and last.row is None
                and not last.heading
                and last.parts[-1][0].id != paragraph.id
                and len(last.parts) < tuning.max_fragments
                and not TERMINAL.search(last.parts[-1][1])
                and (_CONTINUES.match(sentence) or last.text.count("(") > last.text.count(")"))
                and not (paragraph.kind == "li" and last.parts[-1][0].kind == "li" and not _RUNS_ON.search(last.parts[-1][1]))
            ):
                last.parts.append((paragraph, sentence))
            else:
                units.append(Unit([(paragraph, sentence)], page_rank, (chunk.position, p_index, u_index)))
    return units


# "(This text has been withheld because of exemptions in the Freedom of Information Act
# 2000)": the publisher's notice where guidance was removed (171 EIM pages) says nothing of the rule.
_WITHHELD = phrases(("this text has been withheld", "this content has been withheld", "this guidance has been withheld"), opening=True)


def with_markers(sentences: list[str]) -> list[str]:
    """Sentences, each fragment too short to be one ("2.", "b)") read with the sentence it
    numbers, so that neighbouring sentences quoted together stay verbatim ("post. 2. To take
    up one's position", EIM33108); one left at the end is dropped; a notice that text was
    withheld is no sentence of the page's."""
    out: list[str] = []
    marker = ""
    for sentence in sentences:
        if _WITHHELD.match(sentence):
            continue
        if len(sentence) <= 2:
            marker += sentence + " "
        else:
            out.append(marker + sentence)
            marker = ""
    return out


def computation_line(unit: Unit) -> bool:
    """Whether a unit is a row of a table that names no columns: a line of a worked computation
    ("Earnings | £22,000", "less: 75,000"), read with the rest of it and tabulating no rate."""
    return unit.row is not None and not has_header(rows_of(unit.paragraph))


def introduces_list(unit: Unit) -> bool:
    """Whether a unit introduces a list: with a colon, or, where the 2014 scrape lost the
    colon, as a sentence left unfinished that runs on into its first item ("The maximum
    amounts ... an employer may pay tax free are" + "£5 per night for overnight stays in the
    UK"; 451 such lead-ins on EIM pages), which chunk_units joined into this unit."""
    if unit.row is not None:
        return False
    if unit.text.rstrip().endswith(":"):
        return True
    (lead_in, text), first_item = unit.parts[0], unit.parts[1][0] if len(unit.parts) > 1 else None
    return first_item is not None and lead_in.kind != "li" and first_item.kind == "li" and not TERMINAL.search(text.rstrip())


def list_items(units: list[Unit], i: int, limit: int) -> list[int]:
    """The units of the list a sentence introduces (``introduces_list``): up to ``limit`` items
    after it, each whole (an item's later sentences, "This is taxable under Section 225", are
    part of it), and what continues them in lower case ("and not more than 25 per cent ...")."""
    unit = units[i]
    if not introduces_list(unit):
        return []
    out: list[int] = []
    items = 0
    for j in range(i + 1, len(units)):
        item = units[j]
        if item.page_rank != unit.page_rank or item.row is not None:
            break
        if j > i + 1 and item.paragraph.id == units[j - 1].last_paragraph.id:
            out.append(j)  # the same item goes on
            continue
        if items == limit or not (item.paragraph.kind == "li" or item.text[:1].islower()):
            break
        items += 1
        out.append(j)
    return out


def scored_text(units: list[Unit], i: int, list_limit: int) -> str:
    """What a unit says for scoring: a sentence that introduces a list with a colon says
    what its items say (the 'limit is:' sentence and its '10 per cent' item are one rule)."""
    return " ".join([units[i].text, *(units[j].text for j in list_items(units, i, list_limit))])


# ---- what a question asks for, and what a sentence gives -------------------------------


# What a sentence gives: a ruling ("is taxable", "is exempt", "no charge"), a time limit,
# a definition. A question of one kind is answered first by a sentence of that kind.
# A ruling says what the tax does ("is not taxable", "no charge arises", "can be deducted",
# "the exemption applies"); "taxable pension income" or "can" alone only name the subject.
_RULING = re.compile(
    r"\b(?:(?:is|are|be|been|was|were|becomes?|remains?)(?: \w+ly)?(?: not)?(?: \w+ly)? (?:taxable|chargeable|exempt|liable|deductible|allowable|tax[- ]free)|"
    r"not (?:taxable|chargeable|deductible|allowable|exempt)|no (?:tax|charge|liability|benefit|deduction|relief)\b|tax[- ]free|exempts?\b(?! amount)|"
    r"exemption (?:applies|covers|does not apply|is not available)|"
    r"(?:is|are) (?:not )?(?:treated as )?(?:earnings|employment income|a benefit)|"
    r"(?:can|cannot|may|may not|must not) (?:be |not be )?(?:claim|deduct|allow|permit|give|grant|treat)\w*|does not apply|must)\b",
    re.I,
)
_TIME_LIMIT = re.compile(r"\b(?:within|before|after|by|no later than|until)\b[^.]{0,40}\b(?:\d+|one|two|three|four|five|six|twelve)\b[^.]{0,20}\b(?:days?|weeks?|months?|years?)\b|\b\d{1,2} " + MONTH + r"\b", re.I)
_DEFINES = phrases(
    (
        "means", "is defined", "defined", "definition", "counts as", "refers to", "include", "includes", "included",
        "is a ", "is an ", "is any ",  # the space, then a word: "is a car", not "is a (car)"
    )
)
# An illustration rather than the rule: a case the courts decided ("In Laidler v Perry
# (42TC351) ..."), or a narrative the manual tells its reader ("A taxpayer tells you ...",
# "You make enquiries and find ...", "Mr A ...").
_ILLUSTRATION = re.compile(
    r"\b[A-Z][\w&'.]*(?: [A-Z&][\w&'.]*)* v\.? [A-Z][\w&'.]*(?: [\w&'.]+){0,4} \(\d+\s?TC\s?\d+\)|\btells you\b|(?i:^you (?:make|find|discover|ask|receive)\b)|"
    r"(?i:^(?:an?|one|for|by way of) (?:example|illustration)\b|^for instance\b)|\b(?:Mr|Mrs|Ms|Miss)\.? [A-Z]\b|\b(?:employee|employer|company|director) [A-Z]\b(?![\w-])",
)
# A sentence that leans on the one before it cannot open an answer; one that opens on a
# pronoun (``anaphor``: "This", "It", "These", "They", "Such", "That") names what it speaks of
# in the sentence before (``opens_with_anaphor``).
DEPENDENT = re.compile(r"^(?:(?P<anaphor>This|It|These|They|Such|That)|Those|But|However|Also|And|Or|So|Thus|Therefore|Nevertheless|The effect of this|From this|In (?:this|that|these|such))\b|\b(?:described|mentioned|explained) above\b")


def opens_with_anaphor(text: str) -> bool:
    """Whether a sentence opens on a pronoun for what the sentence before it names ("This is taxable ...")."""
    m = DEPENDENT.match(text)
    return m is not None and m.group("anaphor") is not None


def years_only(facts: frozenset[str]) -> set[str]:
    """Tax years and dates among shared facts: a year in common does not make an example the asker's case."""
    return {f for f in facts if dated_fact(f)}


def is_illustration(text: str) -> bool:
    """Whether a sentence illustrates (a decided case, a story told to the reader) rather than states a rule."""
    return bool(_ILLUSTRATION.search(text))


def tells_a_story(text: str) -> bool:
    """A sentence that tells the reader a case to work ("A taxpayer tells you ...", "You make
    enquiries ..."): an illustration that is not a decided case ("Smith v Jones"), whose rule
    the court stated."""
    return is_illustration(text) and not any(f" {v} " in text for v in ("v", "v."))


# An amount as the manual writes one: money, pence, a percentage, or a measure in its unit;
# a bare count ("53 weekly pay days", "40 hours") is a number but no amount asked for.
_AMOUNT = re.compile(
    r"\u00a3\s?\d|\(\u00a3\)|\d\s?(?:%|p\b|pence\b|per ?cent\b)|\d[\d,.]*\s?(?:miles?|g/km|cc|km|kg|kilograms?|litres?)\b", re.I
)


def states_amount(text: str, facts: frozenset[str]) -> bool:
    """Whether a sentence (or row) states an amount: a figure among its facts, written as money,
    pence, a percentage or a measure."""
    return any(is_figure(f) for f in facts) and bool(_AMOUNT.search(text))


def gives(kind: QuestionKind, text: str, facts: frozenset[str]) -> bool:
    """Whether a sentence gives what a question of ``kind`` asks for."""
    if kind == "figure":
        return states_amount(text, facts)
    if kind == "date":
        return bool(_TIME_LIMIT.search(text)) or any(dated_fact(f) in ("tax_year", "date") for f in facts)
    if kind == "yes_no":
        return bool(_RULING.search(text))
    if kind == "definition":
        return bool(_DEFINES.search(text))
    return False
