"""The process: settings, the Starlette app and its lifespan, the CLI, the embedded MongoDB."""

from suspended_runs.server.app import create_app
from suspended_runs.server.embedded_mongodb import EmbeddedMongoDB
from suspended_runs.server.errors import EmbeddedMongoDBError, Unauthenticated
from suspended_runs.server.settings import Settings

__all__ = [
    "EmbeddedMongoDB",
    "EmbeddedMongoDBError",
    "Settings",
    "Unauthenticated",
    "create_app",
]
