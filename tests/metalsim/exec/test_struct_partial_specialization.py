"""Partial and explicit specialisation of struct templates: an instance uses the most
specialised specialisation its arguments match (C++ [temp.class.spec.match], partial ordering),
as MLX's steel headers rely on (`BaseMMAFrag<T, 8, 8>`, `pointer_element<device T*>`,
`is_integral<integral_constant<T, v>>`); g++ is the oracle."""

import subprocess

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T, typename U>
struct Pick { static constexpr constant int k = 0; };
template <typename T>
struct Pick<T, T> { static constexpr constant int k = 1; };
template <typename T>
struct Pick<thread T*, T> { static constexpr constant int k = 2; };
template <typename T>
struct Pick<thread T*, thread T*> { static constexpr constant int k = 3; };
template <>
struct Pick<char, char> { static constexpr constant int k = 4; };

template <typename T, int R, int C>
struct Frag {
  static_assert(R == 8, "only 8 x 8");
};
template <typename T>
struct Frag<T, 8, 8> {
  static constexpr constant int kElems = 64 / 32;
  T vals[kElems];
  int size() const thread { return sizeof(vals); }
};

template <typename T, T v>
struct constant_of { static constexpr constant T value = v; };
template <typename T>
struct is_wrapped { static constexpr constant bool value = false; };
template <typename T, T v>
struct is_wrapped<constant_of<T, v>> { static constexpr constant bool value = v > 2; };
"""


@needs_gxx
def test_the_most_specialized_match_is_used_as_by_gxx():
    body = """
  out[0] = Pick<float, int>::k;
  out[1] = Pick<int, int>::k;
  out[2] = Pick<thread int*, int>::k;
  out[3] = Pick<thread int*, thread int*>::k;
  out[4] = Pick<char, char>::k;
  out[5] = Pick<thread char*, thread char*>::k;
  Frag<short, 8, 8> f;
  out[6] = f.size() + Frag<float, 8, 8>::kElems;
  out[7] = is_wrapped<int>::value + 10 * is_wrapped<constant_of<int, 3>>::value
           + 100 * is_wrapped<constant_of<short, 1>>::value;
"""
    assert agree(HEADER, body, 8) == [0, 1, 2, 3, 4, 3, 6, 10]


def test_the_primary_template_is_used_where_no_specialization_matches():
    with pytest.raises(metalsim.CompileError, match="only 8 x 8"):
        metalsim_outputs(HEADER, "Frag<float, 4, 8> f;\nout[0] = 1;", 1)


def test_pointer_specializations_by_address_space_pick_the_pointee():
    header = """
template <typename T> struct element {};
template <typename T> struct element<thread T*> {
  using type = T;
  static constant constexpr int s = 1;
};
template <typename T> struct element<device T*> {
  using type = T;
  static constant constexpr int s = 2;
};
template <typename T> struct element<threadgroup T*> {
  using type = T;
  static constant constexpr int s = 3;
};
"""
    body = """
  typename element<device short*>::type a = 1;
  typename element<threadgroup float*>::type b = 2.5f;
  out[0] = sizeof(a) * 100 + sizeof(b) * 10 + element<device int*>::s;
  out[1] = element<thread char*>::s * 10 + element<threadgroup int*>::s;
"""
    assert metalsim_outputs(header, body, 2) == [242, 13]


@needs_gxx
def test_two_matches_neither_more_specialized_is_ambiguous_as_in_gxx():
    header = HEADER + ("template <typename T>\n"
                       "struct Pick<int, T> { static constexpr constant int k = 5; };\n")
    body = "  out[0] = Pick<int, int>::k;\n"
    with pytest.raises(subprocess.CalledProcessError):  # g++ rejects the program
        agree(header, body, 1)
    with pytest.raises(metalsim.CompileError, match="ambiguous partial specializations of "
                                                    r"'Pick<int, int>'"):
        metalsim_outputs(header, body, 1)
