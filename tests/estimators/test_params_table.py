"""The constraint validator of wideml/estimators/params.py."""

import numpy as np
import pytest

from wideml.estimators.params import BOOLEAN, NONE, POSITIVE_INT, Interval, Options, Satisfies, check_parameters
from wideml.exceptions import WidemlError

TABLE = {
    "n": [POSITIVE_INT, NONE],
    "flag": [BOOLEAN],
    "mode": [Options("linear", "quadratic")],
    "rate": [Interval(0, 1, closed="right")],
    "names": [Satisfies(lambda v: all(isinstance(s, str) for s in v), "a list of names")],
}
GOOD = {"n": 3, "flag": np.bool_(True), "mode": "linear", "rate": 1.0, "names": ["a"]}


def test_valid_values_pass():
    check_parameters("Est", GOOD, TABLE)
    check_parameters("Est", GOOD | {"n": None, "rate": 1e-9}, TABLE)


@pytest.mark.parametrize("name, value, message", [
    ("n", 0, "Est parameter n=0 is not valid; use an integer >= 1 or None."),
    ("n", True, "Est parameter n=True is not valid; use an integer >= 1 or None."),
    ("n", 2.0, "Est parameter n=2.0 is not valid; use an integer >= 1 or None."),
    ("flag", "yes", "Est parameter flag='yes' is not valid; use True or False."),
    ("flag", 1, "Est parameter flag=1 is not valid; use True or False."),
    ("mode", "cubic", "Est parameter mode='cubic' is not valid; use one of 'linear', 'quadratic'."),
    ("rate", 0, "Est parameter rate=0 is not valid; use a number in (0, 1]."),
    ("rate", float("nan"), "Est parameter rate=nan is not valid; use a number in (0, 1]."),
    ("names", [1], "Est parameter names=[1] is not valid; use a list of names."),
    ("names", 5, "Est parameter names=5 is not valid; use a list of names."),
])
def test_one_sentence_per_bad_value(name, value, message):
    with pytest.raises(WidemlError) as excinfo:
        check_parameters("Est", GOOD | {name: value}, TABLE)
    assert str(excinfo.value) == message
