"""The ``lahar`` command line."""
