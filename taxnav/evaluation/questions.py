"""The eval set: question files (JSONL, one EvalQuestion a line) read and checked, a bad file or
line a QuestionsFileError naming file and line (dialogs.py reads its files the same way)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.contracts.api import RefusalCategory

ModelT = TypeVar("ModelT", bound=BaseModel)


class EvalQuestion(BaseModel):
    """One line of an eval file (../shared/eval/questions.jsonl shape)."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    question: str
    expect: Literal["answer", "refuse"]
    refusal: RefusalCategory | None = None
    gold_sections: list[str] = Field(default_factory=list)
    also_ok: list[str] = Field(default_factory=list)
    key_facts: list[str] = Field(default_factory=list)
    topic: str = ""
    needs_xref: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _refusal_matches_expect(self) -> EvalQuestion:
        if self.expect == "refuse" and self.refusal is None:
            raise ValueError("expect='refuse' needs a refusal category")
        if self.expect == "answer" and self.refusal is not None:
            raise ValueError("expect='answer' must not name a refusal category")
        return self


class QuestionsFileError(ValueError):
    """The eval file is missing, empty or has a bad line (the message names file and line)."""


def read_jsonl(path: Path, model: type[ModelT], kind: str, prepare: Callable[[Any, int], Any] = lambda raw, _: raw) -> list[ModelT]:
    """Every non-blank line of a JSONL eval file as ``model`` (``prepare`` may fill in a raw
    line's defaults first); a bad file or line is a QuestionsFileError naming file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionsFileError(f"cannot read {kind} file {path}: {exc}") from exc
    items: list[ModelT] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            items.append(model.model_validate(prepare(json.loads(line), number)))
        except json.JSONDecodeError as exc:
            raise QuestionsFileError(f"{path}:{number}: not JSON: {exc.msg}") from exc
        except ValidationError as exc:
            problems = "; ".join(
                (f"{'.'.join(map(str, e['loc']))}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
                for e in exc.errors()
            )
            raise QuestionsFileError(f"{path}:{number}: {problems}") from exc
    if not items:
        raise QuestionsFileError(f"{path}: no {kind}")
    return items


def load_questions(path: Path) -> list[EvalQuestion]:
    questions = read_jsonl(path, EvalQuestion, "questions")
    seen: set[str] = set()
    for question in questions:
        if question.id in seen:
            raise QuestionsFileError(f"{path}: duplicate question id {question.id!r}")
        seen.add(question.id)
    return questions


# ---------------------------------------------------------------- per question
