"""Welch's t-test, standard library only: the t distribution's tail against published t-table values."""

from __future__ import annotations

import math

import pytest

from redline.policy.welch import betainc, t_two_sided_p, welch


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [
        (12.706, 1, 0.05),
        (4.303, 2, 0.05),
        (2.571, 5, 0.05),
        (2.228, 10, 0.05),
        (2.042, 30, 0.05),  # t-table, 5%
        (63.657, 1, 0.01),
        (4.032, 5, 0.01),
        (2.750, 30, 0.01),  # t-table, 1%
        (1.960, 1e7, 0.05),  # the normal limit
    ],
)
def test_two_sided_p_matches_the_t_table(t: float, df: float, p: float) -> None:
    assert t_two_sided_p(t, df) == pytest.approx(p, abs=2e-4)


def test_the_incomplete_beta_function_at_its_edges_and_a_known_value() -> None:
    assert betainc(2, 3, 0) == 0 and betainc(2, 3, 1) == 1
    assert betainc(2, 3, 0.4) == pytest.approx(0.5248, abs=1e-4)  # I_0.4(2, 3) = 1 - sum_{j<2} C(4,j) .4^j .6^(4-j)
    assert betainc(0.5, 0.5, 0.5) == pytest.approx(0.5)


def test_welch_worked_by_hand() -> None:
    # a: mean 10.1, var 0.04; b: mean 11.0, var 0.04; se = sqrt(0.04/3 + 0.04/3) = 0.16330; t = -0.9/0.16330
    result = welch([10.1, 10.3, 9.9], [11.0, 11.2, 10.8])
    assert result is not None
    assert result.t == pytest.approx(-0.9 / math.sqrt(0.08 / 3))
    assert result.df == pytest.approx(4.0)  # equal variances and sizes: n1 + n2 - 2
    assert result.p_value == pytest.approx(0.00529, abs=1e-4)


def test_unequal_variances_use_the_welch_satterthwaite_degrees_of_freedom() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [10.0, 10.1, 9.9]
    va, vb = 5 / 3 / 4, 0.01 / 3
    result = welch(a, b)
    assert result is not None
    assert result.df == pytest.approx((va + vb) ** 2 / (va**2 / 3 + vb**2 / 2))


def test_too_few_values_cannot_be_tested_and_no_spread_is_decided_by_the_means() -> None:
    assert welch([1.0], [1.0, 2.0]) is None and welch([1.0, 2.0], []) is None
    same = welch([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert same is not None and same.p_value == 1.0
    apart = welch([5.0, 5.0, 5.0], [6.0, 6.0, 6.0])
    assert apart is not None and apart.p_value == 0.0 and apart.t == -math.inf
