"""The two bases of every shape redline reads or writes: an unknown field is an error naming it.

class Rung(Strict): ...      # a record or a request: fields checked, nothing unknown kept
class Spec(Frozen): ...      # a value that never changes once read (a target's spec, a handle)
"""

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A shape whose unknown fields are errors, each named."""

    model_config = ConfigDict(extra="forbid")


class Frozen(BaseModel):
    """A Strict shape that is also immutable (and hashable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


__all__ = ["Frozen", "Strict"]
