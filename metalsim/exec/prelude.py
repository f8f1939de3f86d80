"""What MLX's generated kernel source gets in front of it, written in MSL for metalsim to compile.

MLX compiles every custom kernel after the preprocessed text of its `utils.h` (with `bf16.h`,
`complex.h`, ...), which includes `<metal_stdlib>` and says `using namespace metal;`. metalsim
compiles this prelude in front of the generated source instead, in sections of its own, so
that diagnostics inside it are clear. It holds two kinds of declarations:

- Metal's own library, which is real in every Metal program: `nullptr_t`, `integral_constant`,
  `bool_constant`, `true_type`, `false_type`, `enable_if` (<metal_type_traits>), `array`
  (<metal_array>, for thread objects) and the math functions with a reference parameter
  (`modf`, `sincos`, `frexp`). A program's overloads compete with these by C++'s rules.
- Stand-ins for what MLX's utils.h declares and kernel bodies use: the `bfloat16_t` and
  `float16_t` typedefs, `complex64_t` with its arithmetic, `Limits`, `log1p` (which Metal's
  library lacks), `ceildiv` and the `elem_to_loc` indexing helpers, with MLX's signatures
  and results (`elem_to_loc` deduces its index type from the element argument; the `uint3`
  overload defaults to `int64_t`). Each is declared only where the program does not include MLX's
  declaration of its name (`replaced_stand_ins`): a program that includes MLX's headers, as
  MLX's .metal files do, gets MLX's own declarations, with no copy of the prelude's beside
  them.
"""

from __future__ import annotations

from metalsim.exec.function_specializations import is_explicit_specialization
from metalsim.lang import ast

# Metal's own declarations that metalsim writes in MSL.
METAL_LIBRARY = """
typedef decltype(nullptr) nullptr_t;

template <typename T, T v>
struct integral_constant {
  static constexpr constant T value = v;
  typedef T value_type;
  typedef integral_constant type;
  constexpr operator value_type() const thread { return value; }
};

template <bool B>
using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;

template <typename T, size_t N>
struct array {
  T __elems[N];
  constexpr size_t size() const thread { return N; }
  thread T& operator[](size_t i) thread { return __elems[i]; }
  const thread T& operator[](size_t i) const thread { return __elems[i]; }
};

template <bool B, typename T = void>
struct enable_if {};
template <typename T>
struct enable_if<true, T> {
  typedef T type;
};

template <typename T>
inline T modf(T x, thread T& integral_part) {
  integral_part = metal::trunc(x);
  // Both parts carry x's sign (modf(-5.0) is -0.0); an infinity has no fractional part.
  return metal::copysign(metal::select(x - integral_part, T(0), metal::isinf(x)), x);
}

template <typename T>
inline T sincos(T x, thread T& cosval) {
  cosval = metal::cos(x);
  return metal::sin(x);
}

template <typename T, typename I>
inline T frexp(T x, thread I& exponent) {
  exponent = __frexp_exponent(x);
  return __frexp_mantissa(x);
}
"""

# Stand-ins for what MLX's utils.h (with its includes) declares: each under its name, with
# the header of MLX's kernel library that declares it there and the text standing in for that
# declaration (`complex64_t`'s operators go with `complex64_t`).
MLX_STAND_INS: dict[str, tuple[str, str]] = {
    "bfloat16_t": ("bf16.h", "typedef bfloat bfloat16_t;\n"),
    "float16_t": ("utils.h", "typedef half float16_t;\n"),
    "complex64_t": ("complex.h", """
struct complex64_t {
  float real;
  float imag;
  constexpr complex64_t(float real_, float imag_) thread : real(real_), imag(imag_) {}
  constexpr complex64_t() thread : real(0), imag(0) {}
};
inline complex64_t operator+(complex64_t a, complex64_t b) {
  return complex64_t(a.real + b.real, a.imag + b.imag);
}
inline complex64_t operator-(complex64_t a, complex64_t b) {
  return complex64_t(a.real - b.real, a.imag - b.imag);
}
inline complex64_t operator*(complex64_t a, complex64_t b) {
  return complex64_t(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real);
}
"""),
    # Metal's numeric_limits, but infinite `max` and `min` for floating-point types (with
    # `finite_max` and `finite_min` beside them).
    "Limits": ("utils.h", """
template <typename T, bool = metal::is_floating_point<T>::value>
struct Limits {
  static constexpr constant T max = metal::numeric_limits<T>::max();
  static constexpr constant T min = metal::numeric_limits<T>::min();
  static constexpr constant T finite_max = max;
  static constexpr constant T finite_min = min;
};
template <typename T>
struct Limits<T, true> {
  static constexpr constant T max = metal::numeric_limits<T>::infinity();
  static constexpr constant T min = -metal::numeric_limits<T>::infinity();
  static constexpr constant T finite_max = metal::numeric_limits<T>::max();
  static constexpr constant T finite_min = -metal::numeric_limits<T>::max();
};
"""),
    "log1p": ("utils.h", """
inline float log1p(float x) {
  float y = 1.0f + x;
  if (y == INFINITY) {
    return INFINITY;
  }
  return y == 1.0f ? x : x * (metal::log(y) / (y - 1.0f));
}

inline bfloat16_t log1p(bfloat16_t x) {
  float y = 1.0f + static_cast<float>(x);
  if (y == INFINITY) {
    return bfloat16_t(INFINITY);
  }
  return y == 1.0f ? x : bfloat16_t(x * (metal::log(y) / (y - 1.0f)));
}
"""),
    "ceildiv": ("utils.h", """
template <typename T, typename U>
inline T ceildiv(T N, U M) {
  return (N + M - 1) / M;
}
"""),
    "elem_to_loc": ("utils.h", """
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(IdxT elem, constant const int* shape,
                        constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int axis = ndim - 1; axis >= 0 && elem > 0; --axis) {
    loc += (elem % shape[axis]) * IdxT(strides[axis]);
    elem /= shape[axis];
  }
  return loc;
}

template <typename IdxT = int64_t>
inline IdxT elem_to_loc(uint3 elem, constant const int* shape,
                        constant const int64_t* strides, int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  for (int axis = ndim - 3; axis >= 0; --axis) {
    loc += (elem.z % shape[axis]) * IdxT(strides[axis]);
    elem.z /= shape[axis];
  }
  return loc;
}
"""),
    "elem_to_loc_1": ("utils.h", """
template <typename IdxT = int64_t>
inline IdxT elem_to_loc_1(uint elem, constant const int64_t& stride) {
  return elem * IdxT(stride);
}
"""),
    "elem_to_loc_2": ("utils.h", """
template <typename IdxT = int64_t>
inline IdxT elem_to_loc_2(uint2 elem, constant const int64_t strides[2]) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}
"""),
    "elem_to_loc_3": ("utils.h", """
template <typename IdxT = int64_t>
inline IdxT elem_to_loc_3(uint3 elem, constant const int64_t strides[3]) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}
"""),
}

