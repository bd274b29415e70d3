"""Plain data packed as bytes, for the stand-ins' channel.

A student's experiment may call another part's function tens of thousands of times (the scale
experiment does), each a round trip to the stand-ins' process; JSON with base64 arrays cost more
than the call itself. The values allowed and the limits are those of :mod:`selfcheck.wire`, and
everything read here is as untrusted as what it reads.
"""

import math
import struct
from typing import Any

from selfcheck import wire
from selfcheck.wire import DTYPE_NAMES, MAX_BYTES, MAX_DEPTH, MAX_PARTS, MAX_TEXT, WireError, clean_text

np: Any = None      # numpy, once _numpy() has imported it

_CODES = {name: i for i, name in enumerate(sorted(wire.DTYPES))}
_DTYPE_OF: dict[int, Any] = {}      # code -> dtype: see _numpy
_U32, _I64, _F64 = struct.Struct("<I"), struct.Struct("<q"), struct.Struct("<d")
_ARRAY_HEAD = struct.Struct("<BB")                       # dtype code, number of dimensions
_SHAPES = [struct.Struct(f"<{n}Q") for n in range(33)]
FRAME = _U32          # each message on that channel: its length, then its bytes


def _numpy() -> None:
    """numpy and wire's dtype tables, and the codes' table, the first time a value is packed or read."""
    global np
    if np is None:
        wire.load_numpy()
        _DTYPE_OF.update({i: wire.np.dtype(name) for name, i in _CODES.items()})
        np = wire.np


def pack(value: Any) -> bytes:
    """``value`` as bytes (:func:`unpack` rebuilds it): what :func:`selfcheck.wire.encode` allows, nothing more."""
    _numpy()
    out: list[bytes] = []
    _pack(value, out, 0)
    return b"".join(out)


def _pack(value, out, depth):
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    kind = type(value)
    if kind is np.ndarray:
        name = DTYPE_NAMES.get(value.dtype)
        if name is None:
            value = wire.in_native_order(value)
            name = DTYPE_NAMES.get(value.dtype)
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
    if kwargs or not all(type(a) is np.ndarray and a.dtype in DTYPE_NAMES and a.ndim < len(_SHAPES) for a in args):
        return pack((name, list(args), kwargs))
    head = _CALL_HEADS.get(name)
    if head is None:
        out: list[bytes] = [b"t", _U32.pack(3)]
        _pack_text(b"s", name, out)
        head = _CALL_HEADS[name] = b"".join(out) + b"l"
    out = [head, _U32.pack(len(args))]
    for a in args:
        out += [b"a", _ARRAY_HEAD.pack(_CODES[DTYPE_NAMES[a.dtype]], a.ndim), _SHAPES[a.ndim].pack(*a.shape), a.tobytes()]
    out.append(b"d" + _U32.pack(0))
    return b"".join(out)


def pack_answer(value: Any) -> bytes:
    """``pack((True, value))``."""
    _numpy()
    if type(value) is np.ndarray and value.dtype in DTYPE_NAMES and value.ndim < len(_SHAPES):
        return b"".join((_TRUE, b"a", _ARRAY_HEAD.pack(_CODES[DTYPE_NAMES[value.dtype]], value.ndim),
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
