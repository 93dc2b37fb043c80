"""A user project whose kernels follow the real-world comment conventions (tests/packages/conventions)."""
