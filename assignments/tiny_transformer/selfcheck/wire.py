"""Plain data across the process boundary: JSON with numpy arrays, never pickles.

Student code runs in a process of its own. Whatever it returns comes back as
JSON text and is rebuilt here from an allow-list of shapes, so nothing the
student's process sends can run code in the grader's. Everything that
crosses is untrusted: :func:`parse` bounds the size and the number of parts
of a message before parsing it, and every string is made clean text
(:func:`clean_text`) as it is rebuilt, once, here.

numpy is imported when the first value crosses (:func:`_numpy`), not with this module: the
self-check starts the student's process before pytest has imported numpy, so that both load
it side by side (:mod:`selfcheck.plugin`).
"""

import base64
import json
import math
import re
import struct
import unicodedata

from typing import Any

_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "float16", "float32", "float64"}
_NAMES: dict[Any, str] = {}      # dtype -> its name (dtype.name is slow to ask, often): see _numpy
MAX_DEPTH = 20
MAX_BYTES = 16 << 20        # one message from the student's process
MAX_PARTS = 200_000         # lists and dicts in one message (each costs the parser memory)
MAX_TEXT = 65_536           # characters of one string
_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


np: Any = None      # numpy, once _numpy() has imported it


def _numpy() -> None:
    """Import numpy, and fill the tables made from its dtypes, the first time a value crosses."""
    global np
    if np is None:
        import numpy
        _NAMES.update({numpy.dtype(name): name for name in _DTYPES})
        _DTYPE_OF.update({i: numpy.dtype(name) for name, i in _CODES.items()})
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
    _numpy()
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
        name = _NAMES.get(value.dtype)
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


def decode(data: Any) -> Any:
    """Rebuild plain data; anything outside the allow-list is refused (WireError)."""
    _numpy()
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
        if dtype not in _DTYPES:
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


# --- the stand-ins' channel: the same plain data, packed as bytes -------------------------------
# A student's experiment may call another part's function tens of thousands of times (the scale
# experiment does), each a round trip to the stand-ins' process; JSON with base64 arrays cost more
# than the call itself. The values and the limits are those of encode/decode above.

_CODES = {name: i for i, name in enumerate(sorted(_DTYPES))}
_DTYPE_OF: dict[int, Any] = {}      # code -> dtype: see _numpy
_U32, _I64, _F64 = struct.Struct("<I"), struct.Struct("<q"), struct.Struct("<d")
_ARRAY_HEAD = struct.Struct("<BB")                       # dtype code, number of dimensions
_SHAPES = [struct.Struct(f"<{n}Q") for n in range(33)]
FRAME = _U32          # each message on that channel: its length, then its bytes


def pack(value: Any) -> bytes:
    """``value`` as bytes (:func:`unpack` rebuilds it): what :func:`encode` allows, nothing more."""
    _numpy()
    out: list[bytes] = []
    _pack(value, out, 0)
    return b"".join(out)


def _pack(value, out, depth):
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    kind = type(value)
    if kind is np.ndarray:
        name = _NAMES.get(value.dtype)
        if name is None:
            raise WireError(f"array of dtype {value.dtype} (expected numbers)")
        if value.ndim >= len(_SHAPES):
            raise WireError(f"an array of {value.ndim} dimensions")
        out += [b"a", _ARRAY_HEAD.pack(_CODES[name], value.ndim), _SHAPES[value.ndim].pack(*value.shape),
                value.tobytes()]       # tobytes() is C order, whatever the array's layout
    elif kind is float or isinstance(value, np.floating):
        out += [b"f", _F64.pack(float(value))]
    elif kind is bool or kind is np.bool_:
        out.append(b"T" if value else b"F")
    elif kind is int or isinstance(value, np.integer):
        number = int(value)
        if -(1 << 63) <= number < (1 << 63):
            out += [b"i", _I64.pack(number)]
        else:
            _pack_text(b"I", str(number), out)
    elif value is None:
        out.append(b"N")
    elif isinstance(value, str):
        _pack_text(b"s", value, out)
    elif isinstance(value, (list, tuple)):
        out += [b"l" if isinstance(value, list) else b"t", _U32.pack(len(value))]
        for item in value:
            _pack(item, out, depth + 1)
    elif isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise WireError("dict with non-string keys")
        out += [b"d", _U32.pack(len(value))]
        for key, item in value.items():
            _pack_text(b"", key, out)               # a key is always text: no tag
            _pack(item, out, depth + 1)
    elif isinstance(value, np.ndarray):
        _pack(np.asarray(value), out, depth)          # a subclass: as the plain array it holds
    else:
        raise WireError(f"a {type(value).__name__} (expected numbers, arrays, "
                        "strings, lists, tuples or dicts)")


