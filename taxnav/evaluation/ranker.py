"""`taxnav ranker`: train the page and passage rankers from labelled question files (`train`),
and score them by cross-validation grouped by gold page (`cv`): every figure comes from
questions whose gold pages no fold's models saw in training, end to end through the API's
embedded code path.

Pages: a question's gold pages rank above its also_ok pages, which rank above every other
candidate that retrieval, expansion and rollup brought (the candidates the ranker orders in
service); a listwise linear model (fit_listwise), then a Platt calibration of the score into
the probability that a page answers (selection keeps the pages near the best one's
probability).

Passages: the sentences and table rows of the pages selection keeps; a unit stating one of
the question's key facts in its first words on an answering page is a positive; a listwise
model (softmax over the question's units), then a Platt calibration.

Both read their candidates through the service's own extractors (ranker_data.py), and each
model file lists the extractor's feature names it was trained on."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from shared.cli_common import Exit
from taxnav.evaluation.answers_model import Answered, answer_signals, cross_validated_marks, fit_answers, mark_figures
from shared.config import Settings
from taxnav.evaluation.ranker_data import Candidates, Passages, collect, collect_follow_ups, collect_passages

REPO_ROOT = Path(__file__).resolve().parents[2]
TEAM_EVAL = REPO_ROOT.parent / "shared" / "eval"  # ../shared/eval
OWN_EVAL = REPO_ROOT / "tests" / "evaluation"
TRAINING_FILES = (
    TEAM_EVAL / "questions.jsonl",
    TEAM_EVAL / "train_questions.jsonl",
    OWN_EVAL / "heldout_questions.jsonl",
    OWN_EVAL / "train_questions_own.jsonl",
    # real people's questions from public forums, in their own words (reported apart)
    TEAM_EVAL / "real_train_questions.jsonl",
    OWN_EVAL / "real_questions_harvested.jsonl",
)
# Conversations: each follow-up is ranked with the pages its earlier turns answered from as a feature.
DIALOG_FILES = (TEAM_EVAL / "dialogs.jsonl", OWN_EVAL / "heldout_dialogs.jsonl")


def fit_rankers(candidates: Sequence[Candidates], dialog_sets: Sequence[tuple[str, list]], settings: Settings, files: Sequence[str] = ()) -> tuple[RankerModel, RankerModel]:  # noqa: F821
    """Both rankers from labelled questions and dialogs: the page model on the questions alone;
    the passage model on the units that model's selection keeps; the dialogs' follow-ups, their
    earlier turns answered with those two (each model in a temporary file while in use); then
    the page model again on the questions and the follow-ups."""
    import tempfile  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="taxnav-ranker-") as folder:
        questions_only, passages_path = Path(folder) / "pages.json", Path(folder) / "passages.json"
        questions_only.write_text(fit(candidates).model_dump_json())
        with_models = settings.model_copy(deep=True)
        with_models.selection.local.page_model = questions_only
        passages = fit_passages(collect_passages(candidates, with_models), files)
        passages_path.write_text(passages.model_dump_json())
        with_models.stitching.local.passage_model = passages_path
        follow_ups = [c for source, dialogs in dialog_sets for c in collect_follow_ups(dialogs, source, with_models)]
    return fit([*candidates, *follow_ups], files), passages


def gold_groups(items: Sequence) -> list[int]:  # noqa: ANN001  (anything with .gold_sections)
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


def grouped_folds(items: Sequence, folds: int, seed: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:  # noqa: ANN001  (anything with .gold_sections)
    """(train, test) index arrays per fold, questions sharing a gold page in one fold; the same
    folds every run, or the groups shuffled with ``seed`` (another split of the same questions:
    how much of a change's figures the split decides)."""
    from sklearn.model_selection import GroupKFold  # noqa: PLC0415

    splitter = GroupKFold(n_splits=folds) if seed is None else GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(items)), groups=gold_groups(items)))


L2 = 0.01  # the listwise models' ridge penalty; the CV figures barely move between 0.001 and 0.1
ALSO_OK_SHARE = 0.5  # an also_ok page takes half a gold page's share of the softmax's target


def fit(candidates: Sequence[Candidates], files: Sequence[str] = ()) -> RankerModel:  # noqa: F821
    """The page ranker: the softmax over a question's candidate pages puts its mass on its gold
    pages (and half as much on its also_ok pages)."""
    from services.ranking.page_features import PAGE_EXTRACTOR  # noqa: PLC0415

    targets = [np.where(c.labels == 2, 1.0, np.where(c.labels == 1, ALSO_OK_SHARE, 0.0)) for c in candidates]
    if not any(t.any() for t in targets):
        raise ValueError("no question has an answering page among its candidates: nothing to learn from")
    return fit_listwise("pages", PAGE_EXTRACTOR.names, [c.features for c in candidates], targets, files)


