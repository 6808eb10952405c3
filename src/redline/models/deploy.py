"""What writing a champion back into a deploy's values file says: the flags, the diff, whether it was written, and
the baseline the champion became."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from redline.models.baseline import BaselineRecorded


class ChampionApplied(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ab: str
    champion: str = Field(description="The A/B's champion arm, whose flags are written")
    values: str = Field(description="The values file, relative to the workspace")
    args_key: str = Field(description="The list of engine arguments in it that the flags go into")
    flags: list[str] = Field(description="The champion's flags, as the deploy takes them")
    left_out: list[str] = Field(description="What of the champion's config the deploy sets itself, and why")
    changes: list[str] = Field(description="Each edit of the list: a flag replaced, a value item removed, one added")
    diff: str = Field(description="The unified diff of the values file ('' when it already carries every flag)")
    diff_id: str = Field(description="Pass as expect, with the acknowledgement, to write exactly this diff")
    written: bool
    baseline: BaselineRecorded | None = Field(description="The champion recorded as the new baseline, once written")
    next: str


__all__ = ["ChampionApplied"]
