"""The CUDA C++ header every translated kernel starts with: Metal's standard library on CUDA.

It needs no CUDA header (NVRTC compiles it alone) and defines, inside `namespace metal` (where the
translated kernel also lives, so `metal::exp` and an unqualified `exp` both find Metal's):

- <metal_type_traits> (`integral_constant`, `bool_constant`, `is_same_v`, `enable_if_t`,
  `conditional_t`, `remove_cv_t`, `remove_addrspace_t` (the identity here), `is_convertible_v`,
  ...) and `numeric_limits`, usable in constant expressions as in Metal;
- scalar names (`uint`, `ushort`, `int64_t`, ...) and `half`/`bfloat` as 16-bit storage types
  whose arithmetic is done in float and rounded to nearest even after every operation, as
  Metal (and the simulator) round: float holds the exact result of `+ - * /` of two halves or
  bfloats well enough that this single rounding is the correctly rounded result (in a C++
  constant expression the same rounding is done in integer arithmetic);
- `vec<T, N>` (and `packed_vec`) with `x/y/z/w` and `r/g/b/a` members, `[]`, element-wise
  operators without integer promotion (`short2 + short2` is `short2`), Metal's sizes and
  alignments (a `float3` takes 16 bytes, a `packed_float3` 12), and swizzles as functions the
  translator calls (`v.zyx` -> `swizzle<2, 1, 0>(v)`);
- the math library (`metal::`, `fast::`, `precise::`), SIMD-group and quad-group functions over
  the active lanes (sums and scans in lane order, as the simulator combines them), atomics on
  device and threadgroup memory, `simdgroup_matrix` with Metal's lane layout and barriers
  (MLX's `utils.h` indexing helpers and `complex64_t` are `MLX_UTILS`, which the printer adds
  where a kernel needs them);
- the Metal compiler's `__metal_*` intrinsics that MLX's bf16_math.h builds its bfloat
  overloads on (Metal's own bfloat overloads are templates here, so that MLX's win);
- `thread_info`: every thread attribute MLX offers, from the block and thread index of the
  one-dimensional blocks `metalsim.cuda.runtime` launches (one block per threadgroup).
"""

from metalsim.lang import limits
from metalsim.lang import types as ty

# Each Metal scalar type's C++ spellings here (Metal's `char` is signed: both char types).
_LIMITS_TYPES = {ty.BOOL: ("bool",), ty.CHAR: ("signed char", "char"),
                 ty.UCHAR: ("unsigned char",), ty.SHORT: ("short",),
                 ty.USHORT: ("unsigned short",), ty.INT: ("int",), ty.UINT: ("unsigned int",),
                 ty.LONG: ("long",), ty.ULONG: ("unsigned long",), ty.HALF: ("half",),
                 ty.BFLOAT: ("bfloat",), ty.FLOAT: ("float",)}


def _limit_value(t: ty.ScalarType, cxx: str, value) -> str:
    """A constant expression of type `cxx` for a `numeric_limits` function's value."""
    if t.kind == "float":
        bits = int(value.view(f"uint{t.size * 8}"))
        if t == ty.FLOAT:
            return f"__builtin_bit_cast(float, {bits:#010x}u)"
        return f"{cxx}::from_bits({bits:#06x})"
    if t.kind == "bool":
        return "true" if value else "false"
    v = int(value)
    return f"static_cast<{cxx}>({v}ull)" if v >= 0 else f"static_cast<{cxx}>({v + 1}ll - 1)"


def _numeric_limits() -> str:
    """Metal's `numeric_limits` specialisations, from `metalsim.lang.limits` (the simulator's
    own table), so that both give every member the same value."""
    out = ["template <class T> struct numeric_limits;"]
    for t, spellings in _LIMITS_TYPES.items():
        constants = limits.limit_constants(t)
        functions = limits.limit_functions(t)
        for cxx in spellings:
            out.append(f"template <> struct numeric_limits<{cxx}> {{")
            out += [f"  static constexpr {'bool' if isinstance(v, bool) else 'int'} {name} = "
                    f"{str(v).lower() if isinstance(v, bool) else v};"
                    for name, v in constants.items()]
            out += [f"  static __device__ constexpr {cxx} {name}() {{ return "
                    f"{_limit_value(t, cxx, v)}; }}" for name, v in functions.items()]
            out.append("};")
    return "\n".join(out) + "\n"