def fit_passages(passages: Sequence[Passages], files: Sequence[str] = ()) -> RankerModel:  # noqa: F821
    """The passage ranker: the softmax over a question's units puts its mass on the units
    stating a key fact early."""
    from services.ranking.passage_features import UNIT_EXTRACTOR  # noqa: PLC0415

    if not any(p.labels.any() for p in passages):
        raise ValueError("no question has a unit stating a key fact on an answering page: nothing to learn from")
    return fit_listwise("passages", UNIT_EXTRACTOR.names, [p.features for p in passages], [p.labels for p in passages], files)


def fit_listwise(kind: str, features: Sequence[str], questions: Sequence[np.ndarray], targets: Sequence[np.ndarray], files: Sequence[str]) -> RankerModel:  # noqa: F821
    """A listwise linear model (per question, the softmax over its candidates against its
    targets, normalised to sum to one: each question weighs the same, whatever its candidates;
    on standardised features, with a ridge penalty), then a Platt calibration of its score into
    the probability that a candidate is a positive. Listwise because what a person reads is
    what comes first, not every pair's order."""
    from scipy.optimize import minimize  # noqa: PLC0415  (training only: the service needs numpy alone)
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415

    from services.ranking.model import RankerModel  # noqa: PLC0415

    rows = np.vstack(questions)
    mean, scale = rows.mean(axis=0), rows.std(axis=0)
    scale[scale == 0] = 1.0
    lists = [((x - mean) / scale, t / t.sum()) for x, t in zip(questions, targets, strict=True) if t.any()]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.0, np.zeros_like(w)
        for x, target in lists:
            z = x @ w
            z -= z.max()
            p = np.exp(z) / np.exp(z).sum()
            total -= float(target @ np.log(p + 1e-12))
            grad -= x.T @ (target - p)
        return total / len(lists) + L2 / 2 * float(w @ w), grad / len(lists) + L2 * w

    w = minimize(loss, np.zeros(rows.shape[1]), jac=True, method="L-BFGS-B").x
    scores = ((rows - mean) / scale) @ w
    positive = np.concatenate(targets) > 0
    platt = LogisticRegression(C=100.0).fit(scores.reshape(-1, 1), positive)
    probability = 1.0 / (1.0 + np.exp(-(platt.coef_[0][0] * scores + platt.intercept_[0])))
    return RankerModel(
        kind=kind,
        features=list(features),
        mean=mean.tolist(),
        scale=scale.tolist(),
        weights=w.tolist(),
        calibration_a=float(platt.coef_[0][0]),
        calibration_b=float(platt.intercept_[0]),
        answering_threshold=answering_threshold(probability, positive),
        trained={"files": list(files), "questions": len(lists), "candidates": len(rows), "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")},
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


def _load_dialogs(files: Sequence[Path]) -> list[tuple[str, list]]:
    from taxnav.evaluation.dialogs import load_dialogs  # noqa: PLC0415

    return [(path.stem, load_dialogs(path)) for path in files if path.exists()]


