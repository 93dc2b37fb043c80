"""A project with a Slang syntax error (tests/packages/broken)."""
