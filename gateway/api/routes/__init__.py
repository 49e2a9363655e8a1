"""One module per group of routes; each exposes ``router``, and gateway/api/main.py lists them."""
