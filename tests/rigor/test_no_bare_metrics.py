"""No bare metric: every MCP tool's output schema (tools/list from the real in-process server) is walked, and every
field that holds a metric must have a context descriptor beside it or above it.

A metric is a field named like a measurement: *_ms (TTFT, TPOT, ITL), *_throughput, tokens_per_s, a % of
speed-of-light (pct_of_ceiling, sol_pct). "Beside or above" means that the object holding the field, or one that
holds it, has a property named `context` (or `*_context`) whose schema is the ContextDescriptor.

Decided for the ladder tools: a smoke test's figures carry a `context` (SmokeTest.context) built from the ladder
(model, GPU, engine), the rung's serve config and the load sent; a ladder's boot figures (KV tokens, concurrency)
are capacities the boot log states, not measurements of a workload, and are not metrics by this definition.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from redline.server.app import build_server
from redline.server.config import ServerConfig

pytestmark = pytest.mark.anyio

METRIC = re.compile(r"(_ms|_throughput|tokens_per_s(_[a-z_]+)?|^pct_of_ceiling|^sol_pct)$")
DESCRIPTOR = "ContextDescriptor"
# Shapes owned by another module whose figures do not carry the descriptor yet, each with why; a fixed one fails
# the test until it is taken out of this table (so the table only shrinks).
EXEMPT = {
    "TableRow": "campaign_aggregate/campaign_report rows: their context is each cell's verdict.yml (the campaign's own "
    "Context, convertible with tools.sources.cell_context); the campaign tools are to carry the descriptor",
}


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _is_descriptor(schema: dict[str, Any]) -> bool:
    options = [schema, *schema.get("anyOf", []), *schema.get("oneOf", [])]
    return any(_ref_name(o) == DESCRIPTOR for o in options)


def _has_context(props: dict[str, Any]) -> bool:
    return any((name == "context" or name.endswith("_context")) and _is_descriptor(s) for name, s in props.items())


def bare_metrics(schema: dict[str, Any]) -> Iterator[tuple[str, str | None]]:
    """(path, the $def holding it) of every metric field with no context descriptor beside or above it."""
    defs = schema.get("$defs", {})
    seen: set[tuple[str, bool]] = set()

    def walk(node: dict[str, Any], path: str, covered: bool, owner: str | None) -> Iterator[tuple[str, str | None]]:
        name = _ref_name(node)
        if name is not None:
            if name == DESCRIPTOR or (name, covered) in seen:
                return
            seen.add((name, covered))
            yield from walk(defs[name], f"{path}<{name}>", covered, name)
            return
        props = node.get("properties", {})
        here = covered or _has_context(props)
        for field, sub in props.items():
            if METRIC.search(field) and not here:
                yield f"{path}.{field}", owner
            yield from walk(sub, f"{path}.{field}", here, owner)
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for sub in node.get(key, []):
                yield from walk(sub, path, here, owner)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                yield from walk(node[key], f"{path}[]", here, owner)

    yield from walk(schema, "", False, None)


@pytest.fixture
async def output_schemas(tmp_path: Path) -> dict[str, dict[str, Any]]:
    async with Client(build_server(ServerConfig(workspace=tmp_path))) as client:
        return {t.name: t.output_schema for t in (await client.list_tools()).tools}


async def test_no_tool_emits_a_bare_metric(output_schemas: dict[str, dict[str, Any]]) -> None:
    bare, exempted = {}, set()
    for tool, schema in output_schemas.items():
        assert schema, f"{tool} has no output schema"
        for path, owner in bare_metrics(schema):
            if owner in EXEMPT:
                exempted.add(owner)
            else:
                bare.setdefault(tool, []).append(path)
    assert bare == {}, f"metrics with no context descriptor beside them: {bare}"
    assert exempted == set(EXEMPT), f"stale exemptions (those shapes carry a context now): {set(EXEMPT) - exempted}"


async def test_the_evidence_tools_carry_the_descriptor(output_schemas: dict[str, dict[str, Any]]) -> None:
    for tool in ("ab_run", "perf_baseline_record", "perf_baseline_diff", "rung_run", "ladder_status"):
        assert DESCRIPTOR in output_schemas[tool].get("$defs", {}), tool


def test_the_walker_finds_a_bare_metric_and_accepts_one_with_its_context() -> None:
    ctx = {"$ref": f"#/$defs/{DESCRIPTOR}"}
    schema = {
        "type": "object",
        "$defs": {
            DESCRIPTOR: {"type": "object"},
            "Row": {"type": "object", "properties": {"median_tpot_ms": {"type": "number"}, "cell": {"type": "string"}}},
        },
        "properties": {
            "rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
            "covered": {
                "type": "object",
                "properties": {
                    "context": {"anyOf": [ctx, {"type": "null"}]},
                    "inner": {"type": "object", "properties": {"output_throughput": {"type": "number"}}},
                },
            },
        },
    }
    assert list(bare_metrics(schema)) == [(".rows[]<Row>.median_tpot_ms", "Row")]
