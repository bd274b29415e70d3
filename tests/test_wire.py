"""Only plain data crosses from the student's process: numbers, arrays, strings, containers."""

import json

import numpy as np
import pytest

from selfcheck import wire


@pytest.mark.parametrize("value", [
    1, 2.5, float("nan"), float("-inf"), True, None, "text",
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array([True, False]),
    (np.ones(2), 3), {"total": 10, "parts": [1, 2]}, np.float64(0.1), np.int64(7),
])
def test_round_trip(value):
    back = wire.loads(wire.dumps(value))
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    elif isinstance(value, float) and value != value:
        assert back != back
    elif isinstance(value, tuple):
        assert isinstance(back, tuple) and np.array_equal(back[0], value[0])
    else:
        assert back == value


@pytest.mark.parametrize("value", [object(), np.array(["a"]), {1: 2}, lambda: 0, np.array([object()])])
def test_objects_are_refused(value):
    with pytest.raises(wire.WireError):
        wire.encode(value)


@pytest.mark.parametrize("data", [
    {"__pickle__": "gASV"}, {"__ndarray__": "AAAA", "dtype": "object", "shape": [1]},
    {"__ndarray__": "AAAAAAAAAAA=", "dtype": "float64", "shape": [5]}, 3,
])
def test_hostile_wire_data_is_refused(data):
    with pytest.raises(wire.WireError):
        wire.loads(json.dumps(data))
