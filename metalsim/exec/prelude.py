"""MLX's `utils.h` helpers that kernel bodies may call, written in MSL for metalsim to compile.

It starts with MLX's `typedef`s of `bfloat16_t` and `float16_t` (bf16.h, utils.h; MLX's
headers may declare them again, as C++ allows), then Metal's own `integral_constant`,
`bool_constant`, `true_type`, `false_type`, `enable_if` (<metal_type_traits>) and `array`
(<metal_array>, for thread objects); where a lookup finds one of these beside a program's
own (MLX's `mlx::steel::integral_constant` after `using namespace mlx::steel;`), the
program's is taken, which is sound as both mean the same.

MLX prepends its `utils.h` to every custom kernel; these are the indexing helpers from it that
user kernels call (and MLX's `log1p`, which Metal's library lacks), with the same signatures
and results (`elem_to_loc` deduces its index type
from the element argument; the `uint3` overload defaults to `int64_t`). metalsim compiles this
text in front of the generated source, as its own section, so diagnostics inside it are clear.
"""

# MLX's names for its float16 and bfloat16 dtypes, which its generated kernel source uses.
MLX_TYPEDEFS = """\
typedef bfloat bfloat16_t;
typedef half float16_t;
"""

PRELUDE = MLX_TYPEDEFS + """
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

template <typename T, typename U>
inline T ceildiv(T N, U M) {
  return (N + M - 1) / M;
}

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

template <typename IdxT = int64_t>
inline IdxT elem_to_loc_1(uint elem, constant const int64_t& stride) {
  return elem * IdxT(stride);
}

template <typename IdxT = int64_t>
inline IdxT elem_to_loc_2(uint2 elem, constant const int64_t strides[2]) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}

template <typename IdxT = int64_t>
inline IdxT elem_to_loc_3(uint3 elem, constant const int64_t strides[3]) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}
"""
