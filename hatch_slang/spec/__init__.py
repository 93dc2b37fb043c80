"""What the compiler says, checked against the comment and merged into one spec per entry
(``merge``): Slang's reflection (``reflection``), the resources an entry's SPIR-V needs bound
(``resources``), and the spec's frozen dataclasses (``model``)."""
