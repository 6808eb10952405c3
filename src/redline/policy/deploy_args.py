"""A champion's flags merged into a deploy's engine arguments: the list a Helm values file passes to the engine
(`vllm.extraArgs` and the like), as edits a round-trip writer applies in place so the rest of the file is kept.

    edits = merge_args(["--max-num-seqs", "256", "--trust-remote-code"], ["--max-num-seqs=128"], engine.deploy_option)
    # [Replace(0, "--max-num-seqs=128"), Delete(1)]: the flag's own place, its value item gone, the rest untouched

Every item that starts with `-` (but a negative number) is resolved against the engine's flag table the way its
parser would (`resolve`: Engine.deploy_option): an argparse prefix (`--max-num-batched=2048`), an alias (`-tp 2`),
`_` for `-`, `--no-` forms, a JSON-valued flag's dotted sub-key; its value is written after `=` or, where the option
takes one, as the next item. An item the table cannot resolve to one option (ambiguous, or none it knows) is refused
naming it: redline cannot tell what it sets (docs/security.md, 38.4). A flag the champion sets takes the place of
the first item that lands on its option, and every later one goes (the engine would take the last); a flag the list
lacks is appended; every other item is kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass

from redline.errors import InputError

# An option item -> the option it lands on (its dest) and whether it takes a value (Engine.deploy_option)
Resolve = Callable[[str], tuple[str, bool]]
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")  # a value, as argparse reads one that starts with a dash


@dataclass(frozen=True)
class Replace:
    index: int
    item: str
    was: str  # the item (and its value item) it replaces, as written


@dataclass(frozen=True)
class Delete:
    index: int
    was: str = ""  # the item (and its value item) it removes, as written


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


def is_option(item: str) -> bool:
    """Whether an argument list's item names an option (not a value, a positional or a negative number)."""
    return item.startswith("-") and item not in ("-", "--") and not _NEGATIVE.match(item)


def _groups(items: Sequence[str], resolve: Resolve) -> list[tuple[str | None, list[int]]]:
    """Each option item with the indices it spans (itself, and its value item when written apart), as the option it
    lands on; value items and positionals alone."""
    groups: list[tuple[str | None, list[int]]] = []
    i = 0
    while i < len(items):
        if not is_option(items[i]):
            groups.append((None, [i]))
            i += 1
            continue
        try:
            dest, takes_value = resolve(items[i])
        except InputError as exc:
            raise InputError(
                f"the deploy's argument list holds {items[i]!r} (item {i}), which redline cannot resolve to one "
                f"option ({exc}): it cannot tell whether it sets what the champion sets; spell it out as the "
                "engine's option, or remove it"
            ) from exc
        spans = [i]
        if takes_value and "=" not in items[i] and i + 1 < len(items) and not is_option(items[i + 1]):
            spans.append(i + 1)
        groups.append((dest, spans))
        i = spans[-1] + 1
    return groups


def _meaning(written: Sequence[str]) -> tuple[bool, str | None]:
    """What a flag's items say: whether it is the `--no-` form, and its value (None: a switch)."""
    head = written[0].lstrip("-")
    value = head.split("=", 1)[1] if "=" in head else (written[1] if len(written) > 1 else None)
    return head.replace("_", "-").startswith("no-"), value


def merge_args(items: Sequence[str], flags: Sequence[str], resolve: Resolve) -> list[Edit]:
    """The edits that make `items` carry every flag in `flags` (each one item, `--flag=value` or `--flag`); none
    when it already does, in whatever spelling (`--max-num-seqs 128` is `--max-num-seqs=128`). Every item that lands
    on an option a flag sets, in any spelling the engine reads, is replaced (the first) or deleted. The replaces come
    first, then the deletes in descending index order, then the appends."""
    groups = _groups(items, resolve)
    replaces: list[Edit] = []
    deletes: dict[int, str] = {}
    appends: list[Edit] = []
    for flag in flags:
        name = resolve(flag)[0]
        mine = [spans for n, spans in groups if n is not None and n == name]
        if not mine:
            appends.append(Append(flag))
            continue
        first, rest = mine[0], mine[1:]
        written = [items[i] for i in first]
        if _meaning(written) != _meaning([flag]) or rest:
            replaces.append(Replace(first[0], flag, " ".join(written)))
            deletes |= {i: items[i] for i in first[1:] + [i for spans in rest for i in spans]}
    return replaces + [Delete(i, deletes[i]) for i in sorted(deletes, reverse=True)] + appends


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
    return f"- {edit.was} (item {edit.index})" if edit.was else f"- item {edit.index}"


__all__ = [
    "Append",
    "Delete",
    "Edit",
    "Replace",
    "Resolve",
    "apply_edits",
    "edit_line",
    "is_option",
    "merge_args",
    "option",
]
