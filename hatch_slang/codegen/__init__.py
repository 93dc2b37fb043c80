"""Generated code: wrapper modules and the manifest, from specs (``wrappers``)."""
