"""Only plain data crosses from the student's process: numbers, arrays, strings, containers."""

import json

import numpy as np
import pytest

from selfcheck import packing, wire


VALUES = [1, 2.5, float("nan"), float("-inf"), True, None, "text", "a\u202eb\x00",
          np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6.0).reshape(2, 3).T, np.array([True, False]),
          np.zeros((0, 4)), (np.ones(2), 3), {"total": 10, "parts": [1, 2]}, np.float64(0.1), np.int64(7),
          np.bool_(False), 2 ** 70, -2 ** 63]


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and a != a:
        return b != b
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("value", VALUES)
def test_round_trip(value):
    back = wire.loads(wire.dumps(value))
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and np.array_equal(back, value)
    elif isinstance(value, float) and value != value:
        assert back != back
    elif isinstance(value, tuple):
        assert isinstance(back, tuple) and np.array_equal(back[0], value[0])
    elif isinstance(value, str):
        assert back == wire.clean_text(value)
    else:
        assert back == value


@pytest.mark.parametrize("value", VALUES)
def test_the_stand_ins_packing_rebuilds_what_json_does(value):
    """The stand-ins' channel packs bytes for speed; what arrives is what the JSON form gives."""
    assert _same(packing.unpack(packing.pack(value)), wire.loads(wire.dumps(value)))


@pytest.mark.parametrize("value", [object(), np.array(["a"]), {1: 2}, lambda: 0, np.array([object()])])
def test_objects_are_refused(value):
    with pytest.raises(wire.WireError):
        wire.encode(value)
    with pytest.raises(wire.WireError):
        packing.pack(value)


@pytest.mark.parametrize("data", [
    b"", b"a", b"l\xff\xff\xff\xff", b"x", b"f\x00", b"N\x00", b"a\x99\x01" + b"\x00" * 8,
    b"a\x05\x21" + b"\x00" * 300, b"a\x05\x02" + b"\xff" * 16, b"l\x01\x00\x00\x00" * 50 + b"N",
    b"s\xff\xff\xff\x7f", b"I\x03\x00\x00\x00abc",
])
def test_hostile_packed_data_is_refused(data):
    with pytest.raises(wire.WireError):
        packing.unpack(data)


@pytest.mark.parametrize("data", [
    {"__pickle__": "gASV"}, {"__ndarray__": "AAAA", "dtype": "object", "shape": [1]},
    {"__ndarray__": "AAAAAAAAAAA=", "dtype": "float64", "shape": [5]}, 3,
])
def test_hostile_wire_data_is_refused(data):
    with pytest.raises(wire.WireError):
        wire.loads(json.dumps(data))


def _messages():
    """The stand-ins' messages the quick reader takes, and near misses of each."""
    rng = np.random.default_rng(5)
    whole = [packing.pack_call("softmax", (rng.normal(size=8),), {}),
             packing.pack_call("entropy_bits", (rng.random(8).astype(np.float32), np.zeros((0, 3))), {}),
             packing.pack_call("f", (), {}), packing.pack_call("attend", (np.ones((2, 3)), np.arange(4)), {}),
             packing.pack_answer(rng.random(8)), packing.pack_answer(0.25), packing.pack_answer(np.float64(-1.0)),
             packing.pack_answer(np.zeros((3, 0, 2), dtype=np.int8)), packing.pack_answer(np.array(7.0))]
    for message in whole:
        yield message
        for cut in range(len(message)):
            yield message[:cut]
        yield message + b"\x00"
        for _ in range(60):             # one byte changed
            at = int(rng.integers(len(message)))
            yield message[:at] + bytes([int(rng.integers(256))]) + message[at + 1:]


def test_the_quick_reader_reads_what_the_general_one_does():
    """Calls of arrays and answers of an array or a float skip the general walk: every such message,
    cut short, lengthened or with a byte changed, gives the same value or the same refusal."""
    quick = 0
    for message in _messages():
        try:
            general = packing._general(message)
        except wire.WireError:
            with pytest.raises(wire.WireError):
                packing.unpack(message)
            continue
        assert _same(packing.unpack(message), general), message
        quick += packing._quick(message) is not None
    assert quick > 40


@pytest.mark.parametrize("value", VALUES + [np.ones(3), np.zeros((2, 0))])
def test_the_stand_ins_messages_are_packed_as_pack_does(value):
    args = value if isinstance(value, tuple) else (value,)
    assert packing.pack_call("softmax", args, {}) == packing.pack(("softmax", list(args), {}))
    assert packing.pack_call("softmax", args, {"axis": -1}) == packing.pack(("softmax", list(args), {"axis": -1}))
    assert packing.pack_answer(value) == packing.pack((True, value))


def test_an_array_in_the_other_byte_order_crosses_as_the_same_numbers():
    """A big-endian array (read from a file, say) holds numbers like any other: both ways across
    give them back in this machine's order, not a refusal."""
    other = np.arange(6, dtype=">f8").reshape(2, 3) if np.little_endian else np.arange(6, dtype="<f8").reshape(2, 3)
    for back in (wire.loads(wire.dumps(other)), packing.unpack(packing.pack(other)),
                 packing.unpack(packing.pack_call("softmax", (other,), {}))[1][0]):
        assert back.dtype == np.float64 and back.dtype.isnative and np.array_equal(back, other)
