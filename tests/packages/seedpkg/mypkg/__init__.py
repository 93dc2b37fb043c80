"""A user project whose kernels hatch-slang builds (tests/packages/seedpkg)."""
