"""A compound assignment whose right operand is a struct with a conversion function and whose
left is not a struct: with no `operator@=` function viable, the built-in operator applies to
what the struct converts to (MLX's steel attention: `src += str_y` with `str_y` an
`Int<1>`), even where the program declares `operator+=` for other types. g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

HEADER = """
struct Two { constexpr operator int() const thread { return 2; } };
struct Other { int v; };
inline thread Other& operator+=(thread Other& a, int b) { a.v += b; return a; }
"""
BODY = """
  int a[5] = {10, 11, 12, 13, 14};
  thread int* p = a;
  p += Two{};
  out[0] = *p;
  int x = 5;
  x += Two{};
  out[1] = x;
  x *= Two{};
  out[2] = x;
  Other o = {1};
  o += Two{};
  out[3] = o.v;
"""


@needs_gxx
def test_compound_assignments_with_a_converting_struct_on_the_right_agree_with_gxx():
    assert agree(HEADER, BODY, 4) == [12, 7, 14, 3]
