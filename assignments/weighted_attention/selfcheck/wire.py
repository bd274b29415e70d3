"""Plain data across the process boundary: JSON with numpy arrays, never pickles.

Student code runs in a process of its own. Whatever it returns comes back as
JSON text and is rebuilt here from an allow-list of shapes, so nothing the
student's process sends can run code in the grader's. Everything that
crosses is untrusted: :func:`parse` bounds the size and the number of parts
of a message before parsing it, and every string is made clean text
(:func:`clean_text`) as it is rebuilt, once, here.

numpy is imported when the first value crosses (:func:`load_numpy`), not with this module: the
self-check starts the student's process before pytest has imported numpy, so that both load
it side by side (:mod:`selfcheck.plugin`).
"""

import base64
import json
import math
import re
import unicodedata

from typing import Any

DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "float16", "float32", "float64"}
DTYPE_NAMES: dict[Any, str] = {}      # dtype -> its name (dtype.name is slow to ask, often): see load_numpy
MAX_DEPTH = 20
MAX_BYTES = 16 << 20        # one message from the student's process
MAX_PARTS = 200_000         # lists and dicts in one message (each costs the parser memory)
MAX_TEXT = 65_536           # characters of one string
_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


np: Any = None      # numpy, once load_numpy() has imported it


def load_numpy() -> None:
    """Import numpy, and fill the tables made from its dtypes, the first time a value crosses."""
    global np
    if np is None:
        import numpy
        DTYPE_NAMES.update({numpy.dtype(name): name for name in DTYPES})
        np = numpy


class WireError(ValueError):
    """A value that cannot cross the boundary (an object, a pickle, a cycle)."""


def clean_text(text: object, limit: int = MAX_TEXT) -> str:
    """Text safe to store, print and export: valid UTF-8, no control or bidirectional
    characters (newlines and tabs kept), at most ``limit`` characters."""
    text = str(text)
    if len(text) > 4 * limit:
        text = text[:4 * limit]
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    text = _BAD.sub("\ufffd", unicodedata.normalize("NFC", text))
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def parse(line: bytes) -> Any:
    """JSON from the student's process, refused (WireError) when too large or too nested."""
    if len(line) > MAX_BYTES:
        raise WireError(f"a message larger than {MAX_BYTES >> 20} MB")
    if line.count(b"[") + line.count(b"{") > MAX_PARTS:
        raise WireError(f"a value made of more than {MAX_PARTS:,} lists and dicts")
    try:
        return json.loads(line)
    except RecursionError:
        raise WireError("a value nested too deeply") from None
    except ValueError as exc:
        raise WireError(f"an unreadable message ({str(exc)[:80]})") from None


def encode(value: Any, _depth: int = 0) -> Any:
    """Turn a result into JSON-able plain data."""
    load_numpy()
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
        value = in_native_order(value)
        name = DTYPE_NAMES.get(value.dtype)
        if name is None:
            raise WireError(f"array of dtype {value.dtype} (expected numbers)")
        data = np.ascontiguousarray(value)
        return {"__ndarray__": base64.b64encode(data.tobytes()).decode("ascii"),
                "dtype": name, "shape": list(data.shape)}
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


def in_native_order(array: Any) -> Any:
    """``array`` in this machine's byte order: a big-endian array of numbers is numbers too."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def decode(data: Any) -> Any:
    """Rebuild plain data; anything outside the allow-list is refused (WireError)."""
    load_numpy()
    try:
        return _decode(data, 0)
    except WireError:
        raise
    except (ValueError, TypeError, AttributeError, KeyError, OverflowError, MemoryError) as exc:
        raise WireError(f"a malformed value ({type(exc).__name__})") from None


def _decode(data, _depth):
    if _depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if data is None or isinstance(data, bool):
        return data
    if isinstance(data, str):
        return clean_text(data)
    if isinstance(data, list):
        return [_decode(v, _depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) == 0:
        raise WireError(f"unexpected {type(data).__name__} on the wire")
    if "__int__" in data:
        digits = str(data["__int__"])
        if len(digits) > 400:
            raise WireError("an integer with more than 400 digits")
        return int(digits)
    if "__float__" in data:
        return float(data["__float__"])
    if "__tuple__" in data:
        return tuple(_decode(v, _depth + 1) for v in data["__tuple__"])
    if "__dict__" in data:
        return {clean_text(k): _decode(v, _depth + 1) for k, v in data["__dict__"].items()}
    if "__ndarray__" in data:
        dtype = str(data["dtype"])
        if dtype not in DTYPES:
            raise WireError(f"array dtype {dtype!r} refused")
        shape = tuple(int(n) for n in data["shape"])
        if len(shape) > 32 or any(n < 0 for n in shape):
            raise WireError("an array with an impossible shape")
        raw = base64.b64decode(data["__ndarray__"])
        arr = np.frombuffer(raw, dtype=dtype)
        if arr.size != math.prod(shape):
            raise WireError("array size does not match its shape")
        return arr.reshape(shape).copy()
    raise WireError("unknown tagged value on the wire")


def dumps(value: Any) -> str:
    return json.dumps(encode(value), allow_nan=False)


def loads(text: str | bytes) -> Any:
    return decode(parse(text.encode() if isinstance(text, str) else text))
