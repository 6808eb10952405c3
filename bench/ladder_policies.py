"""Replay both climb policies against outcome tables built from real H200 boots.

    .venv/bin/python bench/ladder_policies.py

Each table is a linear model of one model's boots on one H200 (vLLM 0.26.0,
gpu_memory_utilization 0.90), fitted to the real logs in ../shared/fixtures
(or their copy in tests/data): the KV cache in GiB and tokens at 8,192 batched
tokens, and the peak activation that grows with --max-num-batched-tokens and
comes out of the KV cache. A boot whose max_model_len does not fit fails as
vLLM does, with "estimated maximum model length". Every rung it produces is
`simulated: true`; smoke tests pass whenever the boot did.

    qwen32b  memory binds: true max_model_len ceiling 256,848 at 8,192 batched
             tokens (q32_128k.log; q32_256k.log says the same). Its activation
             slope is llama8b's scaled by their measured activation at 8,192
             (1.61 / 1.1 GiB): an assumption, marked as such.
    llama8b  max_position_embeddings (131,072) binds; its activation slope is
             measured from the three l8b_mnbt*.log boots.

It prints, per model and policy: boots and smoke tests until the
max_model_len ceiling is confirmed (booted and smoke-tested), that ceiling as
a percentage of the true one, then the whole climb including
max_num_batched_tokens, whose true ceiling is taken at the max_model_len the
climb confirmed. Figures, not a test.
"""

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from redline.engines.vllm import parse_boot_log  # noqa: E402
from redline.ledger import append_rung, set_smoke_test  # noqa: E402
from redline.models import BootSignals, BootStatus, MemoryBreakdown  # noqa: E402
from redline.models.ladder import Floor, GpuProfile, Ladder, ModelRef, Rung, SmokeTest  # noqa: E402
from redline.ops.ladder.ceiling import ceiling_change  # noqa: E402
from redline.policy import next_step, place_boot  # noqa: E402

FIXTURE_DIRS = (ROOT.parent / "shared/fixtures/vllm-0.26.0-h200", ROOT / "tests/data/vllm-0.26.0-h200")
BLOCK = 16
FLOOR = (32768, 8192)


def fixtures() -> Path:
    return next(d for d in FIXTURE_DIRS if (d / "q32_128k.log").is_file())


