"""`taxnav ranker`: train the page ranker from labelled question files (`train`), and score it
by cross-validation grouped by gold page (`cv`): every figure comes from questions whose gold
pages no fold's model saw in training, end to end through the API's embedded code path.

Labels: a question's gold pages rank above its also_ok pages, which rank above every other
candidate that retrieval, expansion and rollup brought (the candidates the ranker orders in
service). Model: pairwise logistic regression on standardised feature differences, each
question weighing the same, then a Platt calibration of the score into the probability that
a page answers (selection keeps the pages near the best one's probability)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from shared.cli_common import Exit
from shared.config import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
TEAM_EVAL = REPO_ROOT.parent / "shared" / "eval"  # ../shared/eval
OWN_EVAL = REPO_ROOT / "tests" / "evaluation"
TRAINING_FILES = (
    TEAM_EVAL / "questions.jsonl",
    TEAM_EVAL / "train_questions.jsonl",
    OWN_EVAL / "heldout_questions.jsonl",
    OWN_EVAL / "train_questions_own.jsonl",
)
REGULARISATION = 1.0  # sklearn's C; the CV figures barely move between 0.1 and 10


@dataclass
class Candidates:
    """One question's candidate pages as the ranker sees them in service."""

    question_id: str
    source: str  # the question file's stem
    gold: frozenset[str]
    section_ids: list[str]
    features: np.ndarray  # (pages, PAGE_FEATURES)
    labels: np.ndarray  # 2 gold, 1 also_ok, 0 other


def collect(questions: Sequence, source: str, settings: Settings) -> list[Candidates]:  # noqa: ANN001  (EvalQuestion)
    """Each answerable question's candidates after rollup, with their features and labels (the
    scope guard and routing run first: a question they refuse has no candidates to rank)."""
    from services.pipeline import STAGES, new_state, run_stages  # noqa: PLC0415  (heavy: the index and the model)
    from services.providers.local.page_features import page_signals  # noqa: PLC0415
    from shared.contracts.api import QuestionRequest  # noqa: PLC0415

    up_to_rollup = [s for s in STAGES if s.name in ("retrieval", "expansion", "rollup")]
    out = []
    for q in questions:
        if q.expect != "answer":
            continue
        state = run_stages(up_to_rollup, new_state(QuestionRequest(question=q.question), settings), settings, lambda _: None)
        if state.rollup is None or not state.rollup.pages:
            continue
        signals = page_signals(state.query, state.rollup.pages, settings, state.retrieval.query_vector if state.retrieval else [])
        ids = [s.bundle.section_id for s in signals]
        labels = np.array([2 if sid in q.gold_sections else 1 if sid in q.also_ok else 0 for sid in ids])
        out.append(Candidates(q.id, source, frozenset(q.gold_sections), ids, np.stack([s.features for s in signals]), labels))
    return out


def gold_groups(items: Sequence) -> list[int]:  # noqa: ANN001  (anything with .id and .gold_sections)
    """A group per set of questions that share a gold page (directly or through another
    question), so that no fold trains on a page it is scored on; a question with no gold
    page is a group of its own."""
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_with: dict[str, int] = {}
    for i, item in enumerate(items):
        for page in item.gold_sections:
            if page in first_with:
                parent[root(i)] = root(first_with[page])
            else:
                first_with[page] = i
    return [root(i) for i in range(len(items))]


