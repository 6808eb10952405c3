"""The steps a ladder's route can take, built: boot a rung, replay one, smoke-test one, diagnose, record the ceiling.
Pure; the route (policy/route.py) and the predict policy's joint climb (policy/joint.py) both build their steps here."""

from redline.models.ladder import Climb, Ladder, NextStep, Prediction, Rung
from redline.policy.rungs import serve_config, smoke_workload


def run_rung(
    ladder: Ladder, mml: int, mnbt: int, climbs: Climb, reason: str, predicted: Prediction | None = None
) -> NextStep:
    config = serve_config(ladder, mml, mnbt)
    return NextStep(route="run_rung", rung=config, climbs=climbs, reason=reason, predicted=predicted)


def replay(rung: Rung, reason: str) -> NextStep:
    return NextStep(route="run_rung", rung=rung.serve, climbs=rung.climbs, replay_of=rung.index, reason=reason)


def smoke(ladder: Ladder, rung: Rung, reason: str) -> NextStep:
    if rung.index != len(ladder.rungs):  # a later rung booted another server since: boot this one again
        return replay(rung, f"{reason}; a later rung has booted since, so replay rung {rung.index} first")
    return NextStep(
        route="smoke_test",
        rung=rung.serve,
        rung_index=rung.index,
        climbs=rung.climbs,
        smoke=smoke_workload(ladder, rung),
        reason=reason,
    )


def diagnose(rung: Rung | None, reason: str) -> NextStep:
    return NextStep(route="diagnose", rung_index=None if rung is None else rung.index, reason=reason)


def record(rung: Rung, reason: str) -> NextStep:
    return NextStep(route="record_ceiling", rung=rung.serve, rung_index=rung.index, climbs=rung.climbs, reason=reason)


__all__ = ["diagnose", "record", "replay", "run_rung", "smoke"]