PRELUDE = r"""
// ---- metalsim CUDA prelude: Metal's standard library for translated kernels ----
namespace metal {

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef float float32_t;
typedef decltype(nullptr) nullptr_t;

// <metal_type_traits>: C++'s type traits, as Metal's library names them (`remove_addrspace`
// is the identity here: CUDA's pointers and references carry no address space).
template <class T, T v> struct integral_constant {
  static constexpr T value = v;
  typedef T value_type;
  typedef integral_constant type;
  __device__ constexpr operator value_type() const { return value; }
  __device__ constexpr value_type operator()() const { return value; }
};
template <bool B> using bool_constant = integral_constant<bool, B>;
typedef bool_constant<true> true_type;
typedef bool_constant<false> false_type;
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class T> struct type_identity { typedef T type; };
template <class T> struct remove_const : type_identity<T> {};
template <class T> struct remove_const<const T> : type_identity<T> {};
template <class T> struct remove_volatile : type_identity<T> {};
template <class T> struct remove_volatile<volatile T> : type_identity<T> {};
template <class T> struct remove_cv : remove_const<typename remove_volatile<T>::type> {};
template <class T> struct remove_reference : type_identity<T> {};
template <class T> struct remove_reference<T&> : type_identity<T> {};
template <class T> struct remove_reference<T&&> : type_identity<T> {};
template <class T> struct remove_pointer : type_identity<T> {};
template <class T> struct remove_pointer<T*> : type_identity<T> {};
template <class T> struct remove_pointer<T* const> : type_identity<T> {};
template <class T> struct remove_addrspace : type_identity<T> {};
template <class T> struct remove_cvref : remove_cv<typename remove_reference<T>::type> {};
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> using remove_volatile_t = typename remove_volatile<T>::type;
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;
template <class T> using remove_addrspace_t = typename remove_addrspace<T>::type;
template <class T> using remove_cvref_t = typename remove_cvref<T>::type;
template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> struct is_pointer : false_type {};
template <class T> struct is_pointer<T*> : true_type {};
template <class T> struct is_pointer<T* const> : true_type {};
template <class T> struct is_reference : false_type {};
template <class T> struct is_reference<T&> : true_type {};
template <class T> struct is_void : is_same<remove_cv_t<T>, void> {};
// Metal's internal any-of / all-of traits (MLX's atomic.h uses `_disjunction`).
template <class... B> struct _disjunction : bool_constant<(B::value || ... || false)> {};
template <class... B> struct _conjunction : bool_constant<(B::value && ... && true)> {};
template <class T> __device__ T&& declval();
template <class To> __device__ void convert_to(To);
template <class From, class To, class = void> struct converts_implicitly : false_type {};
template <class From, class To>
struct converts_implicitly<From, To, decltype(convert_to<To>(declval<From>()))> : true_type {};
template <class From, class To> struct is_convertible : converts_implicitly<From, To> {};
template <class From, class To> constexpr bool is_convertible_v = is_convertible<From, To>::value;
template <class T> constexpr bool is_const_v = is_const<T>::value;
template <class T> constexpr bool is_pointer_v = is_pointer<T>::value;
template <class T> constexpr bool is_void_v = is_void<T>::value;

template <class T> struct is_integral : false_type {};
#define METAL_INTEGRAL(T) template <> struct is_integral<T> : true_type {};
METAL_INTEGRAL(bool) METAL_INTEGRAL(char) METAL_INTEGRAL(signed char) METAL_INTEGRAL(unsigned char)
METAL_INTEGRAL(short) METAL_INTEGRAL(unsigned short) METAL_INTEGRAL(int) METAL_INTEGRAL(unsigned int)
METAL_INTEGRAL(long) METAL_INTEGRAL(unsigned long) METAL_INTEGRAL(long long)
METAL_INTEGRAL(unsigned long long)
template <class T> struct is_integral<const T> : is_integral<T> {};
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> struct is_floating { static constexpr bool value = false; };
template <> struct is_floating<float> { static constexpr bool value = true; };
template <> struct is_floating<double> { static constexpr bool value = true; };
template <class T> struct is_signed_int { static constexpr bool value = T(-1) < T(0); };

// Round-to-nearest-even conversions: the PTX cvt.rn instruction for half, and the same
// rounding in integer arithmetic where C++ evaluates a constant expression (MLX's complex.h
// checks half and bfloat products in static_asserts).
__device__ constexpr unsigned short float_to_half_bits_exact(float f) {
  unsigned int x = __builtin_bit_cast(unsigned int, f);
  unsigned int sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
  if (mag >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);   // 65520 and up: inf
  if (mag >= 0x38800000u) {                                           // a normal half
    unsigned int r = mag - 0x38000000u, bits = r >> 13, rest = r & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (bits & 1u))) ++bits;
    return (unsigned short)(sign | bits);
  }
  if (mag <= 0x33000000u) return (unsigned short)sign;                // 2^-25 and below: 0
  unsigned int shift = 126u - (mag >> 23), m = (mag & 0x7fffffu) | 0x800000u;
  unsigned int q = m >> shift, rest = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (q & 1u))) ++q;
  return (unsigned short)(sign | q);
}
__device__ constexpr float half_bits_to_float_exact(unsigned short h) {
  unsigned int sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (m << 13));
  if (e == 0u) return sign ? -((float)m * 0x1p-24f) : (float)m * 0x1p-24f;
  return __builtin_bit_cast(float, sign | ((e + 112u) << 23) | (m << 13));
}
__device__ inline unsigned short float_to_half_bits_cvt(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ inline float half_bits_to_float_cvt(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ constexpr unsigned short float_to_half_bits(float f) {
  if (__builtin_is_constant_evaluated()) return float_to_half_bits_exact(f);
  return float_to_half_bits_cvt(f);
}
__device__ constexpr float half_bits_to_float(unsigned short h) {
  if (__builtin_is_constant_evaluated()) return half_bits_to_float_exact(h);
  return half_bits_to_float_cvt(h);
}
__device__ constexpr unsigned short float_to_bfloat_bits(float f) {
  unsigned int x = __builtin_bit_cast(unsigned int, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (unsigned short)(x >> 16);
}
// Integers to bfloat in one round to nearest even, as Metal's conversion does (MSL §2.21):
// `(float)v` would round twice (2^24 + 2^16 + 1 would end at 2^24, not 2^24 + 2^17). The
// integer is cut to float's 24 bits with any lost bit kept as a sticky low bit (round to odd),
// which the bfloat rounding then sees; 24 >= 2 * 8 + 2 bits makes that one exact rounding.
__device__ inline float magnitude_to_float_round_to_odd(unsigned long long m) {
  int shift = 0;
  while ((m >> shift) >= (1ull << 24)) ++shift;
  unsigned long long kept = m >> shift;
  if (shift != 0 && (m & ((1ull << shift) - 1ull)) != 0) kept |= 1ull;
  return ldexpf((float)kept, shift);
}
__device__ inline unsigned short int_to_bfloat_bits(long long v) {
  unsigned long long m = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  float f = magnitude_to_float_round_to_odd(m);
  return float_to_bfloat_bits(v < 0 ? -f : f);
}
__device__ inline unsigned short uint_to_bfloat_bits(unsigned long long v) {
  return float_to_bfloat_bits(magnitude_to_float_round_to_odd(v));
}
__device__ constexpr float bfloat_bits_to_float(unsigned short b) {
  return __builtin_bit_cast(float, ((unsigned int)b) << 16);
}

struct half {
  unsigned short bits;
  half() = default;
  __device__ constexpr half(float f) : bits(float_to_half_bits(f)) {}
  __device__ constexpr half(double f) : bits(float_to_half_bits((float)f)) {}
  __device__ constexpr half(int v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(unsigned int v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(long v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(unsigned long v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(long long v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(unsigned long long v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(short v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(unsigned short v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(signed char v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(unsigned char v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(char v) : bits(float_to_half_bits((float)v)) {}
  __device__ constexpr half(bool v) : bits(float_to_half_bits(v ? 1.0f : 0.0f)) {}
  __device__ constexpr operator float() const { return half_bits_to_float(bits); }
  struct bits_tag {};
  __device__ constexpr half(bits_tag, unsigned short b) : bits(b) {}
  static __device__ constexpr half from_bits(unsigned short b) { return half(bits_tag{}, b); }
};

struct bfloat {
  unsigned short bits;
  bfloat() = default;
  __device__ constexpr bfloat(float f) : bits(float_to_bfloat_bits(f)) {}
  __device__ constexpr bfloat(double f) : bits(float_to_bfloat_bits((float)f)) {}
  __device__ bfloat(int v) : bits(int_to_bfloat_bits(v)) {}
  __device__ bfloat(unsigned int v) : bits(uint_to_bfloat_bits(v)) {}
  __device__ bfloat(long v) : bits(int_to_bfloat_bits(v)) {}
  __device__ bfloat(unsigned long v) : bits(uint_to_bfloat_bits(v)) {}
  __device__ bfloat(long long v) : bits(int_to_bfloat_bits(v)) {}
  __device__ bfloat(unsigned long long v) : bits(uint_to_bfloat_bits(v)) {}
  __device__ bfloat(short v) : bits(int_to_bfloat_bits(v)) {}
  __device__ bfloat(unsigned short v) : bits(uint_to_bfloat_bits(v)) {}
  __device__ bfloat(signed char v) : bits(int_to_bfloat_bits(v)) {}
  __device__ bfloat(unsigned char v) : bits(uint_to_bfloat_bits(v)) {}
  __device__ bfloat(char v) : bits(int_to_bfloat_bits(v)) {}
  __device__ constexpr bfloat(bool v) : bits(float_to_bfloat_bits(v ? 1.0f : 0.0f)) {}
  __device__ constexpr bfloat(half h) : bits(float_to_bfloat_bits((float)h)) {}
  __device__ constexpr operator float() const { return bfloat_bits_to_float(bits); }
  struct bits_tag {};
  __device__ constexpr bfloat(bits_tag, unsigned short b) : bits(b) {}
  static __device__ constexpr bfloat from_bits(unsigned short b) { return bfloat(bits_tag{}, b); }
};
// MSL 2.22: bfloat converts implicitly only to float, and neither float nor half to bfloat (the
// structs above convert explicitly and implicitly alike).
template <> struct is_convertible<float, bfloat> : false_type {};
template <> struct is_convertible<half, bfloat> : false_type {};
template <> struct is_convertible<bfloat, half> : false_type {};
typedef half float16_t;
typedef bfloat bfloat16_t;
typedef bfloat bfloat16;

template <class T> struct is_low_float { static constexpr bool value = false; };
template <> struct is_low_float<half> { static constexpr bool value = true; };
template <> struct is_low_float<bfloat> { static constexpr bool value = true; };
template <class T> struct is_scalar {
  static constexpr bool value = is_integral<T>::value || is_floating<T>::value || is_low_float<T>::value;
};
template <class T> struct is_float_t {
  static constexpr bool value = is_floating<T>::value || is_low_float<T>::value;
};
template <class T> struct is_floating_point : bool_constant<is_float_t<remove_cv_t<T>>::value> {};
template <class T> struct is_arithmetic
    : bool_constant<is_integral<T>::value || is_floating_point<T>::value> {};
template <class T> struct is_signed
    : bool_constant<is_floating_point<T>::value || (is_integral<T>::value && T(-1) < T(0))> {};
template <class T> struct is_unsigned
    : bool_constant<is_integral<T>::value && !(T(-1) < T(0))> {};
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;

// C++'s usual arithmetic conversions, extended by Metal's half and bfloat: a float type wins
// over integers, float over half/bfloat.
template <class A, class B, class = void> struct common {
  typedef decltype(A() + B()) type;
};
template <class A> struct common<A, A, enable_if_t<is_low_float<A>::value>> { typedef A type; };
template <class A, class B>
struct common<A, B, enable_if_t<!is_same<A, B>::value &&
                                (is_low_float<A>::value || is_low_float<B>::value)>> {
  typedef typename conditional<
      is_same<A, float>::value || is_same<B, float>::value || is_same<A, double>::value ||
          is_same<B, double>::value,
      float, typename conditional<is_low_float<A>::value, A, B>::type>::type type;
};
template <class A, class B> using common_t = typename common<A, B>::type;

#define METAL_LOWFLOAT_BINOP(op)                                                       \
  template <class A, class B,                                                          \
            enable_if_t<(is_low_float<A>::value || is_low_float<B>::value) &&          \
                        is_scalar<A>::value && is_scalar<B>::value, int> = 0>          \
  __device__ constexpr common_t<A, B> operator op(A a, B b) {                             \
    typedef common_t<A, B> C;                                                          \
    return C((float)C(a) op (float)C(b));                                              \
  }
METAL_LOWFLOAT_BINOP(+)
METAL_LOWFLOAT_BINOP(-)
METAL_LOWFLOAT_BINOP(*)
METAL_LOWFLOAT_BINOP(/)
#define METAL_LOWFLOAT_CMP(op)                                                         \
  template <class A, class B,                                                          \
            enable_if_t<(is_low_float<A>::value || is_low_float<B>::value) &&          \
                        is_scalar<A>::value && is_scalar<B>::value, int> = 0>          \
  __device__ constexpr bool operator op(A a, B b) {                                       \
    typedef common_t<A, B> C;                                                          \
    return (float)C(a) op (float)C(b);                                                 \
  }
METAL_LOWFLOAT_CMP(<)
METAL_LOWFLOAT_CMP(>)
METAL_LOWFLOAT_CMP(<=)
METAL_LOWFLOAT_CMP(>=)
METAL_LOWFLOAT_CMP(==)
METAL_LOWFLOAT_CMP(!=)
#define METAL_LOWFLOAT_ASSIGN(op)                                                      \
  template <class A, class B, enable_if_t<is_low_float<A>::value && is_scalar<B>::value, int> = 0> \
  __device__ inline A& operator op##=(A& a, B b) { a = A(a op b); return a; }
METAL_LOWFLOAT_ASSIGN(+)
METAL_LOWFLOAT_ASSIGN(-)
METAL_LOWFLOAT_ASSIGN(*)
METAL_LOWFLOAT_ASSIGN(/)
__device__ constexpr half operator-(half a) { return half::from_bits(a.bits ^ 0x8000); }
__device__ constexpr bfloat operator-(bfloat a) { return bfloat::from_bits(a.bits ^ 0x8000); }
__device__ inline half operator+(half a) { return a; }
__device__ inline bfloat operator+(bfloat a) { return a; }
template <class A, enable_if_t<is_low_float<A>::value, int> = 0>
__device__ inline A& operator++(A& a) { a = A((float)a + 1.0f); return a; }
template <class A, enable_if_t<is_low_float<A>::value, int> = 0>
__device__ inline A& operator--(A& a) { a = A((float)a - 1.0f); return a; }
template <class A, enable_if_t<is_low_float<A>::value, int> = 0>
__device__ inline A operator++(A& a, int) { A old = a; a = A((float)a + 1.0f); return old; }
template <class A, enable_if_t<is_low_float<A>::value, int> = 0>
__device__ inline A operator--(A& a, int) { A old = a; a = A((float)a - 1.0f); return old; }

// ---- vectors ----
template <class T, int N, bool Packed = false> struct vec;
// A packed 2- or 4-vector converted where it lies in device or threadgroup memory is read with
// one vector load when its address happens to have the unpacked vector's alignment (Metal only
// promises the element's), element by element otherwise; a packed local stays in registers.
template <class U, int N, bool Q>
__device__ inline bool vector_load_fits(const vec<U, N, Q>& o) {
  if (!Q || N == 3) return false;
  const void* p = &o;
  return (__isGlobal(p) || __isShared(p)) && (size_t)p % (N * sizeof(U)) == 0;
}

#define METAL_VEC_COMMON(N)                                                              \
  __device__ T& operator[](int i) { return (&x)[i]; }                                     \
  __device__ const T& operator[](int i) const { return (&x)[i]; }                         \
  template <class U, bool Q>                                                              \
  __device__ vec(const vec<U, N, Q>& o) {                                                 \
    if (vector_load_fits(o)) {                                                            \
      vec<U, N> v = *reinterpret_cast<const vec<U, N>*>(&o);                              \
      for (int i = 0; i < N; ++i) (*this)[i] = T(v[i]);                                   \
    } else {                                                                              \
      for (int i = 0; i < N; ++i) (*this)[i] = T(o[i]);                                   \
    }                                                                                     \
  }                                                                                       \
  template <class A0, class A1, class... As>                                              \
  __device__ vec(const A0& a0, const A1& a1, const As&... as) {                           \
    int i = 0;                                                                            \
    put(i, a0); put(i, a1);                                                               \
    int unused[] = {0, (put(i, as), 0)...};                                               \
    (void)unused;                                                                         \
  }                                                                                       \
  template <class S, enable_if_t<is_scalar<S>::value, int> = 0>                          \
  __device__ void put(int& i, const S& s) { (*this)[i++] = T(s); }                        \
  template <class U, int M, bool Q>                                                       \
  __device__ void put(int& i, const vec<U, M, Q>& v) {                                    \
    for (int k = 0; k < M; ++k) (*this)[i++] = T(v[k]);                                   \
  }                                                                                       \
  template <class R> __device__ vec& operator+=(const R& r) { return *this = *this + r; }  \
  template <class R> __device__ vec& operator-=(const R& r) { return *this = *this - r; }  \
  template <class R> __device__ vec& operator*=(const R& r) { return *this = *this * r; }  \
  template <class R> __device__ vec& operator/=(const R& r) { return *this = *this / r; }  \
  template <class R> __device__ vec& operator%=(const R& r) { return *this = *this % r; }  \
  template <class R> __device__ vec& operator&=(const R& r) { return *this = *this & r; }  \
  template <class R> __device__ vec& operator|=(const R& r) { return *this = *this | r; }  \
  template <class R> __device__ vec& operator^=(const R& r) { return *this = *this ^ r; }  \
  template <class R> __device__ vec& operator<<=(const R& r) { return *this = *this << r; } \
  template <class R> __device__ vec& operator>>=(const R& r) { return *this = *this >> r; }

// The splat and the one-scalar-per-component constructors are constexpr (for float and the
// integers), so program-scope `constant` vectors and structs holding them initialise statically.
#define METAL_SCALAR_T template <class S, enable_if_t<is_scalar<S>::value, int> = 0>
template <class T, bool P> struct alignas(P ? alignof(T) : 2 * sizeof(T)) vec<T, 2, P> {
  union { T x; T r; };
  union { T y; T g; };
  vec() = default;
  METAL_SCALAR_T __device__ constexpr vec(S s) : x(T(s)), y(T(s)) {}
  __device__ constexpr vec(T a, T b) : x(a), y(b) {}
  METAL_VEC_COMMON(2)
};
template <class T, bool P> struct alignas(P ? alignof(T) : 4 * sizeof(T)) vec<T, 3, P> {
  union { T x; T r; };
  union { T y; T g; };
  union { T z; T b; };
  vec() = default;
  METAL_SCALAR_T __device__ constexpr vec(S s) : x(T(s)), y(T(s)), z(T(s)) {}
  __device__ constexpr vec(T a, T b, T c) : x(a), y(b), z(c) {}
  METAL_VEC_COMMON(3)
};
template <class T, bool P> struct alignas(P ? alignof(T) : 4 * sizeof(T)) vec<T, 4, P> {
  union { T x; T r; };
  union { T y; T g; };
  union { T z; T b; };
  union { T w; T a; };
  vec() = default;
  METAL_SCALAR_T __device__ constexpr vec(S s) : x(T(s)), y(T(s)), z(T(s)), w(T(s)) {}
  __device__ constexpr vec(T a, T b, T c, T d) : x(a), y(b), z(c), w(d) {}
  METAL_VEC_COMMON(4)
};
template <class T, int N> using packed_vec = vec<T, N, true>;

#define METAL_VEC_TYPES(T, name)                                                         \
  typedef vec<T, 2> name##2; typedef vec<T, 3> name##3; typedef vec<T, 4> name##4;       \
  typedef vec<T, 2, true> packed_##name##2; typedef vec<T, 3, true> packed_##name##3;    \
  typedef vec<T, 4, true> packed_##name##4;
METAL_VEC_TYPES(bool, bool)
METAL_VEC_TYPES(signed char, char)
METAL_VEC_TYPES(unsigned char, uchar)
METAL_VEC_TYPES(short, short)
METAL_VEC_TYPES(unsigned short, ushort)
METAL_VEC_TYPES(int, int)
METAL_VEC_TYPES(unsigned int, uint)
METAL_VEC_TYPES(long, long)
METAL_VEC_TYPES(unsigned long, ulong)
METAL_VEC_TYPES(half, half)
METAL_VEC_TYPES(bfloat, bfloat)
METAL_VEC_TYPES(float, float)

// Element-wise operators: the element type is kept (no integer promotion), a scalar operand is
// converted to the vector's element type.
#define METAL_VEC_BINOP(op)                                                              \
  template <class T, class U, int N, bool P, bool Q>                                     \
  __device__ inline vec<T, N> operator op(const vec<T, N, P>& a, const vec<U, N, Q>& b) {\
    vec<T, N> r;                                                                         \
    for (int i = 0; i < N; ++i) r[i] = T(a[i] op T(b[i]));                               \
    return r;                                                                            \
  }                                                                                      \
  template <class T, int N, bool P, class S, enable_if_t<is_scalar<S>::value, int> = 0>  \
  __device__ inline vec<T, N> operator op(const vec<T, N, P>& a, const S& s) {           \
    vec<T, N> r;                                                                         \
    for (int i = 0; i < N; ++i) r[i] = T(a[i] op T(s));                                  \
    return r;                                                                            \
  }                                                                                      \
  template <class T, int N, bool P, class S, enable_if_t<is_scalar<S>::value, int> = 0>  \
  __device__ inline vec<T, N> operator op(const S& s, const vec<T, N, P>& a) {           \
    vec<T, N> r;                                                                         \
    for (int i = 0; i < N; ++i) r[i] = T(T(s) op a[i]);                                  \
    return r;                                                                            \
  }
METAL_VEC_BINOP(+)
METAL_VEC_BINOP(-)
METAL_VEC_BINOP(*)
METAL_VEC_BINOP(/)
METAL_VEC_BINOP(%)
METAL_VEC_BINOP(&)
METAL_VEC_BINOP(|)
METAL_VEC_BINOP(^)
METAL_VEC_BINOP(<<)
METAL_VEC_BINOP(>>)
#define METAL_VEC_CMP(op)                                                                \
  template <class T, class U, int N, bool P, bool Q>                                     \
  __device__ inline vec<bool, N> operator op(const vec<T, N, P>& a, const vec<U, N, Q>& b) {\
    vec<bool, N> r;                                                                      \
    for (int i = 0; i < N; ++i) r[i] = a[i] op T(b[i]);                                  \
    return r;                                                                            \
  }                                                                                      \
  template <class T, int N, bool P, class S, enable_if_t<is_scalar<S>::value, int> = 0>  \
  __device__ inline vec<bool, N> operator op(const vec<T, N, P>& a, const S& s) {        \
    vec<bool, N> r;                                                                      \
    for (int i = 0; i < N; ++i) r[i] = a[i] op T(s);                                     \
    return r;                                                                            \
  }                                                                                      \
  template <class T, int N, bool P, class S, enable_if_t<is_scalar<S>::value, int> = 0>  \
  __device__ inline vec<bool, N> operator op(const S& s, const vec<T, N, P>& a) {        \
    vec<bool, N> r;                                                                      \
    for (int i = 0; i < N; ++i) r[i] = T(s) op a[i];                                     \
    return r;                                                                            \
  }
METAL_VEC_CMP(<)
METAL_VEC_CMP(>)
METAL_VEC_CMP(<=)
METAL_VEC_CMP(>=)
METAL_VEC_CMP(==)
METAL_VEC_CMP(!=)
METAL_VEC_CMP(&&)
METAL_VEC_CMP(||)
template <class T, int N, bool P>
__device__ inline vec<T, N> operator-(const vec<T, N, P>& a) {
  vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = T(-a[i]); return r;
}
template <class T, int N, bool P>
__device__ inline vec<T, N> operator+(const vec<T, N, P>& a) { return vec<T, N>(a); }
template <class T, int N, bool P>
__device__ inline vec<T, N> operator~(const vec<T, N, P>& a) {
  vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = T(~a[i]); return r;
}
template <class T, int N, bool P>
__device__ inline vec<bool, N> operator!(const vec<T, N, P>& a) {
  vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = !a[i]; return r;
}
template <class T, int N, bool P>
__device__ inline vec<T, N, P>& operator++(vec<T, N, P>& a) { return a += T(1); }
template <class T, int N, bool P>
__device__ inline vec<T, N, P>& operator--(vec<T, N, P>& a) { return a -= T(1); }
template <class T, int N, bool P>
__device__ inline vec<T, N> operator++(vec<T, N, P>& a, int) { vec<T, N> o = a; a += T(1); return o; }
template <class T, int N, bool P>
__device__ inline vec<T, N> operator--(vec<T, N, P>& a, int) { vec<T, N> o = a; a -= T(1); return o; }

// Swizzles: `v.zyx` reads through swizzle<2, 1, 0>(v); a swizzle assigned to uses swizzle_ref.
template <int... I, class T, int N, bool P>
__device__ inline vec<T, sizeof...(I)> swizzle(const vec<T, N, P>& v) {
  return vec<T, sizeof...(I)>(v[I]...);
}
template <class T, int N, bool P, int... I> struct swizzle_proxy {
  vec<T, N, P>& v;
  static constexpr int K = sizeof...(I);
  __device__ operator vec<T, K>() const { return vec<T, K>(v[I]...); }
  __device__ vec<T, K> get() const { return vec<T, K>(v[I]...); }
  template <class R> __device__ swizzle_proxy& operator=(const R& r) {
    vec<T, K> val(r);
    const int idx[] = {I...};
    for (int k = 0; k < K; ++k) v[idx[k]] = val[k];
    return *this;
  }
  __device__ swizzle_proxy& operator=(const swizzle_proxy& o) { return *this = o.get(); }
  template <class R> __device__ swizzle_proxy& operator+=(const R& r) { return *this = get() + r; }
  template <class R> __device__ swizzle_proxy& operator-=(const R& r) { return *this = get() - r; }
  template <class R> __device__ swizzle_proxy& operator*=(const R& r) { return *this = get() * r; }
  template <class R> __device__ swizzle_proxy& operator/=(const R& r) { return *this = get() / r; }
};
template <int... I, class T, int N, bool P>
__device__ inline swizzle_proxy<T, N, P, I...> swizzle_ref(vec<T, N, P>& v) { return {v}; }

// ---- <metal_array> ----
template <class T, size_t N> struct array {
  T __elems[N];
  __device__ constexpr size_t size() const { return N; }
  __device__ constexpr T& operator[](size_t i) { return __elems[i]; }
  __device__ constexpr const T& operator[](size_t i) const { return __elems[i]; }
};

// ---- bit casts, limits, constants ----
template <class To, class From>
__device__ inline To as_type(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs types of one size");
  To t;
  memcpy(&t, &f, sizeof(To));
  return t;
}
""" + _numeric_limits() + r"""
// Metal's constants (<metal_math>, <metal_limits>), exact, usable in constant expressions.
#define INFINITY (__builtin_bit_cast(float, 0x7f800000u))
#define NAN (__builtin_bit_cast(float, 0x7fc00000u))
#define FLT_MAX (__builtin_bit_cast(float, 0x7f7fffffu))
#define FLT_MIN (__builtin_bit_cast(float, 0x00800000u))
#define FLT_EPSILON (__builtin_bit_cast(float, 0x34000000u))
#define M_E_F (__builtin_bit_cast(float, 0x402df854u))
#define M_LOG2E_F (__builtin_bit_cast(float, 0x3fb8aa3bu))
#define M_LOG10E_F (__builtin_bit_cast(float, 0x3ede5bd9u))
#define M_LN2_F (__builtin_bit_cast(float, 0x3f317218u))
#define M_LN10_F (__builtin_bit_cast(float, 0x40135d8eu))
#define M_PI_F (__builtin_bit_cast(float, 0x40490fdbu))
#define M_PI_2_F (__builtin_bit_cast(float, 0x3fc90fdbu))
#define M_PI_4_F (__builtin_bit_cast(float, 0x3f490fdbu))
#define M_1_PI_F (__builtin_bit_cast(float, 0x3ea2f983u))
#define M_2_PI_F (__builtin_bit_cast(float, 0x3f22f983u))
#define M_2_SQRTPI_F (__builtin_bit_cast(float, 0x3f906ebbu))
#define M_SQRT2_F (__builtin_bit_cast(float, 0x3fb504f3u))
#define M_SQRT1_2_F (__builtin_bit_cast(float, 0x3f3504f3u))
#define MAXFLOAT FLT_MAX
#define HUGE_VALF INFINITY
#define HALF_MAX (metal::half::from_bits(0x7bff))
#define HALF_MIN (metal::half::from_bits(0x0400))
#define HALF_EPSILON (metal::half::from_bits(0x1400))
#define M_E_H (metal::half::from_bits(0x4170))
#define M_LOG2E_H (metal::half::from_bits(0x3dc5))
#define M_LOG10E_H (metal::half::from_bits(0x36f3))
#define M_LN2_H (metal::half::from_bits(0x398c))
#define M_LN10_H (metal::half::from_bits(0x409b))
#define M_PI_H (metal::half::from_bits(0x4248))
#define M_PI_2_H (metal::half::from_bits(0x3e48))
#define M_PI_4_H (metal::half::from_bits(0x3a48))
#define M_1_PI_H (metal::half::from_bits(0x3518))
#define M_2_PI_H (metal::half::from_bits(0x3918))
#define M_2_SQRTPI_H (metal::half::from_bits(0x3c83))
#define M_SQRT2_H (metal::half::from_bits(0x3da8))
#define M_SQRT1_2_H (metal::half::from_bits(0x39a8))
#define MAXHALF HALF_MAX
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 4294967295u
#define LONG_MAX 9223372036854775807l
#define LONG_MIN (-9223372036854775807l - 1)
#define ULONG_MAX 18446744073709551615ul

// ---- math ----
// Apply a float function element-wise and round once to the argument type.
#define METAL_MATH1(ns_name, expr)                                                       \
  __device__ inline float ns_name(float x) { return expr; }                              \
  __device__ inline half ns_name(half h) { float x = (float)h; return half(expr); }      \
  template <class B, enable_if_t<is_same<B, bfloat>::value, int> = 0>                   \
  __device__ inline bfloat ns_name(B h) { float x = (float)h; return bfloat(expr); }     \
  template <class T, int N, bool P>                                                      \
  __device__ inline vec<T, N> ns_name(const vec<T, N, P>& v) {                           \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = ns_name(v[i]); return r;             \
  }
#define METAL_MATH2(ns_name, expr)                                                       \
  __device__ inline float ns_name(float x, float y) { return expr; }                     \
  __device__ inline half ns_name(half hx, half hy) {                                     \
    float x = (float)hx, y = (float)hy; return half(expr);                               \
  }                                                                                      \
  template <class B, enable_if_t<is_same<B, bfloat>::value, int> = 0>                   \
  __device__ inline bfloat ns_name(B hx, B hy) {                                         \
    float x = (float)hx, y = (float)hy; return bfloat(expr);                             \
  }                                                                                      \
  template <class T, int N, bool P, bool Q>                                              \
  __device__ inline vec<T, N> ns_name(const vec<T, N, P>& a, const vec<T, N, Q>& b) {    \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = ns_name(a[i], b[i]); return r;       \
  }                                                                                      \
  template <class T, int N, bool P>                                                      \
  __device__ inline vec<T, N> ns_name(const vec<T, N, P>& a, T b) {                      \
    vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = ns_name(a[i], b); return r;          \
  }
#define METAL_MATH_ALL(M)                                                                \
  M(exp, ::expf(x)) M(exp2, ::exp2f(x)) M(exp10, ::exp10f(x)) M(log, ::logf(x))          \
  M(log2, ::log2f(x)) M(log10, ::log10f(x)) M(sqrt, ::sqrtf(x)) M(rsqrt, ::rsqrtf(x))    \
  M(sin, ::sinf(x)) M(cos, ::cosf(x)) M(tan, ::tanf(x)) M(asin, ::asinf(x))              \
  M(acos, ::acosf(x)) M(atan, ::atanf(x)) M(sinh, ::sinhf(x)) M(cosh, ::coshf(x))        \
  M(tanh, ::tanhf(x)) M(asinh, ::asinhf(x)) M(acosh, ::acoshf(x)) M(atanh, ::atanhf(x))  \
  M(sinpi, ::sinpif(x)) M(cospi, ::cospif(x)) M(tanpi, ::sinpif(x) / ::cospif(x))        \
  M(floor, ::floorf(x)) M(ceil, ::ceilf(x)) M(trunc, ::truncf(x)) M(round, ::roundf(x))  \
  M(rint, ::rintf(x)) M(fabs, ::fabsf(x)) M(fract, ::fminf(x - ::floorf(x), 0x1.fffffep-1f)) \
  M(saturate, ::fminf(::fmaxf(x, 0.0f), 1.0f))                                            \
  M(sign, (x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x != x ? 0.0f : x))))
METAL_MATH_ALL(METAL_MATH1)
#define METAL_MATH2_ALL(M)                                                               \
  M(pow, ::powf(x, y)) M(powr, ::powf(x, y)) M(atan2, ::atan2f(x, y)) \
  M(fmod, ::fmodf(x, y)) M(copysign, ::copysignf(x, y)) M(fmin, ::fminf(x, y))           \
  M(fmax, ::fmaxf(x, y)) M(fdim, ::fdimf(x, y)) M(step, (y < x ? 0.0f : 1.0f))           \
  M(nextafter, ::nextafterf(x, y))
METAL_MATH2_ALL(METAL_MATH2)

__device__ inline float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
__device__ inline half fma(half a, half b, half c) {
  return half((float)::fma((double)(float)a, (double)(float)b, (double)(float)c));
}
template <class B, enable_if_t<is_same<B, bfloat>::value, int> = 0>
__device__ inline bfloat fma(B a, B b, B c) {
  return bfloat((float)::fma((double)(float)a, (double)(float)b, (double)(float)c));
}
template <class T, int N, bool P, bool Q, bool R>
__device__ inline vec<T, N> fma(const vec<T, N, P>& a, const vec<T, N, Q>& b, const vec<T, N, R>& c) {
  vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = fma(a[i], b[i], c[i]); return r;
}
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline T mix(T x, T y, T a) { return T(x + (y - x) * a); }
template <class T, int N, bool P, class A>
__device__ inline vec<T, N> mix(const vec<T, N, P>& x, const vec<T, N, P>& y, const A& a) {
  return x + (y - x) * a;
}
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline T smoothstep(T e0, T e1, T x) {
  float t = ::fminf(::fmaxf(((float)x - (float)e0) / ((float)e1 - (float)e0), 0.0f), 1.0f);
  return T(t * t * (3.0f - 2.0f * t));
}
__device__ inline float ldexp(float x, int k) { return ::ldexpf(x, k); }
// Metal's functions with an output parameter, on scalars (the parts rounded to T once).
template <class T, enable_if_t<is_float_t<T>::value, int> = 0>
__device__ inline T modf(T x, T& integral_part) {
  float whole = 0.0f;
  float fraction = ::modff((float)x, &whole);
  integral_part = T(whole);
  return T(fraction);
}
template <class T, enable_if_t<is_float_t<T>::value, int> = 0>
__device__ inline T sincos(T x, T& cosval) {
  cosval = cos(x);
  return sin(x);
}
template <class T, class I, enable_if_t<is_float_t<T>::value, int> = 0>
__device__ inline T frexp(T x, I& exponent) {
  int e = 0;
  float mantissa = ::frexpf((float)x, &e);
  exponent = I(e);
  return T(mantissa);
}

// min / max / clamp / abs for every scalar type (fmin/fmax semantics for floats).
template <class A, class B, enable_if_t<is_scalar<A>::value && is_scalar<B>::value, int> = 0>
__device__ inline common_t<A, B> min(A a, B b) {
  typedef common_t<A, B> C;
  if (is_float_t<C>::value) return C(::fminf((float)C(a), (float)C(b)));
  return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B, enable_if_t<is_scalar<A>::value && is_scalar<B>::value, int> = 0>
__device__ inline common_t<A, B> max(A a, B b) {
  typedef common_t<A, B> C;
  if (is_float_t<C>::value) return C(::fmaxf((float)C(a), (float)C(b)));
  return C(a) < C(b) ? C(b) : C(a);
}
template <class T, int N, bool P, class B>
__device__ inline vec<T, N> min(const vec<T, N, P>& a, const B& b) {
  vec<T, N> bb(b), r; for (int i = 0; i < N; ++i) r[i] = min(a[i], bb[i]); return r;
}
template <class T, int N, bool P, class B>
__device__ inline vec<T, N> max(const vec<T, N, P>& a, const B& b) {
  vec<T, N> bb(b), r; for (int i = 0; i < N; ++i) r[i] = max(a[i], bb[i]); return r;
}
template <class T, class L, class H, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline T clamp(T x, L lo, H hi) { return T(min(max(x, T(lo)), T(hi))); }
template <class T, int N, bool P, class L, class H>
__device__ inline vec<T, N> clamp(const vec<T, N, P>& x, const L& lo, const H& hi) {
  return min(max(x, vec<T, N>(lo)), vec<T, N>(hi));
}
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline T abs(T x) {
  if (is_float_t<T>::value) return T(::fabsf((float)x));
  return x < T(0) ? T(-x) : x;
}
template <class T, int N, bool P>
__device__ inline vec<T, N> abs(const vec<T, N, P>& v) {
  vec<T, N> r; for (int i = 0; i < N; ++i) r[i] = abs(v[i]); return r;
}
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline bool isnan(T x) { return ::isnan((float)x); }
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline bool isinf(T x) { return ::isinf((float)x); }
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline bool isfinite(T x) { return ::isfinite((float)x); }
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline bool signbit(T x) { return ::signbit((float)x); }
template <class T, int N, bool P>
__device__ inline vec<bool, N> isnan(const vec<T, N, P>& v) {
  vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = isnan(v[i]); return r;
}
template <class T, int N, bool P>
__device__ inline vec<bool, N> isinf(const vec<T, N, P>& v) {
  vec<bool, N> r; for (int i = 0; i < N; ++i) r[i] = isinf(v[i]); return r;
}

// Geometric functions (sums in component order).
template <class T, class U, int N, bool P, bool Q>
__device__ inline T dot(const vec<T, N, P>& a, const vec<U, N, Q>& b) {
  T s = T(a[0] * T(b[0]));
  for (int i = 1; i < N; ++i) s = T(s + T(a[i] * T(b[i])));
  return s;
}
template <class T, int N, bool P>
__device__ inline T length_squared(const vec<T, N, P>& a) { return dot(a, a); }
template <class T, int N, bool P>
__device__ inline T length(const vec<T, N, P>& a) { return sqrt(dot(a, a)); }
template <class T, int N, bool P, bool Q>
__device__ inline T distance(const vec<T, N, P>& a, const vec<T, N, Q>& b) { return length(a - b); }
template <class T, int N, bool P, bool Q>
__device__ inline T distance_squared(const vec<T, N, P>& a, const vec<T, N, Q>& b) {
  return length_squared(a - b);
}
template <class T, int N, bool P>
__device__ inline vec<T, N> normalize(const vec<T, N, P>& a) { return a * rsqrt(dot(a, a)); }
template <class T, bool P, bool Q>
__device__ inline vec<T, 3> cross(const vec<T, 3, P>& a, const vec<T, 3, Q>& b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
template <class T, int N, bool P>
__device__ inline bool all(const vec<T, N, P>& v) {
  for (int i = 0; i < N; ++i) if (!v[i]) return false;
  return true;
}
template <class T, int N, bool P>
__device__ inline bool any(const vec<T, N, P>& v) {
  for (int i = 0; i < N; ++i) if (v[i]) return true;
  return false;
}
__device__ inline bool all(bool b) { return b; }
__device__ inline bool any(bool b) { return b; }
template <class T, enable_if_t<is_scalar<T>::value, int> = 0>
__device__ inline T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N, bool P, bool Q, class C>
__device__ inline vec<T, N> select(const vec<T, N, P>& a, const vec<T, N, Q>& b, const C& c) {
  vec<bool, N> cc(c); vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = cc[i] ? b[i] : a[i];
  return r;
}

// Integer functions.
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T popcount(T x) {
  return T(sizeof(T) == 8 ? __popcll((unsigned long long)x)
                          : __popc((unsigned int)x & (0xffffffffu >> (32 - 8 * (int)(sizeof(T) < 4 ? sizeof(T) : 4)))));
}
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T clz(T x) {
  if (sizeof(T) == 8) return T(__clzll((long long)x));
  return T(__clz((int)((unsigned int)x & (0xffffffffu >> (32 - 8 * (int)sizeof(T))))) - (32 - 8 * (int)sizeof(T)));
}
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T ctz(T x) {
  int bits = 8 * (int)sizeof(T);
  if (sizeof(T) == 8) return x == 0 ? T(64) : T(__ffsll((long long)x) - 1);
  unsigned int u = (unsigned int)x & (0xffffffffu >> (32 - bits));
  return u == 0 ? T(bits) : T(__ffs((int)u) - 1);
}
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T mulhi(T a, T b) {
  if (sizeof(T) == 8) {
    return is_signed_int<T>::value ? T(__mul64hi((long long)a, (long long)b))
                          : T(__umul64hi((unsigned long long)a, (unsigned long long)b));
  }
  long long p = (long long)a * (long long)b;
  return T(p >> (8 * sizeof(T)));
}
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T reverse_bits(T x) {
  if (sizeof(T) == 8) return T(__brevll((unsigned long long)x));
  return T(__brev((unsigned int)x) >> (32 - 8 * sizeof(T)));
}
template <class T, class U, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T rotate(T v, U i) {
  typedef typename conditional<sizeof(T) == 8, unsigned long, unsigned int>::type W;
  const int bits = 8 * (int)sizeof(T);
  int s = (int)(((W)i) % bits);
  W u = (W)v & (bits == 64 ? ~(W)0 : (((W)1 << bits) - 1));
  if (s == 0) return v;
  return T((u << s) | (u >> (bits - s)));
}
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T absdiff(T a, T b) { return a > b ? T(a - b) : T(b - a); }
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T extract_bits(T x, uint offset, uint bits) {
  if (bits == 0) return T(0);
  if (is_signed_int<T>::value) return T((long)((long)x << (64 - offset - bits)) >> (64 - bits));
  return T(((unsigned long)x >> offset) & (bits >= 64 ? ~0ul : ((1ul << bits) - 1)));
}
template <class T, enable_if_t<is_integral<T>::value, int> = 0>
__device__ inline T insert_bits(T base, T ins, uint offset, uint bits) {
  unsigned long mask = (bits >= 64 ? ~0ul : ((1ul << bits) - 1)) << offset;
  return T(((unsigned long)base & ~mask) | (((unsigned long)ins << offset) & mask));
}

METAL_MATH2(divide, x / y)
namespace precise {
using metal::exp; using metal::exp2; using metal::exp10; using metal::log; using metal::log2;
using metal::log10; using metal::sqrt; using metal::rsqrt; using metal::sin; using metal::cos;
using metal::tan; using metal::tanh; using metal::pow; using metal::powr; using metal::fma;
using metal::divide;
}
// The rest of the library, the same in `fast` and `precise` (Metal declares it in both).
#define METAL_ALSO_IN(ns)                                                                \
  namespace ns {                                                                         \
  using metal::asin; using metal::acos; using metal::atan; using metal::sinh;            \
  using metal::cosh; using metal::asinh; using metal::acosh; using metal::atanh;         \
  using metal::sinpi; using metal::cospi; using metal::tanpi; using metal::trunc;        \
  using metal::round; using metal::rint; using metal::fract; using metal::saturate;      \
  using metal::sign; using metal::atan2; using metal::fmod; using metal::copysign;       \
  using metal::fdim; using metal::step; using metal::nextafter;                          \
  }
METAL_ALSO_IN(precise)
namespace precise {
using metal::abs; using metal::min; using metal::max; using metal::clamp; using metal::fabs;
using metal::floor; using metal::ceil; using metal::fmin; using metal::fmax;
}
namespace fast {
#define METAL_FAST_ALL(M)                                                                \
  M(exp, ::__expf(x)) M(exp2, ::exp2f(x)) M(exp10, ::__exp10f(x)) M(log, ::__logf(x))    \
  M(log2, ::__log2f(x)) M(log10, ::__log10f(x)) M(sin, ::__sinf(x)) M(cos, ::__cosf(x))  \
  M(tan, ::__tanf(x)) M(sqrt, ::__fsqrt_rn(x)) M(rsqrt, ::rsqrtf(x)) M(tanh, ::tanhf(x))
METAL_FAST_ALL(METAL_MATH1)
METAL_MATH2(pow, ::__powf(x, y))
METAL_MATH2(powr, ::__powf(x, y))
METAL_MATH2(divide, ::__fdividef(x, y))
using metal::abs; using metal::min; using metal::max; using metal::clamp; using metal::fabs;
using metal::floor; using metal::ceil; using metal::fmin; using metal::fmax; using metal::fma;
using metal::normalize; using metal::length; using metal::distance;
}
METAL_ALSO_IN(fast)

// ---- barriers ----
enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4,
                       mem_threadgroup_imageblock = 8, mem_object_data = 16 };
__device__ inline mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags((int)a | (int)b);
}
__device__ inline void threadgroup_barrier(mem_flags f = mem_flags::mem_none) {
  if ((int)f & (int)mem_flags::mem_device) __threadfence();
  __syncthreads();
}
__device__ inline void simdgroup_barrier(mem_flags f = mem_flags::mem_none) {
  if ((int)f & (int)mem_flags::mem_device) __threadfence_block();
  __syncwarp(__activemask());
}

// ---- SIMD-group and quad-group functions, over the active lanes ----
__device__ inline uint lane_id() { uint l; asm volatile("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }

template <class T> __device__ inline T shfl(unsigned mask, const T& v, int src) {
  constexpr int W = (sizeof(T) + 3) / 4;
  unsigned int w[W] = {};
  memcpy(w, &v, sizeof(T));
  for (int i = 0; i < W; ++i) w[i] = __shfl_sync(mask, w[i], src);
  T r;
  memcpy(&r, w, sizeof(T));
  return r;
}

// `width` lanes per group: 32 for SIMD-groups, 4 for quad-groups.
template <int Width> __device__ inline unsigned group_mask(unsigned active) {
  if (Width == 32) return active;
  return (active >> (lane_id() & ~(unsigned)(Width - 1))) & ((1u << (Width & 31)) - 1);
}
template <int Width> __device__ inline int group_base() { return (int)(lane_id() & ~(unsigned)(Width - 1)); }

// Combine the active lanes of the group in lane order, ((v0 op v1) op v2) ..., as the simulator.
#define METAL_GROUP_REDUCE(fname, combine)                                         \
  template <int Width, class T> __device__ inline T fname##_w(T x) {                     \
    unsigned active = __activemask();                                                    \
    unsigned g = group_mask<Width>(active);                                              \
    int base = group_base<Width>();                                                      \
    T acc = x;                                                                           \
    bool first = true;                                                                   \
    for (int l = 0; l < Width; ++l) {                                                    \
      T v = shfl(active, x, base + l);                                                   \
      if ((g >> l) & 1u) { if (first) { acc = v; first = false; } else { T a = acc; acc = combine; } } \
    }                                                                                    \
    return acc;                                                                          \
  }                                                                                      \
  template <class T> __device__ inline T simd_##fname(T x) { return fname##_w<32>(x); }  \
  template <class T> __device__ inline T quad_##fname(T x) { return fname##_w<4>(x); }
METAL_GROUP_REDUCE(sum, T(a + v))
METAL_GROUP_REDUCE(product, T(a * v))
METAL_GROUP_REDUCE(max, max(a, v))
METAL_GROUP_REDUCE(min, min(a, v))
METAL_GROUP_REDUCE(and, T(a & v))
METAL_GROUP_REDUCE(or, T(a | v))
METAL_GROUP_REDUCE(xor, T(a ^ v))

#define METAL_GROUP_SCAN(fname, op, identity, inclusive)                                 \
  template <int Width, class T> __device__ inline T fname##_w(T x) {                     \
    unsigned active = __activemask();                                                    \
    unsigned g = group_mask<Width>(active);                                              \
    int base = group_base<Width>();                                                      \
    int me = (int)lane_id() - base;                                                      \
    T acc = T(identity), result = T(identity);                                           \
    bool any = false;                                                                    \
    for (int l = 0; l < Width; ++l) {                                                    \
      T v = shfl(active, x, base + l);                                                   \
      if (!((g >> l) & 1u)) continue;                                                    \
      if (l == me && !inclusive) result = acc;                                           \
      acc = any ? T(op(acc, v)) : v; any = true;                                         \
      if (l == me && inclusive) result = acc;                                            \
    }                                                                                    \
    return result;                                                                       \
  }                                                                                      \
  template <class T> __device__ inline T simd_##fname(T x) { return fname##_w<32>(x); }  \
  template <class T> __device__ inline T quad_##fname(T x) { return fname##_w<4>(x); }
#define METAL_ADD(a, b) ((a) + (b))
#define METAL_MUL(a, b) ((a) * (b))
METAL_GROUP_SCAN(prefix_inclusive_sum, METAL_ADD, 0, true)
METAL_GROUP_SCAN(prefix_exclusive_sum, METAL_ADD, 0, false)
METAL_GROUP_SCAN(prefix_inclusive_product, METAL_MUL, 1, true)
METAL_GROUP_SCAN(prefix_exclusive_product, METAL_MUL, 1, false)

// Lane `src` of this lane's group, where `moves`; a lane that is not active (it returned, took
// another branch, or does not exist in a short group) gives the reader its own value, as the
// simulator does (it also reports the read).
template <int Width, class T> __device__ inline T read_lane_w(const T& x, int src, bool moves) {
  unsigned active = __activemask();
  int lane = group_base<Width>() + (src & (Width - 1));
  T v = shfl(active, x, lane);
  return moves && ((active >> lane) & 1u) ? v : x;
}
#define METAL_GROUP_SHUFFLES(prefix, W)                                                  \
  template <class T, class L> __device__ inline T prefix##_shuffle(T x, L lane) {        \
    return read_lane_w<W>(x, (int)lane, (uint)lane < W);                                 \
  }                                                                                      \
  template <class T, class L> __device__ inline T prefix##_broadcast(T x, L lane) {      \
    return read_lane_w<W>(x, (int)lane, (uint)lane < W);                                 \
  }                                                                                      \
  template <class T> __device__ inline T prefix##_broadcast_first(T x) {                 \
    unsigned g = group_mask<W>(__activemask());                                          \
    return read_lane_w<W>(x, __ffs(g) - 1, true);                                        \
  }                                                                                      \
  template <class T, class D> __device__ inline T prefix##_shuffle_down(T x, D d) {      \
    int me = (int)lane_id() & (W - 1);                                                   \
    return read_lane_w<W>(x, me + (int)d, me + (int)d < W && (uint)d < W);               \
  }                                                                                      \
  template <class T, class D> __device__ inline T prefix##_shuffle_up(T x, D d) {        \
    int me = (int)lane_id() & (W - 1);                                                   \
    return read_lane_w<W>(x, me - (int)d, me >= (int)d && (uint)d < W);                  \
  }                                                                                      \
  template <class T, class D> __device__ inline T prefix##_shuffle_xor(T x, D d) {       \
    int me = (int)lane_id() & (W - 1);                                                   \
    return read_lane_w<W>(x, me ^ (int)d, (uint)d < W);                                  \
  }                                                                                      \
  template <class T, class D> __device__ inline T prefix##_shuffle_rotate_down(T x, D d) {\
    int me = (int)lane_id() & (W - 1);                                                   \
    return read_lane_w<W>(x, (me + (int)d) % W, (uint)d < W);                            \
  }                                                                                      \
  template <class T, class D> __device__ inline T prefix##_shuffle_rotate_up(T x, D d) { \
    int me = (int)lane_id() & (W - 1);                                                   \
    return read_lane_w<W>(x, ((me - (int)d) % W + W) % W, (uint)d < W);                  \
  }                                                                                      \
  template <class T, class D, class M = int>                                             \
  __device__ inline T prefix##_shuffle_and_fill_down(T x, T fill, D d, M modulo = W) {   \
    int me = (int)lane_id() & (W - 1), m = (int)modulo, i = me % m, base = me - i;       \
    bool from_x = i + (int)d < m;                                                        \
    int src = from_x ? me + (int)d : base + i + (int)d - m;                              \
    T a = read_lane_w<W>(x, src, true), b = read_lane_w<W>(fill, src, true);             \
    bool there = (__activemask() >> (group_base<W>() + (src & (W - 1)))) & 1u;           \
    return from_x || !there ? a : b;                                                     \
  }                                                                                      \
  template <class T, class D, class M = int>                                             \
  __device__ inline T prefix##_shuffle_and_fill_up(T x, T fill, D d, M modulo = W) {     \
    int me = (int)lane_id() & (W - 1), m = (int)modulo, i = me % m, base = me - i;       \
    bool from_x = i >= (int)d;                                                           \
    int src = from_x ? me - (int)d : base + m + i - (int)d;                              \
    T a = read_lane_w<W>(x, src, true), b = read_lane_w<W>(fill, src, true);             \
    bool there = (__activemask() >> (group_base<W>() + (src & (W - 1)))) & 1u;           \
    return from_x || !there ? a : b;                                                     \
  }                                                                                      \
  __device__ inline bool prefix##_is_first() {                                           \
    unsigned g = group_mask<W>(__activemask());                                          \
    return (int)(lane_id() & (W - 1)) == __ffs(g) - 1;                                   \
  }                                                                                      \
  __device__ inline bool prefix##_all(bool c) {                                          \
    unsigned active = __activemask();                                                    \
    unsigned g = group_mask<W>(active);                                                  \
    unsigned b = group_mask<W>(__ballot_sync(active, c));                                \
    return (b & g) == g;                                                                 \
  }                                                                                      \
  __device__ inline bool prefix##_any(bool c) {                                          \
    unsigned active = __activemask();                                                    \
    return group_mask<W>(__ballot_sync(active, c)) != 0;                                 \
  }
METAL_GROUP_SHUFFLES(simd, 32)
METAL_GROUP_SHUFFLES(quad, 4)
__device__ inline ulong simd_ballot(bool c) {
  unsigned active = __activemask();
  return (ulong)__ballot_sync(active, c);
}
__device__ inline ulong simd_active_threads_mask() { return (ulong)__activemask(); }
__device__ inline ushort quad_ballot(bool c) {
  unsigned active = __activemask();
  return (ushort)group_mask<4>(__ballot_sync(active, c));
}
__device__ inline ushort quad_active_threads_mask() { return (ushort)group_mask<4>(__activemask()); }
typedef ulong simd_vote;
typedef ushort quad_vote;

// ---- atomics ----
enum memory_order { memory_order_relaxed, memory_order_acquire, memory_order_release,
                    memory_order_acq_rel, memory_order_seq_cst };
template <class T> struct atomic { T value; };
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<float> atomic_float;
typedef atomic<bool> atomic_bool;
typedef atomic<ulong> atomic_ulong;

template <class T> struct atomic_word {
  typedef typename conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type type;
};
template <class T, class F>
__device__ inline T atomic_cas_loop(T* p, F f) {
  typedef typename atomic_word<T>::type W;
  W* w = (W*)p;
  W old = *(volatile W*)w, assumed;
  do {
    assumed = old;
    T cur; memcpy(&cur, &assumed, sizeof(T));
    T next = f(cur);
    W nw; memcpy(&nw, &next, sizeof(T));
    old = atomicCAS(w, assumed, nw);
  } while (old != assumed);
  T r; memcpy(&r, &old, sizeof(T));
  return r;
}
__device__ inline int atomic_add_(int* p, int v) { return atomicAdd(p, v); }
__device__ inline uint atomic_add_(uint* p, uint v) { return atomicAdd(p, v); }
__device__ inline float atomic_add_(float* p, float v) { return atomicAdd(p, v); }
__device__ inline ulong atomic_add_(ulong* p, ulong v) {
  return (ulong)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
__device__ inline long atomic_add_(long* p, long v) {
  return (long)atomicAdd((unsigned long long*)p, (unsigned long long)v);
}
template <class T, class V, class... O>
__device__ inline T atomic_fetch_add_explicit(atomic<T>* o, V v, O...) {
  return atomic_add_(&o->value, T(v));
}
template <class T, class V, class... O>
__device__ inline T atomic_fetch_sub_explicit(atomic<T>* o, V v, O...) {
  return atomic_add_(&o->value, T(-T(v)));
}
#define METAL_ATOMIC_CAS_OP(name, expr)                                                  \
  template <class T, class V, class... O>                                                \
  __device__ inline T atomic_fetch_##name##_explicit(atomic<T>* o, V v, O...) {          \
    T b = T(v);                                                                          \
    return atomic_cas_loop(&o->value, [b](T a) { return T(expr); });                     \
  }
METAL_ATOMIC_CAS_OP(and, a & b)
METAL_ATOMIC_CAS_OP(or, a | b)
METAL_ATOMIC_CAS_OP(xor, a ^ b)
METAL_ATOMIC_CAS_OP(min, b < a ? b : a)
METAL_ATOMIC_CAS_OP(max, a < b ? b : a)
template <class T, class V, class... O>
__device__ inline T atomic_exchange_explicit(atomic<T>* o, V v, O...) {
  T b = T(v);
  return atomic_cas_loop(&o->value, [b](T) { return b; });
}
template <class T, class... O>
__device__ inline T atomic_load_explicit(atomic<T>* o, O...) {
  T r; typedef typename atomic_word<T>::type W;
  if (sizeof(T) == sizeof(W)) { W w = *(volatile W*)&o->value; memcpy(&r, &w, sizeof(T)); }
  else r = *(volatile T*)&o->value;
  return r;
}
template <class T, class V, class... O>
__device__ inline void atomic_store_explicit(atomic<T>* o, V v, O...) {
  atomic_exchange_explicit(o, v);
}
template <class T, class... O>
__device__ inline bool atomic_compare_exchange_weak_explicit(atomic<T>* o, T* expected, T desired, O...) {
  typedef typename atomic_word<T>::type W;
  W e, d; memcpy(&e, expected, sizeof(T)); memcpy(&d, &desired, sizeof(T));
  W old = atomicCAS((W*)&o->value, e, d);
  if (old == e) return true;
  memcpy(expected, &old, sizeof(T));
  return false;
}
template <class T, class... O>
__device__ inline bool atomic_compare_exchange_strong_explicit(atomic<T>* o, T* expected, T desired, O...) {
  return atomic_compare_exchange_weak_explicit(o, expected, desired);
}

// ---- simdgroup_matrix ----
// Lane L holds two horizontally adjacent elements (row, col) and (row, col + 1), col even.
// Metal's lane layout is what thread_elements() shows. The runtime chooses where the elements
// live from what the kernel does with thread_elements():
// - never called: where mma.sync's accumulator has them (lane 4 r + c / 2), so that products
//   need no shuffles into or out of the tensor cores' layout, and float products keep the
//   two halves of 3xTF32 apart until the value is read (METALSIM_SGM_DEFERRED);
// - only read (METALSIM_SGM_ELEMENTS_READ): there too, with a copy in Metal's layout that
//   every operation writing the matrix keeps up to date (a product: two shuffles), so that a
//   lane can read its elements anywhere, in divergent code too;
// - written (METALSIM_SGM_METAL_LAYOUT): in Metal's layout, and every product shuffles its
//   operands into the tensor cores' layout and its result back.
// Products run on tensor cores from sm_80 on, unless METALSIM_EXACT_MATRIX asks for the
// CUDA-core path, whose fused multiply-adds run over k in order from the accumulator (Metal
// leaves the order, the fusion and the internal precision unspecified; the simulator's
// product is numpy's). That path, and GPUs before sm_80, keep Metal's layout.
#if defined(METALSIM_EXACT_MATRIX) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800
#define METALSIM_SGM_FMA 1
#ifndef METALSIM_SGM_METAL_LAYOUT
#define METALSIM_SGM_METAL_LAYOUT 1
#endif
#endif

// Metal's layout: lane L holds row sgm_metal_row(L), columns sgm_metal_col(L) and + 1.
__device__ inline int sgm_metal_row(int l) { int q = l / 4; return (q & 4) + (l / 2) % 4; }
__device__ inline int sgm_metal_col(int l) { int q = l / 4; return (q & 2) * 2 + (l % 2) * 2; }
// The lane holding elements (r, c & ~1) and (r, c | 1) in Metal's layout.
__device__ inline int sgm_metal_lane(int r, int c) {
  int q = (r & 4) | (((c >> 2) & 1) << 1) | ((r >> 1) & 1);
  return 4 * q + ((r & 1) << 1) + ((c >> 1) & 1);
}
// The element (r, c) of an 8x8 matrix at `src` with `stride`, `origin` and `transpose`.
template <class P, class S, class O>
__device__ inline P sgm_element(const P* src, S stride, O origin, bool transpose, long r, long c) {
  long rr = transpose ? c : r, cc = transpose ? r : c;
  return src[((long)origin.y + rr) * (long)stride + (long)origin.x + cc];
}
template <class P, class S, class O>
__device__ inline P* sgm_address(P* dst, S stride, O origin, bool transpose, long r, long c) {
  long rr = transpose ? c : r, cc = transpose ? r : c;
  return dst + ((long)origin.y + rr) * (long)stride + (long)origin.x + cc;
}

#ifndef METALSIM_SGM_FMA
// mma.sync m16n8k8 wants, in lane 4 g + t: the row pair (g, 2t), (g, 2t + 1) of A (k permuted
// so that the tf32 shape's k = t and t + 4 are 2t and 2t + 1), the column pair (2t, g),
// (2t + 1, g) of B, and gives the row pair (g, 2t), (g, 2t + 1) of the result.
// 3xTF32: x = hi + lo, hi the TF32 truncation of x (its 13 low bits cleared) and lo the exact
// rest, so that a * b = a_hi b_hi + a_lo b_hi + a_hi b_lo + a_lo b_lo, the last left out:
// |lo| < 2^-10 |x|, and the tensor cores read lo's 11 leading significant bits, so a product is
// off by at most about 2^-19 of |a b| (rounding hi to nearest would halve lo, to about 2^-21,
// for three more instructions per element and a guard of the rounding's overflow near FLT_MAX:
// measured 11% slower on the MVMR at C = 256; bench_gpu.py states both errors). Two
// instructions per element, no test: an infinity's hi is the infinity itself and its lo NaN
// (inf - inf), a NaN's parts are NaNs (or an infinity: its bits past TF32's are dropped, as
// the tensor cores would), and lo only ever lands in the `part` rows of a product, which
// sgm_combine drops wherever the sum of the hi products is not finite: there it is the result.
__device__ inline void tf32_split(float x, unsigned& hi, unsigned& lo) {
  hi = __float_as_uint(x) & 0xffffe000u;
  lo = __float_as_uint(x - __uint_as_float(hi));
}
__device__ inline void mma_tf32(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// The TF32 parts of a lane's two elements of an operand.
struct tf32_pair {
  unsigned hi[2], lo[2];
};
__device__ inline tf32_pair tf32_split(vec<float, 2> x) {
  tf32_pair p;
  tf32_split(x[0], p.hi[0], p.lo[0]);
  tf32_split(x[1], p.hi[1], p.lo[1]);
  return p;
}
// Two m16n8k8 products with the halves kept apart: rows 0-7 of the 16-row shape take a_lo b_hi
// and then a_hi b_lo into `part`, rows 8-15 a_hi b_hi into `hi`, product after product, added
// only where the value is read (sgm_combine). The second product's rows 8-15 (a zero A times
// b_lo, NaN where b is infinite) go to a scratch accumulator, thrown away.
__device__ inline void sgm_mma_deferred(const tf32_pair& a, const tf32_pair& b, vec<float, 2>& hi,
                                        vec<float, 2>& part) {
  float d[4] = {part[0], part[1], hi[0], hi[1]};
  mma_tf32(d, a.lo[0], a.hi[0], a.lo[1], a.hi[1], b.hi[0], b.hi[1]);
  float rest[4] = {d[0], d[1], 0.0f, 0.0f};
  mma_tf32(rest, a.hi[0], 0u, a.hi[1], 0u, b.lo[0], b.lo[1]);
  part = vec<float, 2>(rest[0], rest[1]);
  hi = vec<float, 2>(d[2], d[3]);
}
// hi + part, or hi where it is not finite (an infinite or NaN operand, or overflow): there the
// split parts of an infinity would add NaN (inf - inf, inf * 0).
__device__ inline vec<float, 2> sgm_combine(vec<float, 2> hi, vec<float, 2> part) {
  return vec<float, 2>(fabsf(hi[0]) <= 3.40282347e38f ? part[0] + hi[0] : hi[0],
                       fabsf(hi[1]) <= 3.40282347e38f ? part[1] + hi[1] : hi[1]);
}
// a * b + acc: the two products, their halves added.
__device__ inline vec<float, 2> sgm_mma(const tf32_pair& a, const tf32_pair& b, vec<float, 2> acc) {
  vec<float, 2> part(0.0f);
  sgm_mma_deferred(a, b, acc, part);
  return sgm_combine(acc, part);
}
__device__ inline vec<float, 2> sgm_mma(vec<float, 2> a, vec<float, 2> b, vec<float, 2> acc) {
  return sgm_mma(tf32_split(a), tf32_split(b), acc);
}
template <class T> struct mma_half_kind;
template <> struct mma_half_kind<half> { static constexpr bool bf16 = false; };
template <> struct mma_half_kind<bfloat> { static constexpr bool bf16 = true; };
// half and bfloat: one m16n8k8 product with float accumulation (rows 8-15 unused).
template <class T>
__device__ inline vec<float, 2> sgm_mma(vec<T, 2> a, vec<T, 2> b, vec<float, 2> acc) {
  unsigned a0 = a[0].bits | ((unsigned)a[1].bits << 16);
  unsigned b0 = b[0].bits | ((unsigned)b[1].bits << 16);
  float d[4] = {acc[0], acc[1], 0.0f, 0.0f};
  if constexpr (mma_half_kind<T>::bf16) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(0u), "r"(b0));
  } else {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(0u), "r"(b0));
  }
  return vec<float, 2>(d[0], d[1]);
}
// The column pair (2t, g), (2t + 1, g) of a matrix whose lanes hold row pairs, lane `owner(r, c)`
// holding (r, c & ~1), (r, c | 1), in two shuffles: each element wanted sits in slot g & 1 of
// its lane; a source on an odd row (`odd_row`) sends its slots in the other order, so that in
// each round every source sends what its readers want.
template <class T, class Owner>
__device__ inline vec<T, 2> sgm_column_pair(const vec<T, 2>& e, bool odd_row, Owner owner) {
  int l = (int)lane_id(), g = l >> 2, t = l & 3;
  bool odd = g & 1;
  int p = owner(2 * t, g), q = owner(2 * t + 1, g);
  T r0 = shfl(0xffffffffu, odd_row ? e[1] : e[0], odd ? q : p);
  T r1 = shfl(0xffffffffu, odd_row ? e[0] : e[1], odd ? p : q);
  return odd ? vec<T, 2>(r1, r0) : vec<T, 2>(r0, r1);
}
#endif

#ifdef METALSIM_SGM_METAL_LAYOUT
template <class T, int R = 8, int C = 8> struct simdgroup_matrix {
  vec<T, 2> e;
  simdgroup_matrix() = default;
  __device__ simdgroup_matrix(T v) {
    int l = (int)lane_id(), r = sgm_metal_row(l), c = sgm_metal_col(l);
    e[0] = r == c ? v : T(0);
    e[1] = r == c + 1 ? v : T(0);
  }
  __device__ vec<T, 2>& thread_elements() { return e; }
  __device__ const vec<T, 2>& thread_elements() const { return e; }
};
template <class T, int R = 8, int C = 8, class V>
__device__ inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(V v) {
  simdgroup_matrix<T, R, C> m; m.e = vec<T, 2>(T(v)); return m;
}
template <class T, class P, class S = int, class O = ulong2>
__device__ inline void simdgroup_load(simdgroup_matrix<T>& m, const P* src, S stride = 8,
                                      O origin = O(0, 0), bool transpose = false) {
  int l = (int)lane_id(), r = sgm_metal_row(l), c = sgm_metal_col(l);
  for (int k = 0; k < 2; ++k) m.e[k] = T(sgm_element(src, stride, origin, transpose, r, c + k));
}
template <class T, class P, class S = int, class O = ulong2>
__device__ inline void simdgroup_store(const simdgroup_matrix<T>& m, P* dst, S stride = 8,
                                       O origin = O(0, 0), bool transpose = false) {
  int l = (int)lane_id(), r = sgm_metal_row(l), c = sgm_metal_col(l);
  for (int k = 0; k < 2; ++k) *sgm_address(dst, stride, origin, transpose, r, c + k) = P(m.e[k]);
}
#ifdef METALSIM_SGM_FMA
// a * b + acc in float, fused multiply-adds over k in order from acc.
template <class T>
__device__ inline vec<float, 2> sgm_product(const simdgroup_matrix<T>& a, const simdgroup_matrix<T>& b,
                                            vec<float, 2> acc) {
  int l = (int)lane_id(), r = sgm_metal_row(l), c = sgm_metal_col(l);
  for (int k = 0; k < 8; ++k) {
    // a[r][k] from the lane holding it, and the pair b[k][c], b[k][c + 1]
    float av = (float)shfl(0xffffffffu, a.e[k & 1], sgm_metal_lane(r, k));
    vec<T, 2> bv = shfl(0xffffffffu, b.e, sgm_metal_lane(k, c));
    acc[0] = __fmaf_rn(av, (float)bv[0], acc[0]);
    acc[1] = __fmaf_rn(av, (float)bv[1], acc[1]);
  }
  return acc;
}
#else
// Operands and accumulator shuffled into the tensor cores' layout, the result back.
template <class T>
__device__ inline vec<float, 2> sgm_product(const simdgroup_matrix<T>& a, const simdgroup_matrix<T>& b,
                                            vec<float, 2> acc) {
  int l = (int)lane_id(), row_pair = sgm_metal_lane(l >> 2, (l & 3) * 2);
  vec<T, 2> ar = shfl(0xffffffffu, a.e, row_pair);
  vec<T, 2> bc = sgm_column_pair(b.e, sgm_metal_row(l) & 1, sgm_metal_lane);
  vec<float, 2> d = sgm_mma(ar, bc, shfl(0xffffffffu, acc, row_pair));
  return shfl(0xffffffffu, d, 4 * sgm_metal_row(l) + sgm_metal_col(l) / 2);
}
#endif
template <class T>
__device__ inline void simdgroup_multiply_accumulate(simdgroup_matrix<T>& d, const simdgroup_matrix<T>& a,
                                                     const simdgroup_matrix<T>& b,
                                                     const simdgroup_matrix<T>& c) {
  d.e = vec<T, 2>(sgm_product(a, b, vec<float, 2>(c.e)));
}
template <class T>
__device__ inline void simdgroup_multiply(simdgroup_matrix<T>& d, const simdgroup_matrix<T>& a,
                                          const simdgroup_matrix<T>& b) {
  d.e = vec<T, 2>(sgm_product(a, b, vec<float, 2>(0.0f)));
}
#else
// The tensor cores' layout: lane 4 g + t holds the row pair e = (g, 2t), (g, 2t + 1); `bt`, the
// column pair (2t, g), (2t + 1, g) that mma.sync takes as B, is loaded with it (the compiler
// drops those loads where the matrix is never a B operand) and gathered from the other lanes
// only for a product's result; with METALSIM_SGM_ELEMENTS_READ, `m` is Metal's row pair.
// Without the Metal copy (METALSIM_SGM_DEFERRED), a float matrix that is loaded or filled
// also keeps the TF32 parts of e and bt (`e_split`, `bt_split`, where `split_valid`), so that
// the products using it do not split it again each, and a float product keeps its two halves
// apart (`deferred`: e holds rows 8-15 of the tensor cores' sum, `part` rows 0-7): the next
// product accumulates into both in place, and they are added where the value is read (a
// store, or an operand of a product), not on every product's dependency chain. `part` is 0
// wherever `deferred` is false, so that a product adds it without testing the flag.
// The flags are the same in every lane: only whole-SIMD-group operations change them.
#ifndef METALSIM_SGM_ELEMENTS_READ
#define METALSIM_SGM_DEFERRED 1
#endif
template <class T, int R = 8, int C = 8> struct simdgroup_matrix {
  vec<T, 2> e, bt;
  bool bt_valid = false;
  bool split_valid = false;
  bool deferred = false;
  tf32_pair e_split, bt_split;
  vec<float, 2> part;
#ifdef METALSIM_SGM_ELEMENTS_READ
  vec<T, 2> m;
#endif
  simdgroup_matrix() = default;
  __device__ simdgroup_matrix(T v) {
    int l = (int)lane_id(), g = l >> 2, t = l & 3;
    for (int k = 0; k < 2; ++k) {
      e[k] = g == 2 * t + k ? v : T(0);
      bt[k] = 2 * t + k == g ? v : T(0);
#ifdef METALSIM_SGM_ELEMENTS_READ
      m[k] = sgm_metal_row(l) == sgm_metal_col(l) + k ? v : T(0);
#endif
    }
    keep_operands();
  }
  // e and bt are the elements: split a float matrix's operands once (the compiler drops the
  // parts no product uses); with the Metal copy, the products split their operands each
  // (measured faster there: the GEMM of notebook 04 was 2% slower with the parts kept).
  __device__ void keep_operands() {
    bt_valid = true;
    deferred = false;
    part = vec<float, 2>(0.0f);
#ifdef METALSIM_SGM_DEFERRED
    if constexpr (is_same<T, float>::value) {
      e_split = tf32_split(e);
      bt_split = tf32_split(bt);
      split_valid = true;
    }
#endif
  }
  // The lane's two elements.
  __device__ vec<T, 2> value() const {
    if constexpr (is_same<T, float>::value) {
      if (deferred) return sgm_combine(e, part);
    }
    return e;
  }
#ifdef METALSIM_SGM_ELEMENTS_READ
  __device__ const vec<T, 2>& thread_elements() const { return m; }
#endif
};
template <class T, int R = 8, int C = 8, class V>
__device__ inline simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(V v) {
  simdgroup_matrix<T, R, C> x;
  x.e = x.bt = vec<T, 2>(T(v));
#ifdef METALSIM_SGM_ELEMENTS_READ
  x.m = x.e;
#endif
  x.keep_operands();
  return x;
}
template <class T, class P, class S = int, class O = ulong2>
__device__ inline void simdgroup_load(simdgroup_matrix<T>& x, const P* src, S stride = 8,
                                      O origin = O(0, 0), bool transpose = false) {
  int l = (int)lane_id(), g = l >> 2, t = l & 3;
  for (int k = 0; k < 2; ++k) {
    x.e[k] = T(sgm_element(src, stride, origin, transpose, g, 2 * t + k));
    x.bt[k] = T(sgm_element(src, stride, origin, transpose, 2 * t + k, g));
#ifdef METALSIM_SGM_ELEMENTS_READ
    x.m[k] = T(sgm_element(src, stride, origin, transpose, sgm_metal_row(l), sgm_metal_col(l) + k));
#endif
  }
  x.keep_operands();
}
template <class T, class P, class S = int, class O = ulong2>
__device__ inline void simdgroup_store(const simdgroup_matrix<T>& x, P* dst, S stride = 8,
                                       O origin = O(0, 0), bool transpose = false) {
  int l = (int)lane_id(), g = l >> 2, t = l & 3;
  vec<T, 2> v = x.value();
  for (int k = 0; k < 2; ++k) *sgm_address(dst, stride, origin, transpose, g, 2 * t + k) = P(v[k]);
}
__device__ inline int sgm_native_lane(int r, int c) { return 4 * r + (c >> 1); }
// d = a * b + *c, or a * b where c is null; d may be a, b or *c.
template <class T>
__device__ inline void sgm_set_product(simdgroup_matrix<T>& d, const simdgroup_matrix<T>& a,
                                       const simdgroup_matrix<T>& b, const simdgroup_matrix<T>* c) {
  vec<T, 2> bc = b.bt_valid ? b.bt : sgm_column_pair(b.value(), ((int)lane_id() >> 2) & 1, sgm_native_lane);
  if constexpr (is_same<T, float>::value) {
    tf32_pair as = a.split_valid ? a.e_split : tf32_split(a.value());
    tf32_pair bs = b.split_valid ? b.bt_split : tf32_split(bc);
#ifdef METALSIM_SGM_DEFERRED
    vec<float, 2> hi = c ? c->e : vec<float, 2>(0.0f);
    vec<float, 2> part = c ? c->part : vec<float, 2>(0.0f);
    sgm_mma_deferred(as, bs, hi, part);
    d.e = hi;
    d.part = part;
    d.deferred = true;
#else
    d.e = sgm_mma(as, bs, c ? c->value() : vec<float, 2>(0.0f));
#endif
  } else {
    d.e = vec<T, 2>(sgm_mma(a.e, bc, c ? vec<float, 2>(c->e) : vec<float, 2>(0.0f)));
  }
  d.bt_valid = false;
  d.split_valid = false;
#ifdef METALSIM_SGM_ELEMENTS_READ
  int l = (int)lane_id();
  d.m = shfl(0xffffffffu, d.e, 4 * sgm_metal_row(l) + sgm_metal_col(l) / 2);
#endif
}
template <class T>
__device__ inline void simdgroup_multiply_accumulate(simdgroup_matrix<T>& d, const simdgroup_matrix<T>& a,
                                                     const simdgroup_matrix<T>& b,
                                                     const simdgroup_matrix<T>& c) {
  sgm_set_product(d, a, b, &c);
}
template <class T>
__device__ inline void simdgroup_multiply(simdgroup_matrix<T>& d, const simdgroup_matrix<T>& a,
                                          const simdgroup_matrix<T>& b) {
  sgm_set_product<T>(d, a, b, nullptr);
}
#ifdef METALSIM_SGM_DEFERRED
// Two float products sharing B, d1 = a1 * b + c1 and d2 = a2 * b + c2, where d1 is none of the
// second product's operands (the translation pairs only such calls): three m16n8k8, not four.
// Their rows 0-7 are the first product's, rows 8-15 the second's: one takes both a_hi b_hi
// into the two `e` halves, two take a_lo b_hi and then a_hi b_lo into the two `part` halves,
// the same terms in the same order as two single products. Tensor-core operands and
// accumulators are runs of consecutive registers; a kernel that pairs the same matrices every
// time (acc[i][j] with acc[i + 1][j]) keeps these runs in place, where single products
// (rows 0-7 `part`, rows 8-15 `e` of one matrix) need moves between them.
__device__ inline void sgm_set_product_pair(simdgroup_matrix<float>& d1, const simdgroup_matrix<float>& a1,
                                            const simdgroup_matrix<float>& c1, simdgroup_matrix<float>& d2,
                                            const simdgroup_matrix<float>& a2, const simdgroup_matrix<float>& c2,
                                            const simdgroup_matrix<float>& b) {
  vec<float, 2> bc = b.bt_valid ? b.bt : sgm_column_pair(b.value(), ((int)lane_id() >> 2) & 1, sgm_native_lane);
  tf32_pair bs = b.split_valid ? b.bt_split : tf32_split(bc);
  tf32_pair s1 = a1.split_valid ? a1.e_split : tf32_split(a1.value());
  tf32_pair s2 = a2.split_valid ? a2.e_split : tf32_split(a2.value());
  float hi[4] = {c1.e[0], c1.e[1], c2.e[0], c2.e[1]};
  float parts[4] = {c1.part[0], c1.part[1], c2.part[0], c2.part[1]};
  mma_tf32(hi, s1.hi[0], s2.hi[0], s1.hi[1], s2.hi[1], bs.hi[0], bs.hi[1]);
  mma_tf32(parts, s1.lo[0], s2.lo[0], s1.lo[1], s2.lo[1], bs.hi[0], bs.hi[1]);
  mma_tf32(parts, s1.hi[0], s2.hi[0], s1.hi[1], s2.hi[1], bs.lo[0], bs.lo[1]);
  d1.e = vec<float, 2>(hi[0], hi[1]);
  d1.part = vec<float, 2>(parts[0], parts[1]);
  d2.e = vec<float, 2>(hi[2], hi[3]);
  d2.part = vec<float, 2>(parts[2], parts[3]);
  d1.deferred = d2.deferred = true;
  d1.bt_valid = d2.bt_valid = false;
  d1.split_valid = d2.split_valid = false;
}
#endif
#endif
// Two consecutive simdgroup_multiply_accumulate calls sharing their B operand, the first's
// destination none of the second's operands, as the translation writes them: in one step
// where the back end can, else one after the other.
template <class T>
__device__ inline void simdgroup_multiply_accumulate_pair(
    simdgroup_matrix<T>& d1, const simdgroup_matrix<T>& a1, const simdgroup_matrix<T>& c1,
    simdgroup_matrix<T>& d2, const simdgroup_matrix<T>& a2, const simdgroup_matrix<T>& c2,
    const simdgroup_matrix<T>& b) {
#ifdef METALSIM_SGM_DEFERRED
  if constexpr (is_same<T, float>::value) {
    sgm_set_product_pair(d1, a1, c1, d2, a2, c2, b);
    return;
  }
#endif
  simdgroup_multiply_accumulate(d1, a1, b, c1);
  simdgroup_multiply_accumulate(d2, a2, b, c2);
}
typedef simdgroup_matrix<float> simdgroup_float8x8;
typedef simdgroup_matrix<half> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat> simdgroup_bfloat8x8;
template <class T>
__device__ inline simdgroup_matrix<T> operator*(const simdgroup_matrix<T>& a, const simdgroup_matrix<T>& b) {
  simdgroup_matrix<T> d; simdgroup_multiply(d, a, b); return d;
}

// ---- the Metal compiler's intrinsics under its library ----
// MLX's bf16_math.h builds its bfloat overloads of Metal's math and SIMD-group functions on
// them (`__metal_exp(static_cast<float>(x), __METAL_MAYBE_FAST_MATH__)`): each is the
// library's float function (metal::fast's where the flag asks for it and it has one).
#define __METAL_FAST_MATH__ true
#define __METAL_PRECISE_MATH__ false
#ifdef __USE_FAST_MATH__
#define __METAL_MAYBE_FAST_MATH__ true
#else
#define __METAL_MAYBE_FAST_MATH__ false
#endif
#define METAL_INTRINSIC1(f, g)                                                           \
  __device__ inline float __metal_##f(float x, bool fast) { return fast ? g(x) : metal::f(x); }
#define METAL_INTRINSIC2(f, g)                                                           \
  __device__ inline float __metal_##f(float x, float y, bool fast) {                     \
    return fast ? g(x, y) : metal::f(x, y);                                              \
  }
METAL_INTRINSIC1(exp, fast::exp) METAL_INTRINSIC1(exp2, fast::exp2)
METAL_INTRINSIC1(exp10, fast::exp10) METAL_INTRINSIC1(log, fast::log)
METAL_INTRINSIC1(log2, fast::log2) METAL_INTRINSIC1(log10, fast::log10)
METAL_INTRINSIC1(sin, fast::sin) METAL_INTRINSIC1(cos, fast::cos)
METAL_INTRINSIC1(tan, fast::tan) METAL_INTRINSIC1(sqrt, fast::sqrt)
METAL_INTRINSIC1(rsqrt, fast::rsqrt) METAL_INTRINSIC1(tanh, fast::tanh)
METAL_INTRINSIC1(asin, asin) METAL_INTRINSIC1(acos, acos) METAL_INTRINSIC1(atan, atan)
METAL_INTRINSIC1(sinh, sinh) METAL_INTRINSIC1(cosh, cosh) METAL_INTRINSIC1(asinh, asinh)
METAL_INTRINSIC1(acosh, acosh) METAL_INTRINSIC1(atanh, atanh) METAL_INTRINSIC1(sinpi, sinpi)
METAL_INTRINSIC1(cospi, cospi) METAL_INTRINSIC1(tanpi, tanpi) METAL_INTRINSIC1(floor, floor)
METAL_INTRINSIC1(ceil, ceil) METAL_INTRINSIC1(trunc, trunc) METAL_INTRINSIC1(round, round)
METAL_INTRINSIC1(rint, rint) METAL_INTRINSIC1(fabs, fabs) METAL_INTRINSIC1(fract, fract)
METAL_INTRINSIC1(saturate, saturate)
METAL_INTRINSIC2(pow, fast::pow) METAL_INTRINSIC2(powr, fast::powr)
METAL_INTRINSIC2(divide, fast::divide) METAL_INTRINSIC2(atan2, atan2)
METAL_INTRINSIC2(fmod, fmod) METAL_INTRINSIC2(copysign, copysign) METAL_INTRINSIC2(fmin, fmin)
METAL_INTRINSIC2(fmax, fmax) METAL_INTRINSIC2(fdim, fdim) METAL_INTRINSIC2(step, step)
__device__ inline float __metal_nextafter(float x, float y) { return nextafter(x, y); }
__device__ inline float __metal_fma(float x, float y, float z, bool = false) { return fma(x, y, z); }
__device__ inline float __metal_ldexp(float x, int k, bool = false) { return ::ldexpf(x, k); }
__device__ inline float __metal_frexp(float x, int* e) { return ::frexpf(x, e); }
__device__ inline float __metal_fmax3(float x, float y, float z, bool = false) {
  return ::fmaxf(::fmaxf(x, y), z);
}
__device__ inline float __metal_fmin3(float x, float y, float z, bool = false) {
  return ::fminf(::fminf(x, y), z);
}
__device__ inline float __metal_fmedian3(float x, float y, float z, bool = false) {
  return ::fmaxf(::fminf(x, y), ::fminf(::fmaxf(x, y), z));
}
__device__ inline uint __metal_get_simdgroup_size(ushort) { return 32u; }
template <class T> __device__ inline T __metal_get_thread_index_in_simdgroup(T) {
  return T(lane_id());
}
#define METAL_SIMD_INTRINSIC(f)                                                          \
  template <class... A> __device__ inline auto __metal_##f(A... a) { return f(a...); }
METAL_SIMD_INTRINSIC(simd_sum) METAL_SIMD_INTRINSIC(simd_product)
METAL_SIMD_INTRINSIC(simd_max) METAL_SIMD_INTRINSIC(simd_min)
// (bf16_math.h's bfloat simd_xor passes a float: the bitwise reduction of its bits)
__device__ inline float __metal_simd_xor(float x) {
  return __uint_as_float(simd_xor(__float_as_uint(x)));
}
METAL_SIMD_INTRINSIC(simd_prefix_inclusive_sum) METAL_SIMD_INTRINSIC(simd_prefix_exclusive_sum)
METAL_SIMD_INTRINSIC(simd_prefix_inclusive_product)
METAL_SIMD_INTRINSIC(simd_prefix_exclusive_product)
METAL_SIMD_INTRINSIC(simd_broadcast) METAL_SIMD_INTRINSIC(simd_shuffle)
METAL_SIMD_INTRINSIC(simd_shuffle_down) METAL_SIMD_INTRINSIC(simd_shuffle_up)
METAL_SIMD_INTRINSIC(simd_shuffle_xor) METAL_SIMD_INTRINSIC(simd_shuffle_rotate_down)
METAL_SIMD_INTRINSIC(simd_shuffle_rotate_up) METAL_SIMD_INTRINSIC(simd_shuffle_and_fill_down)
METAL_SIMD_INTRINSIC(simd_shuffle_and_fill_up)

// ---- dispatch: one block per threadgroup, blockDim.x = the full threadgroup size ----
// The entry's threads per block: the runtime compiles each kernel for its launch's threadgroup
// (rounded up to whole warps), so a 128-thread kernel may use up to 255 registers a thread;
// 1024, the most a Metal threadgroup has, caps them at 64.
#ifndef METALSIM_MAX_THREADS
#define METALSIM_MAX_THREADS 1024
#endif

struct thread_info {
  uint3 thread_position_in_grid, thread_position_in_threadgroup, threadgroup_position_in_grid;
  uint3 threads_per_threadgroup, dispatch_threads_per_threadgroup, threadgroups_per_grid;
  uint3 threads_per_grid, grid_origin, grid_size;
  uint thread_index_in_threadgroup, thread_index_in_simdgroup, simdgroup_index_in_threadgroup;
  uint threads_per_simdgroup, thread_execution_width, simdgroups_per_threadgroup;
  uint dispatch_simdgroups_per_threadgroup, thread_index_in_quadgroup;
  uint quadgroup_index_in_threadgroup, quadgroups_per_threadgroup;
  uint dispatch_quadgroups_per_threadgroup;
  bool exists;
};
__device__ inline thread_info make_thread_info(uint gx, uint gy, uint gz, uint tx, uint ty, uint tz) {
  thread_info t;
  // Blocks form a 1-D grid (CUDA limits y and z to 65535 blocks); unfold it, x fastest.
  uint nx = (gx + tx - 1) / tx, ny = (gy + ty - 1) / ty, nz = (gz + tz - 1) / tz;
  uint3 group(blockIdx.x % nx, (blockIdx.x / nx) % ny, blockIdx.x / (nx * ny));
  uint3 real(::min(tx, gx - group.x * tx), ::min(ty, gy - group.y * ty), ::min(tz, gz - group.z * tz));
  uint lin = threadIdx.x, total = real.x * real.y * real.z, dispatch_total = tx * ty * tz;
  t.exists = lin < total;
  uint3 local(lin % real.x, (lin / real.x) % real.y, lin / (real.x * real.y));
  t.thread_position_in_threadgroup = local;
  t.threadgroup_position_in_grid = group;
  t.thread_position_in_grid = uint3(group.x * tx + local.x, group.y * ty + local.y, group.z * tz + local.z);
  t.threads_per_threadgroup = real;
  t.dispatch_threads_per_threadgroup = uint3(tx, ty, tz);
  t.threadgroups_per_grid = uint3(nx, ny, nz);
  t.threads_per_grid = uint3(gx, gy, gz);
  t.grid_origin = uint3(0u);
  t.grid_size = uint3(gx, gy, gz);
  t.thread_index_in_threadgroup = lin;
  t.thread_index_in_simdgroup = lin % 32u;
  t.simdgroup_index_in_threadgroup = lin / 32u;
  t.threads_per_simdgroup = 32u;
  t.thread_execution_width = 32u;
  t.simdgroups_per_threadgroup = (total + 31u) / 32u;
  t.dispatch_simdgroups_per_threadgroup = (dispatch_total + 31u) / 32u;
  t.thread_index_in_quadgroup = lin % 4u;
  t.quadgroup_index_in_threadgroup = lin / 4u;
  t.quadgroups_per_threadgroup = (total + 3u) / 4u;
  t.dispatch_quadgroups_per_threadgroup = (dispatch_total + 3u) / 4u;
  return t;
}
// An attribute as the type the kernel declares it with (uint3 -> uint, ushort2, ...).
template <class T> struct attribute_as {
  __device__ static T from(uint3 v) { return T(v.x); }
  __device__ static T from(uint v) { return T(v); }
};
template <class U, int N, bool P> struct attribute_as<vec<U, N, P>> {
  __device__ static vec<U, N, P> from(uint3 v) {
    vec<U, N, P> r; for (int i = 0; i < N; ++i) r[i] = U(v[i]); return r;
  }
  __device__ static vec<U, N, P> from(uint v) { return vec<U, N, P>(U(v)); }
};

// Kernel arguments: a buffer pointer converts to the pointer type the kernel declares, or binds
// the reference it declares.
struct pointer_arg {
  void* p;
  template <class T> __device__ operator T*() const { return (T*)p; }
};
struct reference_arg {
  void* p;
  template <class T> __device__ operator T&() const { return *(T*)p; }
};

}  // namespace metal
"""

