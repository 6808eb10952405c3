"""The CLI's words for what the operations say in MCP words: a line an operation writes names MCP tools and their
parameters (`call campaign_run with i_understand_this_submits_jobs=true`); printed at a terminal, it names the
`redline` commands and flags that do the same (`redline campaign run --i-understand-this-submits-jobs`).

    cli_words("call champion_select for the champion")   # "call `redline campaign champion` for the champion"

One table, COMMANDS, says which command each tool is (tests/test_operations_agree.py holds it to the CLI's own);
a tool no command serves (the jobs, a rung's record from text) keeps its name.
"""

from __future__ import annotations

import re
from typing import Any

from redline.ops.requests import OPERATIONS

COMMANDS: dict[str, str] = {
    "ladder_init": "redline ladder init",
    "ladder_status": "redline ladder status",
    "ladder_next_rung": "redline ladder next",
    "rung_run": "redline ladder run",
    "smoke_test": "redline ladder smoke",
    "ceiling_record": "redline ladder record",
    "ladder_adopt": "redline ladder adopt",
    "parse_boot_log": "redline parse-log",
    "campaign_init": "redline campaign init",
    "campaign_plan": "redline campaign plan",
    "campaign_run": "redline campaign run",
    "campaign_status": "redline campaign status",
    "campaign_aggregate": "redline campaign aggregate",
    "champion_select": "redline campaign champion",
    "campaign_report": "redline campaign report",
    "ab_run": "redline ab run",
    "perf_baseline_record": "redline baseline record",
    "perf_baseline_diff": "redline baseline diff",
    "champion_apply": "redline ab apply",
    "lever_frontier": "redline frontier",
    "known_good_record": "redline known-good record",
    "known_good_lookup": "redline known-good lookup",
    "known_good_list": "redline known-good list",
    "memory_predict": "redline predict",
}
# a tool's name as a word of a sentence, not part of a path or a file's name (ab/ab_run.yml)
_TOOL = re.compile(r"`?(?<![/\w.-])(" + "|".join(sorted(COMMANDS, key=len, reverse=True)) + r")(?![\w/-]|\.\w)`?")
_FIELDS = sorted({f for request in OPERATIONS.values() for f in request.model_fields}, key=len, reverse=True)
_TRUE = re.compile(r"(?<![-\w])(" + "|".join(_FIELDS) + r")=true\b")
_FIELD = re.compile(r"`(" + "|".join(_FIELDS) + r")`")  # a parameter named in backticks
SAID = frozenset({"next", "reason", "note", "summary", "noise", "resume", "why", "fix", "failed", "hint"})


def cli_words(text: str) -> str:
    """A line in the CLI's words: each MCP tool its `redline` command, each `name=true` or `name` (a parameter in
    backticks) its --flag."""
    text = _TOOL.sub(lambda m: f"`{COMMANDS[m.group(1)]}`", text)
    text = _FIELD.sub(lambda m: "--" + m.group(1).replace("_", "-"), text)
    return _TRUE.sub(lambda m: "--" + m.group(1).replace("_", "-"), text)


def cli_json(value: Any, said: bool = False) -> Any:
    """A result's JSON with what it says in sentences (next, reason, note, summary, ...: SAID) in the CLI's words,
    its data (names, paths, commands, figures) as it is: what `--json` prints at a terminal."""
    if isinstance(value, str):
        return cli_words(value) if said else value
    if isinstance(value, list):
        return [cli_json(v, said) for v in value]
    if isinstance(value, dict):
        return {k: cli_json(v, k in SAID) for k, v in value.items()}
    return value


__all__ = ["COMMANDS", "cli_json", "cli_words"]
