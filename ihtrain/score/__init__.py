"""Score public checkpoint series: the trainer's per-head metrics over a ``transformers`` model's
revisions, into one series directory (docs/DESIGN.md, "Scored series directory").

``python -m ihtrain.score`` (:mod:`ihtrain.score.cli`); :mod:`~ihtrain.score.adapter` (a
Hugging Face model behind our GPT's metric interface), :mod:`~ihtrain.score.load` (revisions,
loading, vocabulary), :mod:`~ihtrain.score.scorer` (the resumable loop),
:mod:`~ihtrain.score.convert` (our GPT to Hugging Face GPT-2).
"""
