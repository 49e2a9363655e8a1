"""The project's own shared package: settings, stage contracts, store and model adapters, Celery app."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("taxnav")  # one version for the CLI, the API and the image: pyproject's
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
