"""hatch_slang.comments.bindings: binding lines, in the comment dialects kernels use, read into the
bindings they document (the lines as hatch_slang.comments.contract hands them over: in groups)."""

from __future__ import annotations

from hatch_slang.comments.bindings import BindingDoc, BindingSet, Group, Note, binding_sets


def read(*lines: str, label: str = "") -> tuple[list[BindingSet], list[Note]]:
    """The sets that one group of ``lines`` (numbered from 2, under a header at line 1) documents."""
    return binding_sets("k.slang", [Group(label, 1, [(n, t) for n, t in enumerate(lines, start=2)])])


def one(line: str) -> BindingDoc:
    sets, notes = read(line)
    assert notes == []
    [s] = sets
    [b] = s.bindings
    return b


def shape(b: BindingDoc) -> list[str] | None:
    return [d.text for d in b.shape] if b.shape is not None else None


def test_every_way_of_naming_a_binding() -> None:
    refs = {
        "binding 0: x       float32, read-only, [rows, dim]": (None, 0, None),
        "t1: w  half  [rows][cols] the weights": ("t", 1, None),
        "u2: y   f32, write, [rows]": ("u", 2, None),
        "[3] x  f32 [n]  read": (None, 3, None),
        "set 1, binding 0: out  f32 rw [n]": (None, 0, 1),
        "@group(0) @binding(5) q  f32, read, (rows x cols)": (None, 5, 0),
        "binding/buffer 4: logits  f32 [n_rows][n_cols], read-write": (None, 4, None),
    }
    for line, (register, index, set_) in refs.items():
        b = one(line)
        assert (b.register, b.index, b.set) == (register, index, set_), line


def test_dtype_access_shape_and_description_in_any_order() -> None:
    b = one("t1: w  half  [rows][cols] the weights")
    assert (b.role, b.dtype, shape(b), b.access, b.doc) == (
        "data",
        "f16",
        ["rows", "cols"],
        None,
        "the weights",
    )
    b = one("binding 0: x       float32, read-only, [rows, dim]")
    assert (b.dtype, shape(b), b.access, b.doc) == ("f32", ["rows", "dim"], "read", "")
    b = one("set 1, binding 0: out  f32 rw [n]")
    assert (b.dtype, shape(b), b.access) == ("f32", ["n"], "readwrite")
    b = one("@group(0) @binding(5) q  f32, read, (rows x cols)")
    assert (b.dtype, shape(b), b.access) == ("f32", ["rows", "cols"], "read")


def test_a_flat_buffer_and_quantised_blocks() -> None:
    b = one("binding/buffer 0: x       float, modified in place, any shape (n elements in all)")
    assert (b.dtype, shape(b), b.flat, b.access) == ("f32", ["n"], True, "readwrite")
    b = one("buffer 0: wq      q8_0 blocks, rows*cols/32 of them, as u32 words")
    # Held as u32 words; the line counts blocks, not the words the caller passes: no shape.
    assert (b.dtype, shape(b), b.quantised, b.doc) == (
        "u32",
        None,
        True,
        "rows*cols/32 of them, as u32 words",
    )


def test_params_bindings_in_several_spellings() -> None:
    b = one("[3] params  (rows, cols, eps_bits, _)")
    assert b.role == "params" and b.dtype is None and b.shape is None
    assert [(f.slot, f.name, f.is_bits, f.element) for f in b.fields] == [
        (0, "rows", False, None),
        (1, "cols", False, None),
        (2, "eps", True, None),
        (3, None, False, None),
    ]
    b = one("binding 4: params   p[0] = (n_expert, k), p[1] = (norm, _)")
    assert [(f.slot, f.name, f.element) for f in b.fields] == [
        (0, "n_expert", 0),
        (1, "k", 0),
        (0, "norm", 1),
        (1, None, 1),
    ]
    b = one("buffer 1: params  dim (u32), eps (f32 bits)")  # a bare list after a params name
    assert [(f.name, f.is_bits, f.declared) for f in b.fields] == [("dim", False, "u32"), ("eps", True, None)]
    b = one("b2: params  (n, total = rows * dim)")
    assert b.register == "b" and b.fields[1].derived is not None and b.fields[1].derived.text == "rows * dim"
    b = one("binding 3: params  u32, read, [n, k, dim]")  # the values it holds, listed
    assert [f.name for f in b.fields] == ["n", "k", "dim"]


