"""The boots redline ships to calibrate its memory models: src/redline/data/boots/<engine>-<version>-<gpu>/.

Each corpus folder holds real boot logs and a boots.yml naming, per log, the model (a config.json under
boots/models/) and the config it booted. A log is read by its engine's own reader, so every figure the model learns
from is one the log printed. Each corpus is read once per process: a plan or a record after the first reads no log.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from pydantic import ValidationError

from redline.engines import get_engine
from redline.errors import InputError
from redline.models.memory import Corpus, Observation
from redline.models.serve import ServeConfig
from redline.models.shape import ModelShape, shape_of
from redline.untrusted import parse_yaml
from redline.validation_text import explain_line


def _root() -> Traversable:
    return resources.files("redline").joinpath("data", "boots")


@cache
def corpus_names() -> tuple[str, ...]:
    """The shipped corpora, listed once per process (they ship with redline: none comes or goes while it runs)."""
    return tuple(sorted(p.name for p in _root().iterdir() if p.is_dir() and p.joinpath("boots.yml").is_file()))


@cache
def corpus_shape(model: str) -> ModelShape:
    """A corpus model's shape, from its config.json."""
    shape, why = shape_of(json.loads(_root().joinpath("models", model, "config.json").read_text(encoding="utf-8")))
    if shape is None:
        raise InputError(f"boots/models/{model}: {why}")
    return shape


def read_corpus(folder: Traversable, label: str) -> Corpus:
    text = folder.joinpath("boots.yml").read_text(encoding="utf-8")
    try:
        return Corpus.model_validate(parse_yaml(text, f"{label}/boots.yml"))
    except ValidationError as exc:
        raise InputError(f"{label}/boots.yml: {explain_line(exc)}") from exc


def read_log(folder: Traversable, log: str) -> str:
    """One boot log's text (the only place a corpus log is read)."""
    return folder.joinpath(log).read_text(encoding="utf-8")


def observations_in(folder: Traversable, label: str) -> tuple[Observation, ...]:
    """Every boot of a corpus folder (a shipped one, or a held-out set in its format), read from its log; the
    models are the shipped corpus's (boots/models/)."""
    corpus = read_corpus(folder, label)
    engine = get_engine(corpus.engine)
    seen = []
    for boot in corpus.boots:
        signals = engine.parse_boot_log(read_log(folder, boot.log))
        seen.append(
            Observation(
                source=f"{label}/{boot.log}",
                architecture=boot.model,
                shape=corpus_shape(boot.model),
                serve=ServeConfig.model_validate({"model": boot.model, **boot.serve}),
                engine=corpus.engine,
                engine_version=signals.engine_version or corpus.engine_version,
                gpu=corpus.gpu,
                signals=signals,
            )
        )
    return tuple(seen)


@cache
def corpus_observations(name: str) -> tuple[Observation, ...]:
    """Every boot of one shipped corpus, read from its logs once per process."""
    return observations_in(_root().joinpath(name), f"boots/{name}")


def shipped(engine: str) -> list[Observation]:
    """Every shipped boot of an engine, of every corpus."""
    return [o for name in corpus_names() for o in corpus_observations(name) if o.engine == engine]


__all__ = ["corpus_names", "corpus_observations", "corpus_shape", "observations_in", "read_corpus", "shipped"]
