"""A project with several shaders, two of which share an include."""
