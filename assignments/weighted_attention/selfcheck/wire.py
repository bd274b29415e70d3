"""Plain data across the process boundary: JSON with numpy arrays, never pickles.

Student code runs in a process of its own. Whatever it returns comes back as
JSON text and is rebuilt here from an allow-list of shapes, so nothing the
student's process sends can run code in the grader's.
"""

import base64
import json

import numpy as np

_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "float16", "float32", "float64"}
MAX_DEPTH = 20


class WireError(ValueError):
    """A value that cannot cross the boundary (an object, a pickle, a cycle)."""


def encode(value, _depth=0):
    """Turn a result into JSON-able plain data."""
    if _depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return {"__int__": str(int(value))}
    if isinstance(value, (float, np.floating)):
        return {"__float__": repr(float(value))}
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        if value.dtype.name not in _DTYPES:
            raise WireError(f"array of dtype {value.dtype} (expected numbers)")
        data = np.ascontiguousarray(value)
        return {"__ndarray__": base64.b64encode(data.tobytes()).decode("ascii"),
                "dtype": data.dtype.name, "shape": list(data.shape)}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, _depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, _depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise WireError("dict with non-string keys")
        return {"__dict__": {k: encode(v, _depth + 1) for k, v in value.items()}}
    raise WireError(f"a {type(value).__name__} (expected numbers, arrays, "
                    "strings, lists, tuples or dicts)")


def decode(data, _depth=0):
    """Rebuild plain data; anything outside the allow-list is refused."""
    if _depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if data is None or isinstance(data, (bool, str)):
        return data
    if isinstance(data, list):
        return [decode(v, _depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) == 0:
        raise WireError(f"unexpected {type(data).__name__} on the wire")
    if "__int__" in data:
        return int(data["__int__"])
    if "__float__" in data:
        return float(data["__float__"])
    if "__tuple__" in data:
        return tuple(decode(v, _depth + 1) for v in data["__tuple__"])
    if "__dict__" in data:
        return {str(k): decode(v, _depth + 1) for k, v in data["__dict__"].items()}
    if "__ndarray__" in data:
        dtype = str(data["dtype"])
        if dtype not in _DTYPES:
            raise WireError(f"array dtype {dtype!r} refused")
        shape = tuple(int(n) for n in data["shape"])
        raw = base64.b64decode(data["__ndarray__"])
        arr = np.frombuffer(raw, dtype=dtype)
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise WireError("array size does not match its shape")
        return arr.reshape(shape).copy()
    raise WireError("unknown tagged value on the wire")


def dumps(value):
    return json.dumps(encode(value), allow_nan=False)


def loads(text):
    return decode(json.loads(text))
