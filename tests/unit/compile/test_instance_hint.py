"""hatch_slang.compile.compiler's note on a failed instance: it always names the instance; what a
type argument must be only where Slang says a type argument is wrong (not for an error in the
body, which the type arguments did not cause)."""

from __future__ import annotations

from hatch_slang.compile.compiler import _instance_hint


def test_the_hint_names_the_instance_and_explains_only_type_argument_errors() -> None:
    wrong_type = "error[E38029]: type argument doesn't conform to interface"
    assert "each type argument must name a type" in _instance_hint("f<flaot>", "f_flaot", wrong_type)
    body = "error[E30081]: ambiguous call to 'float'"
    assert _instance_hint("f<half>", "f_half", body) == "\n(while compiling the instance `f<half>`)"
    assert _instance_hint(None, "f", wrong_type) == ""  # no instance: Slang's message as it is
