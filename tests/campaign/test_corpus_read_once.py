"""The shipped calibration corpus is read once per process (issue 33, item 4): a campaign's plan predicts every cell
on the corpus's boots, and a second plan reads no boot log again."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.ops.campaign.plan import campaign_plan
from redline.ops.predict import corpus
from tests.campaign.test_predicted_cells import campaign, run_on_h200


def test_a_second_plan_reads_no_boot_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = corpus.read_log

    def counted(folder, log):  # noqa: ANN001, ANN202
        reads.append(log)
        return real(folder, log)

    monkeypatch.setattr(corpus, "read_log", counted)
    corpus.corpus_observations.cache_clear()  # as a fresh process
    path, survey = campaign(tmp_path), run_on_h200(tmp_path)
    first = campaign_plan(path, survey=survey)
    assert len(reads) == sum(len(corpus.read_corpus(corpus._root() / n, n).boots) for n in corpus.corpus_names())
    reads.clear()
    second = campaign_plan(path, survey=survey)
    assert reads == [] and second.cells == first.cells
