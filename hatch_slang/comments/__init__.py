"""Reading the comment contract of a shader: which lines of its leading comment are entries,
bindings, params and Dispatch lines (``contract``), one kind of line each (``bindings``,
``params``, ``dispatch``), the pieces of a line in any dialect (``dialect``) and whitelisted
arithmetic (``expr``). Pure Python; imports nothing else of hatch_slang."""