def _pack_text(tag, text, out):
    raw = text.encode("utf-8", "surrogatepass")
    out += [tag, _U32.pack(len(raw)), raw]


# The stand-ins' two commonest messages, a call with arrays only and an answer that is an array or
# a float, are packed and read here without the general walk (half a round trip's cost in Python):
# the same bytes as pack() makes, read into the same values; anything else goes the general way.

_CALL_HEADS: dict[str, bytes] = {}      # name -> the packed call's bytes up to its arguments
_TRUE = b"t" + _U32.pack(2) + b"T"      # the answer's head: (True, ...


def pack_call(name: str, args: tuple, kwargs: dict) -> bytes:
    """``pack((name, list(args), kwargs))``."""
    _numpy()
    if kwargs or not all(type(a) is np.ndarray and a.dtype in _NAMES and a.ndim < len(_SHAPES) for a in args):
        return pack((name, list(args), kwargs))
    head = _CALL_HEADS.get(name)
    if head is None:
        out: list[bytes] = [b"t", _U32.pack(3)]
        _pack_text(b"s", name, out)
        head = _CALL_HEADS[name] = b"".join(out) + b"l"
    out = [head, _U32.pack(len(args))]
    for a in args:
        out += [b"a", _ARRAY_HEAD.pack(_CODES[_NAMES[a.dtype]], a.ndim), _SHAPES[a.ndim].pack(*a.shape), a.tobytes()]
    out.append(b"d" + _U32.pack(0))
    return b"".join(out)


def pack_answer(value: Any) -> bytes:
    """``pack((True, value))``."""
    _numpy()
    if type(value) is np.ndarray and value.dtype in _NAMES and value.ndim < len(_SHAPES):
        return b"".join((_TRUE, b"a", _ARRAY_HEAD.pack(_CODES[_NAMES[value.dtype]], value.ndim),
                         _SHAPES[value.ndim].pack(*value.shape), value.tobytes()))
    if type(value) is float or type(value) is np.float64:
        return _TRUE + b"f" + _F64.pack(float(value))
    return pack((True, value))


def _array_at(data: bytes, at: int) -> tuple[Any, int] | None:
    """The array packed at ``data[at]`` and where it ends, or None (the general reader decides)."""
    if data[at:at + 1] != b"a" or len(data) < at + 3:
        return None
    code, ndim = _ARRAY_HEAD.unpack_from(data, at + 1)
    dtype = _DTYPE_OF.get(code)
    start = at + 3 + 8 * ndim
    if dtype is None or ndim >= len(_SHAPES) or len(data) < start:
        return None
    shape = _SHAPES[ndim].unpack_from(data, at + 3)
    size = math.prod(shape)
    end = start + size * dtype.itemsize
    if end > len(data):
        return None
    return np.frombuffer(data, dtype, size, start).reshape(shape).copy(), end