def train(args: argparse.Namespace, settings: Settings) -> int:
    started = time.perf_counter()
    sets, dialog_sets = _load(args.questions), _load_dialogs(args.dialogs)
    candidates = [c for source, questions in sets for c in collect(questions, source, settings)]
    pages, passages = fit_rankers(candidates, dialog_sets, settings, [f"{source}.jsonl" for source, _ in [*sets, *dialog_sets]])
    for path, model in ((args.out, pages), (args.passages_out, passages)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(model.model_dump_json(indent=1) + "\n")
        print(f"{model.kind}: trained on {model.trained['questions']} questions{' and follow-ups' if model.kind == 'pages' else ''}: {path}")
        _print_weights(model)
    print(f"trained in {time.perf_counter() - started:.0f} s")
    return Exit.OK


def _print_weights(model) -> None:  # noqa: ANN001  (RankerModel)
    for name, weight in sorted(zip(model.features, model.weights, strict=True), key=lambda p: -abs(p[1])):
        print(f"  {weight:+.3f}  {name}")


@dataclass
class _Held:
    """A unit of the folds: a question, or a whole dialog (its turns share a conversation)."""

    source: str
    item: object  # EvalQuestion or Dialog
    gold_sections: list[str]
    ids: list[str]  # the question's id, or the dialog's turns' ids
    dialog: bool = False


def cross_validate(args: argparse.Namespace, settings: Settings) -> int:
    """Grouped k-fold over questions and whole dialogs: each fold's model trained on the other
    folds, page figures on its own, then each of its questions answered through the API and
    each of its dialogs asked turn by turn in a conversation, scored as `taxnav eval` scores."""
    import tempfile  # noqa: PLC0415

    from ingest_worker.chunker import chunk_embed_text  # noqa: PLC0415
    from services.conversations.store import FileStore  # noqa: PLC0415
    from services.answering.pipeline import STAGES  # noqa: PLC0415
    from services.runtime.question_store import MemoryStore  # noqa: PLC0415
    from services.text.figures import checkable_facts  # noqa: PLC0415
    from shared.index import CorpusIndex  # noqa: PLC0415
    from taxnav.evaluation.dialogs import ask_dialog, summarise  # noqa: PLC0415
    from taxnav.evaluation.harness import RECALL_STAGES, ask_all  # noqa: PLC0415
    from services.ranking.assurance import PRECISION_TARGET  # noqa: PLC0415
    from taxnav.evaluation.scoring import aggregate  # noqa: PLC0415

    started = time.perf_counter()
    sets, dialog_sets = _load(args.questions), _load_dialogs(args.dialogs)
    held = [_Held(source, q, q.gold_sections, [q.id]) for source, qs in sets for q in qs]
    held += [_Held(source, d, sorted({g for t in d.turns for g in t.gold_sections}), [t.id for t in d.turns], dialog=True) for source, ds in dialog_sets for d in ds]
    folds = grouped_folds(held, args.folds, args.seed)
    cands = {c.question_id: c for source, qs in sets for c in collect(qs, source, settings)}
    args.out.mkdir(parents=True, exist_ok=True)
    index = CorpusIndex.open(settings, settings.manual)

    def page_text(section_id: str) -> str:
        page = index.pages[section_id]
        return "\n".join(chunk_embed_text(chunk, page) for chunk in index.page_chunks(section_id))

    outcomes, turns, model_of, answered = [], [], {}, []
    for k, (train_idx, test_idx) in enumerate(folds):
        train_ids = {i for j in train_idx for i in held[j].ids}
        path, passages_path = args.out / f"pages-fold{k}.json", args.out / f"passages-fold{k}.json"
        trained_dialogs = [(h.source, [h.item]) for h in (held[j] for j in train_idx) if h.dialog]
        model, passages = fit_rankers([c for qid, c in cands.items() if qid in train_ids], trained_dialogs, settings)
        path.write_text(model.model_dump_json())
        passages_path.write_text(passages.model_dump_json())
        test = [held[j] for j in test_idx]
        model_of |= {i: model for h in test for i in h.ids}
        if args.pages_only:
            continue
        fold_settings = settings.model_copy(deep=True, update={"mode": "embedded"})
        fold_settings.selection.local.page_model = path
        fold_settings.stitching.local.passage_model = passages_path
        fold_settings.stitching.assured = False  # the page ranker's marks alone: the folds' answers train the answers model
        for h in test:
            if not h.dialog:
                asked = ask_all([h.item], fold_settings, checkable_facts, page_text)
                outcomes += [(h.source, o) for o in asked]
                answered += [answered_of(h, o, fold_settings) for o in asked if o.status == "answered"]
        with tempfile.TemporaryDirectory(prefix="taxnav-ranker-cv-") as folder:
            fold_settings.conversations.dir = Path(folder)
            store, conversations = MemoryStore(), FileStore(fold_settings)
            turns += [(h.source, t) for h in test if h.dialog for t in ask_dialog(h.item, fold_settings, checkable_facts, store, conversations, baseline=False)]
        print(f"fold {k + 1}/{len(folds)}: {len(test)} questions and dialogs held out ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    report: dict[str, object] = {"folds": args.folds, "seed": args.seed, "questions": len(held), "grouped_by": "gold page"}
    held_out = [c for c in cands.values() if c.question_id in model_of]
    sources = [source for source, _ in [*sets, *dialog_sets]]
    report["pages"] = {source: _fold_page_metrics([c for c in held_out if c.source == source], model_of) for source in sources}
    report["pages"]["all"] = _fold_page_metrics(held_out, model_of)
    if outcomes:
        stages = [s.name for s in STAGES if s.name in RECALL_STAGES]
        report["answers"] = {source: aggregate([o for s, o in outcomes if s == source], stages).model_dump() for source, _ in sets}
        (args.out / "outcomes.jsonl").write_text("".join(json.dumps({"set": s, **o.model_dump(mode="json")}) + "\n" for s, o in outcomes))
    if turns:
        report["dialogs"] = {source: summarise([t for s, t in turns if s == source]) for source, _ in dialog_sets}
    answered = [a for a in answered if a is not None]
    if answered:
        probability, threshold = cross_validated_marks(answered, grouped_folds(answered, args.folds, args.seed), PRECISION_TARGET)
        report["marks"] = {"threshold": threshold, "target": PRECISION_TARGET, "by_set": mark_figures(answered, probability, threshold)}
        model = fit_answers(np.stack([a.signals for a in answered]), np.array([a.right for a in answered]), threshold, [f"{source}.jsonl" for source, _ in sets])
        for path in (args.out / "answers.json", *([args.answers_out] if args.answers_out else [])):
            path.write_text(model.model_dump_json(indent=1) + "\n")
    report["seconds"] = round(time.perf_counter() - started)
    (args.out / "cv.json").write_text(json.dumps(report, indent=1) + "\n")
    _print(report)
    _print_marks(report)
    return Exit.OK


def answered_of(h: _Held, outcome, settings: Settings) -> Answered | None:  # noqa: ANN001  (QuestionOutcome)
    """An answered question's signals for the answers model, labelled by the strict scoring."""
    signals = answer_signals(h.item.question, settings)
    if signals is None:
        return None
    lead = next((c for c in outcome.claims if c.role == "answer"), None)
    return Answered(h.source, h.item.id, list(h.gold_sections), signals, bool(outcome.strict_correct), bool(lead and lead.relevance == "answering"))


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
    for source, d in report.get("dialogs", {}).items():
        f = d["follow_ups"]
        print(f"  {source:28} follow-ups strict {f['strict_correct']}/{f['n']} (answerable right {f['answerable_ok']}/{f['answerable']}); first turns {d['first_turns']['strict_correct']}/{d['first_turns']['n']}")
    for source, m in report.get("answers", {}).items():
        print(
            f"  {source:28} answerable right {m['answerable_ok']}  lead facts {m['lead_facts']:.1%}  claim precision {m['claim_precision']:.1%}"
            f"  first sentence {m['first_sentence_fact']:.1%}  answer words {m['answer_words_median']:.0f}  strict {m['strict_correct']}/{m['questions']}"
            + "".join(f"  {k} {v['claims']} on point {v['on_point']:.0%} fact {v['states_fact']:.0%}" for k, v in m.get('marks', {}).items())
            + f"  lead mark agrees {m.get('lead_mark_agrees', 0.0):.0%}"
        )


def _print_marks(report: dict) -> None:
    marks = report.get("marks")
    if not marks:
        return
    print(f"marks (out of fold): 'answers your question' at P(right) >= {marks['threshold']:.2f} (target {marks['target']:.0%} right)")
    print("  set: answers right | model: marked, right among marked, wrong marked, right marked | page mark alone: the same")
    for source, m in marks["by_set"].items():
        print(
            f"  {source:28} {m['right']}/{m['answers']} | {m['model_marked']}, {m['model_marked_right']:.0%}, {m['model_wrong_marked']:.0%}, {m['model_right_marked']:.0%}"
            f" | {m['page_mark_marked']}, {m['page_mark_marked_right']:.0%}, {m['page_mark_wrong_marked']:.0%}, {m['page_mark_right_marked']:.0%}"
        )


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low`` (else a usage error, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}")
        return value

    return parse


def register(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("ranker", help="train the page ranker, or score it by grouped cross-validation", description=__doc__)
    commands = parser.add_subparsers(dest="ranker_command", required=True, metavar="ACTION")
    from services.ranking.model import default_path  # noqa: PLC0415

    defaults = list(TRAINING_FILES)
    fit_parser = commands.add_parser("train", parents=parents, help="fit the model on every labelled file and write it")
    fit_parser.add_argument("--questions", type=Path, nargs="+", default=defaults, help="labelled question files (default: the dev, train and held-out files)")
    fit_parser.add_argument("--out", type=Path, default=default_path("pages"), help="the page model file (default: the one the service loads)")
    fit_parser.add_argument("--passages-out", type=Path, default=default_path("passages"), help="the passage model file (default: the one the service loads)")
    fit_parser.add_argument("--dialogs", type=Path, nargs="*", default=list(DIALOG_FILES), help="labelled dialog files whose follow-ups it also learns from")
    fit_parser.set_defaults(func=train)
    cv = commands.add_parser("cv", parents=parents, help="k-fold cross-validation grouped by gold page, answers through the API")
    cv.add_argument("--questions", type=Path, nargs="+", default=defaults, help="labelled question files")
    cv.add_argument("--dialogs", type=Path, nargs="*", default=list(DIALOG_FILES), help="labelled dialog files (each dialog is held out whole)")
    cv.add_argument("--folds", type=_at_least(2), default=5, help="folds (at least 2; default 5)")
    cv.add_argument("--seed", type=_at_least(0), help="shuffle the groups into folds with this seed (default: the same folds every run); another split measures how much a change's figures owe to the split")
    cv.add_argument("--pages-only", action="store_true", help="page order figures alone (no answers asked)")
    cv.add_argument("--out", type=Path, default=Path("reports/ranker-cv"), help="directory for cv.json, outcomes.jsonl and the fold models")
    cv.add_argument("--answers-out", type=Path, help="also write the answers model (fitted on every cross-validated answer) here, e.g. the one the service loads: " + str(default_path("answers").relative_to(REPO_ROOT)))
    cv.set_defaults(func=cross_validate)
