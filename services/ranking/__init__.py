"""Learned ranking: each ranker's features as named units in one extractor (``extractor.py``;
the pages' in page_features.py, the passages' in passage_features.py), and the linear model
that turns a candidate's row of them into a score (``model.py``). The model files beside it
(``models/``) are trained by ``taxnav ranker train`` from labelled question files through the
same extractors; each names the features it was trained on, and a model whose list differs
from its extractor's names is refused at load (``rankers.py``)."""
