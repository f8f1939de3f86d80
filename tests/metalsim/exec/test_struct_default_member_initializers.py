"""Default member initializers (`T m = e;`, `T m{...};`), run by every constructor that does
not initialise the member itself and by the implicit default constructor, as MLX steel's
MMATile initialises `val_frags`; g++ is the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <int N>
struct Tile {
  static constexpr constant int kFrags = N;
  float frags[kFrags] = {1.5f};
  int count = kFrags * 2;
  short tag{7};
  Tile() thread {}
  Tile(int c) thread : count(c) {}
};
struct Plain {
  int a = 5;
  float b;
  int c{3};
};
struct Outer {
  Plain p;
  int z = 1;
};
"""


@needs_gxx
def test_default_member_initializers_agree_with_gxx():
    body = """
  Tile<3> t;
  out[0] = int(t.frags[0] * 2 + t.frags[2]) + t.count * 10 + t.tag * 100;
  Tile<2> u(9);
  out[1] = u.count + u.tag * 10 + int(u.frags[1]);
  Plain p;
  p.b = 2.0f;
  out[2] = p.a * 100 + int(p.b) * 10 + p.c;
  Outer o;
  out[3] = o.p.a + o.p.c + o.z;
"""
    assert agree(HEADER, body, 4) == [763, 79, 523, 9]


def test_aggregate_initialization_of_a_struct_with_default_initializers_is_refused():
    with pytest.raises(metalsim.CompileError, match="aggregate initialization of 'Plain', "
                                                    "which has default member initializers"):
        metalsim_outputs(HEADER, "Plain p = {1, 2.0f};\nout[0] = p.c;", 1)
