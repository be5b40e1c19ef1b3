"""The Lahar server: HTTP API, admission, the durable store, controllers and the scheduling loop."""