# MLX's utils.h pieces that MLX prepends to every custom kernel (its indexing helpers, and
# `complex64_t` from its complex.h): the printer puts each in front of a kernel that uses one of
# its names and does not declare them itself (including MLX's utils.h, as headers do).
MLX_UTILS: dict[frozenset[str], str] = {
    frozenset({"ceildiv", "elem_to_loc", "elem_to_loc_1", "elem_to_loc_2", "elem_to_loc_3"}):
    r"""// ---- MLX's utils.h indexing helpers ----
template <class T, class U> __device__ inline T ceildiv(T n, U m) { return (n + m - 1) / m; }
template <class IdxT = int64_t>
__device__ inline IdxT elem_to_loc(IdxT elem, const int* shape, const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int axis = ndim - 1; axis >= 0 && elem > 0; --axis) {
    loc += (elem % shape[axis]) * IdxT(strides[axis]);
    elem /= shape[axis];
  }
  return loc;
}
template <class IdxT = int64_t>
__device__ inline IdxT elem_to_loc(uint3 elem, const int* shape, const int64_t* strides, int ndim) {
  IdxT loc = elem.x * IdxT(strides[ndim - 1]) + elem.y * IdxT(strides[ndim - 2]);
  for (int axis = ndim - 3; axis >= 0; --axis) {
    loc += (elem.z % shape[axis]) * IdxT(strides[axis]);
    elem.z /= shape[axis];
  }
  return loc;
}
template <class IdxT = int64_t>
__device__ inline IdxT elem_to_loc_1(uint elem, const int64_t& stride) { return elem * IdxT(stride); }
template <class IdxT = int64_t>
__device__ inline IdxT elem_to_loc_2(uint2 elem, const int64_t strides[2]) {
  return elem.x * IdxT(strides[1]) + elem.y * IdxT(strides[0]);
}
template <class IdxT = int64_t>
__device__ inline IdxT elem_to_loc_3(uint3 elem, const int64_t strides[3]) {
  return elem.x * IdxT(strides[2]) + elem.y * IdxT(strides[1]) + elem.z * IdxT(strides[0]);
}
""",
    frozenset({"log1p"}): r"""
// ---- MLX's log1p (utils.h): exact near 0, through log(1 + x) elsewhere ----
__device__ inline float log1p(float x) {
  float y = 1.0f + x;
  if (y == INFINITY) return INFINITY;
  return y == 1.0f ? x : x * (metal::log(y) / (y - 1.0f));
}
__device__ inline bfloat16_t log1p(bfloat16_t x) {
  float y = 1.0f + static_cast<float>(x);
  if (y == INFINITY) return bfloat16_t(INFINITY);
  return y == 1.0f ? x : bfloat16_t(x * (metal::log(y) / (y - 1.0f)));
}
""",
    frozenset({"complex64_t"}): r"""
// ---- MLX's complex64_t (complex.h) ----
struct complex64_t {
  float real;
  float imag;
  __device__ constexpr complex64_t(float real_, float imag_) : real(real_), imag(imag_) {}
  __device__ constexpr complex64_t() : real(0), imag(0) {}
};
__device__ inline complex64_t operator+(complex64_t a, complex64_t b) {
  return complex64_t(a.real + b.real, a.imag + b.imag);
}
__device__ inline complex64_t operator-(complex64_t a, complex64_t b) {
  return complex64_t(a.real - b.real, a.imag - b.imag);
}
__device__ inline complex64_t operator*(complex64_t a, complex64_t b) {
  return complex64_t(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real);
}
""",
}
