"""The hook's options: typed models with their defaults and meanings (``settings``), resolved
against a project's root and ``pyproject.toml`` (``project``)."""
