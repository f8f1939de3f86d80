"""The MSL type system: scalar, vector, pointer, array and atomic types, and C++'s conversion rules.

Types are immutable values compared by equality. Each scalar type knows its numpy dtype, so the
executor stores every value in exactly its declared type (a `half` is a float16, never a float64).
The arithmetic-conversion rules here are C++'s (MSL is C++14-based), which is what decides, for
example, that `int(-1) / 4u` divides unsigned.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ScalarType:
    name: str
    dtype: np.dtype
    kind: str     # "bool", "int" or "float"
    signed: bool
    rank: int     # integer conversion rank; float precision order for floats
    # What a vote (its vote_t) or an enumeration (its underlying type) computes as.
    underlying: ScalarType | None = None
    enum: str | None = None   # "enum" or "enum class" for an enumeration type

    @property
    def scoped_enum(self) -> bool:
        return self.enum == "enum class"

    @property
    def size(self) -> int:
        return self.dtype.itemsize

    @property
    def align(self) -> int:
        return self.size

    @property
    def bits(self) -> int:
        return 8 * self.size

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class VectorType:
    elem: ScalarType
    n: int
    packed: bool = False

    @property
    def size(self) -> int:
        # A 3-component vector has the size and alignment of a 4-component one unless packed.
        return self.elem.size * (self.n if self.packed or self.n != 3 else 4)

    @property
    def align(self) -> int:
        return self.elem.size if self.packed else self.size

    @property
    def name(self) -> str:
        return f"{'packed_' if self.packed else ''}{self.elem.name}{self.n}"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class SimdMatrixType:
    """`simdgroup_matrix<T, 8, 8>`: owned by a SIMD-group, two elements held by each lane."""

    elem: ScalarType
    rows: int = 8
    cols: int = 8
    per_lane = 2

    @property
    def size(self) -> int:  # what one lane stores
        return self.elem.size * self.per_lane

    @property
    def align(self) -> int:
        return self.elem.size

    @property
    def name(self) -> str:
        return f"simdgroup_{self.elem.name}8x8"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class AtomicType:
    value: ScalarType

    @property
    def size(self) -> int:
        return self.value.size

    @property
    def align(self) -> int:
        return self.value.size

    def __str__(self) -> str:
        return f"atomic<{self.value.name}>"


@dataclass(frozen=True)
class ArrayType:
    elem: Type
    length: int

    @property
    def size(self) -> int:
        return self.elem.size * self.length

    @property
    def align(self) -> int:
        return self.elem.align

    def __str__(self) -> str:
        inner, dims = self, ""
        while isinstance(inner, ArrayType):
            dims += f"[{inner.length}]"
            inner = inner.elem
        return f"{inner}{dims}"


@dataclass(frozen=True)
class PointerType:
    pointee: Type
    space: str           # "device", "constant", "threadgroup" or "thread"
    const: bool = False  # the pointee is const

    size = 8
    align = 8

    def __str__(self) -> str:
        return f"{'const ' if self.const else ''}{self.space} {self.pointee}*"


@dataclass(frozen=True)
class FunctionPointerType:
    """`R (*)(P...)`: metalsim has function pointers only as template arguments, each naming
    one function at compile time (MLX's fft.h passes its radix codelets so)."""

    result: Type
    params: tuple[Type, ...]

    size = 8
    align = 8

    def __str__(self) -> str:
        return f"{self.result} (*)({', '.join(str(p) for p in self.params)})"


@dataclass(frozen=True)
class Member:
    """One data member of a struct, at its byte offset."""

    name: str
    type: Type
    offset: int
    const: bool = False


# A base class subobject is a member named so (not an identifier: no code can name it).
BASE_PREFIX = "<base>"


@dataclass(frozen=True, eq=False)
class StructType:
    """A POD `struct`, laid out as C++ standard layout: each member at the next multiple of its
    alignment, the struct aligned to its most aligned member and padded to a multiple of that.

    Struct types compare by identity, as C++ class types do. A struct rvalue in a lane array is
    its object representation: one row of `size` bytes per lane (`dtype` is uint8).
    """

    name: str
    members: tuple[Member, ...]
    size: int
    align: int
    narrowest: ScalarType  # the smallest scalar in it: memory tracks structs at this grain
    union: bool = False     # members overlap at offset 0; braces initialise the first
    incomplete: bool = False   # declared (`struct S;`), not yet defined
    dtype = np.dtype(np.uint8)

    def member(self, name: str) -> Member | None:
        """The data member `name`, its own or (at its offset in the object) a base class's."""
        found = next((m for m in self.members if m.name == name), None)
        if found is not None:
            return found
        for base in self.members:
            if base.name.startswith(BASE_PREFIX):
                inner = base.type.member(name)  # type: ignore[union-attr]
                if inner is not None:
                    return Member(inner.name, inner.type, base.offset + inner.offset, inner.const)
        return None

    def __str__(self) -> str:
        return self.name


def struct_type(name: str, fields: list[tuple[str, Type, bool]], align: int = 1,
                union: bool = False) -> StructType:
    """Lay out (name, type, const) fields as the Metal compiler does (C++ standard layout);
    `align` is a stricter alignment asked for (`struct alignas(16) S`). A union's members all
    start at offset 0 and it is as large as the largest."""
    members, offset, narrowest, end = [], 0, UCHAR, 0
    for i, (field_name, t, const) in enumerate(fields):
        offset = 0 if union else -(-offset // t.align) * t.align
        members.append(Member(field_name, t, offset, const))
        offset += t.size
        end = max(end, offset)
        align = max(align, t.align)
        leaf = array_shape(t)[1]
        leaf = leaf.narrowest if isinstance(leaf, StructType) else scalar_of(leaf)
        narrowest = leaf if i == 0 or leaf.size < narrowest.size else narrowest
    # An empty struct still occupies one byte in C++.
    size = max(1, -(-end // align) * align)
    return StructType(name, tuple(members), size, align, narrowest, union)


def declared_struct(name: str, union: bool = False) -> StructType:
    """The incomplete type a forward declaration `struct S;` names: pointers and references to
    it are complete types, the struct itself gets its layout from `complete_struct`."""
    return StructType(name, (), 0, 1, UCHAR, union, incomplete=True)


def complete_struct(declared: StructType, defined: StructType) -> StructType:
    """Give the incomplete `declared` the layout of its definition `defined`, in place: a C++
    class type is one type from its first declaration on, so the pointer and reference types
    built from the declaration must see the definition (types compare by identity)."""
    for name in ("members", "size", "align", "narrowest", "union", "incomplete"):
        object.__setattr__(declared, name, getattr(defined, name))
    return declared


@dataclass(frozen=True)
class NullptrType:
    """`decltype(nullptr)`: the type of `nullptr`, which converts to every pointer type."""

    size = 8
    align = 8

    def __str__(self) -> str:
        return "std::nullptr_t"   # as clang names it in messages


@dataclass(frozen=True)
class VoidType:
    size = 0
    align = 1

    def __str__(self) -> str:
        return "void"


Type = (ScalarType | VectorType | SimdMatrixType | AtomicType | ArrayType | PointerType
        | StructType | VoidType | FunctionPointerType | NullptrType)

VOID = VoidType()
NULLPTR_T = NullptrType()

BOOL = ScalarType("bool", np.dtype(np.bool_), "bool", False, 1)
CHAR = ScalarType("char", np.dtype(np.int8), "int", True, 2)
UCHAR = ScalarType("uchar", np.dtype(np.uint8), "int", False, 2)
SHORT = ScalarType("short", np.dtype(np.int16), "int", True, 3)
USHORT = ScalarType("ushort", np.dtype(np.uint16), "int", False, 3)
INT = ScalarType("int", np.dtype(np.int32), "int", True, 4)
UINT = ScalarType("uint", np.dtype(np.uint32), "int", False, 4)
LONG = ScalarType("long", np.dtype(np.int64), "int", True, 5)
ULONG = ScalarType("ulong", np.dtype(np.uint64), "int", False, 5)
HALF = ScalarType("half", np.dtype(np.float16), "float", True, 1)
BFLOAT = ScalarType("bfloat", np.dtype(ml_dtypes.bfloat16), "float", True, 1)
FLOAT = ScalarType("float", np.dtype(np.float32), "float", True, 2)
# Metal's vote structs: a mask of one bit per lane, with `all()` and `any()` members and an
# explicit conversion to their `vote_t` (`ulong`, `ushort`), which metalsim also allows
# implicitly; they compute as their vote_t (`promote`).
SIMD_VOTE = ScalarType("simd_vote", np.dtype(np.uint64), "int", False, 5, ULONG)
QUAD_VOTE = ScalarType("quad_vote", np.dtype(np.uint16), "int", False, 3, USHORT)

SCALARS = (BOOL, CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG, HALF, BFLOAT, FLOAT)

# Metal's own names; `float16_t` and `bfloat16_t` are MLX's typedefs, declared by MLX's headers
# or, for a program that does not include them, by metalsim's prelude (metalsim.exec.prelude).
_SCALAR_NAMES: dict[str, ScalarType] = {t.name: t for t in SCALARS} | {
    "int8_t": CHAR, "uint8_t": UCHAR, "int16_t": SHORT, "uint16_t": USHORT,
    "int32_t": INT, "uint32_t": UINT, "int64_t": LONG, "uint64_t": ULONG,
    "size_t": ULONG, "ptrdiff_t": LONG, "float32_t": FLOAT, "unsigned": UINT, "signed": INT,
}

ATOMIC_NAMES = {"atomic_int": INT, "atomic_uint": UINT, "atomic_float": FLOAT,
                "atomic_bool": BOOL, "atomic_ulong": ULONG}


def _build_type_names() -> dict[str, Type]:
    names: dict[str, Type] = dict(_SCALAR_NAMES)
    for elem in SCALARS:
        for n in (2, 3, 4):
            names[f"{elem.name}{n}"] = VectorType(elem, n)
            names[f"packed_{elem.name}{n}"] = VectorType(elem, n, packed=True)
    names |= {name: AtomicType(t) for name, t in ATOMIC_NAMES.items()}
    names |= {f"simdgroup_{t.name}8x8": SimdMatrixType(t) for t in (HALF, BFLOAT, FLOAT)}
    names["simd_vote"] = SIMD_VOTE
    names["quad_vote"] = QUAD_VOTE
    names["void"] = VOID
    return names


TYPE_NAMES: dict[str, Type] = _build_type_names()
"""Every built-in type name the parser must treat as a type (besides templates `vec`, `atomic`)."""

BUILTIN_TYPE_TEMPLATES = frozenset({"vec", "atomic", "packed_vec", "simdgroup_matrix"})

MLX_DTYPE_TO_SCALAR: dict[str, ScalarType] = {
    "bool": BOOL, "int8": CHAR, "uint8": UCHAR, "int16": SHORT, "uint16": USHORT,
    "int32": INT, "uint32": UINT, "int64": LONG, "uint64": ULONG,
    "float16": HALF, "bfloat16": BFLOAT, "float32": FLOAT,
}


def scalar_of(t: Type) -> ScalarType:
    """The element type of a scalar, vector or SIMD-group matrix type."""
    return t.elem if isinstance(t, VectorType | SimdMatrixType) else t  # type: ignore[return-value]


def array_shape(t: Type) -> tuple[tuple[int, ...], Type]:
    """The dimensions of a (multi-dimensional) array type and its innermost element type."""
    dims = []
    while isinstance(t, ArrayType):
        dims.append(t.length)
        t = t.elem
    return tuple(dims), t


@cache
def holds_atomic(t: Type) -> bool:
    """Whether `t` is an atomic or an array or struct with one inside (MLX's `mlx_atomic<T>`):
    such an object lives only in device or threadgroup memory and cannot be copied, since
    `atomic<T>`'s copy constructor and assignment are deleted."""
    t = array_shape(t)[1]
    if isinstance(t, StructType):
        return any(holds_atomic(m.type) for m in t.members)
    return isinstance(t, AtomicType)


def lane_shape(t: Type) -> tuple[int, ...]:
    """The shape one lane's value of `t` has in a lane array: () for scalars, (n,) for vectors,
    (2,) for the two elements of a SIMD-group matrix a lane holds, (size,) bytes for a struct."""
    if isinstance(t, VectorType):
        return (t.n,)
    if isinstance(t, StructType):
        return (t.size,)
    if isinstance(t, SimdMatrixType):
        return (t.per_lane,)
    return ()


def is_arithmetic(t: Type) -> bool:
    return isinstance(t, ScalarType | VectorType)


def is_integer(t: Type) -> bool:
    s = scalar_of(t)
    return isinstance(s, ScalarType) and s.kind in ("int", "bool")


def is_float(t: Type) -> bool:
    s = scalar_of(t)
    return isinstance(s, ScalarType) and s.kind == "float"


def with_elem(t: Type, elem: ScalarType) -> Type:
    """`t` with its element type replaced (a vector stays a vector of the same width)."""
    return VectorType(elem, t.n) if isinstance(t, VectorType) else elem


def promote(t: ScalarType) -> ScalarType:
    """C++ integer promotion: bool, char, short and their unsigned kin become int (a vote or
    an enumeration its vote_t or underlying type first)."""
    if t.underlying is not None:
        t = t.underlying
    if t.kind in ("bool", "int") and t.rank < INT.rank:
        return INT
    return t


def is_promotion(frm: ScalarType, to: ScalarType) -> bool:
    """Whether scalar `frm` to `to` is a promotion, which overload resolution ranks above
    other conversions: C++ integral promotion to int, or half to float (as clang ranks it
    where half is not a native type; metalsim stays lenient there); an unscoped enumeration
    promotes to its underlying type too."""
    return (to == INT and promote(frm) == INT and frm != INT) or (frm == HALF and to == FLOAT) or (
        frm.enum == "enum" and to == frm.underlying)


class ConversionError(Exception):
    """Two operand types have no common type (for example `half` and `bfloat`)."""


def common_scalar(a: ScalarType, b: ScalarType) -> ScalarType:
    """The usual arithmetic conversions of C++ for two scalar types."""
    if a.kind == "float" or b.kind == "float":
        if a.kind == "float" and b.kind == "float":
            if a == b:
                return a
            if {a, b} == {HALF, BFLOAT}:
                raise ConversionError("half and bfloat have no common type")
            return FLOAT
        return a if a.kind == "float" else b
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.rank > b.rank else b
    unsigned, signed = (a, b) if not a.signed else (b, a)
    if unsigned.rank >= signed.rank:
        return unsigned
    if signed.size > unsigned.size:
        return signed
    return {INT: UINT, LONG: ULONG}[signed]


def common_type(a: Type, b: Type) -> Type:
    """The type both operands of a binary arithmetic operator are converted to.

    A vector and a scalar give the vector type (the scalar is converted to the element type and
    splatted); two vectors must have the same type.
    """
    if isinstance(a, VectorType) or isinstance(b, VectorType):
        if isinstance(a, VectorType) and isinstance(b, VectorType):
            # Packed vectors compute as the aligned vector of the same elements.
            if a.n != b.n or a.elem != b.elem:
                raise ConversionError(f"cannot combine '{a}' and '{b}'")
            return VectorType(a.elem, a.n)
        vec = a if isinstance(a, VectorType) else b
        return VectorType(vec.elem, vec.n)
    return common_scalar(a, b)  # type: ignore[arg-type]


def bool_like(t: Type) -> Type:
    """The type of a comparison of two `t`s: `bool`, or `boolN` for vectors."""
    return VectorType(BOOL, t.n) if isinstance(t, VectorType) else BOOL


def mlx_type_string(t: ScalarType) -> str:
    """The spelling MLX uses for a scalar type in generated code (see signature.py)."""
    return {HALF: "float16_t", BFLOAT: "bfloat16_t", FLOAT: "float", BOOL: "bool"}.get(
        t, f"{'u' if not t.signed else ''}int{t.bits}_t")