def _signals(name: str) -> BootSignals:
    return parse_boot_log((fixtures() / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Table:
    """How one model boots on the H200: a linear model of real boot logs."""

    key: str
    path: str
    max_position_embeddings: int
    base: BootSignals  # a real boot at `base.max_num_batched_tokens`
    slope_gib_per_token: float  # peak activation growth per batched token
    sources: tuple[str, ...] = field(default=())

    @property
    def gib_per_token(self) -> float:
        return self.base.available_kv_cache_gib / self.base.kv_cache_tokens

    def kv(self, mnbt: int) -> tuple[float, int, float]:
        """Available KV GiB, KV tokens and peak activation at `mnbt` batched tokens."""
        grow = self.slope_gib_per_token * (mnbt - self.base.max_num_batched_tokens)
        tokens = self.base.kv_cache_tokens - int(-(-grow // self.gib_per_token))  # whole tokens lost, rounded up
        return (
            self.base.available_kv_cache_gib - grow,
            tokens // BLOCK * BLOCK,
            self.base.memory.peak_activation_gib + grow,
        )

    def boot(self, mml: int, mnbt: int) -> BootSignals:
        gib, tokens, act = self.kv(mnbt)
        common = dict(
            engine_version=self.base.engine_version,
            max_model_len=mml,
            max_num_batched_tokens=mnbt,
            available_kv_cache_gib=round(gib, 2),
        )
        if mml > tokens:
            return BootSignals(
                status=BootStatus.OOM_KV_CACHE,
                estimated_max_model_len=tokens,
                kv_cache_needed_gib=round(mml * self.gib_per_token, 2),
                reason=f"simulated: {mml:,} tokens need more KV cache than {tokens:,}",
                **common,
            )
        memory = MemoryBreakdown(**{**self.base.memory.model_dump(), "peak_activation_gib": round(act, 2)})
        return BootSignals(
            status=BootStatus.BOOT_OK,
            reason="simulated: boots",
            kv_cache_tokens=tokens,
            max_concurrency=round(tokens / mml, 2),
            max_concurrency_tokens=mml,
            memory=memory,
            **common,
        )

    def true_max_model_len(self) -> int:
        """The highest max_model_len that fits at the floor's batched tokens."""
        return min(self.kv(FLOOR[1])[1], self.max_position_embeddings)

    def true_max_num_batched_tokens(self, mml: int) -> int:
        """The most batched tokens (capped at `mml`) that still leave room for one request of `mml`."""
        mnbt = FLOOR[1]
        while mnbt + BLOCK <= mml and self.kv(mnbt + BLOCK)[1] >= mml:
            mnbt += BLOCK
        return mnbt


def tables() -> dict[str, Table]:
    l8k, l32k, l128k = (_signals(f"l8b_mnbt{n}.log") for n in (8192, 32768, 131072))
    slope = (l128k.memory.peak_activation_gib - l8k.memory.peak_activation_gib) / (131072 - 8192)
    q128k, q256k = _signals("q32_128k.log"), _signals("q32_256k.log")
    assert q256k.estimated_max_model_len == q128k.kv_cache_tokens, "the fixtures disagree on qwen32b's ceiling"
    q_slope = slope * q128k.memory.peak_activation_gib / l8k.memory.peak_activation_gib
    return {
        "qwen32b": Table("qwen32b", "/models/qwen32b", 1048576, q128k, q_slope, ("q32_128k.log", "q32_256k.log")),
        "llama8b": Table("llama8b", "/models/llama8b", 131072, l8k, slope, ("l8b_mnbt8192/32768/131072.log",)),
    }


@dataclass
class Climb:
    """One simulated climb: the ladder it left and the counts at each milestone."""

    ladder: Ladder
    mml_boots: int = 0
    mml_smokes: int = 0
    mml_ceiling: int | None = None
    boots: int = 0
    smokes: int = 0
    end: str = ""
    path: list[str] = field(default_factory=list)


def _rung(ladder: Ladder, table: Table, mml: int, mnbt: int) -> Rung:
    place = place_boot(ladder, mml, mnbt)
    signals = table.boot(mml, mnbt)
    return Rung(
        index=len(ladder.rungs) + 1,
        climbs=place.climbs,
        replay_of=place.replay_of,
        simulated=True,
        status=signals.status,
        reason=signals.reason,
        serve=place.serve,
        signals=signals,
    )


def climb(table: Table, policy: str, floor: tuple[int, int] = FLOOR, limit: int = 40) -> Climb:
    ladder = Ladder(
        model=ModelRef(key=table.key, path=table.path, max_position_embeddings=table.max_position_embeddings),
        gpu=GpuProfile(name="NVIDIA H200", memory_gib=table.base.memory.device_total_gib),
        engine_version=table.base.engine_version,
        policy=policy,
        floor=Floor(max_model_len=floor[0], max_num_batched_tokens=floor[1]),
    )
    run = Climb(ladder)
    for _ in range(limit):
        step = next_step(run.ladder)
        if (
            run.mml_ceiling is None
            and step.rung
            and (step.route == "record_ceiling" or step.climbs == "max_num_batched_tokens")
        ):
            run.mml_boots, run.mml_smokes, run.mml_ceiling = run.boots, run.smokes, step.rung.max_model_len
        if step.route == "run_rung":
            rung = _rung(run.ladder, table, step.rung.max_model_len, step.rung.max_num_batched_tokens)
            run.ladder = append_rung(run.ladder, rung)
            last = run.ladder.rungs[-1]
            run.boots += 1
            run.path.append(
                f"{last.serve.max_model_len:,}/{last.serve.max_num_batched_tokens:,} "
                f"{'ok' if last.status.booted else last.status.value}"
            )
        elif step.route == "smoke_test":
            run.ladder = set_smoke_test(
                run.ladder, SmokeTest(attempted=True, outcome="pass", reason="simulated: the boot held")
            )
            run.smokes += 1
            run.path[-1] += "+smoke"
        else:
            if step.route == "record_ceiling":
                run.ladder = ceiling_change(run.ladder).ladder
            run.end = step.route
            return run
    run.end = "gave up"
    return run


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    header = (
        "model",
        "policy",
        "boots",
        "smokes",
        "max_model_len",
        "true",
        "%",
        "| all boots",
        "smokes",
        "batched",
        "true at that len",
        "%",
        "end",
    )
    rows = [header]
    paths = []
    for table in tables().values():
        true_mml = table.true_max_model_len()
        for policy in ("signal", "doubling"):
            run = climb(table, policy)
            ceiling = run.ladder.ceiling
            mnbt = ceiling.max_num_batched_tokens if ceiling else None
            true_mnbt = table.true_max_num_batched_tokens(run.mml_ceiling)
            rows.append(
                (
                    table.key,
                    policy,
                    str(run.mml_boots),
                    str(run.mml_smokes),
                    f"{run.mml_ceiling:,}",
                    f"{true_mml:,}",
                    f"{100 * run.mml_ceiling / true_mml:.1f}%",
                    f"| {run.boots}",
                    str(run.smokes),
                    f"{mnbt:,}" if mnbt else "-",
                    f"{true_mnbt:,}",
                    f"{100 * mnbt / true_mnbt:.1f}%" if mnbt else "-",
                    run.end,
                )
            )
            paths.append(f"{table.key:8} {policy:8} {' -> '.join(run.path)}")
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    print(
        f"from a floor of {FLOOR[0]:,} / {FLOOR[1]:,}; boots and smoke tests until the max_model_len ceiling is "
        "confirmed, then for the whole climb\n"
    )
    for row in rows:
        print("  ".join(c.rjust(w) if i >= 2 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    print("\nrungs (max_model_len/max_num_batched_tokens outcome):")
    print("\n".join(paths))


if __name__ == "__main__":
    main()