# MLX's kernel library under MLX's include directory (`metalsim.mlx_include_dir()`), as MLX's
# headers include each other (`#include "mlx/backend/metal/kernels/bf16.h"`).
MLX_KERNELS = "mlx/backend/metal/kernels"

# MLX's names for its float16 and bfloat16 dtypes, which its generated kernel source uses (the
# CUDA translator's prelude is these alone).
MLX_TYPEDEFS = MLX_STAND_INS["bfloat16_t"][1] + MLX_STAND_INS["float16_t"][1]

# The prelude's sections: Metal's library, then the stand-ins for MLX's (which the parser does
# not take for Metal's own names).
METAL_SECTION, MLX_SECTION = "prelude", "mlx_prelude"


def _assembled() -> tuple[str, list[tuple[str, int, int]], dict[int, str]]:
    """The prelude's text, its sections, and the stand-in each line of its MLX section
    (counted from 1) belongs to."""
    mlx, owners = "", {}
    for name, (_, part) in MLX_STAND_INS.items():
        first = mlx.count("\n") + 1
        mlx += part
        owners.update(dict.fromkeys(range(first, first + part.count("\n")), name))
    split = len(METAL_LIBRARY)
    sections = [(METAL_SECTION, 0, split), (MLX_SECTION, split, split + len(mlx))]
    return METAL_LIBRARY + mlx, sections, owners


PRELUDE, PRELUDE_SECTIONS, _STAND_IN_OF_LINE = _assembled()
# MLX's headers, as MLX's headers include them, and the names of the stand-ins each declares.
_HEADER_STAND_INS: dict[str, set[str]] = {
    f"{MLX_KERNELS}/{header}": {name for name, (h, _) in MLX_STAND_INS.items() if h == header}
    for header, _ in MLX_STAND_INS.values()}


def replaced_stand_ins(items: list[ast.Node]) -> set[int]:
    """The ids of the prelude's items in `items` (a translation unit's) that stand in for a
    name the program declares in the header of MLX's that declares it (`complex64_t` in
    complex.h): those are not declared, MLX's header being the one declaration of what they
    stand in for, as if the prelude were MLX's headers under their `#pragma once`. A program's
    own declaration of such a name meets the stand-in as it would meet MLX's declaration in
    the source MLX compiles for a custom kernel, by C++'s rules (an overload, a redefinition)."""
    replaced = {name for item in items if item.coord.section in _HEADER_STAND_INS
                for name in _declared_names(item)
                if name in _HEADER_STAND_INS[item.coord.section]}
    return {id(item) for item in items if stand_in_of(item) in replaced} if replaced else set()


def stand_in_of(item: ast.Node) -> str | None:
    """The name of MLX's that the prelude's `item` stands in for (None for any other item)."""
    return (_STAND_IN_OF_LINE.get(item.coord.line) if item.coord.section == MLX_SECTION
            else None)


def _declared_names(item: ast.Node) -> set[str]:
    """The program names a declaration at namespace scope declares."""
    if isinstance(item, ast.DeclStmt):
        return {d.name for d in item.decls}
    if isinstance(item, ast.MemberFunction) and item.owner is not None:
        return set()   # a member defined outside its struct
    if isinstance(item, ast.FunctionDef) and is_explicit_specialization(item):
        return set()   # it specialises the template that is there
    if getattr(item, "specialization", None) is not None:
        return set()   # a struct or variable template's specialisation
    name = getattr(item, "name", None)
    return {name} if isinstance(name, str) and name else set()
