"""A static data member named through an object or a pointer (`op.init`, `p->init`), as
MLX's reduction kernels read `Op::init` (reduce_all.h: `... : op.init`). g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

HEADER = """
template <typename U>
struct Sum {
  static constexpr constant U init = U(7);
  U operator()(U a, U b) const thread { return a + b; }
};
"""
BODY = """
  Sum<int> op;
  thread Sum<int>* p = &op;
  out[0] = op.init;
  out[1] = op(op.init, 2) + p->init;
"""


@needs_gxx
def test_a_static_member_through_an_object_or_pointer_agrees_with_gxx():
    assert agree(HEADER, BODY, 2) == [7, 16]
