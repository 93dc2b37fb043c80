"""A user project whose kernels are idiomatic Slang with no hatch-slang comments (tests/packages/nocomments)."""
