"""Kernels that use Slang's type system: generics, interfaces, structs, constants (issue 23)."""
