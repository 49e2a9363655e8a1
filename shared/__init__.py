"""The project's own shared package: settings, stage contracts, store and model adapters, Celery app."""
