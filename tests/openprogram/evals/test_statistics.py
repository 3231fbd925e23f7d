"""Statistics: intervals that hold at the edges, the exact sign test, the comparison."""

from __future__ import annotations

import math

from openprogram import ScriptedModel
from openprogram.evals import Case, Dataset, equals
from openprogram.evals.statistics import paired_bootstrap, sign_test, summarize
from tests.openprogram.evals.agents import reply, write


def test_a_pass_rate_of_ten_out_of_ten_has_an_interval_below_one() -> None:
    summary = summarize([1.0] * 10, binary=True)
    assert summary.mean == 1.0 and summary.high == 1.0
    assert 0.69 < summary.low < 0.73  # Wilson: 0.722
    assert summary.method == "wilson"


def test_pass_rates_averaged_over_repeats_keep_their_interval_within_zero_and_one() -> None:
    summary = summarize([1 / 3, 1 / 3, 2 / 3], binary=True)  # 3 cases x 3 repeats
    assert summary.method == "t" and summary.low == 0.0 and 0.444 < summary.high < 1.0
    assert summarize([1.0, 1.0, 2 / 3], binary=True).high == 1.0


def test_numbers_get_a_t_interval_around_the_mean() -> None:
    summary = summarize([0.2, 0.4, 0.6], binary=False)
    assert math.isclose(summary.mean, 0.4)
    assert math.isclose(summary.high - summary.mean, 4.303 * 0.2 / math.sqrt(3))


def test_sign_test_is_exact() -> None:
    assert sign_test(0, 0) == 1.0
    assert math.isclose(sign_test(10, 0), 2 / 1024)
    assert math.isclose(sign_test(1, 1), 1.0)
    assert sign_test(8, 2) > 0.05 and sign_test(9, 1) < 0.05


def test_paired_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    differences = [1.0, 0.0, 1.0, 1.0, -1.0, 1.0, 0.0, 1.0]
    first = paired_bootstrap(differences)
    assert first == paired_bootstrap(differences)
    mean, low, high, p = first
    assert low < mean < high and mean == 0.5 and p < 0.2
    assert paired_bootstrap([0.0, 0.0]) == (0.0, 0.0, 0.0, 1.0)


def test_compare_pairs_cases_and_names_the_flips() -> None:
    dataset = Dataset(
        cases=[
            Case(inputs={"product": f"p{i}"}, expected="Smart coffee.", name=f"n{i}")
            for i in range(12)
        ]
    )

    def better(request):  # the candidate: coffee for every product but the last
        if request.function == "review":
            return "approve"
        return "Smart tea." if "p11" in request.text else "Smart coffee."

    before = dataset.evaluate(write, [equals], model=ScriptedModel(reply), name="v1")
    after = dataset.evaluate(write, [equals], model=ScriptedModel(better), name="v2")
    change = before.compare(after)["equals"]
    assert (change.baseline, change.candidate, change.n) == (0.0, 11 / 12, 12)
    assert change.significant and change.p_value == 2 / 2**11
    assert change.regressed == [] and sorted(change.improved) == sorted(f"n{i}" for i in range(11))
    table = str(before.compare(after))
    assert "equals   0.000   0.917   +0.917" in table and "better on 11" in table
    assert not after.compare(after)["equals"].significant