def _quick(data: bytes) -> Any:
    """A call of arrays or an answer of an array or a float, read directly; None otherwise."""
    if data.startswith(_TRUE):
        at = len(_TRUE)
        if data[at:at + 1] == b"f" and len(data) == at + 1 + _F64.size:
            return True, _F64.unpack_from(data, at + 1)[0]
        found = _array_at(data, at)
        return (True, found[0]) if found and found[1] == len(data) else None
    if not data.startswith(b"t\x03\x00\x00\x00s") or len(data) < 10:
        return None
    size = _U32.unpack_from(data, 6)[0]
    at = 10 + size
    if size > 200 or data[at:at + 1] != b"l" or len(data) < at + 5:
        return None
    name = data[10:at].decode("ascii", "replace")
    if not (name.isascii() and name.isprintable()):
        return None
    args, at = [], at + 5
    for _ in range(_U32.unpack_from(data, at - 4)[0]):
        found = _array_at(data, at)
        if found is None:
            return None
        args.append(found[0])
        at = found[1]
    return (name, args, {}) if data[at:] == b"d" + _U32.pack(0) else None


def unpack(data: bytes) -> Any:
    """Rebuild what :func:`pack` made; anything else (short, malformed, too large) is a WireError."""
    if len(data) > MAX_BYTES:
        raise WireError(f"a message larger than {MAX_BYTES >> 20} MB")
    _numpy()
    data = bytes(data)
    try:
        quick = _quick(data)
    except (struct.error, ValueError, OverflowError, MemoryError):
        quick = None                    # the general reader says what is wrong
    return _general(data) if quick is None else quick


def _general(data: bytes) -> Any:
    """:func:`unpack` by walking the value's tags."""
    reader = _Reader(data)
    try:
        value = reader.value(0)
    except (struct.error, ValueError, KeyError, IndexError, OverflowError, MemoryError) as exc:
        if isinstance(exc, WireError):
            raise
        raise WireError(f"a malformed value ({type(exc).__name__})") from None
    if reader.at != len(data):
        raise WireError("bytes left over after the value")
    return value


class _Reader:
    """Reads one packed value; every length is checked against what is left."""

    def __init__(self, data: bytes):
        self.data, self.at, self.parts = data, 0, 0

    def take(self, n: int) -> bytes:
        end = self.at + n
        if end > len(self.data):
            raise WireError("a value cut short")
        chunk, self.at = self.data[self.at:end], end
        return chunk

    def numbers(self, kind: struct.Struct) -> tuple:
        values = kind.unpack_from(self.data, self.at)
        self.at += kind.size
        return values

    def number(self, kind: struct.Struct) -> Any:
        return self.numbers(kind)[0]

    def count(self) -> int:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise WireError(f"a value made of more than {MAX_PARTS:,} lists and dicts")
        return self.number(_U32)

    def text(self, limit: int) -> str:
        return clean_text(self.take(self.number(_U32)).decode("utf-8", "replace"), limit)

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise WireError("value nested too deeply")
        tag = self.data[self.at]
        self.at += 1
        if tag == 0x61:                                    # a: an array
            code, ndim = self.numbers(_ARRAY_HEAD)
            if ndim >= len(_SHAPES):
                raise WireError("an array with an impossible shape")
            shape = self.numbers(_SHAPES[ndim])
            dtype = _DTYPE_OF[code]
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > MAX_BYTES:
                raise WireError("an array with an impossible shape")
            return np.frombuffer(self.take(nbytes), dtype=dtype).reshape(shape).copy()
        if tag == 0x66:                                    # f: a float
            return self.number(_F64)
        if tag == 0x69:                                    # i: an int
            return self.number(_I64)
        if tag in (0x54, 0x46):                            # T, F
            return tag == 0x54
        if tag == 0x4E:                                    # N
            return None
        if tag == 0x73:                                    # s: text
            return self.text(MAX_TEXT)
        if tag in (0x6C, 0x74):                            # l, t: a list, a tuple
            items = [self.value(depth + 1) for _ in range(self.count())]
            return items if tag == 0x6C else tuple(items)
        if tag == 0x64:                                    # d: a dict
            return {self.text(MAX_TEXT): self.value(depth + 1) for _ in range(self.count())}
        if tag == 0x49:                                    # I: an int past 64 bits, as digits
            digits = self.text(401)
            if len(digits) > 400:
                raise WireError("an integer with more than 400 digits")
            return int(digits)
        raise WireError("unknown tagged value on the wire")
