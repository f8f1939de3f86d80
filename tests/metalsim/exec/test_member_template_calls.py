"""`x.template f<args>(...)` (a member function template called with explicit template
arguments, as MLX steel's BlockMMA calls `Atile.template load<T, WM, 1, ...>(As)`) and default
arguments written as braces (`S s = {}`); g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

HEADER = """
template <int Scale>
struct Tag {};
struct Tile {
  int base;
  template <typename U, int w_x, int w_y>
  int load(U x) const thread { return base + int(x) * w_x + w_y + sizeof(U); }
  template <int S>
  int scaled(Tag<S> t = {}) const thread { return base * S; }
};
template <typename T>
int through(thread const Tile& t, T v) { return t.template load<T, 10, 1>(v); }
"""


@needs_gxx
def test_explicit_member_template_arguments_and_braced_defaults_agree_with_gxx():
    body = """
  Tile t = {100};
  out[0] = t.template load<short, 3, 2>(4);
  out[1] = through(t, 2.5f);
  thread Tile* p = &t;
  out[2] = p->template load<char, 1, 0>(7) + t.scaled<3>();
"""
    assert agree(HEADER, body, 3) == [116, 125, 408]
