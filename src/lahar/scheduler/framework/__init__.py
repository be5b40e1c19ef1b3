"""The scheduling framework: configuration, session, statement and the session lifecycle."""
