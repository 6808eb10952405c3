"""A champion's flags merged into a deploy's engine arguments: the list a Helm values file passes to the engine
(`vllm.extraArgs` and the like), as edits a round-trip writer applies in place so the rest of the file is kept.

    edits = merge_args(["--max-num-seqs", "256", "--trust-remote-code"], ["--max-num-seqs=128"])
    # [Replace(0, "--max-num-seqs=128"), Delete(1)]: the flag's own place, its value item gone, the rest untouched

An item that starts with `-` is a flag; its value is written after `=` or as the next item (one that does not start
with `-`). Two spellings are one flag when they name the same option: `--enable-x` and `--no-enable-x`,
`--max_num_seqs` and `--max-num-seqs`. A flag the champion sets takes the place of the first item that names it
(and the later ones go); a flag the list lacks is appended; every other item is kept as written.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Replace:
    index: int
    item: str
    was: str  # the item (and its value item) it replaces, as written


@dataclass(frozen=True)
class Delete:
    index: int


@dataclass(frozen=True)
class Append:
    item: str


Edit = Replace | Delete | Append


def option(item: str) -> str | None:
    """The option an item names (`--no-enable-x=1` -> `enable-x`), or None for a value item."""
    if not item.startswith("-") or item in ("-", "--"):
        return None
    name = item.lstrip("-").split("=", 1)[0].replace("_", "-")
    return name.removeprefix("no-")


def _groups(items: Sequence[str]) -> list[tuple[str | None, list[int]]]:
    """Each flag with the indices it spans (itself, and its value item when written apart); value items alone."""
    groups: list[tuple[str | None, list[int]]] = []
    i = 0
    while i < len(items):
        name = option(items[i])
        spans = [i]
        if name is not None and "=" not in items[i] and i + 1 < len(items) and option(items[i + 1]) is None:
            spans.append(i + 1)
        groups.append((name, spans))
        i = spans[-1] + 1
    return groups


def _meaning(written: Sequence[str]) -> tuple[bool, str | None]:
    """What a flag's items say: whether it is the `--no-` form, and its value (None: a switch)."""
    head = written[0].lstrip("-")
    value = head.split("=", 1)[1] if "=" in head else (written[1] if len(written) > 1 else None)
    return head.replace("_", "-").startswith("no-"), value


def merge_args(items: Sequence[str], flags: Sequence[str]) -> list[Edit]:
    """The edits that make `items` carry every flag in `flags` (each one item, `--flag=value` or `--flag`); none
    when it already does, in whatever spelling (`--max-num-seqs 128` is `--max-num-seqs=128`). The replaces come
    first, then the deletes in descending index order, then the appends."""
    groups = _groups(items)
    replaces: list[Edit] = []
    deletes: list[int] = []
    appends: list[Edit] = []
    for flag in flags:
        name = option(flag)
        mine = [spans for n, spans in groups if n is not None and n == name]
        if not mine:
            appends.append(Append(flag))
            continue
        first, rest = mine[0], mine[1:]
        written = [items[i] for i in first]
        if _meaning(written) != _meaning([flag]) or rest:
            replaces.append(Replace(first[0], flag, " ".join(written)))
            deletes += first[1:] + [i for spans in rest for i in spans]
    return replaces + [Delete(i) for i in sorted(set(deletes), reverse=True)] + appends


def apply_edits(items: MutableSequence[str], edits: Sequence[Edit]) -> None:
    """`edits` applied to `items` in place (a plain list, or a round-trip list node whose other items keep their
    comments)."""
    for edit in edits:
        if isinstance(edit, Replace):
            items[edit.index] = edit.item
        elif isinstance(edit, Delete):
            del items[edit.index]
        else:
            items.append(edit.item)


def edit_line(edit: Edit) -> str:
    """One edit as the diff says it: `old -> new`, `+ added`, `- item i`."""
    if isinstance(edit, Replace):
        return f"{edit.was} -> {edit.item}"
    if isinstance(edit, Append):
        return f"+ {edit.item}"
    return f"- item {edit.index}"


__all__ = ["Append", "Delete", "Edit", "Replace", "apply_edits", "merge_args", "edit_line", "option"]