def fit(candidates: Sequence[Candidates], files: Sequence[str] = ()) -> RankerModel:  # noqa: F821
    """The pairwise model and its calibration, from every question with a positive candidate."""
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415  (training only: the service needs numpy alone)

    from services.providers.local.page_features import PAGE_FEATURES  # noqa: PLC0415
    from services.ranking.model import RankerModel  # noqa: PLC0415

    rows = np.vstack([c.features for c in candidates])
    mean, scale = rows.mean(axis=0), rows.std(axis=0)
    scale[scale == 0] = 1.0
    diffs, weights = [], []
    for c in candidates:
        x = (c.features - mean) / scale
        pairs = [x[i] - x[j] for i in range(len(x)) for j in range(len(x)) if c.labels[i] > c.labels[j]]
        if pairs:
            diffs += pairs
            weights += [1.0 / len(pairs)] * len(pairs)  # each question weighs the same, whatever its candidates
    if not diffs:
        raise ValueError("no question has an answering page among its candidates: nothing to learn from")
    d = np.array(diffs)
    pairwise = LogisticRegression(C=REGULARISATION, fit_intercept=False, max_iter=2000)
    pairwise.fit(np.vstack([d, -d]), np.r_[np.ones(len(d)), np.zeros(len(d))], sample_weight=np.r_[weights, weights])
    w = pairwise.coef_[0]
    scores = ((rows - mean) / scale) @ w
    positive = np.concatenate([c.labels > 0 for c in candidates])
    platt = LogisticRegression(C=100.0).fit(scores.reshape(-1, 1), positive)
    probability = 1.0 / (1.0 + np.exp(-(platt.coef_[0][0] * scores + platt.intercept_[0])))
    return RankerModel(
        kind="pages",
        features=list(PAGE_FEATURES),
        mean=mean.tolist(),
        scale=scale.tolist(),
        weights=w.tolist(),
        calibration_a=float(platt.coef_[0][0]),
        calibration_b=float(platt.intercept_[0]),
        answering_threshold=answering_threshold(probability, positive),
        trained={
            "files": list(files),
            "questions": len(candidates),
            "pairs": len(diffs),
            "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )


def answering_threshold(probability: np.ndarray, positive: np.ndarray) -> float:
    """The probability cut that best tells answering candidates from the rest (highest F1)."""
    best, cut = -1.0, 0.5
    for t in np.unique(np.round(probability, 2)):
        predicted = probability >= t
        hits = float((predicted & positive).sum())
        f1 = 2 * hits / (predicted.sum() + positive.sum()) if hits else 0.0
        if f1 > best:
            best, cut = f1, float(t)
    return cut


def page_metrics(candidates: Sequence[Candidates], model) -> dict[str, float]:  # noqa: ANN001  (RankerModel)
    """How the model orders each question's candidates: the first page answers (gold or
    also_ok), a gold page in the first three, reciprocal rank of the first answering page; and
    the same for retrieval's own order, the ranker's input."""
    def ranks(order_of: callable) -> tuple[list[float], list[float], list[float]]:  # noqa: ANN001
        first, top3, rr = [], [], []
        for c in candidates:
            order = order_of(c)
            hits = [k for k, i in enumerate(order) if c.labels[i] > 0]
            first.append(float(bool(hits) and hits[0] == 0))
            top3.append(float(any(c.labels[i] == 2 for i in order[:3])))
            rr.append(1.0 / (1 + hits[0]) if hits else 0.0)
        return first, top3, rr

    out: dict[str, float] = {"questions": len(candidates)}
    for name, order_of in (
        ("ranker", lambda c: list(np.argsort(-model.score(c.features), kind="stable"))),
        ("retrieval", lambda c: list(range(len(c.section_ids)))),
    ):
        first, top3, rr = ranks(order_of)
        out |= {f"{name}_first_answers": statistics.fmean(first), f"{name}_gold_in_top3": statistics.fmean(top3), f"{name}_mrr": statistics.fmean(rr)}
    out["candidates_hold_answer"] = statistics.fmean(float((c.labels > 0).any()) for c in candidates)
    return out


def _load(files: Sequence[Path]) -> list[tuple[str, list]]:
    from taxnav.evaluation.scoring import load_questions  # noqa: PLC0415

    return [(path.stem, load_questions(path)) for path in files if path.exists()]


def train(args: argparse.Namespace, settings: Settings) -> int:
    started = time.perf_counter()
    sets = _load(args.questions)
    candidates = [c for source, questions in sets for c in collect(questions, source, settings)]
    model = fit(candidates, [f"{source}.jsonl" for source, _ in sets])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(model.model_dump_json(indent=1) + "\n")
    print(f"trained on {len(candidates)} questions from {', '.join(s for s, _ in sets)} in {time.perf_counter() - started:.0f} s: {args.out}")
    for name, weight in sorted(zip(model.features, model.weights, strict=True), key=lambda p: -abs(p[1])):
        print(f"  {weight:+.3f}  {name}")
    return Exit.OK


def cross_validate(args: argparse.Namespace, settings: Settings) -> int:
    """Grouped k-fold: page figures per fold, then every question answered through the API
    with the model of the fold that held it out, scored as `taxnav eval` scores."""
    from sklearn.model_selection import GroupKFold  # noqa: PLC0415

    from taxnav.evaluation.harness import RECALL_STAGES, ask_all  # noqa: PLC0415
    from taxnav.evaluation.scoring import aggregate  # noqa: PLC0415
    from services.pipeline import STAGES  # noqa: PLC0415
    from ingest_worker.chunker import chunk_embed_text  # noqa: PLC0415
    from services.text.figures import checkable_facts  # noqa: PLC0415
    from shared.index import CorpusIndex  # noqa: PLC0415

    started = time.perf_counter()
    sets = _load(args.questions)
    questions = [(source, q) for source, qs in sets for q in qs]
    groups = gold_groups([q for _, q in questions])
    folds = list(GroupKFold(n_splits=args.folds).split(np.zeros(len(questions)), groups=groups))
    cands = {c.question_id: c for source, qs in sets for c in collect(qs, source, settings)}
    args.out.mkdir(parents=True, exist_ok=True)
    index = CorpusIndex.open(settings, settings.manual)

    def page_text(section_id: str) -> str:
        page = index.pages[section_id]
        return "\n".join(chunk_embed_text(chunk, page) for chunk in index.page_chunks(section_id))

    outcomes, held_out_cands = [], []
    for k, (train_idx, test_idx) in enumerate(folds):
        train_ids = {questions[i][1].id for i in train_idx}
        model = fit([c for qid, c in cands.items() if qid in train_ids])
        path = args.out / f"pages-fold{k}.json"
        path.write_text(model.model_dump_json())
        test = [questions[i] for i in test_idx]
        held_out_cands += [cands[q.id] for _, q in test if q.id in cands]
        if args.pages_only:
            continue
        fold_settings = settings.model_copy(deep=True)
        fold_settings.selection.local.page_model = path
        for source, q in test:
            (o,) = ask_all([q], fold_settings, checkable_facts, page_text)
            outcomes.append((source, o))
        print(f"fold {k + 1}/{len(folds)}: {len(test)} questions ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    report: dict[str, object] = {"folds": args.folds, "questions": len(questions), "grouped_by": "gold page"}
    by_fold_model = {}
    for k, (_, test_idx) in enumerate(folds):
        model = _model_at(args.out / f"pages-fold{k}.json")
        ids = {questions[i][1].id for i in test_idx}
        by_fold_model |= {qid: model for qid in ids}
    report["pages"] = {
        source: _fold_page_metrics([c for c in held_out_cands if c.source == source], by_fold_model) for source, _ in sets
    } | {"all": _fold_page_metrics(held_out_cands, by_fold_model)}
    stages = [s.name for s in STAGES if s.name in RECALL_STAGES]
    if outcomes:
        report["answers"] = {
            source: aggregate([o for s, o in outcomes if s == source], stages).model_dump() for source, _ in sets
        }
        (args.out / "outcomes.jsonl").write_text("".join(json.dumps({"set": s, **o.model_dump(mode="json")}) + "\n" for s, o in outcomes))
    report["seconds"] = round(time.perf_counter() - started)
    (args.out / "cv.json").write_text(json.dumps(report, indent=1) + "\n")
    _print(report)
    return Exit.OK


def _model_at(path: Path):  # noqa: ANN202
    from services.ranking.model import RankerModel  # noqa: PLC0415

    return RankerModel.model_validate_json(path.read_bytes())


def _fold_page_metrics(candidates: list[Candidates], model_of: dict) -> dict[str, float]:
    """page_metrics with each question ordered by its own fold's model."""
    if not candidates:
        return {}
    parts = [page_metrics([c], model_of[c.question_id]) for c in candidates]
    return {key: statistics.fmean(p[key] for p in parts) for key in parts[0] if key != "questions"} | {"questions": len(candidates)}


def _print(report: dict) -> None:
    print(f"{report['folds']}-fold cross-validation grouped by gold page, {report['questions']} questions")
    print("pages (held-out folds): first page answers / gold in top 3 / MRR  (retrieval order alone)")
    for source, m in report["pages"].items():
        if m:
            print(
                f"  {source:28} {m['ranker_first_answers']:.1%} / {m['ranker_gold_in_top3']:.1%} / {m['ranker_mrr']:.3f}"
                f"  ({m['retrieval_first_answers']:.1%} / {m['retrieval_gold_in_top3']:.1%} / {m['retrieval_mrr']:.3f})  n={m['questions']}"
            )
    for source, m in report.get("answers", {}).items():
        print(
            f"  {source:28} answerable right {m['answerable_ok']}  lead facts {m['lead_facts']:.1%}  claim precision {m['claim_precision']:.1%}"
            f"  first sentence {m['first_sentence_fact']:.1%}  answer words {m['answer_words_median']:.0f}  strict {m['strict_correct']}/{m['questions']}"
        )


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("ranker", help="train the page ranker, or score it by grouped cross-validation", description=__doc__)
    commands = parser.add_subparsers(dest="ranker_command", required=True, metavar="ACTION")
    from services.ranking.model import default_path  # noqa: PLC0415

    defaults = list(TRAINING_FILES)
    fit_parser = commands.add_parser("train", parents=parents, help="fit the model on every labelled file and write it")
    fit_parser.add_argument("--questions", type=Path, nargs="+", default=defaults, help="labelled question files (default: the dev, train and held-out files)")
    fit_parser.add_argument("--out", type=Path, default=default_path("pages"), help="the model file (default: the one the service loads)")
    fit_parser.set_defaults(func=train)
    cv = commands.add_parser("cv", parents=parents, help="k-fold cross-validation grouped by gold page, answers through the API")
    cv.add_argument("--questions", type=Path, nargs="+", default=defaults, help="labelled question files")
    cv.add_argument("--folds", type=int, default=5)
    cv.add_argument("--pages-only", action="store_true", help="page order figures alone (no answers asked)")
    cv.add_argument("--out", type=Path, default=Path("reports/ranker-cv"), help="directory for cv.json, outcomes.jsonl and the fold models")
    cv.set_defaults(func=cross_validate)
