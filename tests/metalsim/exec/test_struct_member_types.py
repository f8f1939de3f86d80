"""Member types (`typedef T type;`, `using type = T;` in a struct), named inside the struct and
as `S::type` / `typename S<T>::type` outside it, as MLX's steel headers use them; g++ is the
oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T>
struct AccumHelper {
  typedef float accum_type;
};
template <typename T, int N>
struct Tile {
  using elem_type = T;
  static constexpr constant int kElems = N * 2;
  typedef elem_type frag_type;
  using helper_t = AccumHelper<T>;
  typedef typename helper_t::accum_type acc_t;
  frag_type vals[kElems];
  static int count() { return sizeof(frag_type) * kElems; }
  acc_t twice(int i) const thread { return acc_t(vals[i]) * 2; }
};
struct Plain {
  typedef int index_t;
  using pair_t = Tile<short, 1>;
  index_t i;
};
template <typename TileT>
int elems_of() {
  typename TileT::elem_type x = 7;
  return sizeof(x) + TileT::kElems;
}
"""


@needs_gxx
def test_member_types_agree_with_gxx():
    body = """
  Tile<short, 3> t;
  for (int i = 0; i < 6; ++i) t.vals[i] = short(i + 1);
  out[0] = Tile<short, 3>::count();
  out[1] = int(t.twice(4));
  out[2] = sizeof(Tile<char, 2>::frag_type) + sizeof(typename Tile<int, 2>::acc_t);
  Plain::index_t k = 40;
  Plain p = {k + 2};
  out[3] = p.i;
  out[4] = elems_of<Tile<int, 5>>();
  out[5] = elems_of<Plain::pair_t>();
  using tile_t = Tile<long, 1>;
  typename tile_t::elem_type big = 1;
  out[6] = sizeof(big) + sizeof(tile_t::helper_t);
"""
    assert agree(HEADER, body, 7) == [12, 10, 5, 42, 14, 4, 9]


def test_a_member_type_the_struct_does_not_declare_is_an_error():
    with pytest.raises(metalsim.CompileError, match="no type named 'nothing' in 'Plain'"):
        metalsim_outputs(HEADER, "typename Plain::nothing x = 1;\nout[0] = x;", 1)


def test_a_member_type_is_not_visible_outside_its_struct():
    with pytest.raises(metalsim.CompileError, match="index_t"):
        metalsim_outputs(HEADER, "index_t x = 1;\nout[0] = x;", 1)
