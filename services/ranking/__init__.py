"""Learned ranking: the linear model that turns a candidate's features (for pages,
services/ranking/page_features.py) into a score (``model.py``). The model files
beside it (``models/``) are trained by ``taxnav ranker train`` from labelled question files;
each names the features it was trained on, and a model whose list differs from what the
service computes is refused at load."""
