"""Names that become one file or folder name (a campaign, a cell, an A/B, an arm, a baseline): slugs.

    Slug                                   # a model field: pydantic's own pattern check
    Annotated[str, slug_of("A/B")]         # a request field ("" when not given): one line saying what to write
    check_slug("../x", "cell")             # ValueError (the ledger checks a name so before it joins it to a path)

A slug is a-z, 0-9, `.`, `_` and `-`, starts with a letter or digit, at most 64 characters: one plain name,
so it can never be `..`, a path, `~` or a flag, whatever folder it is joined to.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from redline.errors import InputError

SLUG = r"^[a-z0-9][a-z0-9._-]*$"
MAX_SLUG = 64
_SLUG = re.compile(SLUG)

Slug = Annotated[str, Field(min_length=1, max_length=MAX_SLUG, pattern=SLUG)]


def is_slug(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_SLUG and _SLUG.match(value) is not None


def check_slug(value: str, what: str) -> str:
    """value, when it is a slug; else ValueError naming `what` (such as "A/B") and what to write.

    Where the value looks like a path to a file of that name (ab/x.yml), the name in it is suggested: a hint read
    from the text alone, so it says nothing of any file."""
    if is_slug(value):
        return value
    text = str(value)
    named = text.replace("\\", "/").split("/")[-1].removesuffix(".yml").removesuffix(".yaml")
    shown = repr(text if len(text) <= 80 else text[:77] + "...")
    if named != text and is_slug(named):
        raise ValueError(f"{shown} is a path, not the {what}'s name; write the {what}'s name, {named!r}")
    raise ValueError(
        f"{shown} cannot be the {what}'s name: write a-z, 0-9, '.', '_' and '-' only, starting with a letter or "
        f"digit, at most {MAX_SLUG} characters"
    )


def plain_name(value: str, what: str) -> str:
    """check_slug as an InputError: the ledger calls it on a name before it joins the name to a path."""
    try:
        return check_slug(value, what)
    except ValueError as exc:
        raise InputError(f"{what}: {exc}") from exc


def slug_of(what: str) -> AfterValidator:
    """The check of a request field naming one `what` ("" when not given) as a slug, in one line saying what to
    write (pydantic's pattern error would not): Annotated[str, Field(...), slug_of("A/B")]."""
    return AfterValidator(lambda v: v if v == "" else check_slug(v, what))


__all__ = ["MAX_SLUG", "SLUG", "Slug", "check_slug", "is_slug", "plain_name", "slug_of"]
