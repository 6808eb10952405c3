"""JSON Schemas of the shapes redline reads and writes, kept in schemas/ and checked for drift.

Regenerate after changing a model: `python -m redline.schemas schemas/`.
"""

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from redline.models import BenchResult, BootSignals, Ladder, ServeConfig
from redline.models.ab import AbResult, AbSpec, TrialRecord
from redline.models.baseline import BaselineDiff, BaselinesFile
from redline.models.campaign import Campaign
from redline.models.campaign_results import CellVerdict
from redline.models.context import ContextDescriptor
from redline.models.known_good import KnownGoodFile
from redline.models.memory import Corpus, MemoryPrediction
from redline.models.sol import SolTable

# file stem -> model; add a model here when it becomes a file or a tool result people rely on
MODELS: dict[str, type[BaseModel]] = {
    "serve-config": ServeConfig,
    "boot-signals": BootSignals,
    "bench-result": BenchResult,
    "ladder": Ladder,
    "campaign": Campaign,
    "campaign-cell-verdict": CellVerdict,
    "context-descriptor": ContextDescriptor,
    "ab-spec": AbSpec,
    "memory-prediction": MemoryPrediction,
    "boot-corpus": Corpus,
    "ab-trial": TrialRecord,
    "ab-result": AbResult,
    "baselines": BaselinesFile,
    "baseline-diff": BaselineDiff,
    "known-good": KnownGoodFile,
    "sol-ceilings": SolTable,
}


def render(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, model in MODELS.items():
        path = folder / f"{stem}.schema.json"
        path.write_text(render(model))
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")):
        print(path)