def test_a_line_that_cannot_be_read_is_left_to_reflection_with_a_note() -> None:
    sets, notes = read("binding 0: x  f32 [n]", "binding 7: bad  f32 [a][]", "binding 9: p2  (a b c)")
    assert [b.name for b in sets[0].bindings] == ["x"]
    assert sets[0].unread == (7, 9)
    assert notes == [
        Note(
            3,
            "binding 7 (`bad`): shape dimension ``: empty expression; "
            "the wrapper takes it as reflection describes it",
        ),
        Note(
            4,
            "binding 9 (`p2`): cannot read `(a b c)` as a params tuple or a dtype and shape; "
            "the wrapper takes it as reflection describes it",
        ),
    ]


def test_an_unknown_dtype_word_is_named_and_left_to_reflection() -> None:
    sets, notes = read("binding 0: x  tf32, read [n]", "binding 9: p2  (tf32 b c)")
    assert sets[0].bindings[0].dtype is None and shape(sets[0].bindings[0]) == ["n"]
    unknown = "`tf32` is no dtype hatch-slang knows; the wrapper takes the dtype reflection gives"
    assert notes == [
        Note(2, f"binding 0 (`x`): {unknown}"),
        Note(3, f"binding 9 (`p2`): {unknown}"),  # the line's own notes first, then why it is not read
        Note(
            3,
            "binding 9 (`p2`): cannot read `(tf32 b c)` as a params tuple or a dtype and shape; "
            "the wrapper takes it as reflection describes it",
        ),
    ]


def test_a_repeated_binding_or_name_is_ignored_with_a_note() -> None:
    sets, notes = read("binding 0: x  f32 [n]", "binding 0: y  f32 [n]", "binding 1: x  f32 [n]")
    assert [b.name for b in sets[0].bindings] == ["x"]
    assert notes == [
        Note(3, "binding 0 is already documented at line 2; this line is ignored"),
        Note(4, "the name `x` is already documented at line 2; this line is ignored"),
    ]


def test_groups_of_one_backend_merge_and_other_backends_stay_apart() -> None:
    groups = [
        Group("", 1, [(2, "binding 0: x  f32 [n]")]),
        Group("", 3, [(4, "binding 1: y  f32 [n]")]),  # disjoint, same backend: one set
        Group("Metal", 5, [(6, "buffer(0) x  float [n]")]),
        Group("Vulkan", 7, [(8, "binding 0: x  f32 [n]")]),
    ]
    sets, notes = binding_sets("k.slang", groups)
    assert notes == []
    assert [(s.label, s.line, [b.name for b in s.bindings]) for s in sets] == [
        ("", 1, ["x", "y"]),
        ("Metal", 5, ["x"]),
        ("Vulkan", 7, ["x"]),
    ]


def test_the_name_must_be_an_identifier() -> None:
    sets, notes = read("binding 0: 2x  f32 [n]")
    assert sets[0].unread == (0,)
    assert notes[0].message.startswith("binding 0 (`2x`): the name `2x` is not a valid identifier")


def test_a_word_in_the_dtype_place_is_kept_as_a_possible_type_parameter() -> None:
    """`x  T, [n]`: no dtype, but `T` (before a comma or the shape) may name a generic entry's
    type parameter; the merge resolves it per instance. Prose, access and dtype words are not."""
    found = {
        "u0: a  T, flat[n] first operand": "T",
        "t1: b  S [n]": "S",
        "binding 2: c  `Store`, [rows][cols] the rows": "Store",
        "t3: d  f32, [n]": None,  # a dtype
        "t4: e  read, [n]": None,  # an access word
        "t5: f  the input [n]": None,  # prose
        "t6: g  [n] T, after the shape": None,
    }
    for line, word in found.items():
        b = one(line)
        assert b.type_word == word, line
    assert one("u0: a  T, flat[n] first operand").doc == "T, first operand"  # the merge drops `T,`
