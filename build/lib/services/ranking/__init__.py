"""Learned ranking: the features a candidate page or passage is ranked by (``pages.py``,
``passages.py``) and the linear model that turns them into a score (``model.py``). The
model files beside them (``models/``) are trained by ``taxnav ranker train`` from labelled
question files; each names the features it was trained on, and a model whose list differs
from what the service computes is refused at load."""
