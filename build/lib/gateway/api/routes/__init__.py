"""One module per group of routes; each exposes ``router``. gateway/app.py includes every
module found here, so a new route file needs no other change."""
