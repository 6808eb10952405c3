"""validation_text.explain on the request models themselves: a line per mistake, the field's path without pydantic's
union tags, what to write, and never a crash (a hostile value of any type comes back as a line)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from redline.ops.requests import OPERATIONS, AbRunRequest, LadderInitRequest
from redline.validation_text import closest, explain, unknown_argument

HOSTILE: list[Any] = [0, -1, 1.5, "x" * 5000, "", True, None, [], [0], {}, {"a": 1}]


def said(request: type, /, **given: Any) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        request(**given)
    return explain(caught.value, request).splitlines()


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_any_hostile_value_of_any_field_is_a_line_naming_that_field(name: str) -> None:
    request = OPERATIONS[name]
    for field in request.model_fields:
        for value in HOSTILE:
            try:
                request(**{field: value})
            except ValidationError as exc:
                text = explain(exc, request)
                assert "http" not in text and "[type=" not in text
                assert all(": " in line for line in text.splitlines()), text
            # a value the field takes is no mistake to say


def test_a_model_field_given_a_number_says_to_write_an_object() -> None:
    lines = said(
        LadderInitRequest, model="m", model_path="/m", floor_max_model_len=1, floor_max_num_batched_tokens=1, fixed=0
    )
    assert lines == [
        'fixed: Input should be a valid dictionary or instance of FixedKnobs, not 0; write an object, such as {"name": "value"}'
    ]


def test_a_nested_unknown_field_gets_its_own_object_s_closest_field() -> None:
    lines = said(AbRunRequest, spec={"name": "x", "arms": [{"name": "a", "serv": {}}]})
    assert "spec.arms[0].serv: unknown field; write 'serve' instead, or leave it out" in lines
    assert "spec.target: Field required; write a value for it" in lines


def test_closest_and_unknown_argument() -> None:
    assert closest("i_understand", ["dry_run", "i_understand_this_submits_jobs"]) == "i_understand_this_submits_jobs"
    assert closest("limt", ["limit", "state"]) == "limit"
    assert closest("focus", ["campaign", "top"]) is None
    assert unknown_argument("x", []) == "unknown argument 'x': there are none to give; leave it out"
