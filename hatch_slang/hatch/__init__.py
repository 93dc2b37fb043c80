"""The hatchling front end: the plugin registration (``hooks``) and the build hook (``plugin``)."""
