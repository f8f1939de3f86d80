"""The parser's namespace table: program names and C++'s lookup rules over namespaces."""

from metalsim.lang.namespaces import (
    NamespaceTable,
    common_namespace,
    enclosing_namespace,
    program_name,
)


def test_program_names_qualify_by_namespace_except_global_metal_and_operators():
    assert program_name("na::nb", "K") == "na::nb::K"
    assert program_name("", "K") == "K"
    assert program_name("metal", "abs") == "abs"
    assert program_name("metal::fast", "abs") == "metal::fast::abs"
    assert program_name("na", "operator+") == "operator+"
    assert program_name("na", "operator_count") == "na::operator_count"


def test_enclosing_and_common_namespaces():
    assert enclosing_namespace("na::nb::K") == "na::nb"
    assert enclosing_namespace("K") == ""
    assert common_namespace("na::nb", "na::nc") == "na"
    assert common_namespace("na", "nb") == ""
    assert common_namespace("", "na") == ""


def table() -> NamespaceTable:
    t = NamespaceTable()
    t.open(["na", "nb"])
    t.declare("", "K")
    t.declare("na", "K")
    t.declare("na::nb", "f", function=True)
    t.declare("na", "f", function=True)
    return t


def test_unqualified_lookup_stops_at_the_innermost_namespace_declaring_the_name():
    t = table()
    assert t.unqualified(["na", "nb"], "K", []) == ("na::K",)
    assert t.unqualified(["na", "nb"], "f", []) == ("na::nb::f",)
    assert t.unqualified([], "K", []) == ("K",)
    assert t.unqualified([], "f", []) == ()


def test_a_directive_s_names_join_the_level_where_its_scope_and_the_namespace_meet():
    t = table()
    t.open(["nc"])
    t.declare("nc", "K")
    # from inside nc, `using namespace na;` puts na::K at the global level: nc::K hides it
    assert t.unqualified(["nc"], "K", ["na"]) == ("nc::K",)
    # from the global namespace, na::K meets the global K: both found (ambiguous)
    assert t.unqualified([], "K", ["na"]) == ("K", "na::K")


def test_directives_are_transitive():
    t = table()
    t.open(["nd"])
    t.declare_directive("nd", "na::nb")
    assert t.unqualified([], "f", ["nd"]) == ("na::nb::f",)


def test_qualified_lookup_searches_nominated_namespaces_only_when_the_namespace_lacks_it():
    t = table()
    t.open(["nd"])
    t.declare_directive("nd", "na")
    assert t.qualified("nd", "K") == ("na::K",)
    t.declare("nd", "K")
    assert t.qualified("nd", "K") == ("nd::K",)
    assert t.nested("nd", "nb") == "na::nb"


def test_using_declarations_and_aliases():
    t = table()
    t.open(["ne"])
    t.declare_using("ne", "f", ("na::f",))
    assert t.qualified("ne", "f") == ("na::f",)
    t.declare_alias("", "al", "na::nb")
    assert t.find("al", []) == "na::nb"
    assert t.unaliased("al") == "na::nb"


def test_metal_s_members_are_visible_from_everywhere_as_bare_names():
    t = NamespaceTable()
    t.open(["metal", "fast"])
    t.declare("metal", "abs", function=True)
    assert not t.in_use   # `metal` alone keeps the flat lookup of a program without namespaces
    assert t.unqualified([], "abs", []) == ("abs",)
