"""The close of a measured result: the next levers worth trying, and whether a champion is closed."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from redline.models.strict import Strict

Cost = Literal["low", "medium", "high"]


class Lever(Strict):
    """One next step toward speed-of-light, with the gate that would prove or refute it."""

    lever: str = Field(description="a short name, such as fp8_kv_cache")
    change: str = Field(description="what to set, in serve-config terms")
    expected_gain_pct: float = Field(  # bounded, as frontier.yml, a workspace file, is read back into it
        ge=0,
        le=1e6,
        allow_inf_nan=False,
        description="a rough expected gain on the claim's metric, in percent: a prediction, never a measurement",
    )
    expected: str = Field(description="the direction and rough size of the unlock, and where the estimate comes from")
    cost: Cost
    cost_boots: int = Field(
        ge=1, le=100_000, description="clean boots the gate takes (an A/B of 2 arms x 3 trials is 6)"
    )
    score: float = Field(ge=0, le=1e6, allow_inf_nan=False, description="expected gain per unit of cost: the rank")
    gate: str = Field(description="the run that proves or refutes it, and what it must show")
    provenance: Literal["predicted"] = "predicted"


class CloseStatus(Strict):
    """A champion is closed only when its known-good config is recorded and a next lever is named."""

    champion: str | None
    closed: bool
    known_good: str | None = Field(None, description="the known-good entry that records the champion's flags")
    next_lever: str | None = Field(None, description="the top lever named")
    missing: list[str] = Field(description="what is missing before the champion is closed, each with the call to make")


__all__ = ["CloseStatus", "Cost", "Lever"]
